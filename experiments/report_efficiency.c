/* The report's part 5: the study's own efficiency (qkt_ablate_efficiency_read), then each part's
 * (qkt_ablate_efficiency_read_part), the costliest first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "report_internal.h"

typedef struct {
    qkt_cell_kind kind;
    int d_k;
    qkt_ablate_efficiency e;
} part_cost;

static int by_cpu_desc(const void *a, const void *b) {
    const part_cost *x = a, *y = b;
    if (x->e.cpu_s != y->e.cpu_s) return x->e.cpu_s < y->e.cpu_s ? 1 : -1;
    if (x->kind != y->kind) return (int)x->kind - (int)y->kind; /* ties in plan order: a stable table */
    return x->d_k - y->d_k;
}

/* The parts (kind, d_k) of the plan with a counted cell, into *out (malloc'd); their count, or
 * -1 with err. */
static int part_costs(const char *dir, const qkt_ablate_cfg *c, part_cost **out, qkt_err *err) {
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan), np = 0;
    part_cost *p = calloc(n > 0 ? (size_t)n : 1, sizeof *p);
    if (!p) {
        free(plan);
        return qkt_err_set(err, "out of memory for %d parts", n);
    }
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < np && !seen; j++) seen = p[j].kind == plan[i].kind && p[j].d_k == plan[i].d_k;
        if (seen) continue;
        part_cost *q = &p[np];
        q->kind = plan[i].kind, q->d_k = plan[i].d_k;
        if (qkt_ablate_efficiency_read_part(dir, c, q->kind, q->d_k, &q->e, err) != 0) {
            free(plan), free(p);
            return -1;
        }
        if (q->e.cells > 0) np++;
    }
    free(plan);
    qsort(p, (size_t)np, sizeof *p, by_cpu_desc);
    *out = p;
    return np;
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
    char line[600];
    qkt_ablate_efficiency_text(&e, line, sizeof line);
    qkt_buf_printf(md, "The cells' FLOPs over their CPU seconds and the single-core sgemm peak measured at the study's start "
                       "(training steps forward and backward as `qkt bench` counts them, forward-only passes a third of that; "
                       "docs/performance.md): %s.\n\n", line);
    part_cost *p = NULL;
    int np = part_costs(r->dir, r->c, &p, &err);
    if (np < 0) {
        qkt_buf_printf(md, "By part: not computed: %s.\n\n", err.msg);
        return;
    }
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
