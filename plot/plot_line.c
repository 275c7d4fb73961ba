/* Line charts: series with optional bands, dashes and markers on linear or log10
 * axes, with ticks, grid, legend and labels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

static const qkt__plot_font F_TITLE = {2, 1}, F_LABEL = {2, 0}, F_TICK = {2, 0};
enum { TICK_LEN = 5, MINOR_LEN = 3, PAD = 14, GAP = 8 };
enum { LEG_PAD = 9, LEG_SAMPLE = 30, LEG_ROW = 24 };
#define BAND_ALPHA 0.2
#define DASH_ON 9.0
#define DASH_OFF 6.0
#define MARKER_R 3.5

/* A title: one line at the given font, else split at a space into two lines
 * that fit, else one line at scale 1. Lines longer than 255 chars are cut. */
typedef struct title_lines {
    char line[2][256];
    int n;
    qkt__plot_font f;
} title_lines;

static void title_layout(title_lines *t, const char *s, qkt__plot_font f, double max_w) {
    memset(t, 0, sizeof *t);
    t->f = f;
    if (!s || !*s) return;
    snprintf(t->line[0], sizeof t->line[0], "%s", s);
    t->n = 1;
    if (qkt__plot_text_width(t->line[0], f) <= max_w) return;
    /* Two lines: the split at a space closest to the middle whose halves both fit. */
    const int len = (int)strlen(t->line[0]);
    int best = -1;
    for (int i = 1; i + 1 < len; i++) {
        if (t->line[0][i] != ' ') continue;
        char a[256], b[256];
        snprintf(a, sizeof a, "%.*s", i, t->line[0]);
        snprintf(b, sizeof b, "%s", t->line[0] + i + 1);
        if (qkt__plot_text_width(a, f) <= max_w && qkt__plot_text_width(b, f) <= max_w &&
            (best < 0 || abs(2 * i - len) < abs(2 * best - len)))
            best = i;
    }
    if (best > 0) {
        snprintf(t->line[1], sizeof t->line[1], "%s", t->line[0] + best + 1);
        t->line[0][best] = 0;
        t->n = 2;
    } else {
        t->f.scale = 1;
    }
}

/* Height in px (0 for no title). */
static double title_height(const title_lines *t) {
    return t->n ? t->n * qkt__plot_text_height(t->f) + (t->n - 1) * 4 * t->f.scale : 0;
}

/* Centred on cx, top at y. */
static void title_draw(qkt__plot_img *im, const title_lines *t, double cx, double y) {
    for (int i = 0; i < t->n; i++)
        qkt__plot_text(im, cx, y + i * (qkt__plot_text_height(t->f) + 4 * t->f.scale), t->line[i], t->f,
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_TOP, 0);
}

/* An axis mapped onto pixels: value lo -> p0, hi -> p1 (linearly in log10 when log). */
typedef struct axis_map {
    double lo, hi, p0, p1;
    int log;
} axis_map;

/* Pixel coordinate of v, or NAN where v cannot be drawn (non-finite, <= 0 on log). */
static double map_px(const axis_map *a, double v) {
    if (!isfinite(v) || (a->log && !(v > 0))) return NAN;
    const double u = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                            : (v - a->lo) / (a->hi - a->lo);
    const double p = a->p0 + u * (a->p1 - a->p0);
    return isfinite(p) ? p : NAN;
}

static int usable(double v, int log) { return isfinite(v) && (!log || v > 0); }

static uint32_t series_color(const qkt_series *s, int i) { return s->color ? s->color : qkt_palette(i); }

/* The data extents over every drawable point (and band value). */
static void data_extent(const qkt_line_chart *c, double *xlo, double *xhi, double *ylo, double *yhi) {
    *xlo = *ylo = INFINITY;
    *xhi = *yhi = -INFINITY;
    for (int k = 0; k < c->n_series; k++) {
        const qkt_series *s = &c->series[k];
        for (int i = 0; i < s->n; i++) {
            if (!usable(s->x[i], c->x.log)) continue;
            const double ys[3] = {s->y[i], s->lo ? s->lo[i] : NAN, s->hi ? s->hi[i] : NAN};
            int any = 0;
            for (int j = 0; j < 3; j++)
                if (usable(ys[j], c->y.log)) {
                    *ylo = fmin(*ylo, ys[j]);
                    *yhi = fmax(*yhi, ys[j]);
                    any = 1;
                }
            if (any) {
                *xlo = fmin(*xlo, s->x[i]);
                *xhi = fmax(*xhi, s->x[i]);
            }
        }
    }
}

static void draw_series_band(qkt__plot_mask *m, qkt__plot_img *im, const qkt_series *s, uint32_t col,
                             const axis_map *ax, const axis_map *ay) {
    qkt__plot_mask_clear(m);
    for (int i = 0; i + 1 < s->n; i++) {
        const double xa = map_px(ax, s->x[i]), xb = map_px(ax, s->x[i + 1]);
        const double la = map_px(ay, s->lo[i]), ha = map_px(ay, s->hi[i]);
        const double lb = map_px(ay, s->lo[i + 1]), hb = map_px(ay, s->hi[i + 1]);
        if (isnan(xa) || isnan(xb) || isnan(la) || isnan(ha) || isnan(lb) || isnan(hb)) continue;
        qkt__plot_mask_band(m, xa, ha, la, xb, hb, lb);
    }
    qkt__plot_mask_composite(m, im, col, BAND_ALPHA);
}

static void draw_series_line(qkt__plot_mask *m, qkt__plot_img *im, const qkt_series *s, uint32_t col,
                             const axis_map *ax, const axis_map *ay) {
    qkt__plot_mask_clear(m);
    const double hw = (s->width > 0 ? s->width : 2) / 2;
    double arc = 0; /* dash phase carried along the polyline */
    for (int i = 0; i < s->n; i++) {
        const double xa = map_px(ax, s->x[i]), ya = map_px(ay, s->y[i]);
        if (isnan(xa) || isnan(ya)) {
            arc = 0;
            continue;
        }
        if (s->marker == QKT_MARK_CIRCLE) qkt__plot_mask_disc(m, xa, ya, MARKER_R);
        if (s->no_line) continue;
        if (i + 1 < s->n) {
            const double xb = map_px(ax, s->x[i + 1]), yb = map_px(ay, s->y[i + 1]);
            if (!isnan(xb) && !isnan(yb))
                arc += qkt__plot_mask_segment(m, xa, ya, xb, yb, hw, s->dashed ? DASH_ON : 0, DASH_OFF, arc);
        }
        /* A lone point between gaps would vanish: show it as a dot. */
        const int prev = i > 0 && !isnan(map_px(ax, s->x[i - 1])) && !isnan(map_px(ay, s->y[i - 1]));
        const int next = i + 1 < s->n && !isnan(map_px(ax, s->x[i + 1])) && !isnan(map_px(ay, s->y[i + 1]));
        if (!prev && !next && s->marker == QKT_MARK_NONE) qkt__plot_mask_disc(m, xa, ya, hw + 0.5);
    }
    qkt__plot_mask_composite(m, im, col, 1.0);
}

/* Count drawn pixels (neither background nor grid) inside a rectangle. */
static long busy_pixels(const qkt__plot_img *im, int x0, int y0, int x1, int y1) {
    long n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const uint32_t p = qkt__plot_get(im, x, y);
            if (p != QKT_PLOT_BG && p != QKT_PLOT_GRID) n++;
        }
    return n;
}

/* Legend box size for the named series; 0 entries -> no legend. */
static int legend_size(const qkt_line_chart *c, int *bw, int *bh) {
    int n = 0;
    double tw = 0;
    for (int k = 0; k < c->n_series; k++)
        if (c->series[k].name && c->series[k].name[0]) {
            n++;
            tw = fmax(tw, qkt__plot_text_width(c->series[k].name, F_TICK));
        }
    *bw = (int)ceil(LEG_PAD + LEG_SAMPLE + 8 + tw + LEG_PAD);
    *bh = 2 * LEG_PAD + n * LEG_ROW - LEG_ROW + (int)qkt__plot_text_height(F_TICK) + 2;
    return c->legend == QKT_LEGEND_NONE ? 0 : n;
}

static void draw_legend_at(qkt__plot_img *im, const qkt_line_chart *c, int bx, int by, int bw, int bh) {
    const uint32_t edge = QKT_RGB(190, 190, 190);
    qkt__plot_fill(im, bx, by, bx + bw, by + bh, QKT_PLOT_BG, 0.9);
    qkt__plot_fill(im, bx, by, bx + bw, by + 1, edge, 1);
    qkt__plot_fill(im, bx, by + bh - 1, bx + bw, by + bh, edge, 1);
    qkt__plot_fill(im, bx, by, bx + 1, by + bh, edge, 1);
    qkt__plot_fill(im, bx + bw - 1, by, bx + bw, by + bh, edge, 1);
    qkt__plot_mask m;
    if (qkt__plot_mask_init(&m, bx, by, bx + bw, by + bh, NULL)) return;
    int r = 0;
    for (int k = 0; k < c->n_series; k++) {
        const qkt_series *s = &c->series[k];
        if (!s->name || !s->name[0]) continue;
        const uint32_t col = series_color(s, k);
        const double cy = by + LEG_PAD + 1 + r * LEG_ROW + qkt__plot_text_height(F_TICK) / 2;
        const double sx0 = bx + LEG_PAD, sx1 = bx + LEG_PAD + LEG_SAMPLE;
        if (s->lo && s->hi)
            qkt__plot_fill(im, (int)sx0, (int)(cy - 6), (int)sx1, (int)(cy + 7), col, BAND_ALPHA);
        qkt__plot_mask_clear(&m);
        const double hw = (s->width > 0 ? s->width : 2) / 2;
        if (!s->no_line) qkt__plot_mask_segment(&m, sx0, cy, sx1, cy, hw, s->dashed ? 7 : 0, 4, 0);
        if (s->marker == QKT_MARK_CIRCLE) qkt__plot_mask_disc(&m, (sx0 + sx1) / 2, cy, MARKER_R);
        qkt__plot_mask_composite(&m, im, col, 1.0);
        qkt__plot_text(im, sx1 + 8, cy, s->name, F_TICK, QKT_PLOT_INK, QKT_PLOT_LEFT, QKT_PLOT_MIDDLE, 0);
        r++;
    }
    qkt__plot_mask_free(&m);
}

/* Inside legend: a corner of the data area (fixed, or the least covered one).
 * Returns the fraction of the box that covers drawn data. */
static double draw_legend_inside(qkt__plot_img *im, const qkt_line_chart *c, int x0, int y0, int x1, int y1) {
    int bw, bh;
    if (!legend_size(c, &bw, &bh)) return 0;
    const int in = 10;
    /* Candidates in order of preference. */
    const int cand[4][2] = {{x1 - in - bw, y0 + in}, {x0 + in, y0 + in}, {x0 + in, y1 - in - bh},
                            {x1 - in - bw, y1 - in - bh}};
    int pick = 0;
    long best = -1;
    for (int i = 0; i < 4; i++) {
        if (c->legend >= QKT_LEGEND_UPPER_RIGHT && c->legend != QKT_LEGEND_UPPER_RIGHT + i) continue;
        const long b = busy_pixels(im, cand[i][0], cand[i][1], cand[i][0] + bw, cand[i][1] + bh);
        if (best < 0 || b < best) best = b, pick = i;
    }
    draw_legend_at(im, c, cand[pick][0], cand[pick][1], bw, bh);
    return (double)best / ((double)bw * bh);
}

/* Where everything goes: image size, data area [x0, x1) x [y0, y1), axis maps, ticks,
 * the title's lines and the legend box (n_leg entries of bw x bh). */
typedef struct {
    int W, H, x0, y0, x1, y1;
    int n_leg, bw, bh;
    axis_map ax, ay;
    qkt__plot_ticks tx, ty;
    title_lines title;
} chart_layout;

/* Layout: top (title), bottom (ticks + x label), then left from the widest y tick
 * label, right from the outside legend; x ticks thinned until their labels fit. */
static int layout(const qkt_line_chart *c, int outside, chart_layout *L, qkt_err *err) {
    const int W = c->width > 0 ? c->width : 800, H = c->height > 0 ? c->height : 560;
    QKT_CHECK(W >= 200 && H >= 150, "chart size %d x %d is too small (min 200 x 150)", W, H);
    L->W = W, L->H = H;
    double xlo, xhi, ylo, yhi;
    data_extent(c, &xlo, &xhi, &ylo, &yhi);
    axis_map *ax = &L->ax, *ay = &L->ay;
    *ax = (axis_map){.log = c->x.log != 0}, *ay = (axis_map){.log = c->y.log != 0};
    qkt__plot_axis_range(&c->x, xlo, xhi, &ax->lo, &ax->hi);
    qkt__plot_axis_range(&c->y, ylo, yhi, &ay->lo, &ay->hi);
    title_layout(&L->title, c->title, F_TITLE, W - 2 * PAD);
    const double th = qkt__plot_text_height(F_TICK), lh = qkt__plot_text_height(F_LABEL);
    const int top = PAD + (L->title.n ? (int)title_height(&L->title) + 16 : 6);
    const int bottom = TICK_LEN + GAP + (int)th + (c->x.label && *c->x.label ? 14 + (int)lh : 0) + PAD;
    const int y0 = top, y1 = H - bottom;
    qkt__plot_ticks_make(&L->ty, ay->lo, ay->hi, ay->log, (y1 - y0) / 55 > 2 ? (y1 - y0) / 55 : 2);
    const int x0 = PAD + (c->y.label && *c->y.label ? (int)lh + 14 : 0) +
                   (int)ceil(qkt__plot_ticks_max_width(&L->ty, F_TICK)) + GAP + TICK_LEN;
    L->n_leg = legend_size(c, &L->bw, &L->bh);
    int x1 = W - PAD - 10 - (outside && L->n_leg ? L->bw + 6 : 0);
    qkt__plot_ticks *tx = &L->tx;
    ax->p0 = x0, ax->p1 = x1;
    for (int target = (x1 - x0) / 80 > 2 ? (x1 - x0) / 80 : 2;; target--) {
        qkt__plot_ticks_make(tx, ax->lo, ax->hi, ax->log, target);
        const double need = qkt__plot_ticks_max_width(tx, F_TICK) + 16;
        double mind = INFINITY;
        for (int i = 0; i + 1 < tx->n; i++) mind = fmin(mind, map_px(ax, tx->v[i + 1]) - map_px(ax, tx->v[i]));
        if (mind >= need || target <= 1) break;
    }
    /* Keep the last x label inside the image. */
    if (tx->n > 0 && !outside) {
        const double half = qkt__plot_text_width(tx->label[tx->n - 1], F_TICK) / 2;
        if (x1 + half > W - 4 && map_px(ax, tx->v[tx->n - 1]) > x1 - 2) x1 = W - 4 - (int)ceil(half);
    }
    if (x1 - x0 < 20 || y1 - y0 < 20) /* depends on the data's labels, so not a QKT_CHECK */
        return qkt_err_set(err, "plot: a %d x %d chart leaves no room for the data area after its labels", W, H);
    ax->p0 = x0, ax->p1 = x1;
    ay->p0 = y1, ay->p1 = y0;
    L->x0 = x0, L->y0 = y0, L->x1 = x1, L->y1 = y1;
    return 0;
}

/* Grid lines at the major ticks, under the data. */
static void draw_grid(qkt__plot_img *im, const chart_layout *L) {
    for (int i = 0; i < L->tx.n; i++) {
        const int px = (int)floor(map_px(&L->ax, L->tx.v[i]));
        if (px > L->x0 && px < L->x1) qkt__plot_fill(im, px, L->y0, px + 1, L->y1, QKT_PLOT_GRID, 1);
    }
    for (int i = 0; i < L->ty.n; i++) {
        const int py = (int)floor(map_px(&L->ay, L->ty.v[i]));
        if (py > L->y0 && py < L->y1) qkt__plot_fill(im, L->x0, py, L->x1, py + 1, QKT_PLOT_GRID, 1);
    }
}

/* Frame just outside the data area, ticks and their labels outside the frame. */
static void draw_axes(qkt__plot_img *im, const chart_layout *L) {
    const int x0 = L->x0, y0 = L->y0, x1 = L->x1, y1 = L->y1;
    qkt__plot_fill(im, x0 - 1, y0 - 1, x1 + 1, y0, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x0 - 1, y1, x1 + 1, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x0 - 1, y0 - 1, x0, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x1, y0 - 1, x1 + 1, y1 + 1, QKT_PLOT_FRAME, 1);
    for (int i = 0; i < L->tx.n; i++) {
        const double p = map_px(&L->ax, L->tx.v[i]);
        const int px = (int)floor(p);
        qkt__plot_fill(im, px, y1 + 1, px + 1, y1 + 1 + TICK_LEN, QKT_PLOT_FRAME, 1);
        qkt__plot_text(im, p, y1 + 1 + TICK_LEN + GAP, L->tx.label[i], F_TICK, QKT_PLOT_INK, QKT_PLOT_CENTER,
                       QKT_PLOT_TOP, 0);
    }
    for (int i = 0; i < L->tx.n_minor; i++) {
        const int px = (int)floor(map_px(&L->ax, L->tx.minor[i]));
        qkt__plot_fill(im, px, y1 + 1, px + 1, y1 + 1 + MINOR_LEN, QKT_PLOT_FRAME, 1);
    }
    for (int i = 0; i < L->ty.n; i++) {
        const double p = map_px(&L->ay, L->ty.v[i]);
        const int py = (int)floor(p);
        qkt__plot_fill(im, x0 - 1 - TICK_LEN, py, x0 - 1, py + 1, QKT_PLOT_FRAME, 1);
        qkt__plot_text(im, x0 - 1 - TICK_LEN - GAP, py + 0.5, L->ty.label[i], F_TICK, QKT_PLOT_INK,
                       QKT_PLOT_RIGHT, QKT_PLOT_MIDDLE, 0);
    }
    for (int i = 0; i < L->ty.n_minor; i++) {
        const int py = (int)floor(map_px(&L->ay, L->ty.minor[i]));
        qkt__plot_fill(im, x0 - 1 - MINOR_LEN, py, x0 - 1, py + 1, QKT_PLOT_FRAME, 1);
    }
}

/* Lay out and draw the chart into im (allocated here). outside = 1 puts the
 * legend right of the axes; *covered is the inside legend's overlap with data. */
static int render(const qkt_line_chart *c, int outside, qkt__plot_img *im, qkt_plot_frame *f, double *covered,
                  qkt_err *err) {
    chart_layout L;
    if (layout(c, outside, &L, err)) return -1;
    const int x0 = L.x0, y0 = L.y0, x1 = L.x1, y1 = L.y1, W = L.W, H = L.H;
    if (qkt__plot_img_init(im, W, H, err)) return -1;
    qkt__plot_mask m;
    if (qkt__plot_mask_init(&m, x0, y0, x1, y1, err)) {
        qkt__plot_img_free(im);
        return -1;
    }
    if (!c->no_grid) draw_grid(im, &L);
    /* Bands first (all of them), then lines, so no band hides a line. */
    for (int k = 0; k < c->n_series; k++)
        if (c->series[k].lo) draw_series_band(&m, im, &c->series[k], series_color(&c->series[k], k), &L.ax, &L.ay);
    for (int k = 0; k < c->n_series; k++)
        draw_series_line(&m, im, &c->series[k], series_color(&c->series[k], k), &L.ax, &L.ay);
    qkt__plot_mask_free(&m);
    draw_axes(im, &L);

    /* Title (centred on the image), axis labels, legend. */
    title_draw(im, &L.title, W / 2.0, PAD);
    if (c->x.label && *c->x.label)
        qkt__plot_text(im, (x0 + x1) / 2.0, H - PAD, c->x.label, qkt__plot_fit(c->x.label, F_LABEL, x1 - x0),
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_BASELINE, 0);
    if (c->y.label && *c->y.label)
        qkt__plot_text(im, PAD, (y0 + y1) / 2.0, c->y.label, qkt__plot_fit(c->y.label, F_LABEL, y1 - y0),
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_TOP, 1);
    *covered = 0;
    if (outside && L.n_leg)
        draw_legend_at(im, c, x1 + 16, y0, L.bw, L.bh);
    else
        *covered = draw_legend_inside(im, c, x0, y0, x1, y1);

    memset(f, 0, sizeof *f);
    f->width = W, f->height = H;
    f->x0 = x0, f->y0 = y0, f->x1 = x1, f->y1 = y1;
    f->xmin = L.ax.lo, f->xmax = L.ax.hi, f->ymin = L.ay.lo, f->ymax = L.ay.hi;
    return 0;
}

int qkt_plot_lines(const char *path, const qkt_line_chart *c, qkt_plot_frame *out, qkt_err *err) {
    QKT_CHECK(path && c, "qkt_plot_lines: path and chart are required");
    QKT_CHECK(c->n_series >= 0 && (c->n_series == 0 || c->series), "n_series %d, series %p",
              c->n_series, (const void *)c->series);
    for (int k = 0; k < c->n_series; k++) {
        const qkt_series *s = &c->series[k];
        QKT_CHECK(s->n >= 0 && (s->n == 0 || (s->x && s->y)), "series %d: n %d, x/y missing", k, s->n);
        QKT_CHECK(!s->lo == !s->hi, "series %d: a band needs both lo and hi", k);
    }
    qkt__plot_img im;
    qkt_plot_frame f;
    double covered = 0;
    if (render(c, c->legend == QKT_LEGEND_OUTSIDE, &im, &f, &covered, err)) return -1;
    /* BEST: if every inside corner covers data (> 1 % of the box), move the
     * legend outside, unless it would take more than a third of the width. */
    int bw, bh;
    if (c->legend == QKT_LEGEND_BEST && covered > 0.01 && legend_size(c, &bw, &bh) && bw < f.width / 3) {
        qkt__plot_img_free(&im);
        if (render(c, 1, &im, &f, &covered, err)) return -1;
    }
    if (out) *out = f;
    const int rc = qkt__plot_png_write(&im, path, err);
    qkt__plot_img_free(&im);
    return rc;
}
