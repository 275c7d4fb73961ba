/* Stability of the learning-rate runs, shared by part 3 and the findings (claims 6-7):
 * when a run became unstable, how large its attention logits had grown and how low its
 * attention entropy had fallen by then, and each variant's stable LR range. */
#include <math.h>
#include <stdio.h>

#include "report_internal.h"

void qkt__report_lr_run(const qkt__report *r, const char *variant, int li, qkt__lr_run *o) {
    static double st[QKT_REPORT_MAXS], lv[QKT_REPORT_MAXS], gs[QKT_REPORT_MAXS], gv[QKT_REPORT_MAXS], es[QKT_REPORT_MAXS],
        ev[QKT_REPORT_MAXS];
    const qkt_table *t = r->t;
    *o = (qkt__lr_run){.run = -1, .lr = r->c->lrs[li], .init_loss = NAN, .peak_excess = NAN, .unstable_step = -1, .logit_max = NAN,
                       .logit_before = NAN, .logit_init = NAN, .min_entropy = NAN, .final_loss = NAN};
    o->run = qkt_table_find_run(t, QKT_KIND(LR), variant, r->c->lr_dk, 0, o->lr);
    if (o->run < 0) return;
    int div = -1;
    bool nonfinite = qkt__report_diverged(t, o->run, &div);
    int n = qkt_table_series(t, o->run, QKT_M(VAL_LOSS), -1, st, lv, QKT_REPORT_MAXS);
    o->init_loss = n ? lv[0] : NAN;
    o->final_loss = nonfinite ? NAN : qkt__report_final_val(t, o->run, QKT_M(VAL_LOSS));
    /* the first evaluation whose loss is non-finite or above the one at init by the margin */
    double peak = -INFINITY;
    for (int i = 1; i < n; i++) {
        double x = isfinite(lv[i]) ? lv[i] - o->init_loss : INFINITY;
        peak = fmax(peak, x);
        if (o->unstable_step < 0 && x > QKT_REPORT_UNSTABLE_MARGIN) o->unstable_step = (int)st[i];
    }
    if (nonfinite && (o->unstable_step < 0 || div < o->unstable_step)) o->unstable_step = div, peak = INFINITY;
    o->unstable = o->unstable_step >= 0;
    o->peak_excess = n > 1 || nonfinite ? peak : NAN;
    /* logits and entropy up to (and including) that evaluation, or over the whole run */
    int ng = qkt_table_series(t, o->run, QKT_M(LOGIT_MAX), -1, gs, gv, QKT_REPORT_MAXS);
    int ne = qkt_table_series(t, o->run, QKT_M(NORM_ENTROPY), -1, es, ev, QKT_REPORT_MAXS);
    for (int i = 0; i < ng; i++) {
        if (o->unstable && gs[i] > o->unstable_step) break;
        if (i == 0) o->logit_init = gv[i];
        if (isnan(gv[i])) continue;
        o->logit_max = isnan(o->logit_max) ? gv[i] : fmax(o->logit_max, gv[i]);
        if (!o->unstable || gs[i] < o->unstable_step) o->logit_before = isnan(o->logit_before) ? gv[i] : fmax(o->logit_before, gv[i]);
    }
    for (int i = 0; i < ne; i++) {
        if (o->unstable && es[i] > o->unstable_step) break;
        if (isnan(ev[i])) continue;
        /* an entropy is in [0, 1]: values outside come from float cancellation at huge logits (a collapsed row) */
        double e = fmin(1, fmax(0, ev[i]));
        o->min_entropy = isnan(o->min_entropy) ? e : fmin(o->min_entropy, e);
    }
}

qkt__lr_range qkt__report_lr_range(const qkt__report *r, const char *variant) {
    qkt__lr_range g = {.max_stable_lr = NAN, .min_unstable_lr = NAN};
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
        if (u.unstable) {
            g.n_unstable++;
            if (isnan(g.min_unstable_lr)) g.min_unstable_lr = u.lr;
        } else {
            if (isnan(g.min_unstable_lr)) g.max_stable_lr = u.lr; /* the range is contiguous from the smallest LR */
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
