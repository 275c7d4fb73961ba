/* The study's robustness reruns (qkt_ablate.h): which replicate studies a configuration asks
 * for, their settings and directories. ablate_run.c runs them; report_robust.c compares
 * their verdicts with the study's. */
#include <stdio.h>
#include <string.h>

#include "qkt_ablate.h"

int qkt_ablate_reruns(const qkt_ablate_cfg *c) { return c->n_robust_seeds + (c->robust_isa[0] != 0); }

void qkt_ablate_rerun_get(const qkt_ablate_cfg *c, int k, qkt_ablate_rerun *r) {
    memset(r, 0, sizeof *r);
    r->cfg = *c;
    if (k < c->n_robust_seeds) { /* another study seed: every cell's data and init draws move (seed + cell seed) */
        r->cfg.run.tc.seed = (uint64_t)c->robust_seeds[k];
        snprintf(r->label, sizeof r->label, "seed%d", c->robust_seeds[k]);
        snprintf(r->title, sizeof r->title, "seed %d", c->robust_seeds[k]);
    } else { /* the same draws on another kernel path: only the arithmetic's rounding moves */
        snprintf(r->isa, sizeof r->isa, "%s", c->robust_isa);
        snprintf(r->label, sizeof r->label, "isa_%s", c->robust_isa);
        snprintf(r->title, sizeof r->title, "isa %s", c->robust_isa);
    }
    r->cfg.n_robust_seeds = 0; /* a rerun asks for no reruns of its own */
    memset(r->cfg.robust_seeds, 0, sizeof r->cfg.robust_seeds);
    memset(r->cfg.robust_isa, 0, sizeof r->cfg.robust_isa);
    r->cfg.verdict_cells_only = 1;
}

void qkt_ablate_rerun_dir(const char *run_dir, const qkt_ablate_rerun *r, char *path, size_t n) {
    snprintf(path, n, "%s/robust/%s", run_dir, r->label);
}
