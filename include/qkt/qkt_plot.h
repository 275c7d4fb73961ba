/* qkt plot: line charts and heatmaps rendered to PNG (stb_image_write), text in
 * stb_easy_font. A tiny, stb-like surface: fill a struct, call one function, check
 * the status.
 *
 *     double x[] = {4, 8, 16}, y[] = {2.1, 2.8, 4.0}, ref[] = {2, 2.83, 4};
 *     qkt_series s[] = {{.name = "measured", .x = x, .y = y, .n = 3, .marker = QKT_MARK_CIRCLE},
 *                       {.name = "sqrt(d_k)", .x = x, .y = ref, .n = 3, .dashed = 1,
 *                        .color = QKT_RGB(60, 60, 60)}};
 *     qkt_line_chart c = {.title = "logit std at init", .x = {.label = "d_k", .log = 1},
 *                         .y = {.label = "std", .log = 1}, .series = s, .n_series = 2};
 *     if (qkt_plot_lines("runs/x/logit_std.png", &c, NULL, &err)) fprintf(stderr, "%s\n", err.msg);
 *
 * Every call returns 0, or -1 with a one-line message in err (an unwritable path,
 * or an image too small for its labels). Bad data (NaN, Inf, non-positive values
 * on a log axis) is skipped, never a crash; API misuse (n < 0, NULL arrays with
 * n > 0, images under 200 x 150) stops with QKT_CHECK. No global state: charts
 * can be drawn from several threads at once.
 *
 * Text is stb_easy_font at 2x (titles bold; a title too wide wraps to two lines,
 * else drops to 1x). Examples: docs/img/plot_examples/.
 *
 * Pixel convention (used by the tests): the data area is the pixel rectangle
 * [x0, x1) x [y0, y1); an axis maps its range [min, max] linearly (or linearly in
 * log10) onto the continuous coordinates x0 .. x1 (y: y1 .. y0, upwards), so the
 * pixel (i, j) covers [i, i+1) x [j, j+1). The axis frame is drawn just outside:
 * columns x0-1 and x1, rows y0-1 and y1.
 */
#ifndef QKT_PLOT_H
#define QKT_PLOT_H

#include <stdint.h>

#include "qkt_autograd.h" /* qkt_err */

#ifdef __cplusplus
extern "C" {
#endif

/* Colours are 0xRRGGBB with bit 24 set, so that 0 (a zero-initialised field) can
 * mean "the default": the palette colour of the series' index. */
#define QKT_RGB(r, g, b) \
    (0x1000000u | ((uint32_t)(r) & 255u) << 16 | ((uint32_t)(g) & 255u) << 8 | ((uint32_t)(b) & 255u))
/* The qualitative palette (8 colours, tab10 without grey and olive), cycling. */
uint32_t qkt_palette(int i);
/* viridis(t) for t in [0, 1] (clamped), as QKT_RGB: linear interpolation between
 * 11 samples of the published colormap. NaN gives the "missing" grey. */
uint32_t qkt_viridis(double t);

enum { QKT_MARK_NONE = 0, QKT_MARK_CIRCLE = 1 };
enum {
    QKT_LEGEND_BEST = 0, /* the inside corner covering the fewest data pixels; outside
                          * (right of the axes) when every corner would cover data */
    QKT_LEGEND_NONE,
    QKT_LEGEND_UPPER_RIGHT,
    QKT_LEGEND_UPPER_LEFT,
    QKT_LEGEND_LOWER_LEFT,
    QKT_LEGEND_LOWER_RIGHT,
    QKT_LEGEND_OUTSIDE,  /* right of the axes, top-aligned */
};

/* One curve: points (x[i], y[i]), i < n, joined in order; a non-finite point (or
 * a non-positive one on a log axis) breaks the line. */
typedef struct qkt_series {
    const char *name;       /* legend entry; NULL or "" = not in the legend */
    const double *x, *y;    /* (n,) each */
    int n;
    const double *lo, *hi;  /* optional band (n,) each: filled lo..hi in the series colour, 20 % opaque */
    uint32_t color;         /* 0 = qkt_palette(series index); else QKT_RGB(...) */
    double width;           /* line width in px; 0 = 2 */
    int dashed;             /* 1 = dashed line (reference lines) */
    int no_line;            /* 1 = markers only */
    int marker;             /* QKT_MARK_NONE / QKT_MARK_CIRCLE */
} qkt_series;

/* An axis. Each end of the range is auto (data range plus a 5 % margin, in log10
 * space on a log axis) when it is NaN or when min == max (so a zero-initialised
 * axis is fully automatic); otherwise it is fixed. */
typedef struct qkt_axis {
    const char *label;
    int log;                /* 0 linear (1-2-5 ticks), 1 log10 (decade ticks) */
    double min, max;
} qkt_axis;

typedef struct qkt_line_chart {
    const char *title;
    qkt_axis x, y;
    const qkt_series *series;
    int n_series;
    int width, height;      /* image size in px; 0 = 800 x 560 */
    int legend;             /* QKT_LEGEND_* */
    int no_grid;            /* 1 = no grid lines at the major ticks */
} qkt_line_chart;

/* Where the data ended up (optional output of the plot calls): the data area
 * [x0, x1) x [y0, y1) in pixels and the axis ranges actually used; for heatmaps
 * the colour bar's rectangle and value range too (bar: vmax at the top row). */
typedef struct qkt_plot_frame {
    int width, height;
    int x0, y0, x1, y1;
    double xmin, xmax, ymin, ymax;
    int bar_x0, bar_y0, bar_x1, bar_y1;
    double vmin, vmax;
} qkt_plot_frame;

/* Render a line chart to a PNG file. */
int qkt_plot_lines(const char *path, const qkt_line_chart *c, qkt_plot_frame *out, qkt_err *err);

/* A matrix v (rows, cols), row-major, drawn like an image: row 0 at the top, each
 * cell filled with viridis((v - vmin) / (vmax - vmin)); NaN cells are grey. */
typedef struct qkt_heatmap {
    const char *title;      /* in a grid: the panel's caption, e.g. "L0 H1" */
    const char *xlabel, *ylabel;
    const double *v;
    int rows, cols;
    double vmin, vmax;      /* colour range; min..max of the finite values unless vmin < vmax */
    const char *bar_label;  /* label beside the colour bar; optional */
    int width, height;      /* 0 = 640 x 560 */
} qkt_heatmap;

int qkt_plot_heatmap(const char *path, const qkt_heatmap *h, qkt_plot_frame *out, qkt_err *err);

/* Small heatmaps in a grid (e.g. layers x heads) with one shared colour bar.
 * Panel i goes to grid row i / grid_cols, column i % grid_cols; its title is the
 * caption; its own vmin/vmax/labels/size are ignored. out (optional, n_panels
 * entries) receives each panel's frame (bar fields shared). */
typedef struct qkt_heatmap_grid {
    const char *title;
    const char *xlabel, *ylabel;  /* shared, e.g. "key" / "query" */
    const qkt_heatmap *panels;
    int n_panels;
    int grid_cols;                /* panels per row; 0 = ceil(sqrt(n_panels)) */
    double vmin, vmax;            /* shared colour range, as in qkt_heatmap */
    const char *bar_label;
    int panel_px;                 /* side of one panel in px; 0 = 160 */
} qkt_heatmap_grid;

int qkt_plot_heatmap_grid(const char *path, const qkt_heatmap_grid *g, qkt_plot_frame *out,
                          qkt_err *err);

/* ---------------------------------------------------------------- report.html
 * An interactive page: qkt's style and script around `json` (the charts; format in
 * docs/ablate.md, "report.html"), one self-contained file that opens from disk with no
 * network. Returns the page (qkt_malloc'd, NUL-terminated; *len its length if len is
 * not NULL); the caller writes it. */
char *qkt_plot_html_page(const char *title, const char *json, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
