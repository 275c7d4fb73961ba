/* Paired comparisons of two variants over seeds (report_internal.h): per-seed outcomes
 * of the train cells, then the statistics of qkt_stats.h on their paired differences. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_stats.h"
#include "report_internal.h"

/* Mean of a metric's per-step values over steps in [from, to). NaN if none. */
static double mean_over(const qkt_table *t, int run, const char *metric, int from, int to) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int n = qkt_table_series(t, run, metric, -1, st, v, QKT_REPORT_MAXS);
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (st[i] >= from && st[i] < to && isfinite(v[i])) s += v[i], k++;
    return k ? s / k : NAN;
}

/* The gradient norm over W_q and W_k together, averaged over steps [from, to). */
static double grad_qk(const qkt_table *t, int run, int from, int to) {
    double q = mean_over(t, run, QKT_M(GRAD_NORM_WQ), from, to), k = mean_over(t, run, QKT_M(GRAD_NORM_WK), from, to);
    return sqrt(q * q + k * k);
}

void qkt__report_seeds(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds, double lr, int steps,
                       qkt__seeds *o) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    memset(o, 0, sizeof *o);
    o->n = seeds < QKT_REPORT_MAX_SEEDS ? seeds : QKT_REPORT_MAX_SEEDS;
    for (int s = 0; s < o->n; s++) {
        int run = qkt_table_find_run(t, exp, variant, d_k, s, lr);
        o->present[s] = run >= 0;
        o->diverged[s] = run >= 0 && qkt__report_diverged(t, run, NULL);
        o->n_present += o->present[s], o->n_diverged += o->diverged[s];
        /* a diverged run's loss is no result: NaN, so the pair is left out (and counted) */
        o->final_loss[s] = run < 0 || o->diverged[s] ? NAN : qkt__report_final_val(t, run, QKT_M(VAL_LOSS));
        int n = qkt_table_series(t, run, QKT_M(VAL_LOSS), -1, st, v, QKT_REPORT_MAXS);
        o->auc[s] = run < 0 || o->diverged[s] ? NAN : qkt_stats_auc_mean(st, v, n);
        o->t90[s] = run < 0 ? -1 : qkt__report_steps_to_90(t, run);
        o->escaped[s] = o->t90[s] >= 0;
        o->n_escaped += o->present[s] && o->escaped[s];
        o->init_std[s] = qkt_table_value(t, run, QKT_M(LOGIT_STD), 0, -1);
        o->init_ent[s] = qkt_table_value(t, run, QKT_M(NORM_ENTROPY), 0, -1);
        o->grad0[s] = run < 0 ? NAN : grad_qk(t, run, 0, 1);
        o->dz0[s] = qkt_table_value(t, run, QKT_M(GRAD_LOGITS), 0, -1);
        o->grad_early[s] = run < 0 ? NAN : grad_qk(t, run, 1, steps / 2);
        o->grad_late[s] = run < 0 ? NAN : grad_qk(t, run, steps / 2, steps);
    }
}

/* log of each value (NaN for values <= 0). */
static void logs(const double *x, int n, double *out) {
    for (int i = 0; i < n; i++) out[i] = x[i] > 0 ? log(x[i]) : NAN;
}

void qkt__report_compare(const qkt__report *r, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o) {
    qkt__report_compare_exp(r, QKT_KIND(TRAIN), a, b, d_k, o);
}

void qkt__report_compare_exp(const qkt__report *r, const char *exp, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o) {
    const qkt_ablate_cfg *c = r->c;
    memset(o, 0, sizeof *o);
    o->a = a, o->b = b, o->d_k = d_k;
    qkt__report_seeds(r->t, exp, qkt_attn_scale_name(a), d_k, c->seeds, 0, (int)c->run.tc.steps, &o->sa);
    qkt__report_seeds(r->t, exp, qkt_attn_scale_name(b), d_k, c->seeds, 0, (int)c->run.tc.steps, &o->sb);
    int n = o->sa.n;
    /* one bootstrap stream per comparison, fixed by the study's seed, the pair and the experiment */
    uint64_t seed = c->run.tc.seed * 1000003ull + (uint64_t)a * 131 + (uint64_t)b * 17 + (uint64_t)d_k + (strcmp(exp, QKT_KIND(TRAIN)) ? 7919u : 0u);
    o->loss = qkt_stats_paired(o->sa.final_loss, o->sb.final_loss, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed);
    o->auc = qkt_stats_paired(o->sa.auc, o->sb.auc, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 1);
    o->t90 = qkt_stats_censored_paired(o->sa.t90, o->sb.t90, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 2);
    int na = o->sa.n_present, nb = o->sb.n_present;
    o->fisher_p = qkt_stats_fisher(o->sa.n_escaped, na - o->sa.n_escaped, o->sb.n_escaped, nb - o->sb.n_escaped);
    double la[QKT_REPORT_MAX_SEEDS], lb[QKT_REPORT_MAX_SEEDS];
    logs(o->sa.grad0, n, la), logs(o->sb.grad0, n, lb);
    o->grad[0] = qkt_stats_paired(la, lb, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 3);
    logs(o->sa.grad_early, n, la), logs(o->sb.grad_early, n, lb);
    o->grad[1] = qkt_stats_paired(la, lb, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 4);
    logs(o->sa.grad_late, n, la), logs(o->sb.grad_late, n, lb);
    o->grad[2] = qkt_stats_paired(la, lb, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 5);
    o->ent0 = qkt_stats_paired(o->sa.init_ent, o->sb.init_ent, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 6);
}

qkt__verdict qkt__report_verdict(const qkt_paired *p, int sign) {
    if (p->n < 2 || !isfinite(p->lo) || !isfinite(p->t_lo)) return QKT_V_UNTESTABLE;
    /* the bootstrap interval is narrow for a handful of seeds: the t interval and the exact test must agree */
    double lo = fmin(p->lo, p->t_lo), hi = fmax(p->hi, p->t_hi);
    double tmp = sign * (sign > 0 ? lo : hi);
    hi = sign * (sign > 0 ? hi : lo), lo = tmp;
    bool sig = p->p_exact <= 1 - QKT_REPORT_LEVEL + 1e-12;
    if (lo > 0 && sig) return QKT_V_REPRODUCED;
    if (hi < 0 && sig) return QKT_V_CONTRADICTED;
    return QKT_V_NOT_DETECTABLE;
}

qkt__verdict qkt__report_verdict_loss(const qkt_paired *p, int sign) {
    qkt__verdict v = qkt__report_verdict(p, sign);
    return (v == QKT_V_REPRODUCED || v == QKT_V_CONTRADICTED) && fabs(p->mean) < QKT_REPORT_MIN_LOSS ? QKT_V_NEGLIGIBLE : v;
}

const char *qkt__verdict_name(qkt__verdict v) {
    static const char *const n[] = {"**reproduced**", "**contradicted**", "not detectable at this size", "not testable here",
                                    "negligible (detected, under " QKT__REPORT_XSTR(QKT_REPORT_MIN_LOSS) " nats)"};
    return v >= 0 && v <= QKT_V_NEGLIGIBLE ? n[v] : "?";
}

void qkt__report_fmt_paired(char *buf, size_t n, const qkt_paired *p, const char *fmt) {
    char m[32], lo[32], hi[32];
    if (p->n == 0) {
        snprintf(buf, n, "no pairs");
        return;
    }
    snprintf(m, sizeof m, fmt, p->mean);
    if (p->n < 2) {
        snprintf(buf, n, "%s (1 pair: no interval)", m);
        return;
    }
    char tlo[32], thi[32];
    snprintf(lo, sizeof lo, fmt, p->lo), snprintf(hi, sizeof hi, fmt, p->hi);
    snprintf(tlo, sizeof tlo, fmt, p->t_lo), snprintf(thi, sizeof thi, fmt, p->t_hi);
    snprintf(buf, n, "%s [%s, %s] (t: [%s, %s]), p = %.3g (n = %d)", m, lo, hi, tlo, thi, p->p_exact, p->n);
}
