/* The study's report: metrics.csv from the cells, summary.csv, plots, report.md. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_plot.h"
#include "qkt_report.h"
#include "report_internal.h"


static const char *const init_vars[] = {"sqrt_dk", "none", "dk", "sqrt_dmodel"};

/* ---------------------------------------------------------------- gather */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int gather(const char *run_dir, qkt_err *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cells", run_dir);
    DIR *d = opendir(dir);
    if (!d) return qkt_err_set(err, "%s: cannot open (is %s a qkt ablate run?)", dir, run_dir);
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".csv")) continue;
        if (n == cap) cap = cap ? 2 * cap : 64, names = realloc(names, (size_t)cap * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_str); /* qsort(NULL, 0) is undefined */
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", qkt_metrics_header);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len;
        char *text = qkt_read_file(path, &len, err);
        if (!text) rc = -1;
        else qkt_buf_printf(&b, "%s", text);
        free(text);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    char out[1024];
    snprintf(out, sizeof out, "%s/metrics.csv", run_dir);
    if (!rc) rc = qkt_write_atomic(out, b.s, b.n, err);
    qkt_buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- helpers */

void qkt__report_plot_done(qkt__report *r, int rc, const char *file) {
    if (rc != 0) {
        fprintf(stderr, "qkt: plot %s: %s\n", file, r->err->msg);
        r->n_plots_failed++;
    }
}

static double mean_sd(const double *v, int n, double *sd) {
    double m = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) m += v[i], k++;
    m = k ? m / k : NAN;
    double s = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) s += (v[i] - m) * (v[i] - m);
    *sd = k > 1 ? sqrt(s / (k - 1)) : 0;
    return m;
}

/* First eval step with val_acc >= 0.9, or -1. */
static int steps_to_90(const qkt_table *t, int run) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int n = qkt_table_series(t, run, "val_acc", -1, st, v, QKT_REPORT_MAXS);
    for (int i = 0; i < n; i++)
        if (v[i] >= 0.9) return (int)st[i];
    return -1;
}

double qkt__report_final_val(const qkt_table *t, int run, const char *metric) {
    int s = qkt_table_last_step(t, run, metric);
    return s < 0 ? NAN : qkt_table_value(t, run, metric, s, -1);
}

bool qkt__report_diverged(const qkt_table *t, int run, int *at) {
    int s = qkt_table_last_step(t, run, "diverged_step");
    double v = s < 0 ? -1 : qkt_table_value(t, run, "diverged_step", s, -1);
    if (at) *at = (int)v;
    return v >= 0;
}

/* ---------------------------------------------------------------- part 1 */
static void part_init(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    int nd = c->n_init_dk;
    qkt_buf_printf(md, "## 1. At initialisation\n\n### iid q and k (unit variance, no model)\n\n");
    qkt_buf_printf(md, "q and k are N(0, 1) of width d_k, %d x %d causal query rows; `sqrt_dmodel` uses d_model = %d x d_k.\n\n",
                   QKT_IID_BATCH, c->seq_len, c->n_head);
    qkt_buf_printf(md, "| d_k | sqrt(d_k) | std(q.k) measured | error | std of scaled logits: sqrt_dk / none / dk / sqrt_dmodel | normalised entropy: sqrt_dk / none / dk / sqrt_dmodel | Jacobian norm: sqrt_dk / none | rows whose key ranking changed |\n");
    qkt_buf_printf(md, "|---:|---:|---:|---:|---|---|---|---:|\n");
    double xs[QKT_AB_MAX_LIST], ys[4][QKT_AB_MAX_LIST], raw[QKT_AB_MAX_LIST], ref[QKT_AB_MAX_LIST], one[QKT_AB_MAX_LIST];
    double ent[4][QKT_AB_MAX_LIST], jac[4][QKT_AB_MAX_LIST];
    double worst_raw = 0, worst_scaled = 0, rank_total = 0;
    for (int i = 0; i < nd; i++) {
        int d = c->init_dks[i];
        xs[i] = d, ref[i] = sqrt((double)d), one[i] = 1;
        double rank_dk = 0;
        for (int v = 0; v < 4; v++) {
            char id[96];
            snprintf(id, sizeof id, "iid_%s_dk%d", init_vars[v], d);
            int run = -1;
            for (int k = 0; k < t->n_runs; k++)
                if (!strcmp(t->runs[k].id, id)) run = k;
            ys[v][i] = qkt_table_value(t, run, "iid_logit_std", 0, -1);
            ent[v][i] = qkt_table_value(t, run, "iid_norm_entropy", 0, -1);
            jac[v][i] = qkt_table_value(t, run, "iid_jacobian", 0, -1);
            if (v == 1) raw[i] = qkt_table_value(t, run, "iid_raw_logit_std", 0, -1);
            double rc = qkt_table_value(t, run, "iid_rank_changed", 0, -1);
            rank_total += rc, rank_dk = rc > rank_dk ? rc : rank_dk;
        }
        double e = raw[i] / ref[i] - 1, es = ys[0][i] - 1;
        if (fabs(e) > worst_raw) worst_raw = fabs(e);
        if (fabs(es) > worst_scaled) worst_scaled = fabs(es);
        qkt_buf_printf(md, "| %d | %.2f | %.2f | %+.1f %% | %.3f / %.2f / %.3f / %.3f | %.3f / %.3f / %.3f / %.3f | %.3f / %.3f | %.0f %% |\n", d,
                       ref[i], raw[i], 100 * e, ys[0][i], ys[1][i], ys[2][i], ys[3][i], ent[0][i], ent[1][i], ent[2][i], ent[3][i],
                       jac[0][i], jac[1][i], 100 * rank_dk);
    }
    qkt_buf_printf(md, "\nMeasured std(q.k) is within %.1f %% of sqrt(d_k) at every d_k, and 1/sqrt(d_k) brings it to 1 within %.1f %%. ",
                   100 * worst_raw, 100 * worst_scaled);
    if (rank_total == 0)
        qkt_buf_printf(md, "Scaling changed the order of keys in no row: dividing by a positive number keeps each row's ranking; "
                           "only the distances, and so the softmax's temperature, change.\n\n");
    else
        qkt_buf_printf(md, "**Scaling changed the order of keys in some rows** (float rounding of ties); see the last column.\n\n");
    qkt_series s[6];
    memset(s, 0, sizeof s);
    s[0] = (qkt_series){.name = "none (raw q.k)", .x = xs, .y = ys[1], .n = nd, .marker = QKT_MARK_CIRCLE};
    s[1] = (qkt_series){.name = "sqrt_dk", .x = xs, .y = ys[0], .n = nd, .marker = QKT_MARK_CIRCLE};
    s[2] = (qkt_series){.name = "dk", .x = xs, .y = ys[2], .n = nd, .marker = QKT_MARK_CIRCLE};
    s[3] = (qkt_series){.name = "sqrt_dmodel", .x = xs, .y = ys[3], .n = nd, .marker = QKT_MARK_CIRCLE};
    s[4] = (qkt_series){.name = "sqrt(d_k)", .x = xs, .y = ref, .n = nd, .dashed = 1, .color = QKT_RGB(0, 0, 0)};
    s[5] = (qkt_series){.name = "1", .x = xs, .y = one, .n = nd, .dashed = 1, .color = QKT_RGB(120, 120, 120)};
    char path[1200];
    snprintf(path, sizeof path, "%s/init_logit_std.png", r->dir);
    qkt_line_chart ch = {.title = "Logit std at init (iid q, k)", .x = {.label = "d_k", .log = 1}, .y = {.label = "std of softmax input", .log = 1},
                         .series = s, .n_series = 6};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    for (int v = 0; v < 4; v++) s[v] = (qkt_series){.name = init_vars[v], .x = xs, .y = ent[v], .n = nd, .marker = QKT_MARK_CIRCLE};
    snprintf(path, sizeof path, "%s/init_entropy.png", r->dir);
    ch = (qkt_line_chart){.title = "Attention entropy at init (iid q, k)", .x = {.label = "d_k", .log = 1},
                          .y = {.label = "normalised entropy (1 = uniform)", .min = 0, .max = 1.05}, .series = s, .n_series = 4};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    for (int v = 0; v < 4; v++) s[v] = (qkt_series){.name = init_vars[v], .x = xs, .y = jac[v], .n = nd, .marker = QKT_MARK_CIRCLE};
    snprintf(path, sizeof path, "%s/init_jacobian.png", r->dir);
    ch = (qkt_line_chart){.title = "Softmax Jacobian norm at init (iid q, k)", .x = {.label = "d_k", .log = 1},
                          .y = {.label = "mean ||J||_F per row", .log = 1}, .series = s, .n_series = 4};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(md, "![logit std](init_logit_std.png) ![entropy](init_entropy.png) ![jacobian](init_jacobian.png)\n\n");

    /* Fresh GPT on real batches */
    qkt_buf_printf(md, "### A freshly initialised GPT on real batches\n\n%d layers, %d heads, d_model = %d x d_k, GPT-2 style init "
                       "(N(0, %g), W_q and W_k x %g), task `%s`. Means over layers and heads.\n\n",
                   c->n_layer, c->n_head, c->n_head, c->init_std, c->qk_init_mult, c->task);
    qkt_buf_printf(md, "| variant | d_k | logit std | normalised entropy | max weight | Jacobian norm | grad norm W_q | loss |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int v = 0; v < 4; v++)
        for (int i = 0; i < nd; i++) {
            int run = qkt_table_find_run(t, "init", init_vars[v], c->init_dks[i], -1, 0);
            if (run < 0) continue;
            qkt_buf_printf(md, "| %s | %d | %.4f | %.4f | %.4f | %.4f | %.3g | %.3f |\n", init_vars[v], c->init_dks[i],
                           qkt_table_value(t, run, "logit_std", 0, -1), qkt_table_value(t, run, "norm_entropy", 0, -1),
                           qkt_table_value(t, run, "max_weight", 0, -1), qkt_table_value(t, run, "jacobian", 0, -1),
                           qkt_table_value(t, run, "grad_norm_wq", 0, -1), qkt_table_value(t, run, "val_loss", 0, -1));
        }
    qkt_buf_printf(md, "\n");
}

/* ---------------------------------------------------------------- part 2 */
typedef struct {
    double loss_m, loss_sd, acc_m, acc_sd, init_std, init_ent, s90;
    int n_s90, n_div, n_runs, first_div;
} cell_sum;

static cell_sum summarize(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds, double lr) {
    cell_sum cs = {.s90 = NAN, .first_div = -1};
    double loss[128] = {0}, acc[128] = {0}, s90 = 0, istd = 0, ient = 0;
    int k = 0;
    for (int s = 0; s < seeds && s < 128; s++) {
        int run = qkt_table_find_run(t, exp, variant, d_k, s, lr);
        if (run < 0) continue;
        int at;
        if (qkt__report_diverged(t, run, &at)) {
            cs.n_div++;
            if (cs.first_div < 0 || at < cs.first_div) cs.first_div = at;
        }
        loss[k] = qkt__report_final_val(t, run, "val_loss");
        acc[k] = qkt__report_final_val(t, run, "val_acc");
        istd += qkt_table_value(t, run, "logit_std", 0, -1);
        ient += qkt_table_value(t, run, "norm_entropy", 0, -1);
        int x = steps_to_90(t, run);
        if (x >= 0) s90 += x, cs.n_s90++;
        k++;
    }
    cs.n_runs = k;
    cs.loss_m = mean_sd(loss, k, &cs.loss_sd);
    cs.acc_m = mean_sd(acc, k, &cs.acc_sd);
    cs.init_std = k ? istd / k : NAN;
    cs.init_ent = k ? ient / k : NAN;
    cs.s90 = cs.n_s90 ? s90 / cs.n_s90 : NAN;
    return cs;
}

/* Mean and min..max band over seeds of a metric's series (smoothed over `win` points). */
static int band(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds, double lr, const char *metric, int layer,
                int win, double *x, double *m, double *lo, double *hi) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    int n = 0;
    for (int s = 0; s < seeds; s++) {
        int run = qkt_table_find_run(t, exp, variant, d_k, s, lr);
        if (run < 0) continue;
        int k = qkt_table_series(t, run, metric, layer, st, v, QKT_REPORT_MAXS);
        if (n == 0) {
            n = k;
            for (int i = 0; i < n; i++) x[i] = st[i], m[i] = 0, lo[i] = INFINITY, hi[i] = -INFINITY;
        }
        for (int i = 0; i < n; i++) {
            double y = NAN;
            if (i < k) { /* trailing window mean; a diverged run's missing steps stay NaN */
                double a = 0;
                int c = 0;
                for (int j = i - win + 1; j <= i; j++)
                    if (j >= 0 && isfinite(v[j])) a += v[j], c++;
                y = c ? a / c : NAN;
            }
            m[i] += y;
            lo[i] = y < lo[i] ? y : lo[i];
            hi[i] = y > hi[i] ? y : hi[i];
        }
    }
    int runs = 0;
    for (int s = 0; s < seeds; s++) runs += qkt_table_find_run(t, exp, variant, d_k, s, lr) >= 0;
    for (int i = 0; i < n; i++) m[i] = runs ? m[i] / runs : NAN;
    return n;
}

static void part_train(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## 2. Training ablation\n\nTask `%s`, %d layers, %d heads (d_model = %d x d_k), batch %d, %d steps, AdamW lr %g "
                       "(warmup %d, cosine to %g x), weight decay %g, clip %g; %d seed%s. Final = validation after the last step "
                       "(%d batches); steps to 90 %% = first evaluation (every %d steps) with validation accuracy >= 0.9.\n\n",
                   c->task, c->n_layer, c->n_head, c->n_head, c->batch_size, c->steps, c->lr, c->warmup, c->min_lr_frac, c->weight_decay,
                   c->grad_clip, c->seeds, c->seeds > 1 ? "s" : "", c->eval_batches, c->eval_every);
    qkt_buf_printf(md, "| variant | d_k | init logit std | init norm. entropy | final val loss (mean +- sd) | val accuracy | steps to 90 %% | diverged |\n");
    qkt_buf_printf(md, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int di = 0; di < c->n_dk; di++)
        for (int v = 0; v < c->n_variants; v++) {
            cell_sum cs = summarize(t, "train", c->variants[v], c->dks[di], c->seeds, 0);
            if (!cs.n_runs) continue;
            char s90[32], div[48];
            if (cs.n_s90) snprintf(s90, sizeof s90, "%.0f (%d/%d)", cs.s90, cs.n_s90, cs.n_runs);
            else snprintf(s90, sizeof s90, "never");
            if (cs.n_div) snprintf(div, sizeof div, "%d/%d (step %d)", cs.n_div, cs.n_runs, cs.first_div);
            else snprintf(div, sizeof div, "0/%d", cs.n_runs);
            qkt_buf_printf(md, "| %s | %d | %.3f | %.3f | %.3f +- %.3f | %.3f +- %.3f | %s | %s |\n", c->variants[v], c->dks[di], cs.init_std,
                           cs.init_ent, cs.loss_m, cs.loss_sd, cs.acc_m, cs.acc_sd, s90, div);
        }
    qkt_buf_printf(md, "\n");
    static double x[QKT_REPORT_MAXS], m[QKT_REPORT_MAXS], lo[QKT_REPORT_MAXS], hi[QKT_REPORT_MAXS];
    static double X[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], M[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], LO[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], HI[QKT_AB_MAX_LIST][QKT_REPORT_MAXS];
    qkt_series s[QKT_AB_MAX_LIST];
    char path[1200], title[160];
    for (int di = 0; di < c->n_dk; di++) {
        int d = c->dks[di];
        const char *what[2] = {"train_loss", "val_acc"};
        for (int w = 0; w < 2; w++) {
            int ns = 0;
            for (int v = 0; v < c->n_variants; v++) {
                int n = band(t, "train", c->variants[v], d, c->seeds, 0, what[w], -1, w == 0 ? 10 : 1, X[v], M[v], LO[v], HI[v]);
                s[ns++] = (qkt_series){.name = c->variants[v], .x = X[v], .y = M[v], .n = n, .lo = c->seeds > 1 ? LO[v] : NULL,
                                       .hi = c->seeds > 1 ? HI[v] : NULL};
            }
            snprintf(path, sizeof path, "%s/%s_dk%d.png", r->dir, w == 0 ? "loss" : "acc", d);
            snprintf(title, sizeof title, "%s, d_k = %d (mean over %d seeds, band min..max)", w == 0 ? "Train loss (10-step mean)" : "Validation accuracy",
                     d, c->seeds);
            qkt_line_chart ch = {.title = title, .x = {.label = "step"}, .y = {.label = w == 0 ? "cross-entropy" : "accuracy on answers"},
                                 .series = s, .n_series = ns};
            if (w == 1) ch.y.min = 0, ch.y.max = 1.02;
            qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
        }
        for (int l = 0; l < c->n_layer; l++) {
            int ns = 0;
            for (int v = 0; v < c->n_variants; v++) {
                int n = band(t, "train", c->variants[v], d, c->seeds, 0, "norm_entropy", l, 1, X[v], M[v], LO[v], HI[v]);
                s[ns++] = (qkt_series){.name = c->variants[v], .x = X[v], .y = M[v], .n = n, .marker = QKT_MARK_CIRCLE};
            }
            snprintf(path, sizeof path, "%s/entropy_dk%d_L%d.png", r->dir, d, l);
            snprintf(title, sizeof title, "Normalised attention entropy, layer %d, d_k = %d (mean over heads, seeds)", l, d);
            qkt_line_chart ch = {.title = title, .x = {.label = "step"}, .y = {.label = "normalised entropy", .min = 0, .max = 1.05},
                                 .series = s, .n_series = ns};
            qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
        }
        qkt_buf_printf(md, "![loss](loss_dk%d.png) ![accuracy](acc_dk%d.png)\n", d, d);
        for (int l = 0; l < c->n_layer; l++) qkt_buf_printf(md, "![entropy L%d](entropy_dk%d_L%d.png) ", l, d, l);
        qkt_buf_printf(md, "\n\n");
    }
    (void)x, (void)m, (void)lo, (void)hi;
}

/* ---------------------------------------------------------------- summary.csv */
static int write_summary(qkt__report *r) {
    const qkt_table *t = r->t;
    qkt_buf b = {0};
    qkt_buf_printf(&b, "run,experiment,variant,d_k,seed,lr,init_val_loss,final_val_loss,final_val_acc,final_train_loss,steps_to_90,"
                       "diverged_step,init_logit_std,init_norm_entropy,final_norm_entropy,final_logit_std,final_logit_max\n");
    for (int i = 0; i < t->n_runs; i++) {
        const qkt_run *u = &t->runs[i];
        if (!strncmp(u->id, "iid_", 4)) continue;
        int last = qkt_table_last_step(t, i, "val_loss"), div = -1;
        qkt__report_diverged(t, i, &div);
        qkt_buf_printf(&b, "%s,%s,%s,%d,%d,%g,%.6g,%.6g,%.6g,%.6g,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", u->id, u->exp, u->variant, u->d_k, u->seed,
                       u->lr, qkt_table_value(t, i, "val_loss", 0, -1), qkt_table_value(t, i, "val_loss", last, -1),
                       qkt_table_value(t, i, "val_acc", last, -1), qkt__report_final_val(t, i, "train_loss"), steps_to_90(t, i), div,
                       qkt_table_value(t, i, "logit_std", 0, -1), qkt_table_value(t, i, "norm_entropy", 0, -1),
                       qkt_table_value(t, i, "norm_entropy", last, -1), qkt_table_value(t, i, "logit_std", last, -1),
                       qkt_table_value(t, i, "logit_max", last, -1));
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/summary.csv", r->dir);
    int rc = qkt_write_atomic(path, b.s, b.n, r->err);
    qkt_buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- the reading */
static int nearest(const int *v, int n, int want) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (abs(v[i] - want) < abs(v[best] - want)) best = i;
    return best;
}

static void reading(qkt__report *r, double slope_sqrt, double slope_dk) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## What the numbers say\n\n");
    /* init, iid */
    int d = c->init_dks[nearest(c->init_dks, c->n_init_dk, 64)];
    char id[2][96];
    snprintf(id[0], 96, "iid_sqrt_dk_dk%d", d);
    snprintf(id[1], 96, "iid_none_dk%d", d);
    int run[2] = {-1, -1};
    for (int k = 0; k < t->n_runs; k++)
        for (int v = 0; v < 2; v++)
            if (!strcmp(t->runs[k].id, id[v])) run[v] = k;
    double e_s = qkt_table_value(t, run[0], "iid_norm_entropy", 0, -1), e_n = qkt_table_value(t, run[1], "iid_norm_entropy", 0, -1);
    double j_s = qkt_table_value(t, run[0], "iid_jacobian", 0, -1), j_n = qkt_table_value(t, run[1], "iid_jacobian", 0, -1);
    double p_n = qkt_table_value(t, run[1], "iid_max_weight", 0, -1), p_s = qkt_table_value(t, run[0], "iid_max_weight", 0, -1);
    qkt_buf_printf(md, "- **At init, unit-variance q and k.** At d_k = %d the unscaled logits have std %.1f; attention starts %s: "
                       "normalised entropy %.2f unscaled vs %.2f scaled, mean max weight %.2f vs %.2f, softmax Jacobian norm %.3f vs %.3f "
                       "(%.1fx %s).\n",
                   d, qkt_table_value(t, run[1], "iid_logit_std", 0, -1), e_n < e_s ? "far more peaked unscaled" : "no more peaked unscaled",
                   e_n, e_s, p_n, p_s, j_n, j_s, j_n > 0 ? j_s / j_n : NAN, j_n < j_s ? "smaller unscaled" : "larger unscaled");
    /* fresh model */
    int ri = qkt_table_find_run(t, "init", "none", d, -1, 0), rs = qkt_table_find_run(t, "init", "sqrt_dk", d, -1, 0);
    if (ri >= 0 && rs >= 0) {
        double sn = qkt_table_value(t, ri, "logit_std", 0, -1), ss = qkt_table_value(t, rs, "logit_std", 0, -1);
        qkt_buf_printf(md, "- **At init, a real GPT.** With N(0, %g) weights (W_q, W_k x %g) the logits at d_k = %d have std %.3f "
                           "unscaled and %.3f scaled: %s\n",
                       c->init_std, c->qk_init_mult, d, sn, ss,
                       sn < 1 ? "small either way, so a freshly initialised model attends almost uniformly whatever the scale; the "
                                "difference between variants builds up as W_q and W_k grow in training."
                              : "large enough unscaled to make attention peaked from the first step.");
    }
    /* training */
    for (int di = 0; di < c->n_dk; di++) {
        int dk = c->dks[di];
        int best = -1;
        double best_l = INFINITY;
        cell_sum cs[QKT_AB_MAX_LIST];
        for (int v = 0; v < c->n_variants; v++) {
            cs[v] = summarize(t, "train", c->variants[v], dk, c->seeds, 0);
            if (cs[v].n_runs && cs[v].loss_m < best_l) best_l = cs[v].loss_m, best = v;
        }
        if (best < 0) continue;
        qkt_buf_printf(md, "- **Training, d_k = %d.** Lowest final validation loss: `%s` (%.3f +- %.3f). Runs reaching 90 %% "
                           "validation accuracy:", dk, c->variants[best], cs[best].loss_m, cs[best].loss_sd);
        for (int v = 0; v < c->n_variants; v++)
            if (cs[v].n_runs) qkt_buf_printf(md, "%s `%s` %d/%d", v ? "," : "", c->variants[v], cs[v].n_s90, cs[v].n_runs);
        qkt_buf_printf(md, ".");
        int vs = -1, vn = -1;
        for (int v = 0; v < c->n_variants; v++) {
            if (!strcmp(c->variants[v], "sqrt_dk")) vs = v;
            if (!strcmp(c->variants[v], "none")) vn = v;
        }
        if (vs >= 0 && vn >= 0 && cs[vs].n_runs && cs[vn].n_runs) {
            double diff = cs[vn].loss_m - cs[vs].loss_m, noise = 2 * fmax(cs[vn].loss_sd, cs[vs].loss_sd);
            qkt_buf_printf(md, " Unscaled vs 1/sqrt(d_k): %.3f vs %.3f; ", cs[vn].loss_m, cs[vs].loss_m);
            if (c->seeds < 2) qkt_buf_printf(md, "one seed only, so no claim about the difference.");
            else if (fabs(diff) <= noise) qkt_buf_printf(md, "the difference (%.3f) is within two seed standard deviations (%.3f): no clear effect at this size.", diff, noise);
            else if (diff > 0) qkt_buf_printf(md, "unscaled is worse by %.3f (more than two seed standard deviations), as expected.", diff);
            else qkt_buf_printf(md, "unscaled is *better* by %.3f, unlike the textbook expectation; at this size and init the logits stay small (see part 1).", -diff);
        }
        int ndiv = 0;
        for (int v = 0; v < c->n_variants; v++) ndiv += cs[v].n_div;
        if (ndiv) {
            qkt_buf_printf(md, " Diverged:");
            for (int v = 0; v < c->n_variants; v++)
                if (cs[v].n_div) qkt_buf_printf(md, " `%s` %d/%d (first at step %d)", c->variants[v], cs[v].n_div, cs[v].n_runs, cs[v].first_div);
            qkt_buf_printf(md, ".");
        }
        qkt_buf_printf(md, "\n");
    }
    /* lr */
    double best_sens = INFINITY, worst_sens = -INFINITY;
    int bi = -1, wi = -1;
    for (int v = 0; v < c->n_lr_variants; v++) {
        double blr, sv = qkt__report_lr_sensitivity(t, c, c->lr_variants[v], &blr);
        if (sv < best_sens) best_sens = sv, bi = v;
        if (sv > worst_sens) worst_sens = sv, wi = v;
    }
    if (bi >= 0 && wi >= 0) {
        qkt_buf_printf(md, "- **Learning rate.** Least LR-sensitive: `%s` (%.3f); most: `%s` (%.3f). The measure is relative to each "
                           "variant's own best final loss (best:", c->lr_variants[bi], best_sens, c->lr_variants[wi], worst_sens);
        for (int v = 0; v < c->n_lr_variants; v++) {
            double blr = NAN, bl = INFINITY;
            qkt__report_lr_sensitivity(t, c, c->lr_variants[v], &blr);
            for (int i = 0; i < c->n_lr; i++) {
                int run = qkt_table_find_run(t, "lr", c->lr_variants[v], c->lr_dk, 0, c->lrs[i]);
                double l = run < 0 ? NAN : qkt__report_final_val(t, run, "val_loss");
                if (isfinite(l) && l < bl) bl = l;
            }
            qkt_buf_printf(md, "%s `%s` %.3f at lr %g", v ? "," : "", c->lr_variants[v], bl, blr);
        }
        qkt_buf_printf(md, "), so a variant that reaches a much lower loss at one learning rate scores as more sensitive. Wortsman "
                           "et al. expect unscaled or under-scaled logits to be the most sensitive at high LR and qk-LayerNorm the least.\n");
    }
    qkt_buf_printf(md, "- **Logit growth.** Slope of the logit change against d_k: %.2f with 1/sqrt(d_k), %.2f with 1/d_k. muP predicts "
                       "growth with width under 1/sqrt(d_k) and a flat line under 1/d_k; %s\n\n",
                   slope_sqrt, slope_dk,
                   slope_sqrt > slope_dk + 0.2 ? "the measurement agrees in direction."
                                               : "the measurement does not show the predicted gap at these sizes and step counts.");
}

int qkt_ablate_report(const char *run_dir, qkt_err *err) {
    qkt_ablate_cfg c;
    if (qkt_ablate_load_config(run_dir, &c, err) != 0) return -1;
    if (gather(run_dir, err) != 0) return -1;
    qkt_table t;
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    if (qkt_table_load(path, &t, err) != 0) return -1;
    qkt__report r = {.c = &c, .t = &t, .dir = run_dir, .err = err};
    qkt_buf_printf(&r.md, "# qkt ablation `%s`: why attention divides by sqrt(d_k)\n\n", c.name);
    qkt_buf_printf(&r.md, "Reproduce: `%s` (the full configuration is in `config.json`). "
                          "Redraw: `qkt plot %s`. Data: `metrics.csv` (tidy), `summary.csv` (one row per run).\n\n",
                   c.command, run_dir);
    double s1 = NAN, s2 = NAN;
    qkt_buf md_head = r.md;
    r.md = (qkt_buf){0};
    part_init(&r);
    part_train(&r);
    qkt__report_part_maps(&r);
    qkt__report_part_lr(&r);
    qkt__report_part_growth(&r, &s1, &s2);
    qkt_buf body = r.md;
    r.md = md_head;
    reading(&r, s1, s2);
    qkt_buf_printf(&r.md, "%s", body.s ? body.s : "");
    qkt_buf_free(&body);
    int rc = write_summary(&r);
    snprintf(path, sizeof path, "%s/report.md", run_dir);
    if (!rc) rc = qkt_write_atomic(path, r.md.s, r.md.n, err);
    qkt_buf_free(&r.md);
    qkt_table_free(&t);
    if (!rc && r.n_plots_failed) rc = qkt_err_set(err, "%d plots could not be written", r.n_plots_failed);
    return rc;
}
