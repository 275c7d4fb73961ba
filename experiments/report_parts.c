/* The study's report, parts 3-5: attention maps, LR sensitivity, logit growth
 * (report_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_plot.h"
#include "report_internal.h"

/* ---------------------------------------------------------------- heatmaps */
void qkt__report_part_maps(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    int d = c->dks[c->n_dk - 1];
    qkt_buf_printf(&r->md, "### Attention maps\n\nLayer x head maps for one fixed validation sequence, d_k = %d, seed 0: top row at "
                           "initialisation, bottom row after training.\n\n", d);
    for (int v = 0; v < c->n_variants; v++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/cells/train_%s_dk%d_s0.maps", r->dir, c->variants[v], d);
        size_t n;
        qkt_err e2;
        unsigned char *buf = (unsigned char *)qkt_read_file(path, &n, &e2);
        if (!buf) continue;
        int32_t hdr[4];
        if (n < 16) { free(buf); continue; }
        memcpy(hdr, buf, 16);
        int L = hdr[1], H = hdr[2], T = hdr[3];
        size_t per = (size_t)L * H * T * T;
        if (hdr[0] != 0x4D544B51 || L <= 0 || H <= 0 || T <= 0 || n != 16 + 2 * per * sizeof(float)) {
            fprintf(stderr, "qkt: %s: not a qkt attention map file, skipped\n", path);
            free(buf);
            continue;
        }
        const float *f = (const float *)(buf + 16);
        double *vals = malloc(2 * per * sizeof *vals);
        qkt_heatmap *panels = calloc((size_t)2 * L * H, sizeof *panels);
        char(*caps)[32] = calloc((size_t)2 * L * H, sizeof *caps);
        for (size_t i = 0; i < 2 * per; i++) vals[i] = f[i];
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++) {
                    int p = (k * L + l) * H + h;
                    snprintf(caps[p], 32, "%s L%d H%d", k ? "end" : "init", l, h);
                    panels[p] = (qkt_heatmap){.title = caps[p], .v = vals + (size_t)k * per + ((size_t)l * H + h) * T * T, .rows = T, .cols = T};
                }
        char out[1200], title[128];
        snprintf(out, sizeof out, "%s/attn_%s.png", r->dir, c->variants[v]);
        snprintf(title, sizeof title, "Attention, %s, d_k = %d: init (top) and trained (bottom)", c->variants[v], d);
        qkt_heatmap_grid g = {.title = title, .xlabel = "key", .ylabel = "query", .panels = panels, .n_panels = 2 * L * H,
                              .grid_cols = L * H, .vmin = 0, .vmax = 1, .bar_label = "probability"};
        qkt__report_plot_done(r, qkt_plot_heatmap_grid(out, &g, NULL, r->err), out);
        qkt_buf_printf(&r->md, "![%s](attn_%s.png)\n", c->variants[v], c->variants[v]);
        free(vals);
        free(panels);
        free(caps);
        free(buf);
    }
    qkt_buf_printf(&r->md, "\n");
}

/* ---------------------------------------------------------------- part 3 */
/* Wortsman et al. 2023: LR sensitivity = E_lr[min(loss(lr), loss_init) - min_lr loss(lr)]. */
double qkt__report_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr) {
    double best = INFINITY, init = NAN, acc = 0;
    double f[QKT_AB_MAX_LIST];
    for (int i = 0; i < c->n_lr; i++) {
        int run = qkt_table_find_run(t, "lr", variant, c->lr_dk, 0, c->lrs[i]);
        f[i] = run < 0 ? NAN : qkt__report_final_val(t, run, "val_loss");
        if (run >= 0 && !isfinite(init)) init = qkt_table_value(t, run, "val_loss", 0, -1);
        if (isfinite(f[i]) && f[i] < best) best = f[i], *best_lr = c->lrs[i];
    }
    int n = 0;
    for (int i = 0; i < c->n_lr; i++) {
        double l = isfinite(f[i]) ? f[i] : init; /* a diverged run counts as no better than init */
        acc += (l < init ? l : init) - best;
        n++;
    }
    return n && isfinite(best) ? acc / n : NAN;
}

void qkt__report_part_lr(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## 3. Learning-rate sensitivity\n\nd_k = %d, %d steps per run, seed 0, otherwise as above. Final validation loss "
                       "per learning rate (`div` = diverged), and the LR sensitivity of Wortsman et al. (2023): "
                       "E_lr[min(loss, loss at init) - best loss] (lower = less sensitive).\n\n| variant |",
                   c->lr_dk, c->lr_steps);
    for (int i = 0; i < c->n_lr; i++) qkt_buf_printf(md, " lr %g |", c->lrs[i]);
    qkt_buf_printf(md, " best lr | LR sensitivity |\n|---|");
    for (int i = 0; i < c->n_lr + 2; i++) qkt_buf_printf(md, "---:|");
    qkt_buf_printf(md, "\n");
    static double X[QKT_AB_MAX_LIST][QKT_AB_MAX_LIST], Y[QKT_AB_MAX_LIST][QKT_AB_MAX_LIST];
    qkt_series s[QKT_AB_MAX_LIST];
    for (int v = 0; v < c->n_lr_variants; v++) {
        qkt_buf_printf(md, "| %s |", c->lr_variants[v]);
        for (int i = 0; i < c->n_lr; i++) {
            int run = qkt_table_find_run(t, "lr", c->lr_variants[v], c->lr_dk, 0, c->lrs[i]);
            double l = run < 0 ? NAN : qkt__report_final_val(t, run, "val_loss");
            X[v][i] = c->lrs[i], Y[v][i] = l;
            if (run >= 0 && qkt__report_diverged(t, run, NULL)) qkt_buf_printf(md, " div |"), Y[v][i] = NAN;
            else qkt_buf_printf(md, " %.3f |", l);
        }
        double best_lr = NAN, sens = qkt__report_lr_sensitivity(t, c, c->lr_variants[v], &best_lr);
        qkt_buf_printf(md, " %g | %.3f |\n", best_lr, sens);
        s[v] = (qkt_series){.name = c->lr_variants[v], .x = X[v], .y = Y[v], .n = c->n_lr, .marker = QKT_MARK_CIRCLE};
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/lr_sensitivity.png", r->dir);
    char title[128];
    snprintf(title, sizeof title, "Final validation loss vs learning rate (d_k = %d)", c->lr_dk);
    qkt_line_chart ch = {.title = title, .x = {.label = "learning rate", .log = 1}, .y = {.label = "final validation loss"},
                         .series = s, .n_series = c->n_lr_variants};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(md, "\n![lr](lr_sensitivity.png)\n\n");
}

/* ---------------------------------------------------------------- part 4 */
static double slope(const double *x, const double *y, int n) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0 && y[i] > 0)) continue;
        double a = log(x[i]), b = log(y[i]);
        sx += a, sy += b, sxx += a * a, sxy += a * b, k++;
    }
    return k > 1 ? (k * sxy - sx * sy) / (k * sxx - sx * sx) : NAN;
}

void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk) {
    const qkt_ablate_cfg *c = r->c;
    const qkt_table *t = r->t;
    qkt_buf *md = &r->md;
    static const char *const gv[2] = {"sqrt_dk", "dk"};
    qkt_buf_printf(md, "## 4. Logit growth under Adam (the muP coordinate check)\n\nRMS change of the scaled attention logits on a fixed "
                       "batch after %d Adam steps at lr %g (no warmup, decay or clipping), mean over layers; d_model = %d x d_k.\n\n"
                       "| d_k | logit rms at init: sqrt_dk / dk | change: sqrt_dk | change: dk |\n|---:|---|---:|---:|\n",
                   c->growth_steps, c->growth_lr, c->n_head);
    static double X[QKT_AB_MAX_LIST], Y[2][QKT_AB_MAX_LIST];
    for (int i = 0; i < c->n_growth_dk; i++) {
        int d = c->growth_dks[i];
        double z[2];
        X[i] = d;
        for (int v = 0; v < 2; v++) {
            int run = qkt_table_find_run(t, "growth", gv[v], d, -1, 0);
            Y[v][i] = qkt_table_value(t, run, "logit_delta_rms", c->growth_steps, -1);
            z[v] = qkt_table_value(t, run, "logit_rms", 0, -1);
        }
        qkt_buf_printf(md, "| %d | %.3g / %.3g | %.3g | %.3g |\n", d, z[0], z[1], Y[0][i], Y[1][i]);
    }
    *slope_sqrt = slope(X, Y[0], c->n_growth_dk);
    *slope_dk = slope(X, Y[1], c->n_growth_dk);
    qkt_buf_printf(md, "\nLog-log slope of the change against d_k: %.2f for 1/sqrt(d_k), %.2f for 1/d_k.\n\n", *slope_sqrt, *slope_dk);
    qkt_series s[2] = {{.name = "1/sqrt(d_k)", .x = X, .y = Y[0], .n = c->n_growth_dk, .marker = QKT_MARK_CIRCLE},
                       {.name = "1/d_k", .x = X, .y = Y[1], .n = c->n_growth_dk, .marker = QKT_MARK_CIRCLE}};
    char path[1200], title[128];
    snprintf(path, sizeof path, "%s/logit_growth.png", r->dir);
    snprintf(title, sizeof title, "Change of attention logits after %d Adam steps", c->growth_steps);
    qkt_line_chart ch = {.title = title, .x = {.label = "d_k", .log = 1}, .y = {.label = "rms change of scaled logits", .log = 1},
                         .series = s, .n_series = 2};
    qkt__report_plot_done(r, qkt_plot_lines(path, &ch, NULL, r->err), path);
    qkt_buf_printf(md, "![growth](logit_growth.png)\n\n");
}

