/* The metrics table (metrics.csv in memory) and queries used by the report. */
#ifndef QKT_REPORT_H
#define QKT_REPORT_H
#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the study's metrics
 * Every metric name the study writes to metrics.csv, typed once here:
 *     X(ID, "name", aggregate, "what it is")
 * Cells write rows as QKT_METRIC_<ID> (experiments/ablate_cells.c); the report reads
 * them by qkt_metric_name(QKT_METRIC_<ID>); `aggregate` (MEAN or MAX) is how
 * qkt_table_value combines several heads or layers at one step. Per-head rows have
 * layer, head >= 0; run-level rows have layer = head = -1. */
#define QKT_STUDY_METRICS(X)                                                                                     \
    X(VAL_LOSS, "val_loss", MEAN, "validation cross-entropy at an evaluation step")                               \
    X(VAL_ACC, "val_acc", MEAN, "validation accuracy on the answer positions")                                   \
    X(VAL_SEQS, "val_seqs", MEAN, "validation sequences behind the final val_loss and val_acc (final_eval_seqs)")  \
    X(TRAIN_LOSS, "train_loss", MEAN, "loss of the step's training batch")                                       \
    X(LR, "lr", MEAN, "learning rate of the step")                                                               \
    X(GRAD_NORM, "grad_norm", MEAN, "global gradient norm before clipping")                                      \
    X(GRAD_NORM_WQ, "grad_norm_wq", MEAN, "gradient norm over every layer's W_q")                                \
    X(GRAD_NORM_WK, "grad_norm_wk", MEAN, "gradient norm over every layer's W_k")                                \
    X(GRAD_LOGITS, "grad_logits", MEAN, "norm of dL/dz at the softmax input, every layer, first val batch at init") \
    X(DIVERGED_STEP, "diverged_step", MEAN, "step of the first non-finite loss, -1 if none")                     \
    X(ENTROPY, "entropy", MEAN, "attention entropy per layer and head (docs/metrics.md)")                       \
    X(NORM_ENTROPY, "norm_entropy", MEAN, "entropy / ln(visible keys), per layer and head")                      \
    X(MAX_WEIGHT, "max_weight", MEAN, "mean max attention weight per row, per layer and head")                   \
    X(FRAC_PEAKED, "frac_peaked", MEAN, "fraction of rows with max weight > 0.99, per layer and head")           \
    X(JACOBIAN, "jacobian", MEAN, "mean softmax Jacobian norm per row, per layer and head")                      \
    X(LOGIT_MAX, "logit_max", MAX, "max of the scaled logits, per layer and head")                               \
    X(LOGIT_STD, "logit_std", MEAN, "std of the scaled logits, per layer and head")                              \
    X(LOGIT_DELTA_RMS, "logit_delta_rms", MEAN, "rms change of the scaled logits over the growth steps, per layer") \
    X(LOGIT_RMS, "logit_rms", MEAN, "rms of the scaled logits at init, per layer (growth cells)")                \
    X(IID_RAW_LOGIT_STD, "iid_raw_logit_std", MEAN, "part 1, iid q and k: std of q.k (expected sqrt(d_k))")       \
    X(IID_LOGIT_STD, "iid_logit_std", MEAN, "part 1: std of the scaled logits")                                  \
    X(IID_ENTROPY, "iid_entropy", MEAN, "part 1: attention entropy")                                             \
    X(IID_NORM_ENTROPY, "iid_norm_entropy", MEAN, "part 1: normalised entropy")                                  \
    X(IID_MAX_WEIGHT, "iid_max_weight", MEAN, "part 1: mean max weight")                                         \
    X(IID_FRAC_PEAKED, "iid_frac_peaked", MEAN, "part 1: fraction of peaked rows")                               \
    X(IID_JACOBIAN, "iid_jacobian", MEAN, "part 1: softmax Jacobian norm")                                       \
    X(IID_GRAD_Q_RMS, "iid_grad_q_rms", MEAN, "part 1: rms of dL/dq for a unit upstream gradient")               \
    X(IID_RANK_CHANGED, "iid_rank_changed", MEAN, "part 1: fraction of rows whose key order scaling changed")

typedef enum qkt_metric {
#define QKT_METRIC_ENUM_(id, name, aggregate, what) QKT_METRIC_##id,
    QKT_STUDY_METRICS(QKT_METRIC_ENUM_)
#undef QKT_METRIC_ENUM_
    QKT_METRIC_COUNT
} qkt_metric;
/* "val_loss", ... for a valid enum, "?" otherwise. */
const char *qkt_metric_name(qkt_metric m);
/* Name -> enum; QKT_METRIC_COUNT for a name that is not one of the study's. */
qkt_metric qkt_metric_parse(const char *name);

/* ---------------------------------------------------------------- metrics.csv in memory */
#define QKT_MAX_METRICS 64
typedef struct {
    char id[96], exp[16], variant[32];
    int d_k, seed;
    double lr;
    int first, count; /* its rows: rows[first .. first + count) */
} qkt_run;
typedef struct {
    int run, step;
    short metric, layer, head;
    double value;
} qkt_row;
typedef struct {
    qkt_run *runs;
    int n_runs, cap_runs;
    qkt_row *rows;
    int n_rows, cap_rows;
    char metrics[QKT_MAX_METRICS][32];
    int n_metrics;
} qkt_table;

int qkt_table_load(const char *path, qkt_table *t, qkt_err *err);
/* The same from the CSV text (n bytes, need not be NUL-terminated); errors start with `label`. */
int qkt_table_parse(const char *text, size_t n, const char *label, qkt_table *t, qkt_err *err);
void qkt_table_free(qkt_table *t);
int qkt_table_metric(const qkt_table *t, const char *m);
/* seed < 0 or lr <= 0: any. Returns the run index or -1. */
int qkt_table_find_run(const qkt_table *t, const char *exp, const char *variant, int d_k, int seed, double lr);
/* Value at a step: mean over heads (and layers when layer < 0), or the max for a
 * metric whose aggregate is MAX (logit_max). NaN if absent. */
double qkt_table_value(const qkt_table *t, int run, const char *metric, int step, int layer);
/* (step, value) pairs of a metric in step order; returns the count. */
int qkt_table_series(const qkt_table *t, int run, const char *metric, int layer, double *steps, double *vals, int cap);
int qkt_table_last_step(const qkt_table *t, int run, const char *metric);

extern const char *const qkt_metrics_header;

/* ---------------------------------------------------------------- report.html of qkt train runs
 * One interactive page (qkt_plot_html_page) for n_runs `qkt train` run directories, overlaid:
 * a chart per log.csv column (loss, lr, grad_norm, val_loss, val_acc, tokens_per_s) against
 * the step, one series per run, written atomically to out_path. A run is read without its
 * lock, so one still training is drawn up to its last complete row (a torn last line is
 * left out). 0, or -1 with err naming the file: no train.json or log.csv, an invalid
 * train.json, a log.csv with another header or a row that is not numbers. */
int qkt_train_report_html(const char *const *run_dirs, int n_runs, const char *out_path, qkt_err *err);

#ifdef __cplusplus
}
#endif
#endif
