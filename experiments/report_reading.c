/* "What the numbers say": the report's summary of parts 1-4 in sentences, each claim
 * computed from the same metrics the parts print. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* Index of the value in v[0..n) closest to want. */
static int nearest(const int *v, int n, int want) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (abs(v[i] - want) < abs(v[best] - want)) best = i;
    return best;
}

/* Part 1 at the init d_k closest to 64: iid q, k, then the fresh GPT. */
static void reading_init(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    int d = c->init_dks[nearest(c->init_dks, c->n_init_dk, 64)];
    const char *sqrt_dk = qkt_attn_scale_name(QKT_ATTN_SQRT_DK), *none = qkt_attn_scale_name(QKT_ATTN_NONE);
    char id[2][96];
    qkt_cell_id(id[0], 96, QKT_CELL_IID, QKT_ATTN_SQRT_DK, d, 0, 0);
    qkt_cell_id(id[1], 96, QKT_CELL_IID, QKT_ATTN_NONE, d, 0, 0);
    int run[2] = {qkt__report_run_by_id(t, id[0]), qkt__report_run_by_id(t, id[1])};
    double e_s = qkt_table_value(t, run[0], QKT_M(IID_NORM_ENTROPY), 0, -1), e_n = qkt_table_value(t, run[1], QKT_M(IID_NORM_ENTROPY), 0, -1);
    double j_s = qkt_table_value(t, run[0], QKT_M(IID_JACOBIAN), 0, -1), j_n = qkt_table_value(t, run[1], QKT_M(IID_JACOBIAN), 0, -1);
    double p_n = qkt_table_value(t, run[1], QKT_M(IID_MAX_WEIGHT), 0, -1), p_s = qkt_table_value(t, run[0], QKT_M(IID_MAX_WEIGHT), 0, -1);
    qkt_buf_printf(md, "- **At init, unit-variance q and k.** At d_k = %d the unscaled logits have std %.1f; attention starts %s: "
                       "normalised entropy %.2f unscaled vs %.2f scaled, mean max weight %.2f vs %.2f, softmax Jacobian norm %.3f vs %.3f "
                       "(%.1fx %s).\n",
                   d, qkt_table_value(t, run[1], QKT_M(IID_LOGIT_STD), 0, -1), e_n < e_s ? "far more peaked unscaled" : "no more peaked unscaled",
                   e_n, e_s, p_n, p_s, j_n, j_s, j_n > 0 ? j_s / j_n : NAN, j_n < j_s ? "smaller unscaled" : "larger unscaled");
    int ri = qkt_table_find_run(t, QKT_KIND(INIT), none, d, -1, 0), rs = qkt_table_find_run(t, QKT_KIND(INIT), sqrt_dk, d, -1, 0);
    if (ri >= 0 && rs >= 0) {
        double sn = qkt_table_value(t, ri, QKT_M(LOGIT_STD), 0, -1), ss = qkt_table_value(t, rs, QKT_M(LOGIT_STD), 0, -1);
        qkt_buf_printf(md, "- **At init, a real GPT.** With N(0, %g) weights (W_q, W_k `%s` x %g) the logits at d_k = %d have std %.3f "
                           "unscaled and %.3f scaled: %s\n",
                       c->run.tc.model.init_std, qkt_qk_init_name(c->run.tc.model.qk_init), c->run.tc.model.qk_init_mult, d, sn, ss,
                       sn < 1 ? "small either way, so a freshly initialised model attends almost uniformly whatever the scale; the "
                                "difference between variants builds up as W_q and W_k grow in training."
                              : "large enough unscaled to make attention peaked from the first step.");
    }
}

/* Unscaled vs 1/sqrt(d_k) at one d_k: the paired difference of final losses over seeds. */
static void reading_none_vs_sqrt(qkt__report *r, int dk) {
    const qkt_ablate_cfg *c = r->c;
    bool has_s = false, has_n = false;
    for (int v = 0; v < c->n_variants; v++) has_s |= c->variants[v] == QKT_ATTN_SQRT_DK, has_n |= c->variants[v] == QKT_ATTN_NONE;
    if (!has_s || !has_n) return;
    static qkt__cmp k;
    qkt__report_compare(r, QKT_ATTN_NONE, QKT_ATTN_SQRT_DK, dk, &k);
    qkt_buf *md = &r->md;
    char pc[160];
    qkt__report_fmt_paired(pc, sizeof pc, &k.loss, "%+.3f");
    qkt_buf_printf(md, " Unscaled minus 1/sqrt(d_k), final loss paired by seed: %s; ", pc);
    const qkt__verdict vloss = qkt__report_verdict_loss(&k.loss, 1); /* reproduced / contradicted unless negligible */
    if (k.loss.n == 0) qkt_buf_printf(md, "no seed has both runs finished without diverging, so no comparison.");
    else if (k.loss.n < 2) qkt_buf_printf(md, "one seed only, so no claim about the difference.");
    else if (vloss == QKT_V_NEGLIGIBLE)
        qkt_buf_printf(md, "the difference is consistent over the seeds but under %.2f nats: negligible.", QKT_REPORT_MIN_LOSS);
    else if (vloss == QKT_V_REPRODUCED) qkt_buf_printf(md, "unscaled is worse (both intervals exclude 0, exact p <= 0.05 for this comparison alone; the findings table adjusts for its many tests).");
    else if (vloss == QKT_V_CONTRADICTED) qkt_buf_printf(md, "unscaled is *better* (both intervals exclude 0, exact p <= 0.05 for this comparison alone; the findings table adjusts for its many tests), unlike the textbook expectation.");
    else if (qkt__report_verdict(&k.auc, 1) == QKT_V_REPRODUCED) { /* both end at the same loss: the harm is in the time taken */
        qkt__report_fmt_paired(pc, sizeof pc, &k.auc, "%+.3f");
        qkt_buf_printf(md, "not significant with %d seeds, but the mean loss over the run is higher unscaled, %s: unscaled is slower, not worse "
                           "(exact p <= 0.05 for this comparison alone).", k.loss.n, pc);
    } else qkt_buf_printf(md, "not significant with %d seeds (the exact test's floor is p = %.3g).", k.loss.n, k.loss.p_min);
}

/* Part 2 at one d_k: the best variant, who reached 90 %, sqrt_dk vs none, divergences. */
static void reading_train(qkt__report *r, int dk) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf *md = &r->md;
    int best = -1;
    double best_l = INFINITY;
    qkt__cell_sum cs[QKT_AB_MAX_LIST];
    for (int v = 0; v < c->n_variants; v++) {
        cs[v] = qkt__report_summarize(r->t, QKT_KIND(TRAIN), qkt_attn_scale_name(c->variants[v]), dk, c->seeds, 0);
        /* a variant whose every run diverged has no loss to rank (its last evaluation predates the divergence) */
        if (cs[v].n_runs && cs[v].n_div < cs[v].n_runs && cs[v].loss_m < best_l) best_l = cs[v].loss_m, best = v;
    }
    if (best < 0) {
        qkt_buf_printf(md, "- **Training, d_k = %d.** No run finished without diverging: no loss to compare.\n", dk);
        return;
    }
    qkt_buf_printf(md, "- **Training, d_k = %d.** Lowest final validation loss: `%s` (%.3f +- %.3f). Runs reaching 90 %% "
                       "validation accuracy:", dk, qkt_attn_scale_name(c->variants[best]), cs[best].loss_m, cs[best].loss_sd);
    for (int v = 0; v < c->n_variants; v++)
        if (cs[v].n_runs) qkt_buf_printf(md, "%s `%s` %d/%d", v ? "," : "", qkt_attn_scale_name(c->variants[v]), cs[v].n_s90, cs[v].n_runs);
    qkt_buf_printf(md, ".");
    reading_none_vs_sqrt(r, dk);
    int ndiv = 0;
    for (int v = 0; v < c->n_variants; v++) ndiv += cs[v].n_div;
    if (ndiv) {
        qkt_buf_printf(md, " Diverged:");
        for (int v = 0; v < c->n_variants; v++)
            if (cs[v].n_div) qkt_buf_printf(md, " `%s` %d/%d (first at step %d)", qkt_attn_scale_name(c->variants[v]), cs[v].n_div, cs[v].n_runs, cs[v].first_div);
        qkt_buf_printf(md, ".");
    }
    qkt_buf_printf(md, "\n");
}

/* Part 3: the least and most LR-sensitive variants, with each one's best loss. */
static void reading_lr(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    double best_sens = INFINITY, worst_sens = -INFINITY;
    int bi = -1, wi = -1;
    for (int v = 0; v < c->n_lr_variants; v++) {
        double blr, sv = qkt__report_lr_sensitivity(t, c, qkt_attn_scale_name(c->lr_variants[v]), &blr);
        if (sv < best_sens) best_sens = sv, bi = v;
        if (sv > worst_sens) worst_sens = sv, wi = v;
    }
    if (c->n_lr < 2) {
        qkt_buf_printf(md, "- **Learning rate.** One learning rate (%g): no LR sensitivity can be measured or ranked; give `--lr-grid` at least two.\n", c->lrs[0]);
        return;
    }
    if (bi < 0 || wi < 0) {
        qkt_buf_printf(md, "- **Learning rate.** Every run of the LR sweep diverged: no sensitivity to rank.\n");
        return;
    }
    if (bi == wi || best_sens == worst_sens) {
        qkt_buf_printf(md, "- **Learning rate.** Every variant has the same LR sensitivity (%.3f): no ranking.\n", best_sens);
        return;
    }
    qkt_buf_printf(md, "- **Learning rate.** Least LR-sensitive: `%s` (%.3f); most: `%s` (%.3f). The measure is relative to the best "
                       "final loss of any variant in the sweep, %.3f (each variant's best:", qkt_attn_scale_name(c->lr_variants[bi]), best_sens,
                   qkt_attn_scale_name(c->lr_variants[wi]), worst_sens, qkt__report_lr_best_all(t, c));
    for (int v = 0; v < c->n_lr_variants; v++) {
        double blr = NAN, bl = INFINITY;
        qkt__report_lr_sensitivity(t, c, qkt_attn_scale_name(c->lr_variants[v]), &blr);
        for (int i = 0; i < c->n_lr; i++) {
            int run = qkt_table_find_run(t, QKT_KIND(LR), qkt_attn_scale_name(c->lr_variants[v]), c->lr_dk, 0, c->lrs[i]);
            double l = run < 0 ? NAN : qkt__report_final_val(t, run, QKT_M(VAL_LOSS));
            if (isfinite(l) && l < bl) bl = l;
        }
        qkt_buf_printf(md, "%s `%s` %.3f at lr %g", v ? "," : "", qkt_attn_scale_name(c->lr_variants[v]), bl, blr);
    }
    qkt_buf_printf(md, "), so a variant is charged both for a narrow LR range and for a worse best loss. Wortsman "
                       "et al. expect unscaled or under-scaled logits to be the most sensitive at high LR and qk-LayerNorm the least.\n");
}

void qkt__report_reading(qkt__report *r, double slope_sqrt, double slope_dk) {
    qkt_buf_printf(&r->md, "## What the numbers say\n\n");
    reading_init(r);
    for (int di = 0; di < r->c->n_dk; di++) reading_train(r, r->c->dks[di]);
    reading_lr(r);
    qkt__robust_reading(r);
    if (r->c->n_growth_dk < 2) {
        qkt_buf_printf(&r->md, "- **Logit growth.** One d_k only: no slope against d_k (give `--growth-d-k` at least two values).\n\n");
        return;
    }
    qkt_buf_printf(&r->md, "- **Logit growth.** Slope of the logit change against d_k: %.2f with 1/sqrt(d_k), %.2f with 1/d_k. muP predicts "
                           "growth with width under 1/sqrt(d_k) and a flat line under 1/d_k; %s\n\n",
                   slope_sqrt, slope_dk,
                   slope_sqrt > slope_dk + 0.2 ? "the measurement agrees in direction."
                                               : "the measurement does not show the predicted gap at these sizes and step counts.");
}
