/* The report's part 5: the study's own efficiency (qkt_ablate_efficiency_read), then each part's
 * (qkt__ablate_efficiency_parts), the costliest first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ablate_internal.h"
#include "report_internal.h"

static int by_cpu_desc(const void *a, const void *b) {
    const qkt__ablate_part *x = a, *y = b;
    if (x->e.cpu_s != y->e.cpu_s) return x->e.cpu_s < y->e.cpu_s ? 1 : -1;
    if (x->kind != y->kind) return (int)x->kind - (int)y->kind; /* ties in plan order: a stable table */
    return x->d_k - y->d_k;
}

void qkt__report_part_efficiency(qkt__report *r) {
    qkt_ablate_efficiency e;
    qkt_err err;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## 5. The study's own efficiency\n\n");
    if (qkt_ablate_efficiency_read(r->dir, r->c, &e, &err) != 0) {
        qkt_buf_printf(md, "Not computed: %s.\n\n", err.msg);
        return;
    }
    char line[1024];
    qkt_ablate_efficiency_text(&e, line, sizeof line);
    qkt_buf_printf(md, "The cells' FLOPs over their CPU seconds and the single-core sgemm peak measured at the study's start "
                       "(training steps forward and backward as `qkt bench` counts them, forward-only passes a third of that; "
                       "docs/performance.md): %s.\n\n", line);
    qkt__ablate_part *p;
    int n = qkt__ablate_efficiency_parts(r->dir, r->c, &p, &err), np = 0;
    if (n < 0) {
        qkt_buf_printf(md, "By part: not computed: %s.\n\n", err.msg);
        return;
    }
    for (int i = 0; i < n; i++) /* the parts with a counted cell, the costliest first */
        if (p[i].e.cells > 0) p[np++] = p[i];
    qsort(p, (size_t)np, sizeof *p, by_cpu_desc);
    if (np > 0 && e.cpu_s > 0) {
        qkt_buf_printf(md, "By part (a cell id's kind and d_k), the costliest first. The floor is the CPU-seconds of the part's "
                           "FLOPs at the peak: no run of it on this machine takes less.\n\n"
                           "| part | d_k | cells | CPU-s | share of CPU-s | efficiency | floor, CPU-s |\n"
                           "|---|---:|---:|---:|---:|---:|---:|\n");
        for (int i = 0; i < np; i++) {
            const qkt_ablate_efficiency *q = &p[i].e;
            double f = q->train_flops + q->eval_flops;
            qkt_buf_printf(md, "| %s | %d | %d | %.2f | %.3f | ", qkt_cell_kind_name(p[i].kind), p[i].d_k, q->cells, q->cpu_s,
                           q->cpu_s / e.cpu_s);
            if (isfinite(q->efficiency)) qkt_buf_printf(md, "%.3f | %.2f |\n", q->efficiency, f / (q->peak_gflops * 1e9));
            else qkt_buf_printf(md, "unknown | - |\n");
        }
        qkt_buf_printf(md, "\n");
    }
    free(p);
}
