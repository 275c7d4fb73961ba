/* The report's attention maps (part 2): layer x head heatmaps at init and after
 * training, from the files the train cells with maps = true write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_plot.h"
#include "report_internal.h"

void qkt__report_part_maps(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    int d = c->dks[c->n_dk - 1];
    qkt_buf_printf(&r->md, "### Attention maps\n\nLayer x head maps for one fixed validation sequence, d_k = %d, seed 0: top row at "
                           "initialisation, bottom row after training.\n\n", d);
    for (int v = 0; v < c->n_variants; v++) {
        const char *name = qkt_attn_scale_name(c->variants[v]);
        char path[1200];
        snprintf(path, sizeof path, "%s/cells/train_%s_dk%d_s0.maps", r->dir, name, d);
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
        snprintf(out, sizeof out, "%s/attn_%s.png", r->dir, name);
        snprintf(title, sizeof title, "Attention, %s, d_k = %d: init (top) and trained (bottom)", name, d);
        qkt_heatmap_grid g = {.title = title, .xlabel = "key", .ylabel = "query", .panels = panels, .n_panels = 2 * L * H,
                              .grid_cols = L * H, .vmin = 0, .vmax = 1, .bar_label = "probability"};
        qkt__report_plot_done(r, qkt_plot_heatmap_grid(out, &g, NULL, r->err), out);
        qkt_buf_printf(&r->md, "![%s](attn_%s.png)\n", name, name);
        free(vals);
        free(panels);
        free(caps);
        free(buf);
    }
    qkt_buf_printf(&r->md, "\n");
}
