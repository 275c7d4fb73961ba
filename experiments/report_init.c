/* The report's part 1: attention at initialisation, first with iid q and k (no model),
 * then in a freshly initialised GPT on real batches. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_plot.h"
#include "qkt_study.h"
#include "report_internal.h"

enum { NV = QKT_STUDY_N_FIXED };
#define VNAME(v) qkt_attn_scale_name(qkt_study_fixed_scales[v])

/* Index of a variant in qkt_study_fixed_scales (it is there: sqrt_dk and none are). */
static int fixed_index(qkt_attn_scale a) {
    for (int v = 0; v < NV; v++)
        if (qkt_study_fixed_scales[v] == a) return v;
    QKT_CHECK(0, "%s is not a fixed-scale variant", qkt_attn_scale_name(a));
    return -1;
}

/* "sqrt_dk / none / dk / sqrt_dmodel" */
static const char *fixed_names(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (int v = 0; v < NV && k < n; v++) k += (size_t)snprintf(buf + k, n - k, "%s%s", v ? " / " : "", VNAME(v));
    return buf;
}

/* Part 1's iid measurements per d_k (index i) and variant (index v into qkt_study_fixed_scales). */
typedef struct {
    int n;                                  /* d_k values */
    double xs[QKT_AB_MAX_LIST];             /* d_k */
    double ref[QKT_AB_MAX_LIST];            /* sqrt(d_k): the expected std of the raw logits */
    double one[QKT_AB_MAX_LIST];            /* 1: the target std after scaling */
    double raw[QKT_AB_MAX_LIST];            /* measured std(q.k) */
    double ys[NV][QKT_AB_MAX_LIST];         /* std of the scaled logits */
    double ent[NV][QKT_AB_MAX_LIST];        /* normalised entropy */
    double jac[NV][QKT_AB_MAX_LIST];        /* softmax Jacobian norm */
} iid_data;

/* The iid table (one row per d_k) and the sentence on how close std(q.k) is to sqrt(d_k). */
static void iid_table(qkt__report *r, iid_data *D) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    const int is = fixed_index(QKT_ATTN_SQRT_DK), in = fixed_index(QKT_ATTN_NONE);
    char names[256];
    fixed_names(names, sizeof names);
    qkt_buf_printf(md, "| d_k | sqrt(d_k) | std(q.k) measured | error | std of scaled logits: %s | normalised entropy: %s | Jacobian norm: %s / %s | rows whose key ranking changed |\n",
                   names, names, VNAME(is), VNAME(in));
    qkt_buf_printf(md, "|---:|---:|---:|---:|---|---|---|---:|\n");
    double worst_raw = 0, worst_scaled = 0, rank_total = 0;
    D->n = c->n_init_dk;
    for (int i = 0; i < D->n; i++) {
        int d = c->init_dks[i];
        D->xs[i] = d, D->ref[i] = sqrt((double)d), D->one[i] = 1;
        double rank_dk = 0;
        for (int v = 0; v < NV; v++) {
            char id[96];
            qkt_cell_id(id, sizeof id, QKT_CELL_IID, qkt_study_fixed_scales[v], d, 0, 0);
            int run = qkt__report_run_by_id(t, id);
            D->ys[v][i] = qkt_table_value(t, run, QKT_M(IID_LOGIT_STD), 0, -1);
            D->ent[v][i] = qkt_table_value(t, run, QKT_M(IID_NORM_ENTROPY), 0, -1);
            D->jac[v][i] = qkt_table_value(t, run, QKT_M(IID_JACOBIAN), 0, -1);
            if (v == in) D->raw[i] = qkt_table_value(t, run, QKT_M(IID_RAW_LOGIT_STD), 0, -1);
            double rc = qkt_table_value(t, run, QKT_M(IID_RANK_CHANGED), 0, -1);
            rank_total += rc, rank_dk = rc > rank_dk ? rc : rank_dk;
        }
        double e = D->raw[i] / D->ref[i] - 1, es = D->ys[is][i] - 1;
        if (fabs(e) > worst_raw) worst_raw = fabs(e);
        if (fabs(es) > worst_scaled) worst_scaled = fabs(es);
        qkt_buf_printf(md, "| %d | %.2f | %.2f | %+.1f %% |", d, D->ref[i], D->raw[i], 100 * e);
        /* unscaled, the std is about sqrt(d_k): two decimals are enough */
        for (int v = 0; v < NV; v++) qkt_buf_printf(md, v == in ? "%s%.2f" : "%s%.3f", v ? " / " : " ", D->ys[v][i]);
        for (int v = 0; v < NV; v++) qkt_buf_printf(md, "%s%.3f", v ? " / " : " | ", D->ent[v][i]);
        qkt_buf_printf(md, " | %.3f / %.3f | %.0f %% |\n", D->jac[is][i], D->jac[in][i], 100 * rank_dk);
    }
    qkt_buf_printf(md, "\nMeasured std(q.k) is within %.1f %% of sqrt(d_k) at every d_k, and 1/sqrt(d_k) brings it to 1 within %.1f %%. ",
                   100 * worst_raw, 100 * worst_scaled);
    if (rank_total == 0)
        qkt_buf_printf(md, "Scaling changed the order of keys in no row: dividing by a positive number keeps each row's ranking; "
                           "only the distances, and so the softmax's temperature, change.\n\n");
    else
        qkt_buf_printf(md, "**Scaling changed the order of keys in some rows** (float rounding of ties); see the last column.\n\n");
}

/* Logit std, entropy and Jacobian norm against d_k, one line per variant. */
static void iid_plots(qkt__report *r, const iid_data *D) {
    const int nd = D->n, in = fixed_index(QKT_ATTN_NONE);
    qkt_series s[NV + 2];
    memset(s, 0, sizeof s);
    /* Unscaled first (the raw q.k the others divide), then the scaled ones, then the references. */
    char raw_name[64];
    snprintf(raw_name, sizeof raw_name, "%s (raw q.k)", VNAME(in));
    int ns = 0;
    s[ns++] = (qkt_series){.name = raw_name, .x = D->xs, .y = D->ys[in], .n = nd, .marker = QKT_MARK_CIRCLE};
    for (int v = 0; v < NV; v++)
        if (v != in) s[ns++] = (qkt_series){.name = VNAME(v), .x = D->xs, .y = D->ys[v], .n = nd, .marker = QKT_MARK_CIRCLE};
    s[ns++] = (qkt_series){.name = "sqrt(d_k)", .x = D->xs, .y = D->ref, .n = nd, .dashed = 1, .color = QKT_RGB(0, 0, 0)};
    s[ns++] = (qkt_series){.name = "1", .x = D->xs, .y = D->one, .n = nd, .dashed = 1, .color = QKT_RGB(120, 120, 120)};
    char path[1200];
    snprintf(path, sizeof path, "%s/init_logit_std.png", r->dir);
    qkt_line_chart ch = {.title = "Logit std at init (iid q, k)", .x = {.label = "d_k", .log = 1}, .y = {.label = "std of softmax input", .log = 1},
                         .series = s, .n_series = ns};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    for (int v = 0; v < NV; v++) s[v] = (qkt_series){.name = VNAME(v), .x = D->xs, .y = D->ent[v], .n = nd, .marker = QKT_MARK_CIRCLE};
    snprintf(path, sizeof path, "%s/init_entropy.png", r->dir);
    ch = (qkt_line_chart){.title = "Attention entropy at init (iid q, k)", .x = {.label = "d_k", .log = 1},
                          .y = {.label = "normalised entropy (1 = uniform)", .min = 0, .max = 1.05}, .series = s, .n_series = NV};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    for (int v = 0; v < NV; v++) s[v] = (qkt_series){.name = VNAME(v), .x = D->xs, .y = D->jac[v], .n = nd, .marker = QKT_MARK_CIRCLE};
    snprintf(path, sizeof path, "%s/init_jacobian.png", r->dir);
    ch = (qkt_line_chart){.title = "Softmax Jacobian norm at init (iid q, k)", .x = {.label = "d_k", .log = 1},
                          .y = {.label = "mean ||J||_F per row", .log = 1}, .series = s, .n_series = NV};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(&r->md, "![logit std](init_logit_std.png) ![entropy](init_entropy.png) ![jacobian](init_jacobian.png)\n\n");
}

/* The same metrics from the init cells: a fresh GPT on real batches. */
static void gpt_table(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "### A freshly initialised GPT on real batches\n\n%d layers, %d heads, d_model = %d x d_k, GPT-2 style init "
                       "(N(0, %g)), W_q and W_k `%s` (%s, x %g), task `%s`. Means over layers and heads.\n\n",
                   c->run.tc.model.n_layer, c->run.tc.model.n_head, c->run.tc.model.n_head, c->run.tc.model.init_std, qkt_qk_init_name(c->run.tc.model.qk_init),
                   c->run.tc.model.qk_init == QKT_QK_INIT_UNIT ? "N(0, 1/d_model): unscaled logit std about sqrt(d_k)" : "N(0, init_std)", c->run.tc.model.qk_init_mult, c->run.data);
    qkt_buf_printf(md, "| variant | d_k | logit std | normalised entropy | max weight | Jacobian norm | grad norm W_q | loss |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < NV; v++)
        for (int i = 0; i < c->n_init_dk; i++) {
            int run = qkt_table_find_run(t, QKT_KIND(INIT), VNAME(v), c->init_dks[i], -1, 0);
            if (run < 0) continue;
            qkt_buf_printf(md, "| %s | %d | %.4f | %.4f | %.4f | %.4f | %.3g | %.3f |\n", VNAME(v), c->init_dks[i],
                           qkt_table_value(t, run, QKT_M(LOGIT_STD), 0, -1), qkt_table_value(t, run, QKT_M(NORM_ENTROPY), 0, -1),
                           qkt_table_value(t, run, QKT_M(MAX_WEIGHT), 0, -1), qkt_table_value(t, run, QKT_M(JACOBIAN), 0, -1),
                           qkt_table_value(t, run, QKT_M(GRAD_NORM_WQ), 0, -1), qkt_table_value(t, run, QKT_M(VAL_LOSS), 0, -1));
        }
    qkt_buf_printf(md, "\n");
}

void qkt__report_part_init(qkt__report *r) {
    qkt_buf_printf(&r->md, "## 1. At initialisation\n\n### iid q and k (unit variance, no model)\n\n");
    qkt_buf_printf(&r->md, "q and k are N(0, 1) of width d_k, %d x %d causal query rows; `%s` uses d_model = %d x d_k.\n\n",
                   QKT_IID_BATCH, r->c->run.tc.model.block_size, qkt_attn_scale_name(QKT_ATTN_SQRT_DMODEL), r->c->run.tc.model.n_head);
    iid_data D;
    iid_table(r, &D);
    iid_plots(r, &D);
    gpt_table(r);
}
