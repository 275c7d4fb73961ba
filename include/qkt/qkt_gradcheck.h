/* Gradient checking, public: central differences of a random projection
 * L = sum(r * f(x)) against the tape's backward. Meant for the float64 flavour (link with
 * qkt64, compile with -DQKT_DOUBLE, as pkg-config's qkt64 does), where h = 1e-6 leaves
 * errors near 1e-9; in float32 the differences are dominated by rounding.
 *
 * Metric, per input tensor (robust to the gradient's scale):
 *     err = max_i |analytic_i - numeric_i| / max(max_i |numeric_i|, max_i |analytic_i|, 1e-6)
 * A check passes when, for every input, err <= tol (relative) or the largest absolute
 * difference is <= atol (absolute; 0 = not used). A NaN anywhere fails. Up to 48 elements
 * per input are checked (all of them when the input is that small, else a random sample).
 *
 * Checking a custom op (docs/library.md):
 *     static qkt_tensor *f(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { return my_op(ctx, x[0]); }
 *     qkt_gc_case c = {.name = "my_op", .n_inputs = 1, .ndim = {2}, .shape = {{3, 5}}, .tol = 1e-6, .fn = f};
 *     qkt_gc_result r;
 *     if (!qkt_gradcheck(&c, 1, &r)) { char m[256]; puts(qkt_gc_describe(&c, &r, m, sizeof m)); } */
#ifndef QKT_GRADCHECK_H
#define QKT_GRADCHECK_H
#include "qkt_autograd.h"
#ifdef __cplusplus
extern "C" {
#endif

#define QKT_GC_MAX_INPUTS 4

typedef struct qkt_gc_case qkt_gc_case;
/* Builds the graph from the leaf tensors (persistent, requires grad) and returns f(x). */
typedef qkt_tensor *(*qkt_gc_fn)(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c);

struct qkt_gc_case {
    const char *name;
    int n_inputs;
    int ndim[QKT_GC_MAX_INPUTS];
    int shape[QKT_GC_MAX_INPUTS][QKT_MAX_DIMS];
    double kink_margin; /* resample inputs with |x| below this (ReLU's kink at 0) */
    double tol;         /* relative tolerance on the metric above */
    qkt_gc_fn fn;
    const void *user;   /* case data (indices, targets, masks) */
    int flags;          /* free for the case */
    double atol;        /* absolute tolerance on max |analytic - numeric| (0: relative only) */
};

typedef struct qkt_gc_result {
    double err[QKT_GC_MAX_INPUTS]; /* the metric per input */
    double worst;                  /* max of err */
    bool ok;                       /* what qkt_gradcheck returned */
    int points_checked;
    /* The element with the largest |analytic - numeric| of the worst input: */
    int worst_input;
    int64_t worst_index;           /* flat index into that input */
    double worst_analytic, worst_numeric;
} qkt_gc_result;

/* Runs the check; inputs drawn N(0, 1) from `seed`. Returns true when it passes. */
bool qkt_gradcheck(const qkt_gc_case *c, uint64_t seed, qkt_gc_result *res);

/* "my_op: input 0 element 7: analytic 0.3101 vs numeric 0.2899 (err 0.065 > tol 1e-06)"
 * (or "... ok (err ...)") into buf; returns buf. */
const char *qkt_gc_describe(const qkt_gc_case *c, const qkt_gc_result *res, char *buf, size_t n);

/* Forward only, same inputs as qkt_gradcheck with the same seed; writes f(x) into out
 * (up to out_cap values) and returns the number of values. For float-vs-double tests. */
int64_t qkt_gc_forward(const qkt_gc_case *c, uint64_t seed, double *out, int64_t out_cap);

#ifdef __cplusplus
}
#endif
#endif
