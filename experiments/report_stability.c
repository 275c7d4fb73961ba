/* Stability of the learning-rate runs, shared by part 3 and the findings (claims 6-7):
 * whether a run failed (did not train, or diverged), how large its attention logits had
 * grown and how low its attention entropy had fallen by the time its loss rose, and each
 * variant's good LR range. */
#include <math.h>
#include <stdio.h>

#include "qkt_stats.h"
#include "report_internal.h"

/* Does the rise at evaluation i (above runmin, the minimum before it) last: is the loss still
 * above runmin + QKT_REPORT_RISE at every later evaluation up to the first at least `persist`
 * steps after it (or the run's last)? A rise at the last evaluation does not last (the final
 * loss is what "did not train" judges); a non-finite loss always does. */
static bool rise_lasts(const double *st, const double *lv, int n, int i, double runmin, int persist) {
    if (!isfinite(lv[i])) return true;
    if (i + 1 >= n) return false;
    for (int j = i + 1; j < n; j++) {
        if (isfinite(lv[j]) && lv[j] - runmin <= QKT_REPORT_RISE) return false;
        if (st[j] >= st[i] + persist) break;
    }
    return true;
}

void qkt__report_classify(const double *st, const double *lv, int n, int nonfinite_step, double chance, int persist, qkt__lr_run *o) {
    o->init_loss = n ? lv[0] : NAN;
    o->rise_step = -1, o->peak_rise = n > 1 ? -INFINITY : NAN;
    /* the lasting rise: the first evaluation above the running minimum before it by the margin
     * that lasts `persist` steps */
    double runmin = n ? lv[0] : NAN;
    for (int i = 1; i < n; i++) {
        double x = isfinite(lv[i]) ? lv[i] - runmin : INFINITY;
        o->peak_rise = fmax(o->peak_rise, x);
        if (o->rise_step < 0 && x > QKT_REPORT_RISE && rise_lasts(st, lv, n, i, runmin, persist)) o->rise_step = (int)st[i];
        if (isfinite(lv[i])) runmin = fmin(runmin, lv[i]);
    }
    if (nonfinite_step >= 0 && (o->rise_step < 0 || nonfinite_step < o->rise_step)) o->rise_step = nonfinite_step, o->peak_rise = INFINITY;
    o->final_loss = nonfinite_step >= 0 || !n ? NAN : lv[n - 1];
    /* chance unknown (the task's data cannot be opened): only a divergence counts */
    o->no_train = isfinite(chance) ? !(o->final_loss <= chance - QKT_REPORT_TRAIN_MARGIN) : nonfinite_step >= 0;
    o->failed = o->no_train || o->rise_step >= 0;
}

void qkt__report_lr_schedule(const qkt_ablate_cfg *c, char *b, size_t n) {
    if (c->lr_eval_dense > 0) snprintf(b, n, "at every step up to step %d, then every %d steps", c->lr_eval_dense, c->lr_eval_every);
    else snprintf(b, n, "every %d steps", c->lr_eval_every);
}

void qkt__report_lr_run(const qkt__report *r, const char *variant, int li, int seed, qkt__lr_run *o) {
    static double st[QKT_REPORT_MAXS], lv[QKT_REPORT_MAXS], gs[QKT_REPORT_MAXS], gv[QKT_REPORT_MAXS], es[QKT_REPORT_MAXS],
        ev[QKT_REPORT_MAXS];
    const qkt_table *t = r->t;
    *o = (qkt__lr_run){.run = -1, .lr = r->c->lrs[li], .init_loss = NAN, .peak_rise = NAN, .rise_step = -1, .logit_max = NAN,
                       .logit_before = NAN, .logit_init = NAN, .min_entropy = NAN, .final_loss = NAN};
    o->run = qkt_table_find_run(t, QKT_KIND(LR), variant, r->c->lr_dk, seed, o->lr);
    if (o->run < 0) return;
    int div = -1;
    bool nonfinite = qkt__report_diverged(t, o->run, &div);
    int n = qkt_table_series(t, o->run, QKT_M(VAL_LOSS), -1, st, lv, QKT_REPORT_MAXS);
    qkt__report_classify(st, lv, n, nonfinite ? div : -1, r->chance, QKT_REPORT_RISE_PERSIST(r->c), o);
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

void qkt__report_lr_order(const qkt_ablate_cfg *c, int *idx) {
    for (int i = 0; i < c->n_lr; i++) idx[i] = i;
    for (int i = 1; i < c->n_lr; i++)
        for (int j = i; j > 0 && c->lrs[idx[j]] < c->lrs[idx[j - 1]]; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = x;
        }
}

qkt__lr_range qkt__report_lr_range(const qkt__report *r, const char *variant, int seed) {
    qkt__lr_range g = {.max_trained_lr = NAN, .min_failed_lr = NAN};
    const qkt_ablate_cfg *c = r->c;
    int idx[QKT_AB_MAX_LIST]; /* the grid in increasing order (it may be given in any order) */
    qkt__report_lr_order(c, idx);
    for (int k = 0; k < c->n_lr; k++) {
        qkt__lr_run u;
        qkt__report_lr_run(r, variant, idx[k], seed, &u);
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

void qkt__report_lr_window(const qkt__report *r, const char *variant, int li, int seed, int upto, double *logit_max, double *min_entropy) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    *logit_max = *min_entropy = NAN;
    int run = qkt_table_find_run(r->t, QKT_KIND(LR), variant, r->c->lr_dk, seed, r->c->lrs[li]);
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

/* The largest good LR of one seed as a grid index: -1 if the smallest LR failed, n if none
 * did; -2 if a run is missing. out: that seed's outcomes in increasing LR order. */
static int edge_of(const int *out, int n) {
    int e = n;
    for (int i = 0; i < n; i++) {
        if (out[i] < 0) return -2;
        if (out[i] == 1 && e == n) e = i - 1;
    }
    return e;
}

/* The lower median of k grid indices, and their min and max. */
static void edge_stats(int *e, int k, int *o) {
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && e[j] < e[j - 1]; j--) {
            int x = e[j];
            e[j] = e[j - 1], e[j - 1] = x;
        }
    o[0] = e[(k - 1) / 2], o[1] = e[0], o[2] = e[k - 1];
}

void qkt__report_range_rule(const int *out_w, const int *out_b, int n_lr, int n_seeds, qkt__range_cmp *o) {
    int ew[QKT_AB_MAX_LR_SEEDS], eb[QKT_AB_MAX_LR_SEEDS];
    *o = (qkt__range_cmp){.p = NAN, .v = QKT_V_UNTESTABLE};
    for (int s = 0; s < n_seeds && s < QKT_AB_MAX_LR_SEEDS; s++) {
        int a = edge_of(out_w + (size_t)s * n_lr, n_lr), b = edge_of(out_b + (size_t)s * n_lr, n_lr);
        if (a == -2 || b == -2) continue; /* a seed counts with both sweeps complete */
        ew[o->n_seeds] = a, eb[o->n_seeds] = b, o->n_seeds++;
        for (int i = 0; i < n_lr; i++) {
            o->w_only += out_w[(size_t)s * n_lr + i] == 0 && out_b[(size_t)s * n_lr + i] == 1;
            o->b_only += out_w[(size_t)s * n_lr + i] == 1 && out_b[(size_t)s * n_lr + i] == 0;
        }
    }
    if (o->n_seeds == 0) return;
    edge_stats(ew, o->n_seeds, o->edge_w), edge_stats(eb, o->n_seeds, o->edge_b);
    if (o->n_seeds < 2) return; /* each edge is one run: no replicate to test against */
    o->p = qkt_stats_sign_test(o->w_only, o->w_only + o->b_only);
    bool sig = o->p <= 1 - QKT_REPORT_LEVEL + 1e-12;
    o->v = sig && o->w_only > o->b_only && o->edge_w[0] > o->edge_b[0]   ? QKT_V_REPRODUCED
           : sig && o->b_only > o->w_only && o->edge_w[0] < o->edge_b[0] ? QKT_V_CONTRADICTED
                                                                         : QKT_V_NOT_DETECTABLE;
}
