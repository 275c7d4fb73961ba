/* Axis ranges, tick positions and tick labels for the plot module. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot_internal.h"

void qkt__plot_axis_range(const qkt_axis *ax, double dlo, double dhi, double *lo, double *hi) {
    const int lg = ax->log;
    /* Work in the axis' own coordinate: value or log10(value). */
    double fl = NAN, fh = NAN; /* fixed ends, if any */
    if (ax->min != ax->max) {
        if (isfinite(ax->min) && (!lg || ax->min > 0)) fl = lg ? log10(ax->min) : ax->min;
        if (isfinite(ax->max) && (!lg || ax->max > 0)) fh = lg ? log10(ax->max) : ax->max;
    }
    double a = dlo, b = dhi;
    if (!(a <= b)) { /* no usable data */
        a = 0;
        b = 1;
    } else if (lg) {
        a = log10(a);
        b = log10(b);
    }
    if (b - a <= 1e-12 * fmax(1, fabs(a))) { /* a single value: widen around it */
        const double d = lg ? 0.5 : (a == 0 ? 1 : 0.1 * fabs(a));
        a -= d;
        b += d;
    }
    /* Keep every coordinate finite: |value| <= 1e300, log10 within +-300. */
    const double lim = lg ? 300 : 1e300;
    a = fmax(a, -lim), b = fmin(b, lim);
    if (!(b > a)) b = a + (lg ? 1 : fmax(1, fabs(a) * 1e-6));
    const double m = 0.05 * b - 0.05 * a;
    double l = isnan(fl) ? a - m : fl, h = isnan(fh) ? b + m : fh;
    if (!isnan(fl) && isnan(fh) && h <= l) h = l + (lg ? 1 : fmax(1, fabs(l)));
    if (isnan(fl) && !isnan(fh) && l >= h) l = h - (lg ? 1 : fmax(1, fabs(h)));
    if (!(h > l)) { /* fixed range given reversed or equal: fall back to auto */
        l = a - m;
        h = b + m;
    }
    l = fmin(fmax(l, -lim), lim), h = fmin(fmax(h, -lim), lim);
    if (!(h > l)) l = a, h = b;
    *lo = lg ? pow(10, l) : l;
    *hi = lg ? pow(10, h) : h;
}

/* Linear ticks: 1-2-5 steps with at most `target` intervals over [lo, hi]; returns
 * the count written to t (<= max) and the step. */
static int ticks_linear(double lo, double hi, int target, double *t, int max, double *step) {
    if (target < 1) target = 1;
    const double range = hi - lo;
    if (!(range > 0) || !isfinite(range)) {
        *step = 1;
        if (max > 0 && isfinite(lo)) {
            t[0] = lo;
            return 1;
        }
        return 0;
    }
    const double mag = pow(10, floor(log10(range / target)));
    static const double nice[] = {1, 2, 5, 10, 20};
    double s = nice[4] * mag;
    for (int i = 0; i < 5; i++)
        if (range / (nice[i] * mag) <= target + 1e-9) {
            s = nice[i] * mag;
            break;
        }
    *step = s;
    int n = 0;
    for (double k = ceil(lo / s - 1e-9); n < max; k++) {
        double v = k * s;
        if (v > hi + 1e-9 * s) break;
        if (fabs(v) < 1e-9 * s) v = 0; /* no "-0" */
        t[n++] = v;
    }
    return n;
}

/* Shorten the exponent of a printf %e string: "1.5e-05" -> "1.5e-5", "2e+05" -> "2e5". */
static void tidy_exponent(char *buf) {
    char *e = strchr(buf, 'e');
    if (!e) return;
    char *p = e + 1, *q = e + 1;
    if (*p == '+') p++;
    else if (*p == '-') *q++ = *p++;
    while (*p == '0' && p[1]) p++;
    memmove(q, p, strlen(p) + 1);
}

/* Label for a linear tick at value v with spacing step ("0.25", "1e-5", "300"). */
static void label_linear(double v, double step, char *buf, int len) {
    const double amax = fmax(fabs(v), step);
    if (amax >= 1e6 || step < 1e-4) {
        if (v == 0) {
            snprintf(buf, (size_t)len, "0");
            return;
        }
        /* Scientific with as many digits as the step needs relative to v. */
        int digits = (int)ceil(log10(fabs(v) / step) - 1e-9);
        if (digits < 0) digits = 0;
        if (digits > 6) digits = 6;
        snprintf(buf, (size_t)len, "%.*e", digits, v);
        /* Drop trailing zeros of the mantissa: "2.50e-5" -> "2.5e-5". */
        char *e = strchr(buf, 'e');
        if (e) {
            char *z = e;
            while (z > buf && z[-1] == '0') z--;
            if (z > buf && z[-1] == '.') z--;
            memmove(z, e, strlen(e) + 1);
        }
        tidy_exponent(buf);
    } else {
        int dec = (int)ceil(-log10(step) - 1e-9);
        if (dec < 0) dec = 0;
        /* A step of 2.5 or 0.25 never occurs (1-2-5 only), so dec digits suffice. */
        snprintf(buf, (size_t)len, "%.*f", dec, v);
    }
}

/* Label of a log-axis tick: plain "1", "10", "0.01", "500", or with sci = 1
 * "1e-3", "2e5", "1e0" (one style per axis, chosen by qkt__plot_ticks_make). */
static void label_log(double v, int sci, char *buf, int len) {
    const int k = (int)floor(log10(v) + 1e-9);
    const double m = v / pow(10, k); /* mantissa in [1, 10) */
    const int mi = (int)lround(m);
    if (!sci) {
        snprintf(buf, (size_t)len, "%.*f", k < 0 ? -k : 0, mi * pow(10, k));
    } else if (fabs(m - mi) < 1e-6) {
        snprintf(buf, (size_t)len, "%de%d", mi, k);
    } else {
        snprintf(buf, (size_t)len, "%.2ge%d", m, k);
    }
}

/* log10 ticks over [lo, hi] (values > 0): decades (every k-th when many), else
 * 1-2-5 multiples, else (a narrow range) linear ticks, then *lin_step is their
 * step and the labels are label_linear's; otherwise *lin_step = 0. Majors in t,
 * minor ticks (unlabelled) in minor. Returns the major count. */
static int ticks_log(double lo, double hi, int target, double *t, int max, double *minor, int max_minor,
                     int *n_minor, double *lin_step) {
    *n_minor = 0;
    *lin_step = 0;
    if (!(lo > 0) || !(hi > lo) || !isfinite(hi)) return 0;
    const double L0 = log10(lo), L1 = log10(hi), eps = 1e-9;
    const int k0 = (int)ceil(L0 - eps), k1 = (int)floor(L1 + eps);
    int n = 0, nm = 0;
    if (target < 1) target = 1;
    *lin_step = 0;
    if (k1 - k0 + 1 >= 2) {
        /* Decades, every stride-th one when there are too many for the axis. */
        const int ndec = k1 - k0 + 1, stride = (ndec + target - 1) / target;
        for (int k = k0; k <= k1 && n < max; k++)
            if ((k % stride + stride) % stride == 0) t[n++] = pow(10, k);
        if (n < 2 && max >= 2) { /* stride skipped all but one: take the ends */
            n = 0;
            t[n++] = pow(10, k0);
            t[n++] = pow(10, k1);
        }
        if (stride == 1 && ndec <= 12) /* minor ticks at 2..9 x 10^k */
            for (int k = k0 - 1; k <= k1; k++)
                for (int m = 2; m <= 9 && nm < max_minor; m++) {
                    const double v = m * pow(10, k);
                    if (v >= lo * (1 - eps) && v <= hi * (1 + eps)) minor[nm++] = v;
                }
    } else {
        /* Under two decades: 1-2-5 multiples, if that gives at least two ticks. */
        static const int mult[3] = {1, 2, 5};
        for (int k = k0 - 1; k <= k1 && n < max; k++)
            for (int i = 0; i < 3 && n < max; i++) {
                const double v = mult[i] * pow(10, k);
                if (v >= lo * (1 - eps) && v <= hi * (1 + eps)) t[n++] = v;
            }
        if (n < 3) { /* a narrow range: plain linear ticks on the log axis */
            n = ticks_linear(lo, hi, target < 5 ? target : 5, t, max, lin_step);
        }
    }
    *n_minor = nm;
    return n;
}

void qkt__plot_ticks_make(qkt__plot_ticks *t, double lo, double hi, int log, int target) {
    double step = 0;
    t->n_minor = 0;
    if (log) {
        t->n = ticks_log(lo, hi, target, t->v, QKT_PLOT_MAX_TICKS, t->minor, 4 * QKT_PLOT_MAX_TICKS,
                         &t->n_minor, &step);
    } else {
        /* At least two labelled ticks, so the scale can be read off. */
        for (int k = target; k <= target + 8; k++) {
            t->n = ticks_linear(lo, hi, k, t->v, QKT_PLOT_MAX_TICKS, &step);
            if (t->n >= 2) break;
        }
    }
    /* One style per axis: plain (0.01 .. 10000) unless some tick needs 1eK. */
    int sci = 0;
    for (int i = 0; i < t->n; i++) {
        const double k = floor(log10(t->v[i]) + 1e-9);
        if (k < -2 || k > 4) sci = 1;
    }
    for (int i = 0; i < t->n; i++) {
        if (log && step == 0)
            label_log(t->v[i], sci, t->label[i], (int)sizeof t->label[i]);
        else
            label_linear(t->v[i], step, t->label[i], (int)sizeof t->label[i]);
    }
}

double qkt__plot_ticks_max_width(const qkt__plot_ticks *t, qkt__plot_font f) {
    double w = 0;
    for (int i = 0; i < t->n; i++) w = fmax(w, qkt__plot_text_width(t->label[i], f));
    return w;
}
