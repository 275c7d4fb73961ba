/* Internal to the report writer (report.c: gathering, summary, parts 1-2, the
 * reading; report_parts.c: parts 3-5, attention maps, LR sensitivity, logit growth). */
#ifndef QKT_REPORT_INTERNAL_H
#define QKT_REPORT_INTERNAL_H
#include <stdbool.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QKT_REPORT_MAXS 4096 /* longest metric series read back */

typedef struct {
    const qkt_ablate_cfg *c;
    const qkt_table *t;
    const char *dir;
    qkt_buf md; /* report.md being written */
    qkt_err *err;
    int n_plots_failed;
} qkt__report;

/* Counts (and prints) a failed plot; the report goes on without it. */
void qkt__report_plot_done(qkt__report *r, int rc, const char *file);
/* The metric at the run's last step, or NAN. */
double qkt__report_final_val(const qkt_table *t, int run, const char *metric);
/* Did the run diverge (and at which step, if at is non-NULL)? */
bool qkt__report_diverged(const qkt_table *t, int run, int *at);
/* Wortsman et al.'s LR sensitivity of a variant over the grid; *best_lr gets the best LR. */
double qkt__report_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr);

void qkt__report_part_maps(qkt__report *r);
void qkt__report_part_lr(qkt__report *r);
void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk);

#ifdef __cplusplus
}
#endif
#endif
