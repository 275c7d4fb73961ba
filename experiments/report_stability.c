/* Stability of the learning-rate runs, shared by part 3 and the findings (claims 6-7):
 * whether a run failed (did not train, or diverged), how large its attention logits had
 * grown and how low its attention entropy had fallen by the time its loss rose, and each
 * variant's good LR range. */
#include <math.h>
#include <stdio.h>

#include "report_internal.h"

void qkt__report_classify(const double *st, const double *lv, int n, int nonfinite_step, double chance, qkt__lr_run *o) {
    o->init_loss = n ? lv[0] : NAN;
    o->rise_step = -1, o->peak_rise = n > 1 ? -INFINITY : NAN;
    /* the lasting rise: the first evaluation i above the running minimum before it by the margin,
     * with the next QKT_REPORT_RISE_EVALS - 1 evaluations above that level too (a spike at the
     * last evaluation does not last; its final loss is what "did not train" judges) */
    double runmin = n ? lv[0] : NAN;
    for (int i = 1; i < n; i++) {
        double x = isfinite(lv[i]) ? lv[i] - runmin : INFINITY;
        o->peak_rise = fmax(o->peak_rise, x);
        if (o->rise_step < 0 && x > QKT_REPORT_RISE) {
            int k = 1;
            while (k < QKT_REPORT_RISE_EVALS && i + k < n && !(isfinite(lv[i + k]) && lv[i + k] - runmin <= QKT_REPORT_RISE)) k++;
            if (k == QKT_REPORT_RISE_EVALS || !isfinite(lv[i])) o->rise_step = (int)st[i];
        }
        if (isfinite(lv[i])) runmin = fmin(runmin, lv[i]);
    }
    if (nonfinite_step >= 0 && (o->rise_step < 0 || nonfinite_step < o->rise_step)) o->rise_step = nonfinite_step, o->peak_rise = INFINITY;
    o->final_loss = nonfinite_step >= 0 || !n ? NAN : lv[n - 1];
    /* chance unknown (the task's data cannot be opened): only a divergence counts */
    o->no_train = isfinite(chance) ? !(o->final_loss <= chance - QKT_REPORT_TRAIN_MARGIN) : nonfinite_step >= 0;
    o->failed = o->no_train || o->rise_step >= 0;
}

void qkt__report_lr_run(const qkt__report *r, const char *variant, int li, qkt__lr_run *o) {
    static double st[QKT_REPORT_MAXS], lv[QKT_REPORT_MAXS], gs[QKT_REPORT_MAXS], gv[QKT_REPORT_MAXS], es[QKT_REPORT_MAXS],
        ev[QKT_REPORT_MAXS];
    const qkt_table *t = r->t;
    *o = (qkt__lr_run){.run = -1, .lr = r->c->lrs[li], .init_loss = NAN, .peak_rise = NAN, .rise_step = -1, .logit_max = NAN,
                       .logit_before = NAN, .logit_init = NAN, .min_entropy = NAN, .final_loss = NAN};
    o->run = qkt_table_find_run(t, QKT_KIND(LR), variant, r->c->lr_dk, 0, o->lr);
    if (o->run < 0) return;
    int div = -1;
    bool nonfinite = qkt__report_diverged(t, o->run, &div);
    int n = qkt_table_series(t, o->run, QKT_M(VAL_LOSS), -1, st, lv, QKT_REPORT_MAXS);
    qkt__report_classify(st, lv, n, nonfinite ? div : -1, r->chance, o);
    /* logits and entropy up to (and including) the rise, or over the whole run */
    bool rose = o->rise_step >= 0;
    int ng = qkt_table_series(t, o->run, QKT_M(LOGIT_MAX), -1, gs, gv, QKT_REPORT_MAXS);
    int ne = qkt_table_series(t, o->run, QKT_M(NORM_ENTROPY), -1, es, ev, QKT_REPORT_MAXS);
    for (int i = 0; i < ng; i++) {
        if (rose && gs[i] > o->rise_step) break;
        if (i == 0) o->logit_init = gv[i];
        if (isnan(gv[i])) continue;
        o->logit_max = isnan(o->logit_max) ? gv[i] : fmax(o->logit_max, gv[i]);
        if (!rose || gs[i] < o->rise_step) o->logit_before = isnan(o->logit_before) ? gv[i] : fmax(o->logit_before, gv[i]);
        if (rose && gs[i] > 0 && gs[i] < o->rise_step) o->evals_before++;
    }
    for (int i = 0; i < ne; i++) {
        if (rose && es[i] > o->rise_step) break;
        if (isnan(ev[i])) continue;
        /* an entropy is in [0, 1]: values outside come from float cancellation at huge logits (a collapsed row) */
        double e = fmin(1, fmax(0, ev[i]));
        o->min_entropy = isnan(o->min_entropy) ? e : fmin(o->min_entropy, e);
    }
}

qkt__lr_range qkt__report_lr_range(const qkt__report *r, const char *variant) {
    qkt__lr_range g = {.max_trained_lr = NAN, .min_failed_lr = NAN};
    const qkt_ablate_cfg *c = r->c;
    /* the grid in increasing order (it may be given in any order) */
    int idx[QKT_AB_MAX_LIST];
    for (int i = 0; i < c->n_lr; i++) idx[i] = i;
    for (int i = 1; i < c->n_lr; i++)
        for (int j = i; j > 0 && c->lrs[idx[j]] < c->lrs[idx[j - 1]]; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = x;
        }
    for (int k = 0; k < c->n_lr; k++) {
        qkt__lr_run u;
        qkt__report_lr_run(r, variant, idx[k], &u);
        if (u.run < 0) continue;
        g.n++;
        if (u.failed) {
            g.n_failed++;
            if (isnan(g.min_failed_lr)) g.min_failed_lr = u.lr;
        } else {
            if (isnan(g.min_failed_lr)) g.max_trained_lr = u.lr; /* the range is contiguous from the smallest LR */
            else g.stable_above = true;
        }
    }
    return g;
}

void qkt__report_lr_window(const qkt__report *r, const char *variant, int li, int upto, double *logit_max, double *min_entropy) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    *logit_max = *min_entropy = NAN;
    int run = qkt_table_find_run(r->t, QKT_KIND(LR), variant, r->c->lr_dk, 0, r->c->lrs[li]);
    if (run < 0) return;
    int n = qkt_table_series(r->t, run, QKT_M(LOGIT_MAX), -1, st, v, QKT_REPORT_MAXS);
    for (int i = 0; i < n && st[i] <= upto; i++)
        if (!isnan(v[i])) *logit_max = isnan(*logit_max) ? v[i] : fmax(*logit_max, v[i]);
    n = qkt_table_series(r->t, run, QKT_M(NORM_ENTROPY), -1, st, v, QKT_REPORT_MAXS);
    for (int i = 0; i < n && st[i] <= upto; i++)
        if (!isnan(v[i])) {
            double e = fmin(1, fmax(0, v[i]));
            *min_entropy = isnan(*min_entropy) ? e : fmin(*min_entropy, e);
        }
}
