/* Claim 10: scaling only gives attention a smooth start; training still sharpens it where the
 * task needs focus (the scaled model keeps its ability to concentrate). On a retrieval task
 * (qkt_data_task_retrieval) at the largest trained d_k, per run: the normalised attention
 * entropy of its sharpest head (the minimum over layers and heads, each measured on the first
 * validation batch) at step 0 and at the last evaluation. Two paired tests over seeds:
 *   a. sqrt_dk: end - init < 0 (training sharpens the scaled model's attention);
 *   b. at the end: sqrt_dk - none < QKT_REPORT_PEAK_MARGIN (the scaled model ends at most the
 *      margin flatter than the unscaled one: as peaked, up to the margin). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_data.h"
#include "qkt_stats.h"
#include "report_internal.h"

#define SRC "common reading of Vaswani et al. 2017, sec. 3.2.1 (the scale sets the start)"
#define MAX_HEADS 64 /* (layer, head) pairs listed in a row */

static const char *const why_text[] = {
    [QKT_SHARPEN_OK] = "",
    [QKT_SHARPEN_NO_RETRIEVAL] = "the task has no retrieval (no answer is looked up at one earlier position), so nothing needs focus",
    [QKT_SHARPEN_NO_INIT] = "no attention entropy at step 0 in metrics.csv",
    [QKT_SHARPEN_NO_END] = "no attention entropy at the end (every run missing or diverged)",
    [QKT_SHARPEN_FEW_PAIRS] = "fewer than 2 seeds with both values: no interval",
};

const char *qkt__sharpen_why(qkt__sharpen_why_code w) {
    return w >= 0 && w < (int)(sizeof why_text / sizeof *why_text) ? why_text[w] : "?";
}

static int n_finite(const double *x, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += isfinite(x[i]);
    return k;
}

/* Why a paired test of a against b cannot be made (a: the later values), or OK. */
static qkt__sharpen_why_code untestable(bool retrieval, const double *before, const double *after, int n) {
    if (!retrieval) return QKT_SHARPEN_NO_RETRIEVAL;
    if (!n_finite(before, n)) return QKT_SHARPEN_NO_INIT;
    if (!n_finite(after, n)) return QKT_SHARPEN_NO_END;
    int k = 0;
    for (int i = 0; i < n; i++) k += isfinite(before[i]) && isfinite(after[i]);
    return k < 2 ? QKT_SHARPEN_FEW_PAIRS : QKT_SHARPEN_OK;
}

void qkt__report_sharpen_rule(const double *s_init, const double *s_end, const double *u_end, int n, bool retrieval, uint64_t seed,
                              qkt__sharpen *o) {
    memset(o, 0, sizeof *o);
    n = n < QKT_REPORT_MAX_SEEDS ? n : QKT_REPORT_MAX_SEEDS;
    o->why_fall = untestable(retrieval, s_init, s_end, n);
    /* b compares two end values: "no init" there means no unscaled run at the end */
    o->why_gap = !retrieval ? QKT_SHARPEN_NO_RETRIEVAL : untestable(true, u_end, s_end, n);
    if (o->why_gap == QKT_SHARPEN_NO_INIT) o->why_gap = QKT_SHARPEN_NO_END;
    double shifted[QKT_REPORT_MAX_SEEDS];
    for (int i = 0; i < n; i++) shifted[i] = s_end[i] - QKT_REPORT_PEAK_MARGIN;
    o->fall = qkt_stats_paired(s_end, s_init, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed);
    o->gap = qkt_stats_paired(s_end, u_end, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 1);
    o->gap_margin = qkt_stats_paired(shifted, u_end, n, QKT_REPORT_LEVEL, QKT_REPORT_BOOT, seed + 1);
    /* a: the claim expects end - init < 0; b: scaled - unscaled - margin < 0 (contradicted: flatter by more than the margin) */
    o->v_fall = o->why_fall ? QKT_V_UNTESTABLE : qkt__report_verdict(&o->fall, -1);
    o->v_gap = o->why_gap ? QKT_V_UNTESTABLE : qkt__report_verdict(&o->gap_margin, -1);
}

/* Is the task of this data spec ("mqar:n_pairs=4", "recall") answered by retrieval? */
static bool spec_retrieval(const char *spec) {
    size_t k = strcspn(spec, ":");
    for (int i = 0; i < qkt_data_task_count(); i++) {
        const char *name = qkt_data_task_name(i);
        if (strlen(name) == k && !strncmp(name, spec, k)) return qkt_data_task_retrieval(i);
    }
    return false;
}

/* The normalised entropy of each (layer, head) of a run at a step, clamped to [0, 1] (float
 * cancellation at huge logits can leave a collapsed row just outside); NaN where absent. */
static void heads_at(const qkt_table *t, int run, int step, int L, int H, double *e) {
    for (int i = 0; i < L * H; i++) e[i] = NAN;
    int m = qkt_table_metric(t, QKT_M(NORM_ENTROPY));
    if (run < 0 || m < 0 || step < 0) return;
    const qkt_run *u = &t->runs[run];
    for (int i = u->first; i < u->first + u->count; i++) {
        const qkt_row *w = &t->rows[i];
        if (w->metric == m && w->step == step && w->layer >= 0 && w->layer < L && w->head >= 0 && w->head < H)
            e[w->layer * H + w->head] = fmin(1, fmax(0, w->value));
    }
}

static double min_of(const double *x, int n) {
    double m = NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) m = isnan(m) ? x[i] : fmin(m, x[i]);
    return m;
}

/* One variant at one d_k: per seed the sharpest head at init and at the end, and per
 * (layer, head) the means over seeds. */
typedef struct {
    double init[QKT_REPORT_MAX_SEEDS], end[QKT_REPORT_MAX_SEEDS];
    double head_init[MAX_HEADS], head_end[MAX_HEADS];
    int n_present, n_diverged;
} sharp;

static void gather(const qkt__report *r, const char *exp, qkt_attn_scale v, int d, sharp *o) {
    const qkt_ablate_cfg *c = r->c;
    const int L = c->run.tc.model.n_layer, H = c->run.tc.model.n_head, LH = L * H < MAX_HEADS ? L * H : MAX_HEADS;
    const int n = c->seeds < QKT_REPORT_MAX_SEEDS ? c->seeds : QKT_REPORT_MAX_SEEDS;
    double e0[MAX_HEADS], e1[MAX_HEADS], s0[MAX_HEADS] = {0}, s1[MAX_HEADS] = {0};
    int k0[MAX_HEADS] = {0}, k1[MAX_HEADS] = {0};
    memset(o, 0, sizeof *o);
    for (int s = 0; s < n; s++) {
        int run = qkt_table_find_run(r->t, exp, qkt_attn_scale_name(v), d, s, 0);
        bool div = run >= 0 && qkt__report_diverged(r->t, run, NULL);
        o->n_present += run >= 0, o->n_diverged += div;
        int last = run < 0 ? -1 : qkt_table_last_step(r->t, run, QKT_M(NORM_ENTROPY));
        heads_at(r->t, run, 0, L, H, e0);
        heads_at(r->t, run, div || last <= 0 ? -1 : last, L, H, e1); /* a diverged run's end is no result */
        o->init[s] = min_of(e0, L * H), o->end[s] = min_of(e1, L * H);
        for (int i = 0; i < LH; i++) {
            if (isfinite(e0[i])) s0[i] += e0[i], k0[i]++;
            if (isfinite(e1[i])) s1[i] += e1[i], k1[i]++;
        }
    }
    for (int s = n; s < QKT_REPORT_MAX_SEEDS; s++) o->init[s] = o->end[s] = NAN;
    for (int i = 0; i < LH; i++) o->head_init[i] = k0[i] ? s0[i] / k0[i] : NAN, o->head_end[i] = k1[i] ? s1[i] / k1[i] : NAN;
}

static double mean_of(const double *x, int n) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) s += x[i], k++;
    return k ? s / k : NAN;
}

/* "0.97" or "-" for a missing value. */
static const char *num(char *b, size_t n, double x) {
    if (isfinite(x)) snprintf(b, n, "%.2f", x);
    else snprintf(b, n, "-");
    return b;
}

/* "L0H0 0.97 -> 0.41, L0H1 ..." for one variant (means over seeds). */
static void per_head(char *b, size_t n, const qkt__report *r, const sharp *x) {
    const int L = r->c->run.tc.model.n_layer, H = r->c->run.tc.model.n_head;
    size_t at = 0;
    b[0] = 0;
    for (int i = 0; i < L * H && i < MAX_HEADS && at < n; i++) {
        char p[16], q[16];
        at += (size_t)snprintf(b + at, n - at, "%sL%dH%d %s -> %s", i ? ", " : "", i / H, i % H, num(p, sizeof p, x->head_init[i]),
                               num(q, sizeof q, x->head_end[i]));
    }
}

/* "mean [lo, hi] (t: [lo, hi]), n = .." of a paired difference (no p: the test's p is given apart). */
static void fmt_interval(char *b, size_t n, const qkt_paired *p) {
    if (p->n < 2) snprintf(b, n, "%+.3f (%d pair%s: no interval)", p->mean, p->n, p->n == 1 ? "" : "s");
    else snprintf(b, n, "%+.3f [%+.3f, %+.3f] (t: [%+.3f, %+.3f]), n = %d", p->mean, p->lo, p->hi, p->t_lo, p->t_hi, p->n);
}

/* 10a-10b (main task) or 10c-10d (the second task), at the largest of the task's d_k. */
static void sharpen(qkt__report *r, const char *exp, const char *task, const int *dks, int n_dk, const char *ida, const char *idb) {
    const qkt_ablate_cfg *c = r->c;
    const char *ca = "Scaling only gives attention a smooth start: training still sharpens the scaled model's attention where the task "
                     "needs focus";
    const char *cb = "... to attention as peaked as the unscaled model's (scaling takes nothing from its ability to concentrate)";
    int d = dks[0];
    for (int i = 1; i < n_dk; i++) d = dks[i] > d ? dks[i] : d;
    static sharp v[QKT_AB_MAX_LIST], s, u;
    gather(r, exp, QKT_ATTN_SQRT_DK, d, &s);
    gather(r, exp, QKT_ATTN_NONE, d, &u);
    const bool ret = spec_retrieval(task);
    qkt__sharpen k;
    const uint64_t salt = strcmp(exp, QKT_KIND(TRAIN)) ? 200 : 100;
    qkt__report_sharpen_rule(s.init, s.end, u.end, c->seeds, ret, c->run.tc.seed * 6007 + salt, &k);
    char m[2400], all[700] = "", hs[600], hu[600], a[160], b[160], x[2][16];
    size_t at = 0; /* every trained variant's sharpest head, init -> end */
    for (int i = 0; i < c->n_variants && at < sizeof all; i++) {
        gather(r, exp, c->variants[i], d, &v[i]);
        if (!v[i].n_present) continue;
        at += (size_t)snprintf(all + at, sizeof all - at, "%s%s %s -> %s", at ? ", " : "", qkt_attn_scale_name(c->variants[i]),
                               num(x[0], 16, mean_of(v[i].init, c->seeds)), num(x[1], 16, mean_of(v[i].end, c->seeds)));
    }
    per_head(hs, sizeof hs, r, &s), per_head(hu, sizeof hu, r, &u);
    const int L = c->run.tc.model.n_layer, H = c->run.tc.model.n_head;
    char what[300];
    snprintf(what, sizeof what, "`%s`, d_k = %d, normalised attention entropy (1 = uniform) of the sharpest head (min over %d layer%s x %d head%s; "
             "first validation batch), init -> end, mean over seeds", task, d, L, L == 1 ? "" : "s", H, H == 1 ? "" : "s");
    /* 10a */
    if (k.why_fall) snprintf(m, sizeof m, "`%s`, d_k = %d: %s", task, d, qkt__sharpen_why(k.why_fall));
    else {
        fmt_interval(a, sizeof a, &k.fall);
        snprintf(m, sizeof m, "%s: %s. Per layer and head, sqrt_dk: %s. sqrt_dk, end - init per seed: %s, sign-flip p = %.3g (%d of %d runs diverged)",
                 what, all, hs, a, k.fall.p_exact, s.n_diverged, s.n_present);
    }
    qkt__finding(r, ida, ca, SRC, m, NULL, qkt__test(k.v_fall, k.v_fall == QKT_V_UNTESTABLE ? NAN : k.fall.p_exact));
    /* 10b */
    if (k.why_gap) {
        const char *why = k.why_gap == QKT_SHARPEN_NO_END && !u.n_present ? "`none` is not trained at this d_k" : qkt__sharpen_why(k.why_gap);
        snprintf(m, sizeof m, "`%s`, d_k = %d: %s", task, d, why);
    } else {
        fmt_interval(a, sizeof a, &k.gap);
        snprintf(b, sizeof b, "%.2f", QKT_REPORT_PEAK_MARGIN);
        snprintf(m, sizeof m, "`%s`, d_k = %d, sharpest head's normalised entropy at the end, sqrt_dk - none per seed: %s; tested against "
                 "a margin of %s (*reproduced*: shown below +%s, at most that much flatter; *contradicted*: shown above it), "
                 "sign-flip p = %.3g. Per layer and head, none: %s (%d of %d unscaled runs diverged)",
                 task, d, a, b, b, k.gap_margin.p_exact, hu, u.n_diverged, u.n_present);
    }
    qkt__finding(r, idb, cb, SRC, m, NULL, qkt__test(k.v_gap, k.v_gap == QKT_V_UNTESTABLE ? NAN : k.gap_margin.p_exact));
}

void qkt__report_claim_sharpen(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    sharpen(r, QKT_KIND(TRAIN), c->run.data, c->dks, c->n_dk, "10a", "10b");
    if (c->task2[0] && c->n_task2_dk) sharpen(r, QKT_KIND(TRAIN2), c->task2, c->task2_dks, c->n_task2_dk, "10c", "10d");
}
