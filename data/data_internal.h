/* Internal to data/: the qkt_data struct and the task table. */
#ifndef QKT_DATA_INTERNAL_H
#define QKT_DATA_INTERNAL_H

#include <stdbool.h>

#include "qkt_data.h"

#define QKT_DATA_MAX_PARAMS 4
#define QKT_PARAM_AUTO (-1) /* default computed by setup() (from T or other parameters) */
#define QKT_DATA_MAX_VOCAB 65536

typedef struct qkt_data_param {
    const char *name;
    int def; /* default, or QKT_PARAM_AUTO */
    int lo, hi;
    const char *help;
} qkt_data_param;

/* One synthetic task. setup() validates d->p (params in table order, AUTO
 * defaults still -1) against d->T_req (0 = natural), sets used/vocab/answer_k/
 * log2_space/best_* and allocates task scratch; gen() writes one sequence
 * s[0..used] into d->seq and its answer flags into d->ans (ans[i] = 1: s[i] is
 * an answer, i.e. target[i-1] counts). */
typedef struct qkt_data_task {
    const char *name;
    const char *summary;
    qkt_data_param params[QKT_DATA_MAX_PARAMS + 1]; /* ends with name == NULL */
    int (*setup)(qkt_data *d, qkt_err *err);
    void (*gen)(qkt_data *d, qkt_rng *r);
    void (*token_str)(const qkt_data *d, int32_t tok, char buf[16]);
    bool retrieval; /* an answer is looked up by content at one earlier position (qkt_data_task_retrieval) */
} qkt_data_task;

extern const qkt_data_task qkt__tasks[];
extern const int qkt__n_tasks;

struct qkt_data {
    const qkt_data_task *task; /* NULL for text */
    char *spec;
    int T_req;      /* opts.seq_len as given (0 = natural) */
    int T, used;    /* model positions; positions holding the task (<= T) */
    int vocab;
    int p[QKT_DATA_MAX_PARAMS];
    int answer_k;   /* tokens possible at an answer position (chance = 1/K) */
    double best_loss, best_acc;
    double log2_space; /* log2 of the number of distinct sequences */
    qkt_rng rng[2], rng0[2];
    int32_t *seq; /* (T+1) one sequence */
    uint8_t *ans; /* (T+1) answer flags */
    int32_t *scratch, *scratch2; /* task scratch (sampling without replacement) */
    /* bigram: the fixed chain, `branch` successors per state with integer weights */
    int32_t *succ;  /* (V, branch) */
    uint32_t *cum;  /* (V, branch) cumulative weights */
    /* text */
    char *path;
    const uint8_t *map;
    size_t len, n_train; /* train = [0, n_train), val = [n_train, len) */
    double val_frac;
    int has_file;
    uint8_t vocab_bytes[256];
    int16_t enc[256]; /* byte -> token, -1 = absent */
};

/* Partial Fisher-Yates: a[0..k) = a uniform ordered k-sample of {0..n-1}. a has room for n. */
void qkt__sample_distinct(qkt_rng *r, int32_t *a, int n, int k);
uint64_t qkt__rng_below64(qkt_rng *r, uint64_t n);

/* text.c */
int qkt__text_open(qkt_data *d, const char *rest, qkt_err *err);
void qkt__text_close(qkt_data *d);
void qkt__text_batch(qkt_data *d, qkt_data_split split, int B, int32_t *idx, int32_t *targets, uint8_t *mask);

#endif
