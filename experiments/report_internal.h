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
#include "qkt_stats.h"

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
    int seeds_used; /* the fewest seeds present in a training cell (c->seeds when none is missing) */
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

/* ---------------------------------------------------------------- report_compare.c */
#define QKT_REPORT_MAX_SEEDS 100 /* qkt_ablate_validate's limit */
#define QKT_REPORT_LEVEL 0.95    /* confidence level of every interval */
#define QKT_REPORT_BOOT 4000     /* bootstrap resamples */
/* One variant at one d_k, per seed (index = seed; NaN / -1 where the run is missing). */
typedef struct {
    int n, n_present, n_diverged, n_escaped;
    bool present[QKT_REPORT_MAX_SEEDS], diverged[QKT_REPORT_MAX_SEEDS], escaped[QKT_REPORT_MAX_SEEDS];
    double final_loss[QKT_REPORT_MAX_SEEDS]; /* NaN if diverged */
    double auc[QKT_REPORT_MAX_SEEDS];        /* mean validation loss over the run (area / steps); NaN if diverged */
    int t90[QKT_REPORT_MAX_SEEDS];           /* first eval step with val accuracy >= 0.9; -1 = never (censored) */
    double init_std[QKT_REPORT_MAX_SEEDS], init_ent[QKT_REPORT_MAX_SEEDS]; /* scaled logit std, norm. entropy at step 0 */
    double grad0[QKT_REPORT_MAX_SEEDS], grad_early[QKT_REPORT_MAX_SEEDS], grad_late[QKT_REPORT_MAX_SEEDS]; /* |grad W_q, W_k|: step 0, mean over the first half, the second */
} qkt__seeds;
void qkt__report_seeds(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds, double lr, int steps, qkt__seeds *o);
/* Variant a against b at one d_k, paired by seed (same data and, for the fixed-scale
 * variants, the same init): differences a - b. */
typedef struct {
    qkt_attn_scale a, b;
    int d_k;
    qkt__seeds sa, sb;
    qkt_paired loss, auc, ent0;
    qkt_paired grad[3]; /* log(|grad_a| / |grad_b|) at step 0, early, late */
    qkt_censored t90;   /* wins = a reached 90 % first */
    double fisher_p;    /* escaped (reached 90 %) counts, a vs b */
} qkt__cmp;
void qkt__report_compare(const qkt__report *r, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o);
/* The same for the train cells of experiment `exp` ("train" or "train2": part 2c's second task). */
void qkt__report_compare_exp(const qkt__report *r, const char *exp, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o);
typedef enum { QKT_V_REPRODUCED, QKT_V_CONTRADICTED, QKT_V_NOT_DETECTABLE, QKT_V_UNTESTABLE } qkt__verdict;
/* From a paired interval: the claim expects sign(a - b) = sign (+1 or -1). Reproduced if
 * the interval excludes 0 on that side and the exact sign-flip p <= 1 - level,
 * contradicted if both hold on the other side, else not detectable; untestable without
 * an interval (fewer than 2 pairs). */
qkt__verdict qkt__report_verdict(const qkt_paired *p, int sign);
const char *qkt__verdict_name(qkt__verdict v);
/* "mean [lo, hi], p = .. (n = ..)" with fmt for the numbers; degenerate cases in words. */
void qkt__report_fmt_paired(char *buf, size_t n, const qkt_paired *p, const char *fmt);

/* ---------------------------------------------------------------- report_stability.c */
/* An LR run is unstable once its loss is non-finite or its validation loss exceeds the
 * one at init by more than this (nats) at some evaluation after step 0. */
#define QKT_REPORT_UNSTABLE_MARGIN 0.1
typedef struct {
    int run; /* -1 if missing */
    double lr, init_loss, final_loss; /* final: NaN if the loss went non-finite */
    double peak_excess;               /* max over evaluations after step 0 of val loss - init loss (inf: non-finite) */
    bool unstable;
    int unstable_step;                /* first evaluation step above the margin (or the non-finite step), -1 */
    double logit_init;                /* the largest attention logit (any layer, head) at step 0 */
    double logit_max;                 /* ... its maximum over the evaluations up to unstable_step (whole run if stable) */
    double logit_before;              /* ... over the evaluations strictly before unstable_step (= logit_max if stable) */
    double min_entropy;               /* min normalised entropy (mean over heads, clamped to [0, 1]) over the same evaluations */
} qkt__lr_run;
/* The LR run of `variant` at the grid's li-th learning rate (seed 0, lr_d_k). */
void qkt__report_lr_run(const qkt__report *r, const char *variant, int li, qkt__lr_run *o);
/* A variant's stable LR range: stable from the smallest LR up to max_stable_lr (NaN if the
 * smallest is unstable); min_unstable_lr = the first unstable one (NaN if none);
 * stable_above: a stable LR above an unstable one (the range is not one interval). */
typedef struct {
    int n, n_unstable;
    double max_stable_lr, min_unstable_lr;
    bool stable_above;
} qkt__lr_range;
qkt__lr_range qkt__report_lr_range(const qkt__report *r, const char *variant);
/* The largest attention logit and the lowest normalised entropy (clamped to [0, 1]) of an LR run
 * over the evaluations at steps <= upto: claims 6a and 7a compare runs over the same window. */
void qkt__report_lr_window(const qkt__report *r, const char *variant, int li, int upto, double *logit_max, double *min_entropy);

/* ---------------------------------------------------------------- the sections, in report order */
void qkt__report_part_init(qkt__report *r);   /* 1. at initialisation (iid q, k; a fresh GPT) */
void qkt__report_part_train(qkt__report *r);  /* 2. training ablation */
void qkt__report_part_maps(qkt__report *r);   /*    its attention maps */
void qkt__report_part_task2(qkt__report *r);  /* 2c. the second task's loss curves, paired against sqrt_dk */
void qkt__report_part_lr(qkt__report *r);     /* 3. learning-rate sensitivity */
/* 4. logit growth; the log-log slopes for the two variants go to the reading. */
void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk);
/* The findings table (claims of the literature, measurement, verdict, source): first in report.md. */
void qkt__report_findings(qkt__report *r);
/* The paired comparisons of part 2 (effect sizes, intervals, counts, power). */
void qkt__report_part_stats(qkt__report *r);
/* "What the numbers say", written before the parts but from their results. */
void qkt__report_reading(qkt__report *r, double slope_sqrt, double slope_dk);

#ifdef __cplusplus
}
#endif
#endif
