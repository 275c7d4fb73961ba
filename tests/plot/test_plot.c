/* The plot module: PNGs are decoded with stb_image and checked against the data
 * (lines, bands, cell colours, colour bar, ticks) plus the error path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"
#include "qkt_plot.h"
#include "qkt_test.h"
#include "stb_image.h" /* implementation in libstb */

typedef struct png {
    int w, h;
    unsigned char *px;
} png;

static png load(const char *path) {
    png p = {0, 0, NULL};
    int comp = 0;
    p.px = stbi_load(path, &p.w, &p.h, &comp, 3);
    EXPECT(p.px != NULL, "cannot decode %s", path);
    return p;
}

static uint32_t at(const png *p, int x, int y) {
    if (!p->px || x < 0 || y < 0 || x >= p->w || y >= p->h) return 0;
    const unsigned char *q = p->px + ((size_t)y * p->w + x) * 3;
    return QKT_RGB(q[0], q[1], q[2]);
}

static int near_rgb(uint32_t a, uint32_t b, int tol) {
    for (int s = 0; s <= 16; s += 8)
        if (abs((int)(a >> s & 255) - (int)(b >> s & 255)) > tol) return 0;
    return 1;
}

static const char *path_in(const char *dir, const char *name) {
    static char buf[4][512];
    static int k = 0;
    char *p = buf[k++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

#define RED QKT_RGB(200, 30, 30)
#define WHITE QKT_RGB(255, 255, 255)

/* Find the frame by walking out from the middle of the data area to the first
 * frame-coloured pixel on each side; compares with what the call reported. */
static void check_frame(const png *p, const qkt_plot_frame *f) {
    const int cx = (f->x0 + f->x1) / 2, cy = (f->y0 + f->y1) / 2 + 17;
    int l = cx, r = cx, t = cy, b = cy;
    while (l > 0 && at(p, l, cy) != QKT_PLOT_FRAME) l--;
    while (r < p->w - 1 && at(p, r, cy) != QKT_PLOT_FRAME) r++;
    while (t > 0 && at(p, cx + 3, t) != QKT_PLOT_FRAME) t--;
    while (b < p->h - 1 && at(p, cx + 3, b) != QKT_PLOT_FRAME) b++;
    EXPECT(l == f->x0 - 1 && r == f->x1 && t == f->y0 - 1 && b == f->y1,
           "frame found at x %d..%d y %d..%d, reported data area [%d,%d) x [%d,%d)", l, r, t, b, f->x0, f->x1,
           f->y0, f->y1);
}

/* A horizontal line at y = 0.5 on a 0..1 axis: full series colour on the row
 * holding y1 - 0.5 (y1 - y0), background a few rows away. */
static void test_horizontal_line(const char *dir) {
    double x[2] = {0, 1}, y[2] = {0.5, 0.5};
    qkt_series s = {.name = "half", .x = x, .y = y, .n = 2, .color = RED};
    qkt_line_chart c = {.title = "horizontal", .x = {.label = "x", .min = 0, .max = 1},
                        .y = {.label = "y", .min = 0, .max = 1}, .series = &s, .n_series = 1,
                        .width = 640, .height = 480, .legend = QKT_LEGEND_NONE, .no_grid = 1};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "hline.png"), &c, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "hline.png"));
    EXPECT(p.w == 640 && p.h == 480, "size %d x %d", p.w, p.h);
    EXPECT(f.width == 640 && f.height == 480 && f.xmin == 0 && f.xmax == 1 && f.ymin == 0 && f.ymax == 1,
           "frame ranges x %g..%g y %g..%g", f.xmin, f.xmax, f.ymin, f.ymax);
    check_frame(&p, &f);
    const int row = (int)floor(f.y1 - 0.5 * (f.y1 - f.y0));
    int on = 0, off = 0;
    for (int x = f.x0 + 5; x < f.x1 - 5; x += 7) {
        on += at(&p, x, row) == RED;
        off += at(&p, x, row - 4) == WHITE && at(&p, x, row + 4) == WHITE;
    }
    const int n = (f.x1 - f.x0 - 10 + 6) / 7;
    EXPECT(on == n && off == n, "line row %d: %d/%d red, %d/%d clear above/below", row, on, n, off, n);
    /* Thickness 2: the coverage read back from the green channel sums to 2 px per column. */
    for (int x = f.x0 + 40; x < f.x1 - 40; x += 97) {
        double ink = 0;
        for (int y = row - 6; y <= row + 6; y++) ink += (255.0 - (at(&p, x, y) >> 8 & 255)) / (255 - 30);
        EXPECT_NEAR(ink, 2.0, 0.05);
    }
    stbi_image_free(p.px);
}

/* Dashed: on 9 px, off 6 px along the row; markers only: discs at the points,
 * nothing between them. */
static void test_dashes_markers(const char *dir) {
    double x[5] = {0.1, 0.3, 0.5, 0.7, 0.9}, y[5] = {0.25, 0.25, 0.25, 0.25, 0.25}, y2[5] = {0.75, 0.75, 0.75, 0.75, 0.75};
    qkt_series s[2] = {{.x = x, .y = y, .n = 5, .color = RED, .dashed = 1},
                       {.x = x, .y = y2, .n = 5, .color = RED, .no_line = 1, .marker = QKT_MARK_CIRCLE}};
    qkt_line_chart c = {.x = {.min = 0, .max = 1}, .y = {.min = 0, .max = 1}, .series = s, .n_series = 2,
                        .no_grid = 1};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "dash.png"), &c, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "dash.png"));
    const int row = (int)floor(f.y1 - 0.25 * (f.y1 - f.y0));
    const int xa = (int)ceil(f.x0 + 0.1 * (f.x1 - f.x0)) + 2, xb = (int)floor(f.x0 + 0.9 * (f.x1 - f.x0)) - 2;
    int red = 0, white = 0, runs = 0;
    for (int xx = xa; xx < xb; xx++) {
        red += at(&p, xx, row) == RED;
        white += at(&p, xx, row) == WHITE;
        runs += at(&p, xx, row) == RED && at(&p, xx - 1, row) != RED;
    }
    const double frac = (double)red / (xb - xa), expect_runs = (xb - xa) / 15.0;
    EXPECT(frac > 0.5 && frac < 0.65 && white > (xb - xa) / 4, "dashes: %.2f of the row red, %d white", frac, white);
    EXPECT(fabs(runs - expect_runs) <= 2, "%d dashes, want about %.1f", runs, expect_runs);
    const int mrow = (int)floor(f.y1 - 0.75 * (f.y1 - f.y0));
    for (int i = 0; i < 5; i++) {
        const int mx = (int)floor(f.x0 + x[i] * (f.x1 - f.x0));
        EXPECT(at(&p, mx, mrow) == RED && at(&p, mx + 2, mrow + 2) == RED, "no marker at x = %g", x[i]);
        if (i < 4) {
            const int gx = (int)floor(f.x0 + (x[i] + 0.1) * (f.x1 - f.x0));
            EXPECT(at(&p, gx, mrow) == WHITE, "markers-only series drew a line at x = %g", x[i] + 0.1);
        }
    }
    stbi_image_free(p.px);
}

/* y = x on log-log axes 1..1000: the line passes through the pixel of (v, v). */
static void test_loglog_line(const char *dir) {
    double x[2] = {1, 1000}, y[2] = {1, 1000};
    qkt_series s = {.x = x, .y = y, .n = 2, .color = RED};
    qkt_line_chart c = {.x = {.log = 1, .min = 1, .max = 1000}, .y = {.log = 1, .min = 1, .max = 1000},
                        .series = &s, .n_series = 1, .no_grid = 1};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "loglog.png"), &c, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "loglog.png"));
    EXPECT(p.w == 800 && p.h == 560, "default size %d x %d", p.w, p.h);
    check_frame(&p, &f);
    const double vs[4] = {2, 7, 30, 400};
    for (int i = 0; i < 4; i++) {
        const double u = log10(vs[i]) / 3;
        const int px = (int)floor(f.x0 + u * (f.x1 - f.x0)), py = (int)floor(f.y1 - u * (f.y1 - f.y0));
        /* In the pixel column of the point, one of the 3 rows around it has full coverage. */
        const int hit = at(&p, px, py - 1) == RED || at(&p, px, py) == RED || at(&p, px, py + 1) == RED;
        EXPECT(hit, "y = x at %g: no red pixel at column %d rows %d..%d", vs[i], px, py - 1, py + 1);
        EXPECT(at(&p, px, py - 8) == WHITE && at(&p, px, py + 8) == WHITE, "line too thick at %g", vs[i]);
    }
    /* Decade ticks below the frame at the decades' pixels. */
    for (int k = 0; k <= 3; k++) {
        const int px = (int)floor(f.x0 + k / 3.0 * (f.x1 - f.x0));
        EXPECT(at(&p, px, f.y1 + 3) == QKT_PLOT_FRAME, "no tick mark at 1e%d (column %d)", k, px);
    }
    stbi_image_free(p.px);
}

/* A band lo..hi = 0.3..0.7 around y = 0.5: 20 % of the series colour over white
 * inside, untouched outside. */
static void test_band(const char *dir) {
    double x[3] = {0, 0.5, 1}, y[3] = {0.5, 0.5, 0.5}, lo[3] = {0.3, 0.3, 0.3}, hi[3] = {0.7, 0.7, 0.7};
    qkt_series s = {.name = "band", .x = x, .y = y, .lo = lo, .hi = hi, .n = 3, .color = RED};
    qkt_line_chart c = {.x = {.min = 0, .max = 1}, .y = {.min = 0, .max = 1}, .series = &s, .n_series = 1,
                        .legend = QKT_LEGEND_NONE, .no_grid = 1};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "band.png"), &c, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "band.png"));
    const uint32_t blended = QKT_RGB(lround(255 * 0.8 + 200 * 0.2), lround(255 * 0.8 + 30 * 0.2),
                                     lround(255 * 0.8 + 30 * 0.2));
    const double vals[4] = {0.35, 0.42, 0.58, 0.65}, outside[2] = {0.2, 0.8};
    for (int i = 0; i < 4; i++)
        for (double xv = 0.1; xv < 0.95; xv += 0.2) {
            const int px = (int)floor(f.x0 + xv * (f.x1 - f.x0)), py = (int)floor(f.y1 - vals[i] * (f.y1 - f.y0));
            EXPECT(near_rgb(at(&p, px, py), blended, 1), "band at (%g, %g): %06x, want %06x", xv, vals[i],
                   at(&p, px, py) & 0xffffff, blended & 0xffffff);
        }
    for (int i = 0; i < 2; i++) {
        const int px = (f.x0 + f.x1) / 2, py = (int)floor(f.y1 - outside[i] * (f.y1 - f.y0));
        EXPECT(at(&p, px, py) == WHITE, "outside the band at y = %g: %06x", outside[i], at(&p, px, py) & 0xffffff);
    }
    stbi_image_free(p.px);
}

/* NaN/Inf points break the line; bad values on a log axis are skipped; empty and
 * all-NaN series are fine. */
static void test_nan(const char *dir) {
    double x[11], y[11];
    for (int i = 0; i < 11; i++) x[i] = i / 10.0, y[i] = 0.5;
    y[5] = NAN;
    double bad[4] = {NAN, INFINITY, -INFINITY, NAN}, neg[4] = {-1, 0, 2, 3}, xs[4] = {1, 2, 3, 4};
    qkt_series s[4] = {{.name = "gap", .x = x, .y = y, .n = 11, .color = RED},
                       {.name = "all bad", .x = xs, .y = bad, .n = 4, .lo = bad, .hi = bad},
                       {.name = "empty", .n = 0},
                       {.name = "inf x", .x = bad, .y = xs, .n = 4, .marker = QKT_MARK_CIRCLE}};
    qkt_line_chart c = {.x = {.min = 0, .max = 1}, .y = {.min = 0, .max = 1}, .series = s, .n_series = 4,
                        .legend = QKT_LEGEND_NONE, .no_grid = 1};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "nan.png"), &c, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "nan.png"));
    const int row = (int)floor(f.y1 - 0.5 * (f.y1 - f.y0));
    const int gap = (int)floor(f.x0 + 0.5 * (f.x1 - f.x0)), solid = (int)floor(f.x0 + 0.2 * (f.x1 - f.x0));
    EXPECT(at(&p, solid, row) == RED, "line missing at x = 0.2");
    EXPECT(at(&p, gap, row) == WHITE, "line not broken at the NaN point x = 0.5: %06x", at(&p, gap, row) & 0xffffff);
    stbi_image_free(p.px);

    /* Auto ranges with nothing drawable, and log axes with values <= 0. */
    qkt_series s2[2] = {{.x = xs, .y = bad, .n = 4}, {.x = xs, .y = neg, .n = 4}};
    qkt_line_chart c2 = {.title = "log with junk", .x = {.log = 1}, .y = {.log = 1}, .series = s2, .n_series = 2};
    EXPECT(qkt_plot_lines(path_in(dir, "nan2.png"), &c2, &f, &err) == 0, "%s", err.msg);
    EXPECT(f.ymin > 0 && f.ymin < 2 && f.ymax > 3 && f.ymax < 4, "log range from the positive values: %g..%g",
           f.ymin, f.ymax);
    c2.n_series = 1;
    EXPECT(qkt_plot_lines(path_in(dir, "nan3.png"), &c2, &f, &err) == 0, "%s", err.msg);
    c2.n_series = 0;
    EXPECT(qkt_plot_lines(path_in(dir, "nan4.png"), &c2, &f, &err) == 0, "%s", err.msg);
    png q = load(path_in(dir, "nan4.png"));
    EXPECT(q.w == 800 && q.h == 560, "empty chart size %d x %d", q.w, q.h);
    stbi_image_free(q.px);
}

/* The legend's best corner covers no data: a diagonal from bottom left to top
 * right leaves two corners free, so every data pixel survives the legend. */
static void test_legend_placement(const char *dir) {
    double x[2] = {0, 1}, y[2] = {0, 1};
    qkt_series s = {.name = "a rather long series name", .x = x, .y = y, .n = 2, .color = RED};
    qkt_line_chart c = {.x = {.min = 0, .max = 1}, .y = {.min = 0, .max = 1}, .series = &s, .n_series = 1,
                        .legend = QKT_LEGEND_NONE};
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(path_in(dir, "leg0.png"), &c, NULL, &err) == 0, "%s", err.msg);
    c.legend = QKT_LEGEND_BEST;
    EXPECT(qkt_plot_lines(path_in(dir, "leg1.png"), &c, NULL, &err) == 0, "%s", err.msg);
    png a = load(path_in(dir, "leg0.png")), b = load(path_in(dir, "leg1.png"));
    long nb = 0;
    for (int yy = 0; yy < b.h; yy++)
        for (int xx = 0; xx < b.w; xx++) nb += at(&b, xx, yy) == RED;
    long ra = 0;
    for (int yy = 0; yy < a.h; yy++)
        for (int xx = 0; xx < a.w; xx++) ra += at(&a, xx, yy) == RED;
    EXPECT(ra > 500 && nb > ra, "legend sample adds red pixels: %ld without, %ld with", ra, nb);
    /* The legend's own sample adds red; the data's red must all survive. */
    long lost = 0;
    for (int yy = 0; yy < a.h; yy++)
        for (int xx = 0; xx < a.w; xx++) lost += at(&a, xx, yy) == RED && at(&b, xx, yy) != RED;
    EXPECT(lost == 0, "legend covers %ld data pixels", lost);

    /* Data in every corner: BEST moves the legend right of the axes, which
     * narrows the data area, and the legend's red sample is right of the frame. */
    enum { NL = 31 };
    double hx[2] = {0, 1}, hy[NL][2];
    qkt_series hs[NL];
    for (int k = 0; k < NL; k++) {
        hy[k][0] = hy[k][1] = k / (NL - 1.0);
        hs[k] = (qkt_series){.name = k == 0 ? "first" : NULL, .x = hx, .y = hy[k], .n = 2, .color = RED};
    }
    qkt_line_chart full = {.series = hs, .n_series = NL, .legend = QKT_LEGEND_NONE};
    qkt_plot_frame f0, f1;
    EXPECT(qkt_plot_lines(path_in(dir, "leg2.png"), &full, &f0, &err) == 0, "%s", err.msg);
    full.legend = QKT_LEGEND_BEST;
    EXPECT(qkt_plot_lines(path_in(dir, "leg3.png"), &full, &f1, &err) == 0, "%s", err.msg);
    EXPECT(f1.x1 < f0.x1 - 80, "legend not moved outside: data area right edge %d vs %d", f1.x1, f0.x1);
    png o = load(path_in(dir, "leg3.png"));
    long outside = 0;
    for (int yy = f1.y0; yy < f1.y0 + 40; yy++)
        for (int xx = f1.x1 + 2; xx < o.w; xx++) outside += at(&o, xx, yy) == RED;
    EXPECT(outside > 20, "no legend sample right of the axes (%ld red px)", outside);
    stbi_image_free(o.px);

    /* A title too long for one line wraps to two: the data area starts lower. */
    qkt_line_chart t1 = {.title = "short", .series = &s, .n_series = 1, .width = 400, .height = 300};
    qkt_line_chart t2 = t1;
    t2.title = "a title that is too long for one line here";
    EXPECT(qkt_plot_lines(path_in(dir, "t1.png"), &t1, &f0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_plot_lines(path_in(dir, "t2.png"), &t2, &f1, &err) == 0, "%s", err.msg);
    EXPECT(f1.y0 >= f0.y0 + 14, "wrapped title: data area top %d vs %d", f1.y0, f0.y0);
    /* Too long even for two lines: one line at the small size. */
    t2.title = "a title far too long to fit on two lines of a four hundred pixel wide chart";
    EXPECT(qkt_plot_lines(path_in(dir, "t3.png"), &t2, &f1, &err) == 0, "%s", err.msg);
    EXPECT(f1.y0 < f0.y0, "small title: data area top %d vs %d", f1.y0, f0.y0);
    stbi_image_free(a.px);
    stbi_image_free(b.px);
}

/* Heatmap: cell centres have exactly viridis((v - min) / (max - min)); NaN cells
 * are grey; the colour bar runs from viridis(1) at the top to viridis(0). */
static void test_heatmap(const char *dir) {
    enum { R = 5, C = 7 };
    double v[R * C];
    for (int i = 0; i < R * C; i++) v[i] = 3 + 2.0 * i / (R * C - 1); /* 3 .. 5 */
    v[8] = NAN;
    qkt_heatmap h = {.title = "cells", .xlabel = "key", .ylabel = "query", .v = v, .rows = R, .cols = C,
                     .bar_label = "value", .width = 600, .height = 400};
    qkt_plot_frame f;
    qkt_err err = {{0}};
    EXPECT(qkt_plot_heatmap(path_in(dir, "heat.png"), &h, &f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "heat.png"));
    EXPECT(p.w == 600 && p.h == 400, "size %d x %d", p.w, p.h);
    EXPECT(f.vmin == 3 && f.vmax == 5, "auto range %g..%g", f.vmin, f.vmax);
    check_frame(&p, &f);
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            const int px = (int)floor(f.x0 + (c + 0.5) * (f.x1 - f.x0) / C);
            const int py = (int)floor(f.y0 + (r + 0.5) * (f.y1 - f.y0) / R);
            const double x = v[r * C + c];
            const uint32_t want = isnan(x) ? QKT_PLOT_MISSING : qkt_viridis((x - 3) / 2);
            if (at(&p, px, py) != want) {
                bad++;
                EXPECT(0, "cell (%d, %d) = %06x, want %06x", r, c, at(&p, px, py) & 0xffffff, want & 0xffffff);
            }
        }
    EXPECT(bad == 0, "%d cells off", bad);
    const int bx = (f.bar_x0 + f.bar_x1) / 2, bh = f.bar_y1 - f.bar_y0;
    EXPECT(bh > 100, "bar height %d", bh);
    EXPECT(near_rgb(at(&p, bx, f.bar_y0), qkt_viridis(1), 3), "bar top %06x", at(&p, bx, f.bar_y0) & 0xffffff);
    EXPECT(near_rgb(at(&p, bx, f.bar_y1 - 1), qkt_viridis(0), 3), "bar bottom %06x",
           at(&p, bx, f.bar_y1 - 1) & 0xffffff);
    int off = 0;
    for (int j = f.bar_y0; j < f.bar_y1; j++)
        off += at(&p, bx, j) != qkt_viridis(1 - (j + 0.5 - f.bar_y0) / bh);
    EXPECT(off == 0, "%d bar rows differ from viridis", off);
    stbi_image_free(p.px);

    /* Many small cells (48 x 48 in ~330 px): the pixels either side of every cell
     * boundary belong to the cells on either side, so cells sit where they should. */
    enum { T = 48 };
    static double big[T * T];
    for (int i = 0; i < T * T; i++) big[i] = (double)i / (T * T - 1);
    qkt_heatmap hb = {.v = big, .rows = T, .cols = T, .width = 500, .height = 400};
    EXPECT(qkt_plot_heatmap(path_in(dir, "heat48.png"), &hb, &f, &err) == 0, "%s", err.msg);
    png b = load(path_in(dir, "heat48.png"));
    bad = 0;
    const double cw = (double)(f.x1 - f.x0) / T, ch = (double)(f.y1 - f.y0) / T;
    for (int r = 0; r < T; r++)
        for (int c = 0; c + 1 < T; c++) {
            const double xb = f.x0 + (c + 1) * cw, yc = f.y0 + (r + 0.5) * ch;
            bad += at(&b, (int)floor(xb - 1), (int)yc) != qkt_viridis(big[r * T + c]);
            bad += at(&b, (int)ceil(xb), (int)yc) != qkt_viridis(big[r * T + c + 1]);
            const double yb = f.y0 + (c + 1) * ch, xc = f.x0 + (r + 0.5) * cw; /* row boundaries */
            bad += at(&b, (int)xc, (int)floor(yb - 1)) != qkt_viridis(big[c * T + r]);
            bad += at(&b, (int)xc, (int)ceil(yb)) != qkt_viridis(big[(c + 1) * T + r]);
        }
    EXPECT(bad == 0 && cw > 5, "%d boundary pixels of 48 x 48 cells off (cell %.2f px)", bad, cw);
    stbi_image_free(b.px);

    /* Fixed range 0..1 (attention): values outside clamp to the ends. */
    double a[4] = {0, 0.25, 1, 2};
    qkt_heatmap h2 = {.v = a, .rows = 2, .cols = 2, .vmin = 0, .vmax = 1};
    EXPECT(qkt_plot_heatmap(path_in(dir, "heat2.png"), &h2, &f, &err) == 0, "%s", err.msg);
    png q = load(path_in(dir, "heat2.png"));
    EXPECT(q.w == 640 && q.h == 560, "default size %d x %d", q.w, q.h);
    for (int i = 0; i < 4; i++) {
        const int px = (int)floor(f.x0 + (i % 2 + 0.5) * (f.x1 - f.x0) / 2);
        const int py = (int)floor(f.y0 + (i / 2 + 0.5) * (f.y1 - f.y0) / 2);
        EXPECT(at(&q, px, py) == qkt_viridis(a[i]), "fixed-range cell %d = %06x", i, at(&q, px, py) & 0xffffff);
    }
    stbi_image_free(q.px);
}

static void test_heatmap_grid(const char *dir) {
    enum { NP = 6, T = 4 };
    double v[NP][T * T];
    qkt_heatmap panels[NP];
    char cap[NP][16];
    for (int k = 0; k < NP; k++) {
        for (int i = 0; i < T * T; i++) v[k][i] = k / 5.0;
        snprintf(cap[k], sizeof cap[k], "L%d H%d", k / 3, k % 3);
        panels[k] = (qkt_heatmap){.title = cap[k], .v = v[k], .rows = T, .cols = T};
    }
    qkt_heatmap_grid g = {.title = "grid", .xlabel = "key", .ylabel = "query", .panels = panels,
                          .n_panels = NP, .grid_cols = 3, .vmin = 0, .vmax = 1, .bar_label = "p"};
    qkt_plot_frame f[NP];
    qkt_err err = {{0}};
    EXPECT(qkt_plot_heatmap_grid(path_in(dir, "grid.png"), &g, f, &err) == 0, "%s", err.msg);
    png p = load(path_in(dir, "grid.png"));
    EXPECT(p.w == f[0].width && p.h == f[0].height && p.w > 3 * 160 && p.h > 2 * 160, "size %d x %d", p.w, p.h);
    for (int k = 0; k < NP; k++) {
        const int cx = (f[k].x0 + f[k].x1) / 2, cy = (f[k].y0 + f[k].y1) / 2;
        EXPECT(at(&p, cx, cy) == qkt_viridis(k / 5.0), "panel %d centre %06x", k, at(&p, cx, cy) & 0xffffff);
        EXPECT(k % 3 == 0 || f[k].x0 > f[k - 1].x1, "panel %d left of panel %d", k - 1, k);
    }
    EXPECT(f[3].y0 > f[0].y1, "second grid row below the first");
    EXPECT(near_rgb(at(&p, f[0].bar_x0 + 5, f[0].bar_y0), qkt_viridis(1), 3), "shared bar top");
    stbi_image_free(p.px);
}

static void test_errors(const char *dir) {
    double x[2] = {0, 1};
    qkt_series s = {.x = x, .y = x, .n = 2};
    qkt_line_chart c = {.series = &s, .n_series = 1};
    qkt_heatmap h = {.v = x, .rows = 1, .cols = 2};
    qkt_heatmap_grid g = {.panels = &h, .n_panels = 1};
    const char *bad = "/nonexistent-qkt-dir/sub/plot.png";
    qkt_err err = {{0}};
    EXPECT(qkt_plot_lines(bad, &c, NULL, &err) == -1, "unwritable path accepted");
    EXPECT(strstr(err.msg, bad) != NULL, "message does not name the path: %s", err.msg);
    err.msg[0] = 0;
    EXPECT(qkt_plot_heatmap(bad, &h, NULL, &err) == -1 && strstr(err.msg, bad), "heatmap: %s", err.msg);
    err.msg[0] = 0;
    EXPECT(qkt_plot_heatmap_grid(bad, &g, NULL, &err) == -1 && strstr(err.msg, bad), "grid: %s", err.msg);
    err.msg[0] = 0;
    EXPECT(qkt_plot_lines(dir, &c, NULL, &err) == -1 && strstr(err.msg, dir), "a directory as path: %s", err.msg);
    /* err may be NULL. */
    EXPECT(qkt_plot_lines(bad, &c, NULL, NULL) == -1, "NULL err");
}

/* Colours and ticks against independent values. */
static void test_colours_and_ticks(void) {
    EXPECT(qkt_viridis(0) == QKT_RGB(68, 1, 84), "viridis(0) %06x", qkt_viridis(0) & 0xffffff);
    EXPECT(qkt_viridis(0.5) == QKT_RGB(33, 145, 140), "viridis(0.5) %06x", qkt_viridis(0.5) & 0xffffff);
    EXPECT(qkt_viridis(1) == QKT_RGB(253, 231, 37), "viridis(1) %06x", qkt_viridis(1) & 0xffffff);
    EXPECT(qkt_viridis(-3) == qkt_viridis(0) && qkt_viridis(7) == qkt_viridis(1), "viridis clamps");
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < i; j++) EXPECT(qkt_palette(i) != qkt_palette(j), "palette %d == %d", i, j);
    EXPECT(qkt_palette(8) == qkt_palette(0) && qkt_palette(0) != 0, "palette cycles");

    qkt__plot_ticks t;
    qkt__plot_ticks_make(&t, 0, 1, 0, 5);
    EXPECT(t.n == 6 && t.v[1] == 0.2 && !strcmp(t.label[0], "0.0") && !strcmp(t.label[5], "1.0"),
           "0..1: n %d, %s .. %s", t.n, t.label[0], t.label[t.n - 1]);
    qkt__plot_ticks_make(&t, -3.7, 2105, 0, 6);
    EXPECT(t.n == 5 && t.v[0] == 0 && t.v[4] == 2000 && !strcmp(t.label[1], "500"), "0..2105: n %d, %s", t.n,
           t.label[1]);
    qkt__plot_ticks_make(&t, -0.031, 0.012, 0, 5);
    EXPECT(t.n == 5 && !strcmp(t.label[0], "-0.03") && !strcmp(t.label[3], "0.00"), "small: %s %s", t.label[0],
           t.label[3]);
    qkt__plot_ticks_make(&t, 0, 4e-5, 0, 4);
    EXPECT(t.n == 5 && !strcmp(t.label[1], "1e-5"), "tiny: %s", t.label[1]);
    qkt__plot_ticks_make(&t, 0.8e-3, 2e3, 1, 8);
    /* One label style per axis: 1e-3 forces 1eK on all of them. */
    EXPECT(t.n == 7 && !strcmp(t.label[0], "1e-3") && !strcmp(t.label[1], "1e-2") && !strcmp(t.label[3], "1e0") &&
               !strcmp(t.label[6], "1e3") && t.n_minor > 40,
           "log decades: n %d %s %s %s %s", t.n, t.label[0], t.label[1], t.label[3], t.label[t.n - 1]);
    qkt__plot_ticks_make(&t, 0.008, 2e3, 1, 8);
    EXPECT(t.n == 6 && !strcmp(t.label[0], "0.01") && !strcmp(t.label[2], "1") && !strcmp(t.label[5], "1000"),
           "plain decades: n %d %s %s %s", t.n, t.label[0], t.label[2], t.label[t.n - 1]);
    qkt__plot_ticks_make(&t, 1e-9, 1e9, 1, 6);
    EXPECT(t.n >= 4 && t.n <= 7 && t.n_minor == 0, "18 decades: n %d", t.n);
    qkt__plot_ticks_make(&t, 3, 40, 1, 8);
    EXPECT(t.n == 3 && !strcmp(t.label[0], "5") && !strcmp(t.label[2], "20"), "1-2-5 on log: n %d %s", t.n,
           t.label[0]);
    qkt__plot_ticks_make(&t, 0.9, 1.1, 1, 8);
    EXPECT(t.n >= 2 && !strcmp(t.label[0], "0.90"), "narrow log range falls back to linear: %s", t.label[0]);
}

int main(void) {
    const char *dir = qkt_test_tmpdir("plot");
    test_colours_and_ticks();
    test_horizontal_line(dir);
    test_dashes_markers(dir);
    test_loglog_line(dir);
    test_band(dir);
    test_nan(dir);
    test_legend_placement(dir);
    test_heatmap(dir);
    test_heatmap_grid(dir);
    test_errors(dir);
    if (getenv("QKT_KEEP_PLOTS")) { /* qkt_test_finish removes dir unless QKT_TEST_KEEP is set */
        printf("plots kept in %s\n", dir);
        setenv("QKT_TEST_KEEP", "1", 1);
    }
    return qkt_test_finish();
}
