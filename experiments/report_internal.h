/* Internal to the report writer (report.c: gathering, summary, parts 1-2, the
 * reading; report_parts.c: parts 3-5, attention maps, LR sensitivity, logit growth). */
#ifndef QKT_REPORT_INTERNAL_H
#define QKT_REPORT_INTERNAL_H
#include <stdbool.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"

#define MAXS 4096 /* longest metric series read back */

typedef struct {
    const qkt_ablate_cfg *c;
    const qkt_table *t;
    const char *dir;
    qkt_buf md; /* report.md being written */
    qkt_err *err;
    int n_plots_failed;
} rep;

/* Counts (and prints) a failed plot; the report goes on without it. */
void rep_plot_done(rep *r, int rc, const char *file);
/* The metric at the run's last step, or NAN. */
double rep_final_val(const qkt_table *t, int run, const char *metric);
/* Did the run diverge (and at which step, if at is non-NULL)? */
bool rep_diverged(const qkt_table *t, int run, int *at);
/* Wortsman et al.'s LR sensitivity of a variant over the grid; *best_lr gets the best LR. */
double rep_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr);

void rep_part_maps(rep *r);
void rep_part_lr(rep *r);
void rep_part_growth(rep *r, double *slope_sqrt, double *slope_dk);

#endif
