/* The metrics table (metrics.csv in memory) and queries used by the report. */
#ifndef QKT_REPORT_H
#define QKT_REPORT_H
#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

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
/* Value at a step: mean over heads (and layers when layer < 0); logit_max takes the max. NaN if absent. */
double qkt_table_value(const qkt_table *t, int run, const char *metric, int step, int layer);
/* (step, value) pairs of a metric in step order; returns the count. */
int qkt_table_series(const qkt_table *t, int run, const char *metric, int layer, double *steps, double *vals, int cap);
int qkt_table_last_step(const qkt_table *t, int run, const char *metric);

extern const char *const qkt_metrics_header;

#ifdef __cplusplus
}
#endif
#endif
