/* Internals of the plot module: an RGB raster, anti-aliased coverage masks,
 * stb_easy_font text, tick selection and PNG output. Shared by plot_line.c and
 * plot_heatmap.c; not part of the public API, hence the qkt__plot_ (double
 * underscore) prefix. */
#ifndef QKT_PLOT_INTERNAL_H
#define QKT_PLOT_INTERNAL_H

#include <stdint.h>

#include "qkt_plot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Colours used by every chart. */
#define QKT_PLOT_BG QKT_RGB(255, 255, 255)
#define QKT_PLOT_INK QKT_RGB(34, 34, 34)     /* text, ticks */
#define QKT_PLOT_FRAME QKT_RGB(68, 68, 68)   /* axis frame */
#define QKT_PLOT_GRID QKT_RGB(232, 232, 232) /* grid lines */
#define QKT_PLOT_MISSING QKT_RGB(200, 200, 200)

/* An image: (h, w, 3) bytes, row-major, row 0 at the top. */
typedef struct qkt__plot_img {
    int w, h;
    uint8_t *px;
} qkt__plot_img;

int qkt__plot_img_init(qkt__plot_img *im, int w, int h, qkt_err *err);
void qkt__plot_img_free(qkt__plot_img *im);
/* px = px * (1 - a) + c * a, a in [0, 1]; outside the image: ignored. */
void qkt__plot_blend(qkt__plot_img *im, int x, int y, uint32_t c, double a);
uint32_t qkt__plot_get(const qkt__plot_img *im, int x, int y);
/* Fill the pixels [x0, x1) x [y0, y1) (clipped) with colour c at opacity a. */
void qkt__plot_fill(qkt__plot_img *im, int x0, int y0, int x1, int y1, uint32_t c, double a);
/* Write as PNG; -1 with "cannot write PNG '<path>': <reason>" on failure. */
int qkt__plot_png_write(const qkt__plot_img *im, const char *path, qkt_err *err);

/* A coverage mask over the pixel rectangle [x0, x0+w) x [y0, y0+h): shapes are
 * rasterised into it with max(), then composited once, so overlapping segments
 * of one polyline never blend twice. */
typedef struct qkt__plot_mask {
    int x0, y0, w, h;
    float *a;
} qkt__plot_mask;

int qkt__plot_mask_init(qkt__plot_mask *m, int x0, int y0, int x1, int y1, qkt_err *err);
void qkt__plot_mask_free(qkt__plot_mask *m);
void qkt__plot_mask_clear(qkt__plot_mask *m);
/* Segment a-b of width 2*hw with round caps; coverage per pixel centre p is
 * clamp(hw + 0.5 - dist(p, ab), 0, 1). dash_on > 0 makes it dashed: arc length s
 * (s0 at a) is drawn where fmod(s, dash_on + dash_off) < dash_on. Returns the
 * segment's length so a polyline can carry s on. */
double qkt__plot_mask_segment(qkt__plot_mask *m, double ax, double ay, double bx, double by, double hw,
                              double dash_on, double dash_off, double s0);
/* Filled disc of radius r at (cx, cy). */
void qkt__plot_mask_disc(qkt__plot_mask *m, double cx, double cy, double r);
/* The region between two straight edges over the column span of xa..xb:
 * at column centre u the rows between lerp(ya0, yb0) and lerp(ya1, yb1). */
void qkt__plot_mask_band(qkt__plot_mask *m, double xa, double ya0, double ya1, double xb, double yb0,
                         double yb1);
/* Blend colour c into the image with opacity alpha * coverage. */
void qkt__plot_mask_composite(const qkt__plot_mask *m, qkt__plot_img *im, uint32_t c, double alpha);

/* Text in stb_easy_font, scaled by an integer-ish factor; glyphs are 7 units
 * high above the baseline (descenders to 9). Anchor (x, y) with alignment;
 * rotated = 1 reads bottom to top (for y labels: then width runs along -y). */
enum { QKT_PLOT_LEFT = 0, QKT_PLOT_CENTER = 1, QKT_PLOT_RIGHT = 2 };
enum { QKT_PLOT_TOP = 0, QKT_PLOT_MIDDLE = 1, QKT_PLOT_BASELINE = 2 };
typedef struct qkt__plot_font {
    double scale;
    int bold;
} qkt__plot_font;
/* f, or f at scale 1 when s would be wider than max_w at f's scale (long titles). */
qkt__plot_font qkt__plot_fit(const char *s, qkt__plot_font f, double max_w);
/* Width of the visible text in px. */
double qkt__plot_text_width(const char *s, qkt__plot_font f);
/* Cap height in px (7 units). */
double qkt__plot_text_height(qkt__plot_font f);
void qkt__plot_text(qkt__plot_img *im, double x, double y, const char *s, qkt__plot_font f, uint32_t c,
                    int halign, int valign, int rotated);

/* Ticks with their labels for one axis. */
#define QKT_PLOT_MAX_TICKS 32
typedef struct qkt__plot_ticks {
    int n, n_minor;
    double v[QKT_PLOT_MAX_TICKS];
    double minor[4 * QKT_PLOT_MAX_TICKS];
    char label[QKT_PLOT_MAX_TICKS][24];
} qkt__plot_ticks;
void qkt__plot_ticks_make(qkt__plot_ticks *t, double lo, double hi, int log, int target);
/* Widest label in px. */
double qkt__plot_ticks_max_width(const qkt__plot_ticks *t, qkt__plot_font f);

/* Resolve an axis range: fixed ends kept, auto ends from data lo..hi with a 5 %
 * margin (in log10 on log axes). Degenerate ranges are widened. */
void qkt__plot_axis_range(const qkt_axis *ax, double dlo, double dhi, double *lo, double *hi);

#ifdef __cplusplus
}
#endif
#endif
