/* The findings table at the top of report.md: each claim of the literature, what this
 * run measured, and the verdict computed from the numbers (never typed). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_stats.h"
#include "qkt_study.h"
#include "report_internal.h"

#define NAME(v) qkt_attn_scale_name(v)

/* A findings row with one test (p NaN: none, the verdict stands as given). */
static void row(qkt__report *r, const char *id, const char *claim, const char *source, const char *meas, qkt__verdict v, double p) {
    qkt__finding(r, id, claim, source, meas, NULL, qkt__test(v, p));
}

/* A sanity check: printed at once (no p-value, not one of the table's tests). */
static void sanity_row(qkt__report *r, const char *id, const char *claim, const char *source, const char *meas, const char *verdict) {
    qkt_buf_printf(&r->md, "| %s | %s | %s | %s | %s |\n", id, claim, meas, verdict, source);
}

static double iid(const qkt_table *t, qkt_attn_scale v, int d, qkt_metric m) {
    char id[96];
    qkt_cell_id(id, sizeof id, QKT_CELL_IID, v, d, 0, 0);
    return qkt_table_value(t, qkt__report_run_by_id(t, id), qkt_metric_name(m), 0, -1);
}

static bool has_variant(const qkt_attn_scale *v, int n, qkt_attn_scale a) {
    for (int i = 0; i < n; i++)
        if (v[i] == a) return true;
    return false;
}

/* 1. std(q.k) = sqrt(d_k): log-log slope of the measured std against d_k, and the worst error. */
static void claim_std(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    double x[QKT_AB_MAX_LIST], y[QKT_AB_MAX_LIST], worst = 0, se;
    for (int i = 0; i < c->n_init_dk; i++) {
        double s = iid(r->t, QKT_ATTN_NONE, c->init_dks[i], QKT_METRIC_IID_RAW_LOGIT_STD);
        x[i] = log(c->init_dks[i]), y[i] = s > 0 ? log(s) : NAN;
        worst = fmax(worst, fabs(s / sqrt((double)c->init_dks[i]) - 1));
    }
    double b = qkt_stats_slope(x, y, c->n_init_dk, &se);
    char m[400], v[160];
    if (c->n_init_dk < 3 || !isfinite(se)) {
        snprintf(m, sizeof m, "%d init d_k value%s: a slope with an interval needs 3", c->n_init_dk, c->n_init_dk == 1 ? "" : "s");
        snprintf(v, sizeof v, "%s", qkt__verdict_name(QKT_V_UNTESTABLE));
    } else {
        double h = qkt_stats_t_quantile(0.975, c->n_init_dk - 2) * se;
        snprintf(m, sizeof m, "iid N(0, 1) q, k, d_k %d..%d: log-log slope of std(q.k) %.3f [%.3f, %.3f] (0.5 expected); worst |std/sqrt(d_k) - 1| = %.1f %%",
                 c->init_dks[0], c->init_dks[c->n_init_dk - 1], b, b - h, b + h, 100 * worst);
        bool ok = fabs(b - 0.5) <= fmax(h, 0.02) && worst <= 0.05;
        snprintf(v, sizeof v, "%s", qkt__verdict_name(ok ? QKT_V_REPRODUCED : QKT_V_CONTRADICTED));
    }
    sanity_row(r, "1", "With unit-variance q, k the dot product q.k has std sqrt(d_k)", "Vaswani et al. 2017, footnote 4", m, v);
}

/* 2. Unscaled softmax saturates: iid entropy and Jacobian from the smallest to the largest d_k,
 * and the trained model at step 0 (paired by seed). */
static void claim_saturate(qkt__report *r, const qkt__cmp *big) {
    const qkt_ablate_cfg *c = r->c;
    char m[600], v[200], pc[160];
    if (c->n_init_dk < 2) {
        row(r, "2", "Unscaled logits saturate the softmax: entropy and Jacobian fall as d_k grows", "Vaswani et al. 2017, sec. 3.2.1",
            "one init d_k: no trend", QKT_V_UNTESTABLE, NAN);
        return;
    }
    int d0 = c->init_dks[0], d1 = c->init_dks[c->n_init_dk - 1];
    double e0 = iid(r->t, QKT_ATTN_NONE, d0, QKT_METRIC_IID_NORM_ENTROPY), e1 = iid(r->t, QKT_ATTN_NONE, d1, QKT_METRIC_IID_NORM_ENTROPY);
    double j0 = iid(r->t, QKT_ATTN_NONE, d0, QKT_METRIC_IID_JACOBIAN), j1 = iid(r->t, QKT_ATTN_NONE, d1, QKT_METRIC_IID_JACOBIAN);
    double s0 = iid(r->t, QKT_ATTN_SQRT_DK, d0, QKT_METRIC_IID_NORM_ENTROPY), s1 = iid(r->t, QKT_ATTN_SQRT_DK, d1, QKT_METRIC_IID_NORM_ENTROPY);
    qkt__report_fmt_paired(pc, sizeof pc, &big->ent0, "%+.3f");
    snprintf(m, sizeof m, "iid, unscaled, d_k %d -> %d: normalised entropy %.2f -> %.2f, Jacobian norm %.3f -> %.3f (1/sqrt(d_k): entropy %.2f -> %.2f). "
             "GPT at step 0, d_k = %d, entropy unscaled - scaled: %s",
             d0, d1, e0, e1, j0, j1, s0, s1, big->d_k, pc);
    bool fe = e1 < e0 - 0.05, fj = j1 < 0.8 * j0, flat = fabs(s1 - s0) < 0.05;
    qkt__verdict iv = fe && fj && flat ? QKT_V_REPRODUCED : !fe && !fj ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
    qkt__verdict g = qkt__report_verdict(&big->ent0, -1);
    snprintf(v, sizeof v, "%s (iid)%s", qkt__verdict_name(iv), g == QKT_V_UNTESTABLE ? "" : "; GPT: ");
    qkt__tests tg = g == QKT_V_UNTESTABLE ? (qkt__tests){.n = 0, .v = {-1, -1}} : qkt__test(g, big->ent0.p_exact);
    qkt__finding(r, "2", "Unscaled logits saturate the softmax: entropy and Jacobian fall as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", m, v, tg);
}

/* 3. sqrt(d_model) instead of sqrt(d_k) over-shrinks the logits when heads > 1. */
static void claim_dmodel(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    char m[400];
    if (c->run.tc.model.n_head < 2) {
        sanity_row(r, "3", "Scaling by sqrt(d_model) instead of sqrt(d_k) flattens attention when heads > 1", "common implementation error",
            "n_head = 1: sqrt(d_model) = sqrt(d_k), nothing to compare", qkt__verdict_name(QKT_V_UNTESTABLE));
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < c->n_init_dk; i++) {
        int d = c->init_dks[i];
        double g = iid(r->t, QKT_ATTN_SQRT_DMODEL, d, QKT_METRIC_IID_NORM_ENTROPY) - iid(r->t, QKT_ATTN_SQRT_DK, d, QKT_METRIC_IID_NORM_ENTROPY);
        lo = fmin(lo, g), hi = fmax(hi, g);
    }
    snprintf(m, sizeof m, "iid, %d heads (logits / sqrt(%d)): normalised entropy sqrt_dmodel - sqrt_dk = %+.3f .. %+.3f over d_k %d..%d",
             c->run.tc.model.n_head, c->run.tc.model.n_head, lo, hi, c->init_dks[0], c->init_dks[c->n_init_dk - 1]);
    qkt__verdict v = lo > 0.01 ? QKT_V_REPRODUCED : hi < -0.01 ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
    sanity_row(r, "3", "Scaling by sqrt(d_model) instead of sqrt(d_k) flattens attention when heads > 1", "common implementation error", m,
        qkt__verdict_name(v));
}

/* 5. Unscaled logits train slower or worse, more so as d_k grows. */
/* The two tests of 5a / 5c: final loss and mean loss over the run. */
static qkt__tests two(const qkt__cmp *k) {
    qkt__tests t = {2, {qkt__report_verdict_loss(&k->loss, 1), qkt__report_verdict_loss(&k->auc, 1)}, {k->loss.p_exact, k->auc.p_exact}};
    for (int i = 0; i < 2; i++)
        if (t.v[i] == QKT_V_UNTESTABLE) t.p[i] = NAN; /* no interval: not a test of the family */
    return t;
}

static void claim_train(qkt__report *r, const qkt__cmp *small, const qkt__cmp *big) {
    const qkt_ablate_cfg *c = r->c;
    char m[700], l[160], a[160];
    qkt__report_fmt_paired(l, sizeof l, &big->loss, "%+.3f");
    qkt__report_fmt_paired(a, sizeof a, &big->auc, "%+.3f");
    snprintf(m, sizeof m, "d_k = %d, unscaled - scaled: final val loss (worse) %s; mean val loss over the run (slower) %s; reached 90 %% acc: %d/%d vs %d/%d "
             "(Fisher p = %.3g), first in %d pairs, second in %d, tied %d (sign test p = %.3g)",
             big->d_k, l, a, big->sa.n_escaped, big->sa.n_present, big->sb.n_escaped, big->sb.n_present, big->fisher_p, big->t90.losses,
             big->t90.wins, big->t90.ties, big->t90.p_sign);
    qkt__tests tv = two(big);
    if (big->sa.n_present && big->sa.n_diverged == big->sa.n_present)
        snprintf(m, sizeof m, "d_k = %d: every unscaled run diverged", big->d_k), tv = qkt__test(QKT_V_REPRODUCED, NAN);
    qkt__finding(r, "5a", "Unscaled logits train slower or worse", "Vaswani et al. 2017, sec. 3.2.1", m, NULL, tv);
    if (c->n_dk < 2 || small == big) {
        row(r, "5b", "... and more so as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", "one training d_k: no trend", QKT_V_UNTESTABLE, NAN);
        return;
    }
    /* the effect (unscaled - scaled mean loss over the run) at the largest d_k minus at the smallest, per seed */
    double dl[QKT_REPORT_MAX_SEEDS], ds[QKT_REPORT_MAX_SEEDS];
    for (int s = 0; s < big->sa.n; s++) dl[s] = big->sa.auc[s] - big->sb.auc[s], ds[s] = small->sa.auc[s] - small->sb.auc[s];
    qkt_paired p = qkt_stats_paired(dl, ds, big->sa.n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, c->run.tc.seed + 99);
    char pc[160];
    qkt__report_fmt_paired(pc, sizeof pc, &p, "%+.3f");
    snprintf(m, sizeof m, "effect on mean val loss at d_k = %d minus at d_k = %d (same seeds): %s", big->d_k, small->d_k, pc);
    row(r, "5b", "... and more so as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", m, qkt__report_verdict(&p, 1), p.p_exact);
}

/* 5c, 5d: the same on the second task, whose loss falls smoothly (no plateau to escape). */
static void claim_task2(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const char *src = "Vaswani et al. 2017, sec. 3.2.1";
    char m[700], l[160], a[160];
    if (!c->task2[0] || !c->n_task2_dk) {
        row(r, "5c", "Unscaled logits train slower or worse, on a task whose loss falls smoothly", src, "no second task in this run (--task2)",
            QKT_V_UNTESTABLE, NAN);
        return;
    }
    int ds = c->task2_dks[0], db = c->task2_dks[0];
    for (int i = 0; i < c->n_task2_dk; i++) ds = c->task2_dks[i] < ds ? c->task2_dks[i] : ds, db = c->task2_dks[i] > db ? c->task2_dks[i] : db;
    static qkt__cmp big, small;
    qkt__report_compare_exp(r, QKT_KIND(TRAIN2), QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, db, &big);
    qkt__report_compare_exp(r, QKT_KIND(TRAIN2), QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, ds, &small);
    qkt__report_fmt_paired(l, sizeof l, &big.loss, "%+.3f");
    qkt__report_fmt_paired(a, sizeof a, &big.auc, "%+.3f");
    snprintf(m, sizeof m, "`%s`, d_k = %d, unscaled - scaled: final val loss (worse) %s; mean val loss over the run (slower) %s", c->task2, db, l, a);
    qkt__tests tv = two(&big);
    if (!big.sa.n_present || !big.sb.n_present)
        snprintf(m, sizeof m, "`none` and `sqrt_dk` are not both trained on `%s`", c->task2), tv = qkt__test(QKT_V_UNTESTABLE, NAN);
    else if (big.sa.n_diverged == big.sa.n_present)
        snprintf(m, sizeof m, "`%s`, d_k = %d: every unscaled run diverged", c->task2, db), tv = qkt__test(QKT_V_REPRODUCED, NAN);
    qkt__finding(r, "5c", "Unscaled logits train slower or worse, on a task whose loss falls smoothly", src, m, NULL, tv);
    if (c->n_task2_dk < 2) {
        row(r, "5d", "... and more so as d_k grows (smooth task)", src, "one d_k on the second task: no trend", QKT_V_UNTESTABLE, NAN);
        return;
    }
    double dl[QKT_REPORT_MAX_SEEDS], dsm[QKT_REPORT_MAX_SEEDS];
    for (int s = 0; s < big.sa.n; s++) dl[s] = big.sa.auc[s] - big.sb.auc[s], dsm[s] = small.sa.auc[s] - small.sb.auc[s];
    qkt_paired p = qkt_stats_paired(dl, dsm, big.sa.n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, c->run.tc.seed + 199);
    char pc[160];
    qkt__report_fmt_paired(pc, sizeof pc, &p, "%+.3f");
    snprintf(m, sizeof m, "`%s`: effect on mean val loss at d_k = %d minus at d_k = %d (same seeds): %s", c->task2, db, ds, pc);
    row(r, "5d", "... and more so as d_k grows (smooth task)", src, m, qkt__report_verdict(&p, 1), p.p_exact);
}

/* ---------------------------------------------------------------- claims 6-7: the LR sweep */
/* Every LR run of the sweep, with its variant's index as the stratum. */
#define MAX_LR_RUNS (QKT_AB_MAX_LIST * QKT_AB_MAX_LIST * QKT_AB_MAX_LR_SEEDS)
#define MAX_STRATA (QKT_AB_MAX_LIST * QKT_AB_MAX_LR_SEEDS)
typedef struct {
    int n, n_failed, n_trained;
    qkt__lr_run u[MAX_LR_RUNS];
    int stratum[MAX_LR_RUNS]; /* variant x seed: the runs of a stratum share their init and data */
    int variant[MAX_LR_RUNS], seed[MAX_LR_RUNS];
    /* over a window common to a stratum's runs: evaluations up to its earliest instability (all if none) */
    double wlogit[MAX_LR_RUNS], wentropy[MAX_LR_RUNS];
} lr_runs;

static void lr_gather(const qkt__report *r, lr_runs *o) {
    const qkt_ablate_cfg *c = r->c;
    o->n = o->n_failed = o->n_trained = 0;
    for (int v = 0; v < c->n_lr_variants; v++)
        for (int s = 0; s < c->lr_seeds; s++)
            for (int i = 0; i < c->n_lr; i++) {
                qkt__lr_run *u = &o->u[o->n];
                qkt__report_lr_run(r, NAME(c->lr_variants[v]), i, s, u);
                if (u->run < 0) continue;
                o->variant[o->n] = v, o->seed[o->n] = s;
                o->stratum[o->n++] = v * c->lr_seeds + s;
                o->n_failed += u->failed, o->n_trained += !u->failed;
            }
    /* A run that trained keeps going after a failed one's loss rose: its logits have longer to grow and
     * its entropy to fall. Compare each variant's runs over the same evaluations, up to the earliest
     * step at which the loss of one of them rose for good (the whole run if none did). */
    for (int k = 0; k < o->n; k++) {
        int upto = 1 << 30;
        for (int j = 0; j < o->n; j++)
            if (o->stratum[j] == o->stratum[k] && o->u[j].rise_step >= 0 && o->u[j].rise_step < upto) upto = o->u[j].rise_step;
        int li = 0;
        while (li < c->n_lr && c->lrs[li] != o->u[k].lr) li++;
        qkt__report_lr_window(r, NAME(c->lr_variants[o->variant[k]]), li, o->seed[k], upto, &o->wlogit[k], &o->wentropy[k]);
    }
}

/* Unstable (group 1) against stable (group 0) runs of the same variant on value[i]. */
static qkt_ranked lr_rank(const qkt__report *r, const lr_runs *L, const double *value, uint64_t salt) {
    static int g[MAX_LR_RUNS];
    for (int i = 0; i < L->n; i++) g[i] = L->u[i].failed;
    return qkt_stats_strat_auc(value, g, L->stratum, L->n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, r->c->run.tc.seed * 7717 + salt);
}

/* The verdict of a ranked comparison whose claim is auc > 0.5. */
static qkt__verdict rank_verdict(const qkt_ranked *k) {
    if (k->n_pairs == 0) return QKT_V_UNTESTABLE;
    bool sig = k->p_exact <= 1 - QKT_REPORT_LEVEL + 1e-12;
    return sig && k->auc > 0.5 ? QKT_V_REPRODUCED : sig && k->auc < 0.5 ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
}

/* What "failed" means in the LR sweep, for the rows that use it. */
static void fail_rule(const qkt__report *r, char *b, size_t n) {
    char ch[48] = "unknown chance";
    if (isfinite(r->chance)) snprintf(ch, sizeof ch, "chance %.3f", r->chance);
    snprintf(b, n, "failed = the final validation loss not %.1f nats below the task's chance level (%s), or a rise of more than %.1f above "
                   "the running minimum lasting %d steps, or a non-finite loss", QKT_REPORT_TRAIN_MARGIN, ch, QKT_REPORT_RISE, QKT_REPORT_RISE_PERSIST(r->c));
}

/* Why claims 6a and 7a cannot be measured on this sweep (in m), with the row's verdict in
 * *v: untestable without an LR range or runs, not detectable when every run fell on one
 * side; NULL when they can be measured. */
static const char *lr_degenerate(const qkt__report *r, const lr_runs *L, char *m, size_t n, qkt__verdict *v) {
    const qkt_ablate_cfg *c = r->c;
    double top = c->lrs[0];
    for (int i = 1; i < c->n_lr; i++) top = fmax(top, c->lrs[i]);
    *v = QKT_V_UNTESTABLE;
    if (c->n_lr < 2) return snprintf(m, n, "one learning rate (%g): no LR range, nothing to compare", c->lrs[0]), m;
    if (L->n == 0) return snprintf(m, n, "no LR run in metrics.csv"), m;
    *v = QKT_V_NOT_DETECTABLE;
    char rule[300];
    fail_rule(r, rule, sizeof rule);
    if (L->n_failed == 0)
        return snprintf(m, n, "no run failed up to lr %g (%s; d_k = %d, %d steps, grad clip %g): the grid does not reach instability at this size",
                        top, rule, c->lr_dk, c->lr_steps, c->run.tc.grad_clip), m;
    if (L->n_trained == 0) return snprintf(m, n, "every one of the %d LR runs failed (%s): no run that trained to compare with", L->n, rule), m;
    return NULL;
}

/* 6a: the attention logits of runs that failed had grown larger (up to their loss's rise)
 * than those of the runs of the same variant that trained; and whether they had grown before the loss rose. */
static void claim_logit_growth(qkt__report *r, const lr_runs *L) {
    const qkt_ablate_cfg *c = r->c;
    const char *claim = "Attention-logit growth at high LR precedes divergence", *src = "Wortsman et al. 2023";
    char m[1200], rule[300];
    qkt__verdict dv;
    if (lr_degenerate(r, L, m, sizeof m, &dv)) {
        row(r, "6a", claim, src, m, dv, NAN);
        return;
    }
    fail_rule(r, rule, sizeof rule);
    static double g[MAX_LR_RUNS], stable_max[MAX_STRATA];
    for (int v = 0; v < MAX_STRATA; v++) stable_max[v] = -INFINITY;
    for (int i = 0; i < L->n; i++) {
        g[i] = L->wlogit[i];
        if (!L->u[i].failed && !isnan(g[i])) stable_max[L->stratum[i]] = fmax(stable_max[L->stratum[i]], g[i]);
    }
    qkt_ranked k = lr_rank(r, L, g, 6);
    /* the order, for failed runs whose loss rose with at least one evaluation between init and the rise:
     * had the logits passed every trained run's of the variant before the loss rose? */
    int before = 0, same = 0, none = 0, rose = 0, window = 0;
    for (int i = 0; i < L->n; i++) {
        const qkt__lr_run *u = &L->u[i];
        double sm = stable_max[L->stratum[i]];
        if (!u->failed || u->rise_step < 0 || !isfinite(sm)) continue;
        rose++;
        if (u->evals_before == 0) continue;
        window++;
        if (u->logit_before > sm) before++;
        else if (L->wlogit[i] > sm) same++;
        else none++;
    }
    if (k.n_pairs == 0) {
        snprintf(m, sizeof m, "%d failed and %d trained runs, but no variant has both: nothing to compare within a variant", L->n_failed, L->n_trained);
        row(r, "6a", claim, src, m, QKT_V_NOT_DETECTABLE, NAN);
        return;
    }
    char sched[96];
    qkt__report_lr_schedule(c, sched, sizeof sched);
    snprintf(m, sizeof m, "LR sweep (d_k = %d, %d seed%s per LR; %s): the largest attention logit is larger in failed than in trained runs of "
             "the same variant and seed (over the same evaluations: up to their earliest lasting loss rise) with probability "
             "%.2f [%.2f, %.2f] (%d pairs, exact stratified permutation p = %.3g; 0.5 = no difference). Of %d failed runs, %d had a lasting "
             "loss rise and %d of those an evaluation between init and the rise (evaluated %s): %d had passed every trained run's logit "
             "maximum before the loss rose, %d in the same evaluation, %d never. *Reproduced* needs both the association and growth first in "
             "more than half of the runs with such a window",
             c->lr_dk, c->lr_seeds, c->lr_seeds == 1 ? "" : "s", rule, k.auc, k.lo, k.hi, k.n_pairs, k.p_exact, L->n_failed, rose, window, sched, before, same, none);
    qkt__verdict v = rank_verdict(&k);
    if (v == QKT_V_REPRODUCED && !(2 * before > window)) v = QKT_V_NOT_DETECTABLE; /* associated, but not shown ahead of the loss */
    row(r, "6a", claim, src, m, v, k.p_exact);
}

static bool lr_has(const qkt_ablate_cfg *c, const char *name, qkt_attn_scale *out) {
    for (int i = 0; i < c->n_lr_variants; i++)
        if (!strcmp(NAME(c->lr_variants[i]), name)) return *out = c->lr_variants[i], true;
    return false;
}

/* "trained up to A, failed from B" for one variant (of seed 0). */
static void fmt_range(char *b, size_t n, const char *name, const qkt__lr_range *g) {
    if (isnan(g->max_trained_lr)) snprintf(b, n, "%s failed from the smallest LR", name);
    else if (isnan(g->min_failed_lr)) snprintf(b, n, "%s trained over the whole grid", name);
    else snprintf(b, n, "%s trained up to %g, failed from %g%s", name, g->max_trained_lr, g->min_failed_lr, g->stable_above ? " (trained again above)" : "");
}

/* A largest good LR (a grid index of the sorted grid, as qkt__report_range_rule gives it) in words. */
static const char *edge_name(char *b, size_t n, const qkt_ablate_cfg *c, const int *idx, int e) {
    if (e < 0) snprintf(b, n, "none");
    else if (e >= c->n_lr) snprintf(b, n, "whole grid");
    else snprintf(b, n, "%g", c->lrs[idx[e]]);
    return b;
}

/* The outcomes of a variant's LR runs, (lr_seeds, n_lr) in increasing LR order: 0 trained, 1 failed, -1 missing. */
static void lr_outcomes(const qkt__report *r, const char *variant, const int *idx, int *out) {
    const qkt_ablate_cfg *c = r->c;
    for (int s = 0; s < c->lr_seeds; s++)
        for (int k = 0; k < c->n_lr; k++) {
            qkt__lr_run u;
            qkt__report_lr_run(r, variant, idx[k], s, &u);
            out[s * c->n_lr + k] = u.run < 0 ? -1 : u.failed;
        }
}

/* Does `wide` have a wider stable LR range than `base`, over seeds? (6b: qk_layernorm, 7b: sigma_reparam, against sqrt_dk.) */
static void claim_range(qkt__report *r, const char *id, const char *claim, const char *src, const char *wide, const char *base) {
    const qkt_ablate_cfg *c = r->c;
    char m[2000], all[900] = "", rule[300], e[3][6][32];
    if (c->n_lr < 2) {
        row(r, id, claim, src, "one learning rate: no LR range", QKT_V_UNTESTABLE, NAN);
        return;
    }
    int idx[QKT_AB_MAX_LIST];
    qkt__report_lr_order(c, idx);
    static int ow[QKT_AB_MAX_LR_SEEDS * QKT_AB_MAX_LIST], ob[QKT_AB_MAX_LR_SEEDS * QKT_AB_MAX_LIST];
    lr_outcomes(r, wide, idx, ow), lr_outcomes(r, base, idx, ob);
    qkt__range_cmp k;
    qkt__report_range_rule(ow, ob, c->n_lr, c->lr_seeds, &k);
    if (k.n_seeds == 0) {
        snprintf(m, sizeof m, "`%s` or `%s` has no complete LR sweep", wide, base);
        row(r, id, claim, src, m, QKT_V_UNTESTABLE, NAN);
        return;
    }
    size_t at = 0; /* every variant's largest good LR, median [min, max] over seeds */
    for (int v = 0; v < c->n_lr_variants && at < sizeof all; v++) {
        static int ov[QKT_AB_MAX_LR_SEEDS * QKT_AB_MAX_LIST];
        qkt__range_cmp g;
        lr_outcomes(r, NAME(c->lr_variants[v]), idx, ov);
        qkt__report_range_rule(ov, ov, c->n_lr, c->lr_seeds, &g);
        if (!g.n_seeds) continue;
        at += (size_t)snprintf(all + at, sizeof all - at, "%s%s %s [%s, %s]", v ? "; " : "", NAME(c->lr_variants[v]), edge_name(e[0][0], 32, c, idx, g.edge_w[0]),
                               edge_name(e[0][1], 32, c, idx, g.edge_w[1]), edge_name(e[0][2], 32, c, idx, g.edge_w[2]));
    }
    fail_rule(r, rule, sizeof rule);
    bool flat = k.edge_w[1] >= c->n_lr && k.edge_b[1] >= c->n_lr; /* no run of either failed */
    if (k.n_seeds < 2) { /* one seed: the ranges in words, no test */
        char one[900] = "", x[200];
        size_t o = 0;
        for (int v = 0; v < c->n_lr_variants && o < sizeof one; v++) {
            qkt__lr_range g = qkt__report_lr_range(r, NAME(c->lr_variants[v]), 0);
            fmt_range(x, sizeof x, NAME(c->lr_variants[v]), &g);
            o += (size_t)snprintf(one + o, sizeof one - o, "%s%s", v ? "; " : "", x);
        }
        snprintf(m, sizeof m, "%s (of %d LRs %g..%g, one seed each, so each edge is one run and no test is possible; %s). All: %s%s",
                 k.edge_w[0] == k.edge_b[0] ? "same range on this grid" : "ranges differ", c->n_lr, c->lrs[idx[0]], c->lrs[idx[c->n_lr - 1]],
                 rule, one, flat ? " - the grid does not reach instability" : "");
    } else
        snprintf(m, sizeof m, "largest good LR, median [min, max] over %d seeds: %s %s [%s, %s], %s %s [%s, %s]; of the (LR, seed) pairs, %d trained "
                 "only with %s and %d only with %s (exact sign test p = %.3g) (%d LRs %g..%g; %s). All: %s%s",
                 k.n_seeds, wide, edge_name(e[1][0], 32, c, idx, k.edge_w[0]), edge_name(e[1][1], 32, c, idx, k.edge_w[1]),
                 edge_name(e[1][2], 32, c, idx, k.edge_w[2]), base, edge_name(e[2][0], 32, c, idx, k.edge_b[0]),
                 edge_name(e[2][1], 32, c, idx, k.edge_b[1]), edge_name(e[2][2], 32, c, idx, k.edge_b[2]), k.w_only, wide, k.b_only, base, k.p,
                 c->n_lr, c->lrs[idx[0]], c->lrs[idx[c->n_lr - 1]], rule, all, flat ? " - the grid does not reach instability" : "");
    row(r, id, claim, src, m, k.v, k.p);
}

/* 6b: qk-LayerNorm widens the stable LR range. */
static void claim_lr(qkt__report *r) {
    qkt_attn_scale q, s;
    const char *claim = "qk-LayerNorm widens the stable LR range", *src = "Wortsman et al. 2023";
    if (r->c->n_lr >= 2 && (!lr_has(r->c, "qk_layernorm", &q) || !lr_has(r->c, "sqrt_dk", &s))) { /* one LR: claim_range says so */
        row(r, "6b", claim, src, "`qk_layernorm` and `sqrt_dk` are not both in the LR sweep (--lr-variants)", QKT_V_UNTESTABLE, NAN);
        return;
    }
    claim_range(r, "6b", claim, src, "qk_layernorm", "sqrt_dk");
}

/* 7a: entropy collapse accompanies instability (lower minimum entropy in failed runs);
 * 7b: preventing it (sigma_reparam, Zhai et al.'s spectral reparametrisation of every Linear, when the build has
 * it and the sweep includes it) widens the stable range. */
static void claim_collapse(qkt__report *r, const lr_runs *L) {
    const qkt_ablate_cfg *c = r->c;
    const char *claim = "Attention-entropy collapse accompanies training instability", *src = "Zhai et al. 2023";
    char m[1200];
    qkt__verdict dv;
    if (lr_degenerate(r, L, m, sizeof m, &dv)) {
        row(r, "7a", claim, src, m, dv, NAN);
    } else {
        static double e[MAX_LR_RUNS];
        int cu = 0, cs = 0;
        for (int i = 0; i < L->n; i++) {
            e[i] = -L->wentropy[i]; /* larger = more collapsed */
            if (L->wentropy[i] < 0.1) cu += L->u[i].failed, cs += !L->u[i].failed;
        }
        qkt_ranked k = lr_rank(r, L, e, 7);
        snprintf(m, sizeof m, "LR sweep: the lowest normalised attention entropy (mean over heads) is lower in failed than in trained runs of "
                 "the same variant and seed (over the same evaluations: up to their earliest lasting loss rise) with probability %.2f [%.2f, %.2f] (%d pairs, exact stratified permutation "
                 "p = %.3g); below 0.1 (collapsed): %d of %d failed runs, %d of %d trained",
                 k.auc, k.lo, k.hi, k.n_pairs, k.p_exact, cu, L->n_failed, cs, L->n_trained);
        row(r, "7a", claim, src, m, k.n_pairs ? rank_verdict(&k) : QKT_V_NOT_DETECTABLE, k.n_pairs ? k.p_exact : NAN);
    }
    const char *c7 = "... and preventing it (sigma_reparam: every Linear W -> gamma W / sigma(W)) widens the stable LR range";
    qkt_attn_scale sr, s;
    if (!lr_has(c, "sigma_reparam", &sr) || !lr_has(c, "sqrt_dk", &s)) {
        qkt_attn_scale any;
        bool built = qkt_attn_scale_parse("sigma_reparam", &any, NULL) == 0;
        row(r, "7b", c7, src, built ? "`sigma_reparam` and `sqrt_dk` are not both in the LR sweep (add them with --lr-variants)"
                                    : "this build has no `sigma_reparam` variant",
            QKT_V_UNTESTABLE, NAN);
        return;
    }
    claim_range(r, "7b", c7, src, "sigma_reparam", "sqrt_dk");
}

/* 8. muP: with Adam, 1/d_k keeps the logit change width-independent, 1/sqrt(d_k) lets it grow. */
static void claim_mup(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    double x[QKT_AB_MAX_LIST], y[2][QKT_AB_MAX_LIST], se[2], b[2], h[2];
    for (int i = 0; i < c->n_growth_dk; i++) {
        x[i] = log(c->growth_dks[i]);
        for (int v = 0; v < 2; v++) {
            int run = qkt_table_find_run(r->t, QKT_KIND(GROWTH), NAME(qkt_study_growth_scales[v]), c->growth_dks[i], -1, 0);
            double d = qkt_table_value(r->t, run, QKT_M(LOGIT_DELTA_RMS), c->growth_steps, -1);
            y[v][i] = d > 0 ? log(d) : NAN;
        }
    }
    char m[400];
    const char *claim = "With Adam, 1/d_k keeps the logit change width-independent; under 1/sqrt(d_k) it grows with width";
    if (c->n_growth_dk < 3) {
        snprintf(m, sizeof m, "%d growth d_k value%s: a slope with an interval needs 3", c->n_growth_dk, c->n_growth_dk == 1 ? "" : "s");
        row(r, "8", claim, "Yang et al. 2022 (muP)", m, QKT_V_UNTESTABLE, NAN);
        return;
    }
    for (int v = 0; v < 2; v++) b[v] = qkt_stats_slope(x, y[v], c->n_growth_dk, &se[v]), h[v] = qkt_stats_t_quantile(0.975, c->n_growth_dk - 2) * se[v];
    snprintf(m, sizeof m, "log-log slope of the logit change after %d Adam steps vs d_k %d..%d: 1/sqrt(d_k) %.2f [%.2f, %.2f], 1/d_k %.2f [%.2f, %.2f]",
             c->growth_steps, c->growth_dks[0], c->growth_dks[c->n_growth_dk - 1], b[0], b[0] - h[0], b[0] + h[0], b[1], b[1] - h[1], b[1] + h[1]);
    qkt__verdict v = !isfinite(b[0]) || !isfinite(b[1]) ? QKT_V_UNTESTABLE
                     : b[0] - h[0] > b[1] + h[1] && fabs(b[1]) < 0.25 ? QKT_V_REPRODUCED
                     : b[0] + h[0] < b[1] - h[1]                      ? QKT_V_CONTRADICTED
                                                                      : QKT_V_NOT_DETECTABLE;
    row(r, "8", claim, "Yang et al. 2022 (muP)", m, v, NAN); /* a slope interval, no p-value */
}

void qkt__report_findings(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf_printf(&r->md, "## Findings\n\nEvery verdict is computed from this run's numbers: *reproduced* / *contradicted* when the "
                           "%.0f %% intervals of the mean seed-paired difference, the percentile bootstrap (%d resamples) and Student's t, both "
                           "exclude no effect on one side and the exact sign-flip test gives p <= %.2f, *not detectable at this size* when they do not; "
                           "a difference of losses detected so but under %.2f nats on average is *negligible*. The p-values "
                           "of the table are one family: each is shown after Holm's step-down adjustment over all of them (the count is in the "
                           "column's title), and a verdict needs the adjusted p <= %.2f as well. Training: task `%s`, "
                           "W_q/W_k init `%s`, %d seed%s per cell%s, paired (same batches and init per seed; `learned` and `qk_layernorm` "
                           "have extra parameters, so only their data is paired).\n\n",
                   100 * QKT_REPORT_LEVEL, QKT_REPORT_BOOT, 1 - QKT_REPORT_LEVEL, QKT_REPORT_MIN_LOSS, 1 - QKT_REPORT_LEVEL, c->run.data, qkt_qk_init_name(c->run.tc.model.qk_init), r->seeds_used,
                   r->seeds_used == 1 ? "" : "s", r->seeds_used < c->seeds ? " (at least; cells are missing, see above)" : "");
    int dsmall = c->dks[0], dbig = c->dks[0];
    for (int i = 0; i < c->n_dk; i++) dsmall = c->dks[i] < dsmall ? c->dks[i] : dsmall, dbig = c->dks[i] > dbig ? c->dks[i] : dbig;
    static qkt__cmp big, small;
    qkt__report_compare(r, QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, dbig, &big);
    qkt__report_compare(r, QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, dsmall, &small);
    bool trained = has_variant(c->variants, c->n_variants, QKT_ATTN_NONE) && has_variant(c->variants, c->n_variants, QKT_ATTN_SQRT_DK);
    claim_saturate(r, &big);
    if (trained) {
        qkt__report_claim_grad(r);
        claim_train(r, c->n_dk > 1 ? &small : &big, &big);
        claim_task2(r);
        qkt__report_claim_origin(r);
    } else {
        row(r, "4-5", "training claims (gradients, loss)", "-", "`none` and `sqrt_dk` are not both trained", QKT_V_UNTESTABLE, NAN);
    }
    static lr_runs L;
    lr_gather(r, &L);
    claim_logit_growth(r, &L);
    claim_lr(r);
    claim_collapse(r, &L);
    claim_mup(r);
    qkt__report_claim_sharpen(r);
    qkt__findings_print(r);
    qkt_buf_printf(&r->md, "\n### Sanity checks\n\nThese hold by construction (the arithmetic of the dot product and of the scale), so they "
                           "check the measurement code rather than test a hypothesis.\n\n"
                           "| # | check | measurement | verdict | source |\n|---|---|---|---|---|\n");
    claim_std(r);
    claim_dmodel(r);
    qkt_buf_printf(&r->md, "\n");
}
