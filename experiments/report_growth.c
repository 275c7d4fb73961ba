/* The report's part 4: logit growth under Adam, the muP coordinate check. */
#include <math.h>
#include <stdio.h>

#include "qkt_plot.h"
#include "qkt_study.h"
#include "report_internal.h"

/* Least-squares slope of log y against log x over the points with x, y > 0. */
static double slope(const double *x, const double *y, int n) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0 && y[i] > 0)) continue;
        double a = log(x[i]), b = log(y[i]);
        sx += a, sy += b, sxx += a * a, sxy += a * b, k++;
    }
    return k > 1 ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : NAN;
}

/* The scale as a formula, for the legend: keyed by the enum, so it follows the table. */
static const char *formula(qkt_attn_scale v) {
    static const char *const f[QKT_ATTN_SCALE_COUNT] = {[QKT_ATTN_SQRT_DK] = "1/sqrt(d_k)", [QKT_ATTN_DK] = "1/d_k"};
    return f[v] ? f[v] : qkt_attn_scale_name(v);
}

void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    enum { NV = QKT_STUDY_N_GROWTH };
    const qkt_attn_scale *gv = qkt_study_growth_scales; /* [0] = sqrt_dk, [1] = dk: the slopes returned */
    const char *name[NV] = {qkt_attn_scale_name(gv[0]), qkt_attn_scale_name(gv[1])};
    qkt_buf_printf(md, "## 4. Logit growth under Adam (the muP coordinate check)\n\nRMS change of the scaled attention logits on a fixed "
                       "batch after %d Adam steps at lr %g (no warmup, decay or clipping), mean over layers; d_model = %d x d_k.\n\n"
                       "| d_k | logit rms at init: %s / %s | change: %s | change: %s |\n|---:|---|---:|---:|\n",
                   c->growth_steps, c->growth_lr, c->run.tc.model.n_head, name[0], name[1], name[0], name[1]);
    static double X[QKT_AB_MAX_LIST], Y[NV][QKT_AB_MAX_LIST];
    for (int i = 0; i < c->n_growth_dk; i++) {
        int d = c->growth_dks[i];
        double z[NV];
        X[i] = d;
        for (int v = 0; v < NV; v++) {
            int run = qkt_table_find_run(t, QKT_KIND(GROWTH), name[v], d, -1, 0);
            Y[v][i] = qkt_table_value(t, run, QKT_M(LOGIT_DELTA_RMS), c->growth_steps, -1);
            z[v] = qkt_table_value(t, run, QKT_M(LOGIT_RMS), 0, -1);
        }
        qkt_buf_printf(md, "| %d | %.3g / %.3g | %.3g | %.3g |\n", d, z[0], z[1], Y[0][i], Y[1][i]);
    }
    *slope_sqrt = slope(X, Y[0], c->n_growth_dk);
    *slope_dk = slope(X, Y[1], c->n_growth_dk);
    if (c->n_growth_dk < 2)
        qkt_buf_printf(md, "\nOne d_k only (%d): a slope against d_k needs at least two; give `--growth-d-k` more values.\n\n", c->growth_dks[0]);
    else
        qkt_buf_printf(md, "\nLog-log slope of the change against d_k: %.2f for %s, %.2f for %s.\n\n", *slope_sqrt, formula(gv[0]),
                       *slope_dk, formula(gv[1]));
    qkt_series s[NV];
    for (int v = 0; v < NV; v++)
        s[v] = (qkt_series){.name = formula(gv[v]), .x = X, .y = Y[v], .n = c->n_growth_dk, .marker = QKT_MARK_CIRCLE};
    char path[1200], title[128];
    snprintf(path, sizeof path, "%s/logit_growth.png", r->dir);
    snprintf(title, sizeof title, "Change of attention logits after %d Adam steps", c->growth_steps);
    qkt_line_chart ch = {.title = title, .x = {.label = "d_k", .log = 1}, .y = {.label = "rms change of scaled logits", .log = 1},
                         .series = s, .n_series = NV};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(md, "![growth](logit_growth.png)\n\n");
}
