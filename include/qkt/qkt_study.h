/* The sqrt(d_k) study's variant sets and its measurements without a model (part 1:
 * attention at init with iid q and k). The cells, the sweep and the report are in
 * qkt_ablate.h and qkt_sweep.h. */
#ifndef QKT_STUDY_H
#define QKT_STUDY_H
#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "qkt_autograd.h"
#include "qkt_metrics.h"
#include "qkt_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- variants
 * Every variant is a qkt_attn_scale (qkt_nn.h), an id of the variant registry: its
 * name comes from qkt_attn_scale_name (built-ins, "power:0.75", a program's registered
 * names), the list of all of them from qkt_attn_scale_list. The study uses two subsets: */
/* the fixed scales (sqrt_dk, none, dk, sqrt_dmodel): part 1 measures them at init
 * (learned and qk_layernorm start at 1/sqrt(d_k), so they would repeat sqrt_dk) and
 * the quick preset sweeps their learning rates; */
#define QKT_STUDY_N_FIXED 4
extern const qkt_attn_scale qkt_study_fixed_scales[QKT_STUDY_N_FIXED];
/* the pair the muP coordinate check (part 4) compares: 1/sqrt(d_k) and 1/d_k. */
#define QKT_STUDY_N_GROWTH 2
extern const qkt_attn_scale qkt_study_growth_scales[QKT_STUDY_N_GROWTH];
/* "sqrt_dk, none, ..., power:ALPHA, <registered>": every name (qkt_attn_scale_list), for
 * help texts and "expected one of" messages. Returns buf. */
const char *qkt_study_variant_list(char *buf, size_t n);

/* ---------------------------------------------------------------- part 1: at init, iid q and k */
typedef struct {
    const int *dks;
    int n_dk;
    const qkt_attn_scale *variants;
    int n_variants;
    int batch, seq_len; /* rows measured: batch x seq_len queries, causal */
    int n_head_ref;     /* sqrt_dmodel uses n_embd = n_head_ref * d_k */
    uint64_t seed;
} qkt_init_opts;

typedef struct {
    qkt_attn_scale variant;
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
