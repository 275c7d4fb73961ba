/* The plot module's raster: an RGB image, anti-aliased coverage masks (lines,
 * discs, bands), stb_easy_font text and PNG output through stb_image_write. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_internal.h"
#include "stb_image_write.h" /* implementation in libstb */

/* stb_easy_font is header-only with static functions: this is its one user.
 * Its unused helpers and brace style are stb's, not ours. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-braces"
#include "stb_easy_font.h"
#pragma GCC diagnostic pop

/* ---------------------------------------------------------------- colours */

uint32_t qkt_palette(int i) {
    /* tab10 (matplotlib's default cycle) without its grey and olive, which read
     * as "reference" or clash with the viridis yellow-green. */
    static const uint32_t pal[8] = {
        QKT_RGB(31, 119, 180), QKT_RGB(255, 127, 14), QKT_RGB(44, 160, 44),  QKT_RGB(214, 39, 40),
        QKT_RGB(148, 103, 189), QKT_RGB(140, 86, 75), QKT_RGB(227, 119, 194), QKT_RGB(23, 190, 207),
    };
    return pal[((i % 8) + 8) % 8];
}

uint32_t qkt_viridis(double t) {
    /* viridis (van der Walt & Smith 2015) sampled at t = 0, 0.1, ..., 1. */
    static const uint8_t v[11][3] = {
        {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
        {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
    };
    if (isnan(t)) return QKT_PLOT_MISSING;
    if (t < 0) t = 0;
    if (t > 1) t = 1;
    double u = t * 10;
    int k = (int)u;
    if (k > 9) k = 9;
    double f = u - k;
    uint8_t c[3];
    for (int i = 0; i < 3; i++) c[i] = (uint8_t)lround(v[k][i] + f * (v[k + 1][i] - v[k][i]));
    return QKT_RGB(c[0], c[1], c[2]);
}

/* ---------------------------------------------------------------- image */

int qkt__plot_img_init(qkt__plot_img *im, int w, int h, qkt_err *err) {
    QKT_CHECK(w > 0 && h > 0 && w <= 16384 && h <= 16384, "image size %d x %d", w, h);
    im->w = w;
    im->h = h;
    im->px = malloc((size_t)w * h * 3); /* recoverable: a failed plot is reported, the report goes on */
    if (!im->px) return qkt_err_set(err, "plot: out of memory for a %d x %d image", w, h);
    memset(im->px, 255, (size_t)w * h * 3);
    return 0;
}

void qkt__plot_img_free(qkt__plot_img *im) {
    free(im->px);
    im->px = NULL;
}

void qkt__plot_blend(qkt__plot_img *im, int x, int y, uint32_t c, double a) {
    if (x < 0 || y < 0 || x >= im->w || y >= im->h || !(a > 0)) return;
    if (a > 1) a = 1;
    uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
    const int rgb[3] = {(int)(c >> 16 & 255), (int)(c >> 8 & 255), (int)(c & 255)};
    for (int i = 0; i < 3; i++) p[i] = (uint8_t)lround(p[i] * (1 - a) + rgb[i] * a);
}

uint32_t qkt__plot_get(const qkt__plot_img *im, int x, int y) {
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return 0;
    const uint8_t *p = im->px + ((size_t)y * im->w + x) * 3;
    return QKT_RGB(p[0], p[1], p[2]);
}

void qkt__plot_fill(qkt__plot_img *im, int x0, int y0, int x1, int y1, uint32_t c, double a) {
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > im->w) x1 = im->w;
    if (y1 > im->h) y1 = im->h;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) qkt__plot_blend(im, x, y, c, a);
}

typedef struct png_sink {
    FILE *f;
    int failed;
} png_sink;

static void png_write_cb(void *ctx, void *data, int size) {
    png_sink *s = ctx;
    if (fwrite(data, 1, (size_t)size, s->f) != (size_t)size) s->failed = errno ? errno : EIO;
}

int qkt__plot_png_write(const qkt__plot_img *im, const char *path, qkt_err *err) {
    /* Our own FILE so a failure can name the path and the reason (stb only says 0). */
    FILE *f = fopen(path, "wb");
    if (!f) return qkt_err_set(err, "cannot write PNG '%s': %s", path, strerror(errno));
    png_sink s = {f, 0};
    errno = 0;
    int ok = stbi_write_png_to_func(png_write_cb, &s, im->w, im->h, 3, im->px, im->w * 3);
    if (fclose(f) != 0 && !s.failed) s.failed = errno ? errno : EIO;
    if (!ok || s.failed) {
        remove(path);
        return qkt_err_set(err, "cannot write PNG '%s': %s", path,
                           s.failed ? strerror(s.failed) : "PNG encoder failed");
    }
    return 0;
}

/* ---------------------------------------------------------------- masks */

int qkt__plot_mask_init(qkt__plot_mask *m, int x0, int y0, int x1, int y1, qkt_err *err) {
    m->x0 = x0;
    m->y0 = y0;
    m->w = x1 > x0 ? x1 - x0 : 0;
    m->h = y1 > y0 ? y1 - y0 : 0;
    m->a = calloc((size_t)m->w * m->h + 1, sizeof(float));
    if (!m->a) return qkt_err_set(err, "plot: out of memory for a %d x %d mask", m->w, m->h);
    return 0;
}

void qkt__plot_mask_free(qkt__plot_mask *m) {
    free(m->a);
    m->a = NULL;
}

void qkt__plot_mask_clear(qkt__plot_mask *m) { memset(m->a, 0, ((size_t)m->w * m->h + 1) * sizeof(float)); }

static inline void mask_max(qkt__plot_mask *m, int x, int y, double c) {
    float *p = &m->a[(size_t)(y - m->y0) * m->w + (x - m->x0)];
    if (c > *p) *p = (float)(c > 1 ? 1 : c);
}

/* Liang-Barsky: clip the parameter range [t0, t1] of a + t (b - a) to the box. */
static int clip_segment(double ax, double ay, double bx, double by, double xmin, double ymin,
                        double xmax, double ymax, double *t0, double *t1) {
    const double dx = bx - ax, dy = by - ay;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {ax - xmin, xmax - ax, ay - ymin, ymax - ay};
    *t0 = 0;
    *t1 = 1;
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0) {
            if (q[i] < 0) return 0;
        } else {
            double r = q[i] / p[i];
            if (p[i] < 0) {
                if (r > *t1) return 0;
                if (r > *t0) *t0 = r;
            } else {
                if (r < *t0) return 0;
                if (r < *t1) *t1 = r;
            }
        }
    }
    return 1;
}

double qkt__plot_mask_segment(qkt__plot_mask *m, double ax, double ay, double bx, double by, double hw,
                              double dash_on, double dash_off, double s0) {
    const double full = hypot(bx - ax, by - ay);
    const double pad = hw + 1;
    double t0, t1;
    if (!clip_segment(ax, ay, bx, by, m->x0 - pad, m->y0 - pad, m->x0 + m->w + pad,
                      m->y0 + m->h + pad, &t0, &t1))
        return full;
    /* Work on the clipped piece c-d; arc length at c is s0 + t0 * |ab|. */
    const double cx = ax + t0 * (bx - ax), cy = ay + t0 * (by - ay);
    const double dx = ax + t1 * (bx - ax), dy = ay + t1 * (by - ay);
    const double sc = s0 + t0 * full;
    const double ux = dx - cx, uy = dy - cy, len2 = ux * ux + uy * uy, len = sqrt(len2);
    int i0 = (int)floor(fmin(cx, dx) - pad), i1 = (int)ceil(fmax(cx, dx) + pad);
    int j0 = (int)floor(fmin(cy, dy) - pad), j1 = (int)ceil(fmax(cy, dy) + pad);
    if (i0 < m->x0) i0 = m->x0;
    if (j0 < m->y0) j0 = m->y0;
    if (i1 > m->x0 + m->w) i1 = m->x0 + m->w;
    if (j1 > m->y0 + m->h) j1 = m->y0 + m->h;
    const double period = dash_on + dash_off;
    for (int j = j0; j < j1; j++) {
        for (int i = i0; i < i1; i++) {
            const double px = i + 0.5 - cx, py = j + 0.5 - cy;
            double t = len2 > 0 ? (px * ux + py * uy) / len2 : 0;
            t = t < 0 ? 0 : (t > 1 ? 1 : t);
            const double d = hypot(px - t * ux, py - t * uy);
            const double cov = hw + 0.5 - d;
            if (cov <= 0) continue;
            if (dash_on > 0 && fmod(sc + t * len, period) >= dash_on) continue;
            mask_max(m, i, j, cov);
        }
    }
    return full;
}

void qkt__plot_mask_disc(qkt__plot_mask *m, double cx, double cy, double r) {
    int i0 = (int)floor(cx - r - 1), i1 = (int)ceil(cx + r + 1);
    int j0 = (int)floor(cy - r - 1), j1 = (int)ceil(cy + r + 1);
    if (i0 < m->x0) i0 = m->x0;
    if (j0 < m->y0) j0 = m->y0;
    if (i1 > m->x0 + m->w) i1 = m->x0 + m->w;
    if (j1 > m->y0 + m->h) j1 = m->y0 + m->h;
    for (int j = j0; j < j1; j++)
        for (int i = i0; i < i1; i++) {
            const double cov = r + 0.5 - hypot(i + 0.5 - cx, j + 0.5 - cy);
            if (cov > 0) mask_max(m, i, j, cov);
        }
}

void qkt__plot_mask_band(qkt__plot_mask *m, double xa, double ya0, double ya1, double xb, double yb0,
                         double yb1) {
    if (xb < xa) { /* order the edge left to right */
        double t;
        t = xa, xa = xb, xb = t;
        t = ya0, ya0 = yb0, yb0 = t;
        t = ya1, ya1 = yb1, yb1 = t;
    }
    if (!(xb > xa)) return;
    /* Columns whose centre u lies in [xa, xb): u - 0.5 in [xa - 0.5, xb - 0.5). */
    int i0 = (int)ceil(xa - 0.5), i1 = (int)ceil(xb - 0.5);
    if (i0 < m->x0) i0 = m->x0;
    if (i1 > m->x0 + m->w) i1 = m->x0 + m->w;
    for (int i = i0; i < i1; i++) {
        const double f = (i + 0.5 - xa) / (xb - xa);
        double top = ya0 + f * (yb0 - ya0), bot = ya1 + f * (yb1 - ya1);
        if (top > bot) {
            double t = top;
            top = bot, bot = t;
        }
        int j0 = (int)floor(top), j1 = (int)ceil(bot);
        if (j0 < m->y0) j0 = m->y0;
        if (j1 > m->y0 + m->h) j1 = m->y0 + m->h;
        for (int j = j0; j < j1; j++) {
            /* Coverage = overlap of the pixel row [j, j+1) with [top, bot]. */
            const double cov = fmin(j + 1, bot) - fmax(j, top);
            if (cov > 0) mask_max(m, i, j, cov);
        }
    }
}

void qkt__plot_mask_composite(const qkt__plot_mask *m, qkt__plot_img *im, uint32_t c, double alpha) {
    for (int j = 0; j < m->h; j++)
        for (int i = 0; i < m->w; i++) {
            const float a = m->a[(size_t)j * m->w + i];
            if (a > 0) qkt__plot_blend(im, m->x0 + i, m->y0 + j, c, alpha * a);
        }
}

/* ---------------------------------------------------------------- text */

/* stb_easy_font indexes a table by (char - 32): anything outside ' '..'~' would
 * read out of bounds, so it becomes '?'. */
static char font_char(char ch) { return (ch >= 32 && ch < 127) ? ch : '?'; }

static int font_advance(char ch) { return stb_easy_font_charinfo[font_char(ch) - 32].advance & 15; }

double qkt__plot_text_width(const char *s, qkt__plot_font f) {
    if (!s || !*s) return 0;
    int units = 0;
    for (const char *p = s; *p; p++) units += font_advance(*p);
    /* The last glyph's trailing gap (about 2 units) is not ink. */
    return (units - 2) * f.scale + (f.bold ? 1 : 0);
}

double qkt__plot_text_height(qkt__plot_font f) { return 7 * f.scale; }

qkt__plot_font qkt__plot_fit(const char *s, qkt__plot_font f, double max_w) {
    if (f.scale > 1 && qkt__plot_text_width(s, f) > max_w) f.scale = 1;
    return f;
}

/* Fill the font-space rectangle [qx0, qx1) x [qy0, qy1), mapped to the screen with
 * scale s from origin (ox, oy), with area coverage so fractional scales stay smooth. */
static void text_quad(qkt__plot_img *im, double ox, double oy, double s, int rotated, double qx0, double qy0,
                      double qx1, double qy1, uint32_t c) {
    double x0, x1, y0, y1;
    if (!rotated) {
        x0 = ox + qx0 * s, x1 = ox + qx1 * s, y0 = oy + qy0 * s, y1 = oy + qy1 * s;
    } else { /* text direction +x maps to screen -y; glyph down (+y) maps to screen +x */
        x0 = ox + qy0 * s, x1 = ox + qy1 * s, y0 = oy - qx1 * s, y1 = oy - qx0 * s;
    }
    for (int j = (int)floor(y0); j < (int)ceil(y1); j++) {
        const double cy = fmin(j + 1, y1) - fmax(j, y0);
        for (int i = (int)floor(x0); i < (int)ceil(x1); i++) {
            const double cx = fmin(i + 1, x1) - fmax(i, x0);
            if (cx > 0 && cy > 0) qkt__plot_blend(im, i, j, c, cx * cy);
        }
    }
}

void qkt__plot_text(qkt__plot_img *im, double x, double y, const char *s, qkt__plot_font f, uint32_t c,
                    int halign, int valign, int rotated) {
    if (!s || !*s) return;
    const double w = qkt__plot_text_width(s, f), h = qkt__plot_text_height(f);
    /* Offsets along the text direction (a) and down the glyph (b), in px. */
    double a = halign == QKT_PLOT_CENTER ? -w / 2 : (halign == QKT_PLOT_RIGHT ? -w : 0);
    double b = valign == QKT_PLOT_MIDDLE ? -h / 2 : (valign == QKT_PLOT_BASELINE ? -h : 0);
    double ox, oy;
    if (!rotated) {
        ox = x + a, oy = y + b;
    } else {
        ox = x + b, oy = y - a;
    }
    /* Snap to whole pixels so integer scales give crisp glyphs. */
    ox = round(ox);
    oy = round(oy);
    double pen = 0; /* font units along the text */
    for (const char *p = s; *p; p++) {
        char ch[2] = {font_char(*p), 0};
        /* 4 vertices of 16 bytes (x, y, z, rgba) per quad; up to 48 quads, the
         * busiest glyph uses < 20. */
        float vbuf[16 * 48];
        const int nq = stb_easy_font_print(0, 0, ch, NULL, vbuf, (int)sizeof vbuf);
        for (int q = 0; q < nq; q++) {
            const float *v0 = vbuf + q * 16;     /* corner (x0, y0) */
            const float *v2 = vbuf + q * 16 + 8; /* corner (x1, y1) */
            for (int k = 0; k <= (f.bold ? 1 : 0); k++) {
                /* Bold: the same glyph again one px along the text. */
                const double shift = k / f.scale;
                text_quad(im, ox, oy, f.scale, rotated, pen + v0[0] + shift, v0[1], pen + v2[0] + shift,
                          v2[1], c);
            }
        }
        pen += font_advance(*p);
    }
}
