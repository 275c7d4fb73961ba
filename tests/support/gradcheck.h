/* Gradient checker: central differences of a random projection L = sum(r * f(x))
 * against the tape's backward. Meant for the float64 build (tests named test_gc_*.c
 * are compiled with QKT_DOUBLE), where h = 1e-6 leaves errors near 1e-9.
 *
 * Metric, per input tensor (robust to the gradient's scale):
 *     err = max_i |analytic_i - numeric_i| / max(max_i |numeric_i|, max_i |analytic_i|, 1e-6)
 * and a check passes when err <= tol for every input. */
#ifndef QKT_GRADCHECK_H
#define QKT_GRADCHECK_H
#include "qkt_autograd.h"

#define GC_MAX_INPUTS 4

typedef struct gc_case gc_case;
/* Builds the graph from the leaf tensors (persistent, requires grad) and returns f(x). */
typedef qkt_tensor *(*gc_fn)(qkt_ctx *ctx, qkt_tensor **x, const gc_case *c);

struct gc_case {
    const char *name;
    int n_inputs;
    int ndim[GC_MAX_INPUTS];
    int shape[GC_MAX_INPUTS][QKT_MAX_DIMS];
    double kink_margin; /* resample inputs with |x| below this (ReLU's kink at 0) */
    double tol;         /* per-op tolerance on the metric above */
    gc_fn fn;
    const void *user;   /* case data (indices, targets, masks) */
    int flags;          /* free for the case */
};

typedef struct {
    double err[GC_MAX_INPUTS];
    double worst;
    int points_checked;
} gc_result;

/* Runs the check; inputs drawn N(0, 1) from `seed`. Returns true when it passes. */
bool gc_check(const gc_case *c, uint64_t seed, gc_result *res);

/* Forward only, same inputs as gc_check with the same seed; writes f(x) into out
 * (up to out_cap values) and returns the number of values. For float-vs-double tests. */
int64_t gc_forward(const gc_case *c, uint64_t seed, double *out, int64_t out_cap);

#endif
