/* Attention metrics (definitions in docs/metrics.md). Pure functions over flat
 * arrays: probabilities A (rows of n entries), scaled logits, softmax Jacobians. */
#ifndef QKT_METRICS_H
#define QKT_METRICS_H
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* H = -sum_j a_j ln a_j over the n entries (0 ln 0 = 0). */
double qkt_entropy(const qkt_real *a, int n);
/* Frobenius norm of the softmax Jacobian J = diag(p) - p p^T:
 *   ||J||_F^2 = sum p_i^2 - 2 sum p_i^3 + (sum p_i^2)^2 */
double qkt_softmax_jacobian_norm(const qkt_real *p, int n);

/* Summary of causal attention maps for one layer: probs and logits (B, H, T, T),
 * blocked logits are -inf. Per head h (arrays of H values): */
typedef struct qkt_attn_stats {
    double entropy;       /* mean over rows i >= 1 and batch of H_i */
    double norm_entropy;  /* mean of H_i / ln(keys visible to row i), rows i >= 1 */
    double max_weight;    /* mean over rows of max_j A_ij (rows i >= 1) */
    double frac_peaked;   /* fraction of rows (i >= 1) with max_j A_ij > 0.99 */
    double jacobian_norm; /* mean over rows (i >= 1) of ||J_i||_F */
    double logit_max;     /* max over visible entries of the scaled logits */
    double logit_std;     /* std over visible entries of the scaled logits */
} qkt_attn_stats;
/* Fills stats[H]. logits may be NULL (logit fields become NaN). */
void qkt_attn_stats_compute(const qkt_real *probs, const qkt_real *logits, int B, int H, int T, qkt_attn_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
