/* The sqrt(d_k) study's measurements without a model: each variant's scale, and
 * part 1 (attention at init with iid q and k). The cells, the sweep and the report
 * are in qkt_ablate.h and qkt_sweep.h. */
#ifndef QKT_STUDY_H
#define QKT_STUDY_H
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h"
#include "qkt_metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* s for a variant at key width d_k in a model of width n_embd (learned: its init;
 * qk_layernorm: the scale applied after the q/k LayerNorm). NaN for an unknown name. */
double qkt_study_scale(const char *variant, int d_k, int n_embd);

/* ---------------------------------------------------------------- part 1: at init, iid q and k */
typedef struct {
    const int *dks;
    int n_dk;
    const char *const *variants;
    int n_variants;
    int batch, seq_len; /* rows measured: batch x seq_len queries, causal */
    int n_head_ref;     /* sqrt_dmodel uses n_embd = n_head_ref * d_k */
    uint64_t seed;
} qkt_init_opts;

typedef struct {
    char variant[32];
    int d_k;
    double scale;
    double raw_logit_std;  /* std of q.k, expected sqrt(d_k) */
    double logit_std;      /* std of s q.k */
    double entropy, norm_entropy, max_weight, frac_peaked, jacobian_norm;
    double grad_q_rms;     /* rms of dL/dq for a unit-variance upstream gradient */
    double rank_changed;   /* fraction of rows whose key order changed under scaling (expect 0) */
} qkt_init_row;

/* Fills out[n_variants * n_dk]; returns the number of rows. */
int qkt_init_study_iid(const qkt_init_opts *o, qkt_init_row *out);

#ifdef __cplusplus
}
#endif
#endif
