/* Internals of the plot module: an RGB raster, anti-aliased coverage masks,
 * stb_easy_font text, tick selection and PNG output. Shared by plot_line.c and
 * plot_heatmap.c; not part of the public API. */
#ifndef QKT_PLOT_INTERNAL_H
#define QKT_PLOT_INTERNAL_H

#include <stdint.h>

#include "qkt_plot.h"

/* Colours used by every chart. */
#define PLOT_BG QKT_RGB(255, 255, 255)
#define PLOT_INK QKT_RGB(34, 34, 34)      /* text, ticks */
#define PLOT_FRAME QKT_RGB(68, 68, 68)    /* axis frame */
#define PLOT_GRID QKT_RGB(232, 232, 232)  /* grid lines */
#define PLOT_MISSING QKT_RGB(200, 200, 200)

/* An image: (h, w, 3) bytes, row-major, row 0 at the top. */
typedef struct plot_img {
    int w, h;
    uint8_t *px;
} plot_img;

int plot_img_init(plot_img *im, int w, int h, qkt_err *err);
void plot_img_free(plot_img *im);
/* px = px * (1 - a) + c * a, a in [0, 1]; outside the image: ignored. */
void plot_blend(plot_img *im, int x, int y, uint32_t c, double a);
uint32_t plot_get(const plot_img *im, int x, int y);
/* Fill the pixels [x0, x1) x [y0, y1) (clipped) with colour c at opacity a. */
void plot_fill(plot_img *im, int x0, int y0, int x1, int y1, uint32_t c, double a);
/* Write as PNG; -1 with "cannot write PNG '<path>': <reason>" on failure. */
int plot_png_write(const plot_img *im, const char *path, qkt_err *err);

/* A coverage mask over the pixel rectangle [x0, x0+w) x [y0, y0+h): shapes are
 * rasterised into it with max(), then composited once, so overlapping segments
 * of one polyline never blend twice. */
typedef struct plot_mask {
    int x0, y0, w, h;
    float *a;
} plot_mask;

int plot_mask_init(plot_mask *m, int x0, int y0, int x1, int y1, qkt_err *err);
void plot_mask_free(plot_mask *m);
void plot_mask_clear(plot_mask *m);
/* Segment a-b of width 2*hw with round caps; coverage per pixel centre p is
 * clamp(hw + 0.5 - dist(p, ab), 0, 1). dash_on > 0 makes it dashed: arc length s
 * (s0 at a) is drawn where fmod(s, dash_on + dash_off) < dash_on. Returns the
 * segment's length so a polyline can carry s on. */
double plot_mask_segment(plot_mask *m, double ax, double ay, double bx, double by, double hw,
                         double dash_on, double dash_off, double s0);
/* Filled disc of radius r at (cx, cy). */
void plot_mask_disc(plot_mask *m, double cx, double cy, double r);
/* The region between two straight edges over the column span of xa..xb:
 * at column centre u the rows between lerp(ya0, yb0) and lerp(ya1, yb1). */
void plot_mask_band(plot_mask *m, double xa, double ya0, double ya1, double xb, double yb0,
                    double yb1);
/* Blend colour c into the image with opacity alpha * coverage. */
void plot_mask_composite(const plot_mask *m, plot_img *im, uint32_t c, double alpha);

/* Text in stb_easy_font, scaled by an integer-ish factor; glyphs are 7 units
 * high above the baseline (descenders to 9). Anchor (x, y) with alignment;
 * rotated = 1 reads bottom to top (for y labels: then width runs along -y). */
enum { PLOT_LEFT = 0, PLOT_CENTER = 1, PLOT_RIGHT = 2 };
enum { PLOT_TOP = 0, PLOT_MIDDLE = 1, PLOT_BASELINE = 2 };
typedef struct plot_font {
    double scale;
    int bold;
} plot_font;
/* f, or f at scale 1 when s would be wider than max_w at f's scale (long titles). */
plot_font plot_fit(const char *s, plot_font f, double max_w);
/* Width of the visible text in px. */
double plot_text_width(const char *s, plot_font f);
/* Cap height in px (7 units). */
double plot_text_height(plot_font f);
void plot_text(plot_img *im, double x, double y, const char *s, plot_font f, uint32_t c, int halign,
               int valign, int rotated);

/* Ticks. linear: 1-2-5 steps with at most `target` intervals over [lo, hi];
 * returns the count written to t (<= max) and the step. */
int plot_ticks_linear(double lo, double hi, int target, double *t, int max, double *step);
/* Label for a linear tick at value v with spacing step ("0.25", "1e-5", "300"). */
void plot_label_linear(double v, double step, char *buf, int len);
/* log10 ticks over [lo, hi] (values > 0): decades (every k-th when many), else
 * 1-2-5 multiples, else (a narrow range) linear ticks, then *lin_step is their
 * step and the labels are plot_label_linear's; otherwise *lin_step = 0. Majors
 * in t, minor ticks (unlabelled) in minor. Returns the major count. */
int plot_ticks_log(double lo, double hi, int target, double *t, int max, double *minor,
                   int max_minor, int *n_minor, double *lin_step);
/* Label of a log-axis tick: plain "1", "10", "0.01", "500", or with sci = 1
 * "1e-3", "2e5", "1e0" (one style per axis, chosen by plot_ticks_make). */
void plot_label_log(double v, int sci, char *buf, int len);

/* A title: one line at the given font, else split at a space into two lines
 * that fit, else one line at scale 1. Lines longer than 255 chars are cut. */
typedef struct plot_title {
    char line[2][256];
    int n;
    plot_font f;
} plot_title;
void plot_title_layout(plot_title *t, const char *s, plot_font f, double max_w);
/* Height in px (0 for no title). */
double plot_title_height(const plot_title *t);
/* Centred on cx, top at y. */
void plot_title_draw(plot_img *im, const plot_title *t, double cx, double y);

/* Ticks with their labels for one axis. */
#define PLOT_MAX_TICKS 32
typedef struct plot_ticks {
    int n, n_minor;
    double v[PLOT_MAX_TICKS];
    double minor[4 * PLOT_MAX_TICKS];
    char label[PLOT_MAX_TICKS][24];
} plot_ticks;
void plot_ticks_make(plot_ticks *t, double lo, double hi, int log, int target);
/* Widest label in px. */
double plot_ticks_max_width(const plot_ticks *t, plot_font f);

/* Resolve an axis range: fixed ends kept, auto ends from data lo..hi with a 5 %
 * margin (in log10 on log axes). Degenerate ranges are widened. */
void plot_axis_range(const qkt_axis *ax, double dlo, double dhi, double *lo, double *hi);

#endif
