/* The report's part 2c: the second task (config task2, experiment "train2"), one whose
 * loss falls smoothly (e.g. `recall`), so the variants differ in their loss curves and
 * not only in plateau escapes: final and mean validation loss per variant and d_k, paired
 * against sqrt_dk, and the validation-loss curves. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_data.h"
#include "qkt_plot.h"
#include "report_internal.h"

#define NAME(v) qkt_attn_scale_name(v)

/* Validation loss per evaluation of one variant at one d_k: mean over the seeds that have
 * the point, band min..max. Returns the number of points. */
static int val_band(const qkt_table *t, const char *variant, int d_k, int seeds, double *x, double *m, double *lo, double *hi) {
    static double st[QKT_REPORT_MAXS], v[QKT_REPORT_MAXS];
    static int cnt[QKT_REPORT_MAXS];
    int n = 0;
    for (int s = 0; s < seeds; s++) {
        int run = qkt_table_find_run(t, QKT_KIND(TRAIN2), variant, d_k, s, 0);
        int k = qkt_table_series(t, run, QKT_M(VAL_LOSS), -1, st, v, QKT_REPORT_MAXS);
        for (int i = n; i < k; i++) x[i] = st[i], m[i] = 0, lo[i] = INFINITY, hi[i] = -INFINITY, cnt[i] = 0;
        n = k > n ? k : n;
        for (int i = 0; i < k; i++)
            if (isfinite(v[i])) m[i] += v[i], cnt[i]++, lo[i] = fmin(lo[i], v[i]), hi[i] = fmax(hi[i], v[i]);
    }
    for (int i = 0; i < n; i++)
        if (cnt[i]) m[i] /= cnt[i];
        else m[i] = lo[i] = hi[i] = NAN;
    return n;
}

void qkt__report_part_task2(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    if (!c->task2[0]) return;
    qkt_buf *md = &r->md;
    double chance = NAN, best = NAN;
    qkt_data *d;
    qkt_err e;
    qkt_data_opts o = {.seq_len = c->run.tc.model.block_size, .seed = c->run.tc.seed};
    if (qkt_data_open(&d, c->task2, &o, &e) == 0) {
        double a;
        qkt_data_chance(d, &chance, &a);
        qkt_data_best(d, &best, &a);
        qkt_data_free(d);
    }
    qkt_buf_printf(md, "## 2c. Second task: `%s` (loss curves)\n\nThe same models, optimiser, steps and seeds as part 2 on a task whose loss "
                       "falls smoothly (docs/data.md), so a variant's effect shows as a shift of the whole loss curve rather than in when a run "
                       "reaches 90 %% accuracy. Validation loss: chance %.3f, best achievable %.3f (the task's Bayes loss). Differences are "
                       "variant - `sqrt_dk`, paired by seed: mean [%.0f %% percentile bootstrap interval] (t: the Student t interval), exact sign-flip p.\n\n",
                   c->task2, chance, best, 100 * QKT_REPORT_LEVEL);
    qkt_buf_printf(md, "| variant | d_k | final val loss (mean +- sd) | mean val loss over the run | vs sqrt_dk: final | vs sqrt_dk: mean over the run | diverged |\n"
                       "|---|---:|---:|---:|---|---|---:|\n");
    for (int di = 0; di < c->n_task2_dk; di++)
        for (int v = 0; v < c->n_variants; v++) {
            static qkt__cmp k;
            qkt__report_compare_exp(r, QKT_KIND(TRAIN2), c->variants[v], QKT_ATTN_SQRT_DK, c->task2_dks[di], &k);
            if (!k.sa.n_present) continue;
            double s = 0, ss = 0, au = 0;
            int n = 0;
            for (int i = 0; i < k.sa.n; i++)
                if (isfinite(k.sa.final_loss[i])) s += k.sa.final_loss[i], ss += k.sa.final_loss[i] * k.sa.final_loss[i], au += k.sa.auc[i], n++;
            char f[64] = "-", au_s[32] = "-", l[160] = "-", a[160] = "-";
            if (n) {
                snprintf(f, sizeof f, "%.3f +- %.3f", s / n, n > 1 ? sqrt(fmax(0, (ss - s * s / n) / (n - 1))) : 0.0);
                snprintf(au_s, sizeof au_s, "%.3f", au / n);
            }
            if (c->variants[v] != QKT_ATTN_SQRT_DK && k.sb.n_present) {
                qkt__report_fmt_paired(l, sizeof l, &k.loss, "%+.3f");
                qkt__report_fmt_paired(a, sizeof a, &k.auc, "%+.3f");
            }
            qkt_buf_printf(md, "| %s | %d | %s | %s | %s | %s | %d/%d |\n", NAME(c->variants[v]), c->task2_dks[di], f, au_s, l, a,
                           k.sa.n_diverged, k.sa.n_present);
        }
    qkt_buf_printf(md, "\n");
    static double X[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], M[QKT_AB_MAX_LIST][QKT_REPORT_MAXS], LO[QKT_AB_MAX_LIST][QKT_REPORT_MAXS],
        HI[QKT_AB_MAX_LIST][QKT_REPORT_MAXS];
    qkt_series sr[QKT_AB_MAX_LIST];
    for (int di = 0; di < c->n_task2_dk; di++) {
        int dk = c->task2_dks[di];
        for (int v = 0; v < c->n_variants; v++) {
            int n = val_band(r->t, NAME(c->variants[v]), dk, c->seeds, X[v], M[v], LO[v], HI[v]);
            sr[v] = (qkt_series){.name = NAME(c->variants[v]), .x = X[v], .y = M[v], .n = n, .lo = c->seeds > 1 ? LO[v] : NULL,
                                 .hi = c->seeds > 1 ? HI[v] : NULL};
        }
        char path[1200], title[200];
        snprintf(path, sizeof path, "%s/task2_loss_dk%d.png", r->dir, dk);
        snprintf(title, sizeof title, "Second task: validation loss, d_k = %d (mean over %d seeds, band min..max)", dk, c->seeds);
        qkt_line_chart ch = {.title = title, .x = {.label = "step"}, .y = {.label = "validation cross-entropy"}, .series = sr,
                             .n_series = c->n_variants};
        qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
        qkt_buf_printf(md, "![second task, d_k = %d](task2_loss_dk%d.png) ", dk, dk);
    }
    qkt_buf_printf(md, "\n\n");
}
