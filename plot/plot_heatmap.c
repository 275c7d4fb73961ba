/* Heatmaps in viridis with a colour bar: one matrix per image, or a grid of small
 * ones (layers x heads) sharing one bar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"

static const qkt__plot_font F_TITLE = {2, 1}, F_LABEL = {2, 0}, F_TICK = {2, 0};
enum { TICK_LEN = 5, PAD = 14, GAP = 8, BAR_W = 18, BAR_GAP = 20 };

static void check_matrix(const qkt_heatmap *h, const char *what) {
    QKT_CHECK(h->rows > 0 && h->cols > 0 && h->v, "%s: matrix %d x %d, v %p", what, h->rows, h->cols,
              (const void *)h->v);
}

/* Colour range: [vmin, vmax] if vmin < vmax, else min..max of the finite values. */
static void value_range(const qkt_heatmap *panels, int n, double vmin, double vmax, double *lo,
                        double *hi) {
    if (isfinite(vmin) && isfinite(vmax) && vmin < vmax) {
        *lo = vmin, *hi = vmax;
        return;
    }
    double a = INFINITY, b = -INFINITY;
    for (int p = 0; p < n; p++)
        for (long i = 0; i < (long)panels[p].rows * panels[p].cols; i++)
            if (isfinite(panels[p].v[i])) a = fmin(a, panels[p].v[i]), b = fmax(b, panels[p].v[i]);
    if (!(a <= b)) a = 0, b = 1;                            /* nothing finite */
    if (b - a <= 1e-12 * fmax(1, fabs(a))) a -= 0.5, b += 0.5; /* constant: mid colour */
    *lo = a, *hi = b;
}

/* Fill the pixel box [x0, x1) x [y0, y1) with the matrix: pixel (i, j) shows the
 * cell under its centre, so every cell centre has exactly viridis(its value). */
static void draw_matrix(qkt__plot_img *im, const qkt_heatmap *h, int x0, int y0, int x1, int y1, double lo,
                        double hi) {
    for (int j = y0; j < y1; j++) {
        int r = (int)((j + 0.5 - y0) * h->rows / (y1 - y0));
        if (r >= h->rows) r = h->rows - 1;
        for (int i = x0; i < x1; i++) {
            int c = (int)((i + 0.5 - x0) * h->cols / (x1 - x0));
            if (c >= h->cols) c = h->cols - 1;
            const double v = h->v[(long)r * h->cols + c];
            qkt__plot_blend(im, i, j, isfinite(v) ? qkt_viridis((v - lo) / (hi - lo)) : QKT_PLOT_MISSING, 1);
        }
    }
    qkt__plot_fill(im, x0 - 1, y0 - 1, x1 + 1, y0, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x0 - 1, y1, x1 + 1, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x0 - 1, y0 - 1, x0, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, x1, y0 - 1, x1 + 1, y1 + 1, QKT_PLOT_FRAME, 1);
}

/* Width the colour bar needs right of the matrix: gap, bar, ticks, labels, bar label. */
static int bar_extent(double lo, double hi, int bar_h, const char *label, qkt__plot_ticks *t) {
    qkt__plot_ticks_make(t, lo, hi, 0, bar_h / 50 > 2 ? bar_h / 50 : 2);
    return BAR_GAP + BAR_W + TICK_LEN + GAP + (int)ceil(qkt__plot_ticks_max_width(t, F_TICK)) +
           (label && *label ? 14 + (int)qkt__plot_text_height(F_LABEL) : 0);
}

/* Vertical colour bar in [bx, bx + BAR_W) x [y0, y1): row j shows
 * viridis(1 - (j + 0.5 - y0) / (y1 - y0)), vmax at the top. */
static void draw_bar(qkt__plot_img *im, int bx, int y0, int y1, double lo, double hi,
                     const qkt__plot_ticks *t, const char *label) {
    for (int j = y0; j < y1; j++)
        qkt__plot_fill(im, bx, j, bx + BAR_W, j + 1, qkt_viridis(1 - (j + 0.5 - y0) / (y1 - y0)), 1);
    qkt__plot_fill(im, bx - 1, y0 - 1, bx + BAR_W + 1, y0, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, bx - 1, y1, bx + BAR_W + 1, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, bx - 1, y0 - 1, bx, y1 + 1, QKT_PLOT_FRAME, 1);
    qkt__plot_fill(im, bx + BAR_W, y0 - 1, bx + BAR_W + 1, y1 + 1, QKT_PLOT_FRAME, 1);
    double wmax = 0;
    for (int i = 0; i < t->n; i++) {
        const double p = y1 - (t->v[i] - lo) / (hi - lo) * (y1 - y0);
        int py = (int)floor(p);
        if (py >= y1) py = y1 - 1;
        qkt__plot_fill(im, bx + BAR_W + 1, py, bx + BAR_W + 1 + TICK_LEN, py + 1, QKT_PLOT_FRAME, 1);
        qkt__plot_text(im, bx + BAR_W + 1 + TICK_LEN + GAP, py + 0.5, t->label[i], F_TICK, QKT_PLOT_INK,
                       QKT_PLOT_LEFT, QKT_PLOT_MIDDLE, 0);
        wmax = fmax(wmax, qkt__plot_text_width(t->label[i], F_TICK));
    }
    if (label && *label)
        qkt__plot_text(im, bx + BAR_W + 1 + TICK_LEN + GAP + wmax + 14, (y0 + y1) / 2.0, label, F_LABEL,
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_TOP, 1);
}

/* Index ticks at cell centres: every step-th index, step in 1-2-5 x 10^k so that
 * neighbouring labels are at least `room` px apart. */
static int index_step(int n, double cell, double room) {
    static const int nice[3] = {1, 2, 5};
    for (int mag = 1; mag <= 100000000; mag *= 10)
        for (int i = 0; i < 3; i++)
            if (nice[i] * mag * cell >= room || nice[i] * mag >= n) return nice[i] * mag;
    return n;
}

static void fill_frame(qkt_plot_frame *f, int W, int H, const qkt_heatmap *h, int x0, int y0, int x1,
                       int y1, int bx, int by0, int by1, double lo, double hi) {
    memset(f, 0, sizeof *f);
    f->width = W, f->height = H;
    f->x0 = x0, f->y0 = y0, f->x1 = x1, f->y1 = y1;
    f->xmin = 0, f->xmax = h->cols, f->ymin = 0, f->ymax = h->rows;
    f->bar_x0 = bx, f->bar_x1 = bx + BAR_W, f->bar_y0 = by0, f->bar_y1 = by1;
    f->vmin = lo, f->vmax = hi;
}

int qkt_plot_heatmap(const char *path, const qkt_heatmap *h, qkt_plot_frame *out, qkt_err *err) {
    QKT_CHECK(path && h, "qkt_plot_heatmap: path and heatmap are required");
    check_matrix(h, "qkt_plot_heatmap");
    const int W = h->width > 0 ? h->width : 640, H = h->height > 0 ? h->height : 560;
    QKT_CHECK(W >= 200 && H >= 150, "heatmap size %d x %d is too small (min 200 x 150)", W, H);
    double lo, hi;
    value_range(h, 1, h->vmin, h->vmax, &lo, &hi);

    const double th = qkt__plot_text_height(F_TICK), lh = qkt__plot_text_height(F_LABEL);
    const int top = PAD + (h->title && *h->title ? (int)qkt__plot_text_height(F_TITLE) + 16 : 6);
    const int bottom = TICK_LEN + GAP + (int)th + (h->xlabel && *h->xlabel ? 14 + (int)lh : 0) + PAD;
    char buf[24];
    snprintf(buf, sizeof buf, "%d", h->rows - 1);
    const int left = PAD + (h->ylabel && *h->ylabel ? (int)lh + 14 : 0) +
                     (int)ceil(qkt__plot_text_width(buf, F_TICK)) + GAP + TICK_LEN;
    qkt__plot_ticks bt;
    const int right = bar_extent(lo, hi, H - top - bottom, h->bar_label, &bt) + PAD;
    const int aw = W - left - right, ah = H - top - bottom;
    if (aw < 10 || ah < 10)
        return qkt_err_set(err, "plot: a %d x %d heatmap leaves no room for the matrix after its labels", W, H);
    /* Square cells as large as fit; the matrix is centred in the free box. */
    const double cell = fmin((double)aw / h->cols, (double)ah / h->rows);
    const int mw = (int)fmax(1, round(cell * h->cols)), mh = (int)fmax(1, round(cell * h->rows));
    const int x0 = left + (aw - mw) / 2, y0 = top + (ah - mh) / 2, x1 = x0 + mw, y1 = y0 + mh;
    qkt__plot_ticks_make(&bt, lo, hi, 0, mh / 50 > 2 ? mh / 50 : 2); /* for the bar's real height */

    qkt__plot_img im;
    if (qkt__plot_img_init(&im, W, H, err)) return -1;
    draw_matrix(&im, h, x0, y0, x1, y1, lo, hi);
    const int bx = x1 + BAR_GAP;
    draw_bar(&im, bx, y0, y1, lo, hi, &bt, h->bar_label);

    /* Index ticks at cell centres. */
    snprintf(buf, sizeof buf, "%d", h->cols - 1);
    const int sx = index_step(h->cols, (double)mw / h->cols, qkt__plot_text_width(buf, F_TICK) + 20);
    for (int c = 0; c < h->cols; c += sx) {
        const double p = x0 + (c + 0.5) * mw / h->cols;
        qkt__plot_fill(&im, (int)floor(p), y1 + 1, (int)floor(p) + 1, y1 + 1 + TICK_LEN, QKT_PLOT_FRAME, 1);
        snprintf(buf, sizeof buf, "%d", c);
        qkt__plot_text(&im, p, y1 + 1 + TICK_LEN + GAP, buf, F_TICK, QKT_PLOT_INK, QKT_PLOT_CENTER,
                       QKT_PLOT_TOP, 0);
    }
    const int sy = index_step(h->rows, (double)mh / h->rows, th + 10);
    for (int r = 0; r < h->rows; r += sy) {
        const double p = y0 + (r + 0.5) * mh / h->rows;
        qkt__plot_fill(&im, x0 - 1 - TICK_LEN, (int)floor(p), x0 - 1, (int)floor(p) + 1, QKT_PLOT_FRAME, 1);
        snprintf(buf, sizeof buf, "%d", r);
        qkt__plot_text(&im, x0 - 1 - TICK_LEN - GAP, floor(p) + 0.5, buf, F_TICK, QKT_PLOT_INK,
                       QKT_PLOT_RIGHT, QKT_PLOT_MIDDLE, 0);
    }
    if (h->title && *h->title)
        qkt__plot_text(&im, W / 2.0, PAD, h->title, qkt__plot_fit(h->title, F_TITLE, W - 8), QKT_PLOT_INK,
                       QKT_PLOT_CENTER, QKT_PLOT_TOP, 0);
    if (h->xlabel && *h->xlabel)
        qkt__plot_text(&im, (x0 + x1) / 2.0, H - PAD, h->xlabel, qkt__plot_fit(h->xlabel, F_LABEL, W - 8),
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_BASELINE, 0);
    if (h->ylabel && *h->ylabel)
        qkt__plot_text(&im, PAD, (y0 + y1) / 2.0, h->ylabel, qkt__plot_fit(h->ylabel, F_LABEL, H - 8),
                       QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_TOP, 1);

    if (out) fill_frame(out, W, H, h, x0, y0, x1, y1, bx, y0, y1, lo, hi);
    const int rc = qkt__plot_png_write(&im, path, err);
    qkt__plot_img_free(&im);
    return rc;
}

int qkt_plot_heatmap_grid(const char *path, const qkt_heatmap_grid *g, qkt_plot_frame *out,
                          qkt_err *err) {
    QKT_CHECK(path && g && g->n_panels > 0 && g->panels, "qkt_plot_heatmap_grid: path and panels required");
    for (int p = 0; p < g->n_panels; p++) check_matrix(&g->panels[p], "qkt_plot_heatmap_grid");
    const int n = g->n_panels;
    const int gc = g->grid_cols > 0 ? g->grid_cols : (int)ceil(sqrt((double)n));
    const int gr = (n + gc - 1) / gc;
    const int P = g->panel_px > 0 ? g->panel_px : 160, gap = 16;
    QKT_CHECK(P >= 16 && (long)P * gc <= 16000 && (long)P * gr <= 16000, "panel_px %d for a %d x %d grid",
              P, gr, gc);
    double lo, hi;
    value_range(g->panels, n, g->vmin, g->vmax, &lo, &hi);

    const double th = qkt__plot_text_height(F_TICK), lh = qkt__plot_text_height(F_LABEL);
    const int cap = (int)th + 8; /* caption band above each panel */
    const int top = PAD + (g->title && *g->title ? (int)qkt__plot_text_height(F_TITLE) + 16 : 0);
    const int left = PAD + (g->ylabel && *g->ylabel ? (int)lh + 14 : 0) + 4;
    const int grid_w = gc * P + (gc - 1) * gap, grid_h = gr * (cap + P) + (gr - 1) * gap;
    qkt__plot_ticks bt;
    const int right = bar_extent(lo, hi, grid_h - cap, g->bar_label, &bt) + PAD;
    const int bottom = PAD + (g->xlabel && *g->xlabel ? (int)lh + 12 : 0) + 4;
    int W = left + grid_w + right, H = top + grid_h + bottom;
    const double title_w = g->title ? qkt__plot_text_width(g->title, F_TITLE) + 2 * PAD : 0;
    const int extra = title_w > W ? (int)ceil(title_w) - W : 0; /* widen for a long title */
    W += extra;

    qkt__plot_img im;
    if (qkt__plot_img_init(&im, W, H, err)) return -1;
    const int gx = left + extra / 2;
    for (int p = 0; p < n; p++) {
        const qkt_heatmap *h = &g->panels[p];
        const int bx0 = gx + (p % gc) * (P + gap), by0 = top + (p / gc) * (cap + P + gap) + cap;
        const double cell = fmin((double)P / h->cols, (double)P / h->rows);
        const int mw = (int)fmax(1, round(cell * h->cols)), mh = (int)fmax(1, round(cell * h->rows));
        const int x0 = bx0 + (P - mw) / 2, y0 = by0 + (P - mh) / 2;
        draw_matrix(&im, h, x0, y0, x0 + mw, y0 + mh, lo, hi);
        if (h->title && *h->title)
            qkt__plot_text(&im, bx0 + P / 2.0, y0 - 7, h->title, F_TICK, QKT_PLOT_INK, QKT_PLOT_CENTER,
                           QKT_PLOT_BASELINE, 0);
        if (out) fill_frame(&out[p], W, H, h, x0, y0, x0 + mw, y0 + mh, 0, 0, 0, lo, hi);
    }
    const int bx = gx + grid_w + BAR_GAP, bar_y0 = top + cap, bar_y1 = top + grid_h;
    draw_bar(&im, bx, bar_y0, bar_y1, lo, hi, &bt, g->bar_label);
    if (out)
        for (int p = 0; p < n; p++) {
            out[p].bar_x0 = bx, out[p].bar_x1 = bx + BAR_W, out[p].bar_y0 = bar_y0, out[p].bar_y1 = bar_y1;
        }
    if (g->title && *g->title)
        qkt__plot_text(&im, W / 2.0, PAD, g->title, F_TITLE, QKT_PLOT_INK, QKT_PLOT_CENTER, QKT_PLOT_TOP, 0);
    if (g->xlabel && *g->xlabel)
        qkt__plot_text(&im, gx + grid_w / 2.0, H - PAD, g->xlabel, F_LABEL, QKT_PLOT_INK, QKT_PLOT_CENTER,
                       QKT_PLOT_BASELINE, 0);
    if (g->ylabel && *g->ylabel)
        qkt__plot_text(&im, PAD, top + grid_h / 2.0, g->ylabel, F_LABEL, QKT_PLOT_INK, QKT_PLOT_CENTER,
                       QKT_PLOT_TOP, 1);

    const int rc = qkt__plot_png_write(&im, path, err);
    qkt__plot_img_free(&im);
    return rc;
}
