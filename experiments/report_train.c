/* The report's part 2: the training ablation (final metrics per variant and d_k, loss,
 * accuracy and entropy curves with a band over seeds). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_plot.h"
#include "report_internal.h"

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

/* One row per (d_k, variant): init logit std and entropy, final loss and accuracy, steps to 90 %. */
static void train_table(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "| variant | d_k | init logit std | init norm. entropy | final val loss (mean +- sd) | val accuracy | steps to 90 %% | diverged |\n");
    qkt_buf_printf(md, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int di = 0; di < c->n_dk; di++)
        for (int v = 0; v < c->n_variants; v++) {
            const char *name = qkt_attn_scale_name(c->variants[v]);
            qkt__cell_sum cs = qkt__report_summarize(r->t, QKT_KIND(TRAIN), name, c->dks[di], c->seeds, 0);
            if (!cs.n_runs) continue;
            char s90[32], div[48];
            if (cs.n_s90) snprintf(s90, sizeof s90, "%.0f (%d/%d)", cs.s90, cs.n_s90, cs.n_runs);
            else snprintf(s90, sizeof s90, "never");
            if (cs.n_div) snprintf(div, sizeof div, "%d/%d (step %d)", cs.n_div, cs.n_runs, cs.first_div);
            else snprintf(div, sizeof div, "0/%d", cs.n_runs);
            qkt_buf_printf(md, "| %s | %d | %.3f | %.3f | %.3f +- %.3f | %.3f +- %.3f | %s | %s |\n", name, c->dks[di], cs.init_std,
                           cs.init_ent, cs.loss_m, cs.loss_sd, cs.acc_m, cs.acc_sd, s90, div);
        }
    qkt_buf_printf(md, "\n");
}

/* The curves at one d_k: train loss and validation accuracy (band over seeds), and the
 * normalised entropy per layer; one line per variant. */
static void train_curves(qkt__report *r, int d) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    static double X[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], M[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], LO[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], HI[QKT_AB_MAX_LIST][QKT_REPORT_MAXS];
    qkt_series s[QKT_AB_MAX_LIST];
    char path[1200], title[160];
    const char *what[2] = {QKT_M(TRAIN_LOSS), QKT_M(VAL_ACC)};
    for (int w = 0; w < 2; w++) {
        int ns = 0;
        for (int v = 0; v < c->n_variants; v++) {
            const char *name = qkt_attn_scale_name(c->variants[v]);
            int n = band(t, QKT_KIND(TRAIN), name, d, c->seeds, 0, what[w], -1, w == 0 ? 10 : 1, X[v], M[v], LO[v], HI[v]);
            s[ns++] = (qkt_series){.name = name, .x = X[v], .y = M[v], .n = n, .lo = c->seeds > 1 ? LO[v] : NULL,
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
    for (int l = 0; l < c->run.tc.model.n_layer; l++) {
        int ns = 0;
        for (int v = 0; v < c->n_variants; v++) {
            const char *name = qkt_attn_scale_name(c->variants[v]);
            int n = band(t, QKT_KIND(TRAIN), name, d, c->seeds, 0, QKT_M(NORM_ENTROPY), l, 1, X[v], M[v], LO[v], HI[v]);
            s[ns++] = (qkt_series){.name = name, .x = X[v], .y = M[v], .n = n, .marker = QKT_MARK_CIRCLE};
        }
        snprintf(path, sizeof path, "%s/entropy_dk%d_L%d.png", r->dir, d, l);
        snprintf(title, sizeof title, "Normalised attention entropy, layer %d, d_k = %d (mean over heads, seeds)", l, d);
        qkt_line_chart ch = {.title = title, .x = {.label = "step"}, .y = {.label = "normalised entropy", .min = 0, .max = 1.05},
                             .series = s, .n_series = ns};
        qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    }
    qkt_buf_printf(&r->md, "![loss](loss_dk%d.png) ![accuracy](acc_dk%d.png)\n", d, d);
    for (int l = 0; l < c->run.tc.model.n_layer; l++) qkt_buf_printf(&r->md, "![entropy L%d](entropy_dk%d_L%d.png) ", l, d, l);
    qkt_buf_printf(&r->md, "\n\n");
}

void qkt__report_part_train(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf_printf(&r->md, "## 2. Training ablation\n\nTask `%s`, %d layers, %d heads (d_model = %d x d_k), batch %d, %d steps, AdamW lr %g "
                           "(warmup %d, cosine to %g x), weight decay %g, clip %g; %d seed%s. Init: weights N(0, %g), W_q and W_k %s "
                           "(x %g). Final = the final loss on %d fixed validation sequences after the last step (the same sequences for every "
                           "cell and seed); the curves' evaluations use the first %d of them; steps to 90 %% = first evaluation (every %d steps) with "
                           "validation accuracy >= 0.9.\n\n",
                   c->run.data, c->run.tc.model.n_layer, c->run.tc.model.n_head, c->run.tc.model.n_head, c->run.tc.batch_size, (int)c->run.tc.steps, c->run.tc.lr, (int)c->run.tc.warmup_steps, c->min_lr_frac, c->run.tc.weight_decay,
                   c->run.tc.grad_clip, c->seeds, c->seeds > 1 ? "s" : "", c->run.tc.model.init_std,
                   c->run.tc.model.qk_init == QKT_QK_INIT_UNIT ? "`unit`: N(0, 1/d_model), unit-variance q and k at every width" : "`gpt2`: the same N(0, init_std)",
                   c->run.tc.model.qk_init_mult, c->final_eval_seqs, c->run.eval_batches * c->run.tc.batch_size, c->run.eval_every);
    train_table(r);
    int runs = 0, div = 0;
    for (int i = 0; i < r->t->n_runs; i++)
        if (!strcmp(r->t->runs[i].exp, QKT_KIND(TRAIN))) runs++, div += qkt__report_diverged(r->t, i, NULL);
    if (runs && div == runs)
        qkt_buf_printf(&r->md, "**Every training run diverged** (%d of %d): there is no loss to compare; lower `--lr`.\n\n", div, runs);
    for (int di = 0; di < c->n_dk; di++) train_curves(r, c->dks[di]);
}
