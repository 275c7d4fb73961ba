/* Queries and statistics shared by the report's sections (report_internal.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_internal.h"

void qkt__report_plot_done(qkt__report *r, int rc, const char *file) {
    if (rc != 0) {
        qkt_logf(QKT_LOG_WARN, "qkt: plot %s: %s", file, r->err->msg);
        r->n_plots_failed++;
    }
}

int qkt__report_run_by_id(const qkt_table *t, const char *id) {
    for (int k = 0; k < t->n_runs; k++)
        if (!strcmp(t->runs[k].id, id)) return k; /* ids are unique: qkt_table_parse refuses repeats */
    return -1;
}

double qkt__report_final_val(const qkt_table *t, int run, const char *metric) {
    int s = qkt_table_last_step(t, run, metric);
    return s < 0 ? NAN : qkt_table_value(t, run, metric, s, -1);
}

bool qkt__report_diverged(const qkt_table *t, int run, int *at) {
    int s = qkt_table_last_step(t, run, QKT_M(DIVERGED_STEP));
    double v = s < 0 ? -1 : qkt_table_value(t, run, QKT_M(DIVERGED_STEP), s, -1);
    if (at) *at = (int)v;
    return v >= 0;
}

int qkt__report_steps_to_90(const qkt_table *t, int run) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int n = qkt_table_series(t, run, QKT_M(VAL_ACC), -1, st, v, QKT_REPORT_MAXS);
    for (int i = 0; i < n; i++)
        if (v[i] >= 0.9) return (int)st[i];
    return -1;
}

/* Mean and sample standard deviation of the finite values (sd 0 for fewer than two). */
static double mean_sd(const double *v, int n, double *sd) {
    double m = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) m += v[i], k++;
    m = k ? m / k : NAN;
    double s = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s += (v[i] - m) * (v[i] - m);
    *sd = k > 1 ? sqrt(s / (k - 1)) : 0;
    return m;
}

qkt__cell_sum qkt__report_summarize(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds,
                                    double lr) {
    qkt__cell_sum cs = {.s90 = NAN, .first_div = -1};
    double loss[128] = {0}, acc[128] = {0}, s90 = 0, istd = 0, ient = 0;
    int k = 0;
    for (int s = 0; s < seeds && s < 128; s++) {
        int run = qkt_table_find_run(t, exp, variant, d_k, s, lr);
        if (run < 0) continue;
        int at;
        if (qkt__report_diverged(t, run, &at)) {
            cs.n_div++;
            if (cs.first_div < 0 || at < cs.first_div) cs.first_div = at;
        }
        loss[k] = qkt__report_final_val(t, run, QKT_M(VAL_LOSS));
        acc[k] = qkt__report_final_val(t, run, QKT_M(VAL_ACC));
        istd += qkt_table_value(t, run, QKT_M(LOGIT_STD), 0, -1);
        ient += qkt_table_value(t, run, QKT_M(NORM_ENTROPY), 0, -1);
        int x = qkt__report_steps_to_90(t, run);
        if (x >= 0) s90 += x, cs.n_s90++;
        k++;
    }
    cs.n_runs = k;
    cs.loss_m = mean_sd(loss, k, &cs.loss_sd);
    cs.acc_m = mean_sd(acc, k, &cs.acc_sd);
    cs.init_std = k ? istd / k : NAN;
    cs.init_ent = k ? ient / k : NAN;
    cs.s90 = cs.n_s90 ? s90 / cs.n_s90 : NAN;
    return cs;
}

/* A variant's final validation loss per LR of the grid (NaN: missing or diverged), its best LR in
 * *best_lr (NaN if none) and its best loss (inf if none). */
static double lr_finals(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *f, double *best_lr) {
    double best = INFINITY;
    *best_lr = NAN;
    for (int i = 0; i < c->n_lr; i++) {
        int run = qkt_table_find_run(t, QKT_KIND(LR), variant, c->lr_dk, 0, c->lrs[i]);
        f[i] = run < 0 ? NAN : qkt__report_final_val(t, run, QKT_M(VAL_LOSS));
        if (isfinite(f[i]) && f[i] < best) best = f[i], *best_lr = c->lrs[i];
    }
    return best;
}

double qkt__report_lr_best_all(const qkt_table *t, const qkt_ablate_cfg *c) {
    double f[QKT_AB_MAX_LIST], blr, best = INFINITY;
    for (int v = 0; v < c->n_lr_variants; v++) best = fmin(best, lr_finals(t, c, qkt_attn_scale_name(c->lr_variants[v]), f, &blr));
    return best;
}

/* Wortsman et al. 2023: LR sensitivity = E_lr[min(loss(lr), loss_init) - min over every variant and lr of loss]. */
double qkt__report_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr) {
    double f[QKT_AB_MAX_LIST], init = NAN, acc = 0;
    double own = lr_finals(t, c, variant, f, best_lr), best = qkt__report_lr_best_all(t, c);
    for (int i = 0; i < c->n_lr && !isfinite(init); i++) {
        int run = qkt_table_find_run(t, QKT_KIND(LR), variant, c->lr_dk, 0, c->lrs[i]);
        if (run >= 0) init = qkt_table_value(t, run, QKT_M(VAL_LOSS), 0, -1);
    }
    int n = 0;
    for (int i = 0; i < c->n_lr; i++) {
        double l = isfinite(f[i]) ? f[i] : init; /* a diverged run counts as no better than init */
        acc += (l < init ? l : init) - best;
        n++;
    }
    return n && isfinite(own) ? acc / n : NAN;
}
