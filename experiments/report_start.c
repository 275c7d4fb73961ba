/* Claims 4 and 9 from the 2x2 of scale form x start at start_d_k. A task's four cells, paired
 * by seed (same batches; the same init draws up to the factor on W_q, W_k):
 *   scaled form (sqrt_dk),  unsaturated start: train sqrt_dk (qk_init_mult x 1)
 *   scaled form,            saturated start:   start sqrt_dk (x d_k^(1/4): none's logits at init)
 *   unscaled form (none),   unsaturated start: start none    (x d_k^(-1/4): sqrt_dk's logits at init)
 *   unscaled form,          saturated start:   train none    (x 1)
 * Comparing none with sqrt_dk mixes two things: the form's factor 1/sqrt(d_k), which the chain
 * rule puts in front of the W_q, W_k gradient, and the size of the logits. At a fixed form only
 * the logits change, so the gradient claim is tested there. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_stats.h"
#include "report_internal.h"

#define SRC_GRAD "common explanation (e.g. textbooks)"
#define SRC_2X2 "this study (2x2 of form x start)"

typedef struct {
    qkt__seeds su, ss, nu, ns; /* scaled / unscaled form (s, n), unsaturated / saturated start (u, s) */
    double fsu, fss, fnu, fns; /* the factor s m in front of dL/dz in each cell's W_q, W_k gradient */
    int d_k;
    bool ok; /* every cell has a run */
} quad;

static void gather(const qkt__report *r, const char *train, const char *start, int d, quad *q) {
    const qkt_ablate_cfg *c = r->c;
    const int steps = (int)c->run.tc.steps, C = c->run.tc.model.n_head * d;
    const char *s = qkt_attn_scale_name(QKT_ATTN_SQRT_DK), *n = qkt_attn_scale_name(QKT_ATTN_NONE);
    q->d_k = d;
    qkt__report_seeds(r->t, train, s, d, c->seeds, 0, steps, &q->su);
    qkt__report_seeds(r->t, start, s, d, c->seeds, 0, steps, &q->ss);
    qkt__report_seeds(r->t, start, n, d, c->seeds, 0, steps, &q->nu);
    qkt__report_seeds(r->t, train, n, d, c->seeds, 0, steps, &q->ns);
    double s_s = qkt_attn_scale_at_init(QKT_ATTN_SQRT_DK, C, d), s_n = qkt_attn_scale_at_init(QKT_ATTN_NONE, C, d);
    q->fsu = s_s, q->fss = s_s * qkt_ablate_start_mult(QKT_ATTN_SQRT_DK, d);
    q->fnu = s_n * qkt_ablate_start_mult(QKT_ATTN_NONE, d), q->fns = s_n;
    q->ok = d > 0 && q->su.n_present && q->ss.n_present && q->nu.n_present && q->ns.n_present;
}

/* log(x_a / fa) - log(x_b / fb) per seed, paired. */
static qkt_paired log_ratio(const qkt__report *r, const double *xa, double fa, const double *xb, double fb, int n, uint64_t salt) {
    double a[QKT_REPORT_MAX_SEEDS], b[QKT_REPORT_MAX_SEEDS];
    for (int i = 0; i < n; i++) a[i] = xa[i] > 0 ? log(xa[i] / fa) : NAN, b[i] = xb[i] > 0 ? log(xb[i] / fb) : NAN;
    return qkt_stats_paired(a, b, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, r->c->run.tc.seed * 4099 + salt);
}

static qkt_paired diff(const qkt__report *r, const double *a, const double *b, int n, uint64_t salt) {
    return qkt_stats_paired(a, b, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, r->c->run.tc.seed * 4099 + salt);
}

static bool has_cells(qkt__report *r, const quad *q, const char *id, const char *claim, const char *src) {
    char m[300];
    if (q->ok) return true;
    if (!q->d_k) snprintf(m, sizeof m, "no 2x2 cells in this run (start_d_k = 0; add them with --start-d-k)");
    else if (!q->su.n_present && !q->ns.n_present) snprintf(m, sizeof m, "d_k = %d is not trained in this run (d_k): no 2x2 cells", q->d_k);
    else snprintf(m, sizeof m, "d_k = %d: a cell of the 2x2 (sqrt_dk and none, each from both starts) has no run", q->d_k);
    qkt__finding(r, id, claim, src, m, NULL, qkt__test(QKT_V_UNTESTABLE, NAN));
    return false;
}

void qkt__report_claim_grad(qkt__report *r) {
    static quad q;
    const char *ca = "A saturated softmax (large logits) shrinks the gradient at its input, dL/dz (the 'vanishing gradient' explanation of the scale)";
    const char *cb = "... and so the gradient of W_q and W_k";
    gather(r, QKT_KIND(TRAIN), qkt_cell_kind_name(QKT_CELL_START), r->c->start_dk, &q);
    if (!q.ok) { /* both rows say why */
        has_cells(r, &q, "4a", ca, SRC_GRAD), has_cells(r, &q, "4b", cb, SRC_GRAD);
        return;
    }
    const int n = q.su.n, d = q.d_k;
    char m[900], a[160], b[160], x[160];
    /* 4a: at the scaled form, the saturated start against its own start */
    qkt_paired pz = log_ratio(r, q.ss.dz0, 1, q.su.dz0, 1, n, 41);
    qkt__report_fmt_paired(a, sizeof a, &pz, "%+.2f");
    snprintf(m, sizeof m, "d_k = %d, at init, scaled form (sqrt_dk) from the saturated start (W_q, W_k x d_k^(1/4): the unscaled model's "
             "logits) against its own start: log(norm of dL/dz, saturated / unsaturated) = %s%s", d, a,
             pz.n ? (pz.mean < 0 ? " (saturation shrinks it)" : " (saturation does not shrink it)") : "");
    if (!pz.n) snprintf(m, sizeof m, "d_k = %d: no dL/dz in metrics.csv (runs made before it was measured)", d);
    qkt__verdict v = qkt__report_verdict(&pz, -1);
    qkt__finding(r, "4a", ca, SRC_GRAD, m, NULL, qkt__test(v, v == QKT_V_UNTESTABLE ? NAN : pz.p_exact));
    /* 4b: the W_q, W_k gradient over s m (so only dL/dz and the data are left) */
    qkt_paired pg = log_ratio(r, q.ss.grad0, q.fss, q.su.grad0, q.fsu, n, 42);
    qkt_paired pn = log_ratio(r, q.ns.grad0, q.fns, q.nu.grad0, q.fnu, n, 43);
    qkt_paired px = log_ratio(r, q.ns.grad0, 1, q.su.grad0, 1, n, 44); /* across forms, factor kept: the usual comparison */
    qkt__report_fmt_paired(a, sizeof a, &pg, "%+.2f"), qkt__report_fmt_paired(b, sizeof b, &pn, "%+.2f");
    qkt__report_fmt_paired(x, sizeof x, &px, "%+.2f");
    snprintf(m, sizeof m, "d_k = %d, at init, log(norm of grad W_q,W_k / (s m)), saturated - unsaturated start (s = the form's scale, m = the W_q, W_k "
             "init multiplier: the factor the chain rule puts in front of dL/dz): scaled form %s (x%.2f); unscaled form %s. Across forms "
             "with the factor kept (none against sqrt_dk, each from its own start; where the claim is usually read): %s, of which "
             "ln sqrt(d_k) = %.2f is the form's factor", d, a, exp(pg.mean), b, x, 0.5 * log((double)d));
    v = qkt__report_verdict(&pg, -1);
    qkt__finding(r, "4b", cb, SRC_GRAD, m, NULL, qkt__test(v, v == QKT_V_UNTESTABLE ? NAN : pg.p_exact));
}

/* 9a-9b (main task) or 9c-9d (the second task). */
static void origin(qkt__report *r, const char *train, const char *start, int d_k, const char *task, const char *ida, const char *idb) {
    static quad q;
    const char *ca = "Part of the harm of unscaled logits comes from the saturated start: the scaled form trained from it ends worse";
    const char *cb = "Part of the harm comes from the form itself: unscaled logits from an unsaturated start end worse than scaled ones";
    gather(r, train, start, d_k, &q);
    if (!q.ok) {
        has_cells(r, &q, ida, ca, SRC_2X2), has_cells(r, &q, idb, cb, SRC_2X2);
        return;
    }
    const int n = q.su.n, d = q.d_k;
    char m[900], a[160], b[160], x[160];
    /* a second task's rows use their own salts */
    const uint64_t o = strcmp(train, QKT_KIND(TRAIN)) ? 100 : 0;
    qkt_paired ps = diff(r, q.ss.final_loss, q.su.final_loss, n, 51), pn = diff(r, q.ns.final_loss, q.nu.final_loss, n, o + 52);
    qkt_paired pa = diff(r, q.ss.auc, q.su.auc, n, o + 53);
    qkt__report_fmt_paired(a, sizeof a, &ps, "%+.3f"), qkt__report_fmt_paired(b, sizeof b, &pn, "%+.3f"), qkt__report_fmt_paired(x, sizeof x, &pa, "%+.3f");
    snprintf(m, sizeof m, "`%s`, d_k = %d, final val loss, saturated start - unsaturated start: scaled form %s; unscaled form %s; mean val loss "
             "over the run, scaled form %s (%d of %d saturated-start runs diverged)", task, d, a, b, x, q.ss.n_diverged, q.ss.n_present);
    qkt__verdict v = qkt__report_verdict_loss(&ps, 1);
    qkt__finding(r, ida, ca, SRC_2X2, m, NULL, qkt__test(v, v == QKT_V_UNTESTABLE ? NAN : ps.p_exact));
    qkt_paired pf = diff(r, q.nu.final_loss, q.su.final_loss, n, 54), pf2 = diff(r, q.ns.final_loss, q.ss.final_loss, n, o + 55);
    qkt_paired pb = diff(r, q.ns.final_loss, q.su.final_loss, n, o + 56);
    qkt__report_fmt_paired(a, sizeof a, &pf, "%+.3f"), qkt__report_fmt_paired(b, sizeof b, &pf2, "%+.3f"), qkt__report_fmt_paired(x, sizeof x, &pb, "%+.3f");
    snprintf(m, sizeof m, "`%s`, d_k = %d, final val loss, unscaled - scaled form: from the unsaturated start %s; from the saturated start %s; "
             "both changed (plain none - sqrt_dk, as 5a/5c) %s", task, d, a, b, x);
    v = qkt__report_verdict_loss(&pf, 1);
    qkt__finding(r, idb, cb, SRC_2X2, m, NULL, qkt__test(v, v == QKT_V_UNTESTABLE ? NAN : pf.p_exact));
}

void qkt__report_claim_origin(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    origin(r, QKT_KIND(TRAIN), qkt_cell_kind_name(QKT_CELL_START), c->start_dk, c->run.data, "9a", "9b");
    if (c->task2[0] && c->task2_start_dk)
        origin(r, QKT_KIND(TRAIN2), qkt_cell_kind_name(QKT_CELL_START2), c->task2_start_dk, c->task2, "9c", "9d");
}
