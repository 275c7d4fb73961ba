/* The report's part 3: learning-rate sensitivity (final loss per LR, Wortsman et al.'s
 * measure, loss against LR). */
#include <math.h>
#include <stdio.h>

#include "qkt_plot.h"
#include "report_internal.h"

/* The rest of a table's header after "| variant |": a column per LR, then `tail` (the
 * last columns' names, `extra` of them), and the rule line of `rule` cells. */
static void lr_header(qkt_buf *md, const qkt_ablate_cfg *c, const char *tail, int extra, const char *rule) {
    for (int i = 0; i < c->n_lr; i++) qkt_buf_printf(md, " lr %g |", c->lrs[i]);
    qkt_buf_printf(md, " %s |\n|---|", tail);
    for (int i = 0; i < c->n_lr + extra; i++) qkt_buf_printf(md, "%s", rule);
    qkt_buf_printf(md, "\n");
}

void qkt__report_part_lr(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## 3. Learning-rate sensitivity\n\nd_k = %d, %d steps per run, seed 0 (of %d), otherwise as above. Final validation loss "
                       "per learning rate (`div` = diverged), and the LR sensitivity of Wortsman et al. (2023): "
                       "E_lr[min(loss, loss at init) - best loss], the best loss being the lowest final loss of any variant at any LR of the sweep "
                       "(lower = less sensitive).\n\n| variant |",
                   c->lr_dk, c->lr_steps, c->lr_seeds);
    lr_header(md, c, "best lr | LR sensitivity", 2, "---:|");
    static double X[QKT_AB_MAX_LIST][QKT_AB_MAX_LIST], Y[QKT_AB_MAX_LIST][QKT_AB_MAX_LIST];
    qkt_series s[QKT_AB_MAX_LIST];
    for (int v = 0; v < c->n_lr_variants; v++) {
        const char *name = qkt_attn_scale_name(c->lr_variants[v]);
        qkt_buf_printf(md, "| %s |", name);
        for (int i = 0; i < c->n_lr; i++) {
            int run = qkt_table_find_run(t, QKT_KIND(LR), name, c->lr_dk, 0, c->lrs[i]);
            double l = run < 0 ? NAN : qkt__report_final_val(t, run, QKT_M(VAL_LOSS));
            X[v][i] = c->lrs[i], Y[v][i] = l;
            if (run >= 0 && qkt__report_diverged(t, run, NULL)) qkt_buf_printf(md, " div |"), Y[v][i] = NAN;
            else qkt_buf_printf(md, " %.3f |", l);
        }
        double best_lr = NAN, sens = qkt__report_lr_sensitivity(t, c, name, &best_lr);
        if (isfinite(best_lr) && isfinite(sens) && c->n_lr > 1) qkt_buf_printf(md, " %g | %.3f |\n", best_lr, sens);
        else if (isfinite(best_lr)) qkt_buf_printf(md, " %g | - (one LR) |\n", best_lr);
        else qkt_buf_printf(md, " - | - (every run diverged) |\n");
        s[v] = (qkt_series){.name = name, .x = X[v], .y = Y[v], .n = c->n_lr, .marker = QKT_MARK_CIRCLE};
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/lr_sensitivity.png", r->dir);
    char title[128];
    snprintf(title, sizeof title, "Final validation loss vs learning rate (d_k = %d)", c->lr_dk);
    qkt_line_chart ch = {.title = title, .x = {.label = "learning rate", .log = 1}, .y = {.label = "final validation loss"},
                         .series = s, .n_series = c->n_lr_variants};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(md, "\n![lr](lr_sensitivity.png)\n\n");
    /* stability: what claims 6-7 read */
    char chs[48] = "unknown: its data could not be opened";
    if (isfinite(r->chance)) snprintf(chs, sizeof chs, "%.3f", r->chance);
    char sched[96];
    qkt__report_lr_schedule(c, sched, sizeof sched);
    qkt_buf_printf(md, "**Stability** (claims 6-7; evaluated %s). A run *failed* if it did not train (its final validation "
                       "loss is not %.1f nats below the task's chance level, %s) or diverged (a non-finite loss, or a rise of more than %.1f "
                       "above the running minimum that lasts %d steps, at every evaluation in them; one spike does not count). Per LR: final validation loss "
                       "(**bold** = did not train), the largest rise above the running minimum (**bold** = a lasting rise, first at step @N), "
                       "the largest attention logit up to that rise (the whole run if none), and the lowest normalised entropy (mean over "
                       "heads) over the same evaluations.\n\n| variant |",
                   sched, QKT_REPORT_TRAIN_MARGIN, chs, QKT_REPORT_RISE, QKT_REPORT_RISE_PERSIST(c));
    lr_header(md, c, "trained up to", 1, "---|");
    for (int v = 0; v < c->n_lr_variants; v++) {
        const char *name = qkt_attn_scale_name(c->lr_variants[v]);
        qkt_buf_printf(md, "| %s |", name);
        for (int i = 0; i < c->n_lr; i++) {
            qkt__lr_run u;
            qkt__report_lr_run(r, name, i, 0, &u);
            X[v][i] = c->lrs[i], Y[v][i] = u.logit_max > 0 ? u.logit_max : NAN;
            if (u.run < 0) qkt_buf_printf(md, " - |");
            else {
                char f[32], g2[48];
                if (!isfinite(u.final_loss)) snprintf(f, sizeof f, "**non-finite**");
                else snprintf(f, sizeof f, u.no_train ? "**%.2f**" : "%.2f", u.final_loss);
                if (u.rise_step >= 0) snprintf(g2, sizeof g2, "**%+.2f** @%d", u.peak_rise, u.rise_step);
                else snprintf(g2, sizeof g2, "%+.2f", u.peak_rise);
                qkt_buf_printf(md, " %s / %s / %.3g / %.2f |", f, g2, u.logit_max, u.min_entropy);
            }
        }
        qkt__lr_range g = qkt__report_lr_range(r, name, 0);
        if (isnan(g.max_trained_lr)) qkt_buf_printf(md, " none |\n");
        else if (isnan(g.min_failed_lr)) qkt_buf_printf(md, " whole grid |\n");
        else qkt_buf_printf(md, " %g%s |\n", g.max_trained_lr, g.stable_above ? " (trained again above)" : "");
        s[v] = (qkt_series){.name = name, .x = X[v], .y = Y[v], .n = c->n_lr, .marker = QKT_MARK_CIRCLE};
    }
    snprintf(path, sizeof path, "%s/lr_logit_max.png", r->dir);
    snprintf(title, sizeof title, "Largest attention logit up to the loss rise vs learning rate (d_k = %d)", c->lr_dk);
    qkt_line_chart g = {.title = title, .x = {.label = "learning rate", .log = 1}, .y = {.label = "max attention logit", .log = 1},
                        .series = s, .n_series = c->n_lr_variants};
    qkt__report_plot_done(r, qkt_plot_lines(path, &g, NULL, r->err), path);
    qkt_buf_printf(md, "\n![logit max vs lr](lr_logit_max.png)\n\n");
    if (c->lr_seeds < 2) return;
    /* over seeds: what claims 6b and 7b decide on */
    qkt_buf_printf(md, "**Failure rate over %d seeds** per learning rate (runs that failed / runs), and the largest good LR (the last LR of the run "
                       "of trained LRs from the smallest) per seed.\n\n| variant |", c->lr_seeds);
    lr_header(md, c, "largest good LR per seed", 1, "---|");
    for (int v = 0; v < c->n_lr_variants; v++) {
        const char *name = qkt_attn_scale_name(c->lr_variants[v]);
        qkt_buf_printf(md, "| %s |", name);
        for (int i = 0; i < c->n_lr; i++) {
            int k = 0, n = 0;
            for (int s = 0; s < c->lr_seeds; s++) {
                qkt__lr_run u;
                qkt__report_lr_run(r, name, i, s, &u);
                if (u.run >= 0) n++, k += u.failed;
            }
            qkt_buf_printf(md, " %d/%d |", k, n);
        }
        for (int s = 0; s < c->lr_seeds; s++) {
            qkt__lr_range g = qkt__report_lr_range(r, name, s);
            if (!g.n) qkt_buf_printf(md, "%s-", s ? ", " : " ");
            else if (isnan(g.max_trained_lr)) qkt_buf_printf(md, "%snone", s ? ", " : " ");
            else if (isnan(g.min_failed_lr)) qkt_buf_printf(md, "%swhole grid", s ? ", " : " ");
            else qkt_buf_printf(md, "%s%g", s ? ", " : " ", g.max_trained_lr);
        }
        qkt_buf_printf(md, " |\n");
    }
    qkt_buf_printf(md, "\n");
}
