/* The findings table at the top of report.md: each claim of the literature, what this
 * run measured, and the verdict computed from the numbers (never typed). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_stats.h"
#include "qkt_study.h"
#include "report_internal.h"

#define NAME(v) qkt_attn_scale_name(v)

static void row(qkt__report *r, const char *id, const char *claim, const char *source, const char *meas, const char *verdict) {
    qkt_buf_printf(&r->md, "| %s | %s | %s | %s | %s |\n", id, claim, meas, verdict, source);
}

static double iid(const qkt_table *t, qkt_attn_scale v, int d, qkt_metric m) {
    char id[96];
    snprintf(id, sizeof id, "iid_%s_dk%d", NAME(v), d);
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
    row(r, "1", "With unit-variance q, k the dot product q.k has std sqrt(d_k)", "Vaswani et al. 2017, footnote 4", m, v);
}

/* 2. Unscaled softmax saturates: iid entropy and Jacobian from the smallest to the largest d_k,
 * and the trained model at step 0 (paired by seed). */
static void claim_saturate(qkt__report *r, const qkt__cmp *big) {
    const qkt_ablate_cfg *c = r->c;
    char m[600], v[200], pc[160];
    if (c->n_init_dk < 2) {
        row(r, "2", "Unscaled logits saturate the softmax: entropy and Jacobian fall as d_k grows", "Vaswani et al. 2017, sec. 3.2.1",
            "one init d_k: no trend", qkt__verdict_name(QKT_V_UNTESTABLE));
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
    snprintf(v, sizeof v, "%s (iid)%s%s", qkt__verdict_name(iv),
             g == QKT_V_UNTESTABLE ? "" : "; GPT: ", g == QKT_V_UNTESTABLE ? "" : qkt__verdict_name(g));
    row(r, "2", "Unscaled logits saturate the softmax: entropy and Jacobian fall as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", m, v);
}

/* 3. sqrt(d_model) instead of sqrt(d_k) over-shrinks the logits when heads > 1. */
static void claim_dmodel(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    char m[400];
    if (c->n_head < 2) {
        row(r, "3", "Scaling by sqrt(d_model) instead of sqrt(d_k) flattens attention when heads > 1", "common implementation error",
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
             c->n_head, c->n_head, lo, hi, c->init_dks[0], c->init_dks[c->n_init_dk - 1]);
    qkt__verdict v = lo > 0.01 ? QKT_V_REPRODUCED : hi < -0.01 ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
    row(r, "3", "Scaling by sqrt(d_model) instead of sqrt(d_k) flattens attention when heads > 1", "common implementation error", m,
        qkt__verdict_name(v));
}

/* 4. Without the scale W_q and W_k get vanishing gradients: log gradient ratio unscaled /
 * scaled, paired by seed, at step 0, early and late in training. */
static void claim_grad(qkt__report *r, const qkt__cmp *big) {
    static const char *const phase[3] = {"at init (step 0)", "first half of training", "second half of training"};
    static const char *const id[3] = {"4a", "4b", "4c"};
    for (int k = 0; k < 3; k++) {
        char m[400], pc[160];
        const qkt_paired *p = &big->grad[k];
        qkt__report_fmt_paired(pc, sizeof pc, p, "%+.2f");
        snprintf(m, sizeof m, "d_k = %d, %s: log(|grad W_q,W_k| unscaled / scaled) = %s%s", big->d_k, phase[k], pc,
                 p->n ? (p->mean > 0 ? " (unscaled gets the larger gradient)" : " (unscaled gets the smaller gradient)") : "");
        row(r, id[k], "Without the 1/sqrt(d_k), W_q and W_k get vanishing gradients (softmax saturation)", "common explanation (e.g. textbooks)",
            m, qkt__verdict_name(qkt__report_verdict(p, -1)));
    }
}

/* 5. Unscaled logits train slower or worse, more so as d_k grows. */
static qkt__verdict combine(qkt__verdict a, qkt__verdict b) {
    if (a == QKT_V_UNTESTABLE && b == QKT_V_UNTESTABLE) return QKT_V_UNTESTABLE;
    bool rep = a == QKT_V_REPRODUCED || b == QKT_V_REPRODUCED, con = a == QKT_V_CONTRADICTED || b == QKT_V_CONTRADICTED;
    return rep && !con ? QKT_V_REPRODUCED : con && !rep ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
}

static void claim_train(qkt__report *r, const qkt__cmp *small, const qkt__cmp *big) {
    const qkt_ablate_cfg *c = r->c;
    char m[700], l[160], a[160];
    qkt__report_fmt_paired(l, sizeof l, &big->loss, "%+.3f");
    qkt__report_fmt_paired(a, sizeof a, &big->auc, "%+.3f");
    snprintf(m, sizeof m, "d_k = %d, unscaled - scaled: final val loss %s; mean val loss over the run %s; reached 90 %% acc: %d/%d vs %d/%d "
             "(Fisher p = %.3g), first in %d pairs, second in %d, tied %d (sign test p = %.3g)",
             big->d_k, l, a, big->sa.n_escaped, big->sa.n_present, big->sb.n_escaped, big->sb.n_present, big->fisher_p, big->t90.losses,
             big->t90.wins, big->t90.ties, big->t90.p_sign);
    qkt__verdict v = combine(qkt__report_verdict(&big->loss, 1), qkt__report_verdict(&big->auc, 1));
    if (big->sa.n_present && big->sa.n_diverged == big->sa.n_present) snprintf(m, sizeof m, "d_k = %d: every unscaled run diverged", big->d_k), v = QKT_V_REPRODUCED;
    row(r, "5a", "Unscaled logits train slower or worse", "Vaswani et al. 2017, sec. 3.2.1", m, qkt__verdict_name(v));
    if (c->n_dk < 2 || small == big) {
        row(r, "5b", "... and more so as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", "one training d_k: no trend", qkt__verdict_name(QKT_V_UNTESTABLE));
        return;
    }
    /* the effect (unscaled - scaled mean loss over the run) at the largest d_k minus at the smallest, per seed */
    double dl[QKT_REPORT_MAX_SEEDS], ds[QKT_REPORT_MAX_SEEDS];
    for (int s = 0; s < big->sa.n; s++) dl[s] = big->sa.auc[s] - big->sb.auc[s], ds[s] = small->sa.auc[s] - small->sb.auc[s];
    qkt_paired p = qkt_stats_paired(dl, ds, big->sa.n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, c->seed + 99);
    char pc[160];
    qkt__report_fmt_paired(pc, sizeof pc, &p, "%+.3f");
    snprintf(m, sizeof m, "effect on mean val loss at d_k = %d minus at d_k = %d (same seeds): %s", big->d_k, small->d_k, pc);
    row(r, "5b", "... and more so as d_k grows", "Vaswani et al. 2017, sec. 3.2.1", m, qkt__verdict_name(qkt__report_verdict(&p, 1)));
}

/* The LR runs of a variant: stable = finite and below its loss at init. */
typedef struct {
    int n, stable, diverged;
    double max_stable_lr;
} lr_sum;

static int lr_run(const qkt__report *r, qkt_attn_scale v, int i) { return qkt_table_find_run(r->t, QKT_KIND(LR), NAME(v), r->c->lr_dk, 0, r->c->lrs[i]); }

static bool lr_stable(const qkt__report *r, int run) {
    if (run < 0 || qkt__report_diverged(r->t, run, NULL)) return false;
    double f = qkt__report_final_val(r->t, run, QKT_M(VAL_LOSS)), i0 = qkt_table_value(r->t, run, QKT_M(VAL_LOSS), 0, -1);
    return isfinite(f) && f < i0;
}

static lr_sum lr_summary(const qkt__report *r, qkt_attn_scale v) {
    lr_sum s = {.max_stable_lr = NAN};
    for (int i = 0; i < r->c->n_lr; i++) {
        int run = lr_run(r, v, i);
        if (run < 0) continue;
        s.n++;
        s.diverged += qkt__report_diverged(r->t, run, NULL);
        if (lr_stable(r, run)) s.stable++, s.max_stable_lr = isfinite(s.max_stable_lr) ? fmax(s.max_stable_lr, r->c->lrs[i]) : r->c->lrs[i];
    }
    return s;
}

/* The largest logit max over the evaluations before the end (or divergence), / the one at step 0. */
static double logit_growth(const qkt_table *t, int run) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int n = qkt_table_series(t, run, QKT_M(LOGIT_MAX), -1, st, v, QKT_REPORT_MAXS);
    double m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) m = fmax(m, v[i]);
    return n && v[0] > 0 && isfinite(m) ? m / v[0] : NAN;
}

/* 6. Logit growth precedes divergence; qk-LayerNorm widens the stable LR range. */
static void claim_lr(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const char *src = "Wortsman et al. 2023";
    char m[600];
    if (c->n_lr < 2) {
        row(r, "6a", "Attention-logit growth at high LR precedes divergence", src, "one learning rate: no LR range", qkt__verdict_name(QKT_V_UNTESTABLE));
        row(r, "6b", "qk-LayerNorm widens the stable LR range", src, "one learning rate: no LR range", qkt__verdict_name(QKT_V_UNTESTABLE));
        return;
    }
    double gd = -INFINITY, gs = -INFINITY; /* largest growth among diverged / stable runs */
    int nd = 0, ns = 0, nd_above = 0;
    double gdiv[QKT_AB_MAX_LIST * QKT_AB_MAX_LIST];
    for (int v = 0; v < c->n_lr_variants; v++)
        for (int i = 0; i < c->n_lr; i++) {
            int run = lr_run(r, c->lr_variants[v], i);
            if (run < 0) continue;
            double g = logit_growth(r->t, run);
            if (qkt__report_diverged(r->t, run, NULL)) gdiv[nd++] = g, gd = fmax(gd, g);
            else if (lr_stable(r, run)) ns++, gs = fmax(gs, g);
        }
    for (int i = 0; i < nd; i++) nd_above += gdiv[i] > gs;
    qkt__verdict v6a;
    if (nd == 0) {
        snprintf(m, sizeof m, "no run of the LR sweep diverged (lr up to %g, d_k = %d, grad clip %g)", c->lrs[c->n_lr - 1], c->lr_dk, c->grad_clip);
        v6a = QKT_V_NOT_DETECTABLE;
    } else {
        snprintf(m, sizeof m, "%d diverged runs: %d had a larger logit-max growth (max over evals / at init) than every one of the %d stable runs "
                 "(largest: %.1fx diverged, %.1fx stable); one seed per LR", nd, nd_above, ns, gd, gs);
        v6a = ns == 0 ? QKT_V_NOT_DETECTABLE : 2 * nd_above > nd ? QKT_V_REPRODUCED : nd_above == 0 ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE;
    }
    row(r, "6a", "Attention-logit growth at high LR precedes divergence", src, m, qkt__verdict_name(v6a));
    if (!has_variant(c->lr_variants, c->n_lr_variants, QKT_ATTN_QK_LAYERNORM) || !has_variant(c->lr_variants, c->n_lr_variants, QKT_ATTN_SQRT_DK)) {
        row(r, "6b", "qk-LayerNorm widens the stable LR range", src, "qk_layernorm and sqrt_dk are not both in the LR sweep", qkt__verdict_name(QKT_V_UNTESTABLE));
        return;
    }
    lr_sum q = lr_summary(r, QKT_ATTN_QK_LAYERNORM), s = lr_summary(r, QKT_ATTN_SQRT_DK);
    snprintf(m, sizeof m, "LRs (of %d, %g..%g) ending below the loss at init: qk_layernorm %d (largest %g), sqrt_dk %d (largest %g); one seed", c->n_lr,
             c->lrs[0], c->lrs[c->n_lr - 1], q.stable, q.max_stable_lr, s.stable, s.max_stable_lr);
    row(r, "6b", "qk-LayerNorm widens the stable LR range", src, m,
        qkt__verdict_name(q.stable > s.stable ? QKT_V_REPRODUCED : q.stable < s.stable ? QKT_V_CONTRADICTED : QKT_V_NOT_DETECTABLE));
}

/* 7. Entropy collapse accompanies instability: LR runs, collapsed = min normalised entropy < 0.1. */
static void claim_collapse(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int k[2][2] = {{0, 0}, {0, 0}}; /* [unstable, stable][collapsed, not] */
    for (int a = 0; a < c->n_lr_variants; a++)
        for (int i = 0; i < c->n_lr; i++) {
            int run = lr_run(r, c->lr_variants[a], i);
            if (run < 0) continue;
            int n = qkt_table_series(r->t, run, QKT_M(NORM_ENTROPY), -1, st, v, QKT_REPORT_MAXS);
            double mn = INFINITY;
            for (int j = 0; j < n; j++)
                if (isfinite(v[j])) mn = fmin(mn, v[j]);
            k[lr_stable(r, run) ? 1 : 0][mn < 0.1 ? 0 : 1]++;
        }
    char m[500];
    int nu = k[0][0] + k[0][1], ns = k[1][0] + k[1][1];
    double p = qkt_stats_fisher(k[0][0], k[0][1], k[1][0], k[1][1]);
    qkt__verdict vv;
    if (nu == 0 || ns == 0) {
        snprintf(m, sizeof m, "LR sweep: %d unstable (diverged or not below the loss at init) and %d stable runs: nothing to compare", nu, ns);
        vv = QKT_V_NOT_DETECTABLE;
    } else {
        snprintf(m, sizeof m, "LR sweep, collapse = normalised entropy (mean over heads) below 0.1 at some evaluation: unstable runs %d/%d, stable %d/%d "
                 "(Fisher p = %.3g)", k[0][0], nu, k[1][0], ns, p);
        bool more = (double)k[0][0] / nu > (double)k[1][0] / ns;
        vv = p > 0.05 ? QKT_V_NOT_DETECTABLE : more ? QKT_V_REPRODUCED : QKT_V_CONTRADICTED;
    }
    row(r, "7a", "Attention-entropy collapse accompanies training instability", "Zhai et al. 2023", m, qkt__verdict_name(vv));
    row(r, "7b", "... and preventing it (sigma_reparam) stabilises training", "Zhai et al. 2023", "-", "not tested: needs sigma_reparam");
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
        row(r, "8", claim, "Yang et al. 2022 (muP)", m, qkt__verdict_name(QKT_V_UNTESTABLE));
        return;
    }
    for (int v = 0; v < 2; v++) b[v] = qkt_stats_slope(x, y[v], c->n_growth_dk, &se[v]), h[v] = qkt_stats_t_quantile(0.975, c->n_growth_dk - 2) * se[v];
    snprintf(m, sizeof m, "log-log slope of the logit change after %d Adam steps vs d_k %d..%d: 1/sqrt(d_k) %.2f [%.2f, %.2f], 1/d_k %.2f [%.2f, %.2f]",
             c->growth_steps, c->growth_dks[0], c->growth_dks[c->n_growth_dk - 1], b[0], b[0] - h[0], b[0] + h[0], b[1], b[1] - h[1], b[1] + h[1]);
    qkt__verdict v = !isfinite(b[0]) || !isfinite(b[1]) ? QKT_V_UNTESTABLE
                     : b[0] - h[0] > b[1] + h[1] && fabs(b[1]) < 0.25 ? QKT_V_REPRODUCED
                     : b[0] + h[0] < b[1] - h[1]                      ? QKT_V_CONTRADICTED
                                                                      : QKT_V_NOT_DETECTABLE;
    row(r, "8", claim, "Yang et al. 2022 (muP)", m, qkt__verdict_name(v));
}

void qkt__report_findings(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf_printf(&r->md, "## Findings\n\nEvery verdict is computed from this run's numbers: *reproduced* / *contradicted* when the "
                           "%.0f %% interval (bootstrap over seed-paired differences, %d resamples; p from the exact sign-flip test) "
                           "excludes no effect on one side and the exact test gives p <= %.2f, *not detectable at this size* when it does not. Training: task `%s`, "
                           "W_q/W_k init `%s`, %d seed%s per cell, paired (same batches and init per seed; `learned` and `qk_layernorm` "
                           "have extra parameters, so only their data is paired).\n\n",
                   100 * QKT_REPORT_LEVEL, QKT_REPORT_BOOT, 1 - QKT_REPORT_LEVEL, c->task, qkt_qk_init_name(c->qk_init), c->seeds, c->seeds == 1 ? "" : "s");
    qkt_buf_printf(&r->md, "| # | claim | measurement | verdict | source |\n|---|---|---|---|---|\n");
    claim_std(r);
    int dsmall = c->dks[0], dbig = c->dks[0];
    for (int i = 0; i < c->n_dk; i++) dsmall = c->dks[i] < dsmall ? c->dks[i] : dsmall, dbig = c->dks[i] > dbig ? c->dks[i] : dbig;
    static qkt__cmp big, small;
    qkt__report_compare(r, QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, dbig, &big);
    qkt__report_compare(r, QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, dsmall, &small);
    bool trained = has_variant(c->variants, c->n_variants, QKT_ATTN_NONE) && has_variant(c->variants, c->n_variants, QKT_ATTN_SQRT_DK);
    claim_saturate(r, &big);
    claim_dmodel(r);
    if (trained) {
        claim_grad(r, &big);
        claim_train(r, c->n_dk > 1 ? &small : &big, &big);
    } else {
        row(r, "4-5", "training claims (gradients, loss)", "-", "`none` and `sqrt_dk` are not both trained", qkt__verdict_name(QKT_V_UNTESTABLE));
    }
    claim_lr(r);
    claim_collapse(r);
    claim_mup(r);
    qkt_buf_printf(&r->md, "\n");
}
