/* The report's attention maps (part 2): layer x head heatmaps at init and after
 * training, from the cells/<id>.attn.safetensors files of the train cells with maps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablate_internal.h"
#include "qkt_plot.h"
#include "qkt_sweep.h"
#include "report_internal.h"

/* The maps of one cell (qkt__ablate_maps_read): 0, or -1 when the file is absent (said
 * only when the cell is finished) or cannot be drawn (said, skipped). */
static int read_maps(const char *run_dir, const char *id, const qkt_gpt_config *m, double **vals, int *L, int *H, int *T) {
    char why[700], csv[1100], old[1200];
    int rc = qkt__ablate_maps_read(run_dir, id, m, vals, L, H, T, why, sizeof why);
    if (rc == -1) qkt_logf(QKT_LOG_WARN, "qkt: %s, skipped; rerun the run's qkt ablate command to recompute the cell", why);
    if (rc != 1) return rc ? -1 : 0;
    qkt_cell_paths(run_dir, id, csv, NULL, NULL, sizeof csv);
    qkt__ablate_old_maps_path(run_dir, id, old, sizeof old);
    if (qkt_file_exists(old))
        qkt_logf(QKT_LOG_WARN, "qkt: %s: attention maps of an older qkt; rerun the run's qkt ablate command to recompute the cell", old);
    else if (qkt_cell_done_id(csv, id, NULL, 0))
        qkt_logf(QKT_LOG_WARN, "qkt: cells/%s.attn.safetensors is missing; rerun the run's qkt ablate command to recompute the cell", id);
    return -1;
}

/* One grid per variant: the top row at init, the bottom row after training. */
static void draw_maps(qkt__report *r, const char *name, int d, const double *vals, int L, int H, int T) {
    size_t per = (size_t)L * H * T * T;
    qkt_heatmap *panels = qkt_calloc((size_t)2 * L * H, sizeof *panels);
    char(*caps)[32] = qkt_calloc((size_t)2 * L * H, sizeof *caps);
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < L; l++)
            for (int h = 0; h < H; h++) {
                int p = (k * L + l) * H + h;
                snprintf(caps[p], 32, "%s L%d H%d", k ? "end" : "init", l, h);
                panels[p] = (qkt_heatmap){.title = caps[p], .v = vals + (size_t)k * per + ((size_t)l * H + h) * T * T, .rows = T, .cols = T};
            }
    char out[1200], title[128];
    snprintf(out, sizeof out, "%s/attn_%s.png", r->dir, name);
    snprintf(title, sizeof title, "Attention, %s, d_k = %d: init (top) and trained (bottom)", name, d);
    /* One row of L x H panels at init and one trained; past 64 panels a row per layer (H of
     * them, 2 L rows), and panels small enough for the image's 16384-pixel sides. */
    int gc = L * H <= 64 ? L * H : H, gr = 2 * L * H / gc, P = 160;
    int pw = (15000 - (gc - 1) * 16) / gc, ph = (15000 - gr * 48) / gr; /* 16 px gaps, caption bands */
    if (P > pw) P = pw;
    if (P > ph) P = ph;
    if (P < 16) P = 16;
    qkt_heatmap_grid g = {.title = title, .xlabel = "key", .ylabel = "query", .panels = panels, .n_panels = 2 * L * H,
                          .grid_cols = gc, .panel_px = P, .vmin = 0, .vmax = 1, .bar_label = "probability"};
    qkt__report_plot_done(r, qkt_plot_heatmap_grid(out, &g, NULL, r->err), out);
    qkt_buf_printf(&r->md, "![%s](./attn_%s.png)\n", name, name); /* ./: a name with ":" (power:0.75) is not a URL scheme */
    free(panels);
    free(caps);
}

void qkt__report_part_maps(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    int d = c->dks[c->n_dk - 1];
    qkt_buf_printf(&r->md, "### Attention maps\n\nLayer x head maps for one fixed validation sequence, d_k = %d, seed 0: top row at "
                           "initialisation, bottom row after training.\n\n", d);
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan);
    for (int v = 0; v < c->n_variants; v++)
        for (int i = 0; i < n; i++) { /* the plan says which cell of this variant keeps maps */
            if (!plan[i].maps || plan[i].variant != c->variants[v]) continue;
            double *vals = NULL;
            int L, H, T;
            const char *name = qkt_attn_scale_name(c->variants[v]);
            if (read_maps(r->dir, plan[i].id, &c->run.tc.model, &vals, &L, &H, &T) == 0) {
                draw_maps(r, name, plan[i].d_k, vals, L, H, T);
            } else { /* a heatmap drawn before from maps now gone or damaged is not left beside the report */
                char png[1200];
                snprintf(png, sizeof png, "%s/attn_%s.png", r->dir, name);
                remove(png);
            }
            free(vals);
            break;
        }
    free(plan);
    qkt_buf_printf(&r->md, "\n");
}
