/* Internal to the report writer. The dependency runs one way:
 *   report.c (gather metrics.csv, summary.csv, report.md: calls the parts)
 *     -> report_init.c, report_train.c, report_maps.c, report_lr.c, report_growth.c,
 *        report_reading.c (one section each; no part calls another)
 *       -> report_common.c (queries and statistics every part shares). */
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
/* A metric's name in metrics.csv, from the study's table: QKT_M(VAL_LOSS) = "val_loss". */
#define QKT_M(id) qkt_metric_name(QKT_METRIC_##id)
/* An experiment's name in metrics.csv: QKT_KIND(TRAIN) = "train". */
#define QKT_KIND(k) qkt_cell_kind_name(QKT_CELL_##k)

/* The report being written: its inputs (config, metrics table, run directory) and report.md. */
typedef struct {
    const qkt_ablate_cfg *c;
    const qkt_table *t;
    const char *dir;
    qkt_buf md; /* report.md being written */
    qkt_err *err;
    int n_plots_failed;
} qkt__report;

/* ---------------------------------------------------------------- report_common.c */
/* Counts (and prints) a failed plot; the report goes on without it. */
void qkt__report_plot_done(qkt__report *r, int rc, const char *file);
/* The run whose id is `id`, or -1. */
int qkt__report_run_by_id(const qkt_table *t, const char *id);
/* The metric at the run's last step, or NAN. */
double qkt__report_final_val(const qkt_table *t, int run, const char *metric);
/* Did the run diverge (and at which step, if at is non-NULL)? */
bool qkt__report_diverged(const qkt_table *t, int run, int *at);
/* First eval step with val_acc >= 0.9, or -1. */
int qkt__report_steps_to_90(const qkt_table *t, int run);
/* Wortsman et al.'s LR sensitivity of a variant over the grid; *best_lr gets the best LR. */
double qkt__report_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr);

/* One training cell (variant, d_k, lr) summarised over its seeds. */
typedef struct {
    double loss_m, loss_sd, acc_m, acc_sd; /* final validation loss and accuracy: mean, sample sd */
    double init_std, init_ent;             /* logit std and normalised entropy at step 0, mean */
    double s90;                            /* mean steps to 90 % over the runs that got there */
    int n_s90, n_div, n_runs, first_div;
} qkt__cell_sum;
qkt__cell_sum qkt__report_summarize(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds,
                                    double lr);

/* ---------------------------------------------------------------- the sections, in report order */
void qkt__report_part_init(qkt__report *r);   /* 1. at initialisation (iid q, k; a fresh GPT) */
void qkt__report_part_train(qkt__report *r);  /* 2. training ablation */
void qkt__report_part_maps(qkt__report *r);   /*    its attention maps */
void qkt__report_part_lr(qkt__report *r);     /* 3. learning-rate sensitivity */
/* 4. logit growth; the log-log slopes for the two variants go to the reading. */
void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk);
/* "What the numbers say", written before the parts but from their results. */
void qkt__report_reading(qkt__report *r, double slope_sqrt, double slope_dk);

#ifdef __cplusplus
}
#endif
#endif
