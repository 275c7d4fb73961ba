/* Shared by the generic op files: NumPy broadcasting over the padded 4 dims,
 * the (outer, n, inner) view of an axis, and libm in the precision of qkt_real. Private. */
#ifndef QKT_GENERIC_INTERNAL_H
#define QKT_GENERIC_INTERNAL_H
#include "ops_internal.h"

#ifdef QKT_DOUBLE
#define QKT_M(fn) fn
#else
#define QKT_M(fn) fn##f /* expf, logf, ... */
#endif

/* Broadcast of up to 3 operands to one output. Shapes are right-aligned in 4 dims (dim d
 * of a k-dim tensor is padded dim d + 4 - k; missing dims are 1). */
typedef struct qkt_bcast {
    int ndim;             /* the output's */
    int shape[4];         /* the output's padded shape */
    int n;                /* operands */
    int dims[3][4];       /* operand k's padded shape */
    int64_t str[3][4];    /* operand k's stride per output dim: 0 where it is broadcast */
    int64_t ostr[4];      /* the output's (contiguous) strides */
} qkt_bcast;

/* Fills b for xs[0 .. n); returns false if the shapes do not broadcast. */
bool qkt__bcast_init(qkt_bcast *b, int n, qkt_tensor *const *xs);
/* out's shape in its own ndim (for qkt_op_output). */
void qkt__bcast_shape(const qkt_bcast *b, int *shape);

/* y = op(operands) over the output; op is ADD, SUB, MUL, DIV (x0 op x1) or WHERE
 * (x0 != 0 ? x1 : x2). Threads split the output; each element is computed alone. */
void qkt__bcast_forward(const qkt_bcast *b, qkt_op op, const qkt_real *x0, const qkt_real *x1, const qkt_real *x2,
                        qkt_real *y);

/* The grad term one output element o sends to the operand element j it read:
 *   DY: dy[o]; NEG_DY: -dy[o]; MUL: dy[o] other[o']; DIV: dy[o] / other[o'];
 *   DIV_DEN: -dy[o] other[o'] / (self[j] self[j]) (d(a/b)/db, other = a);
 *   IF_TRUE / IF_FALSE: dy[o] where other[o'] != 0 / == 0, else nothing;
 * o' is o's element in operand `other_k`. */
typedef enum { QKT_BC_DY, QKT_BC_NEG_DY, QKT_BC_MUL, QKT_BC_DIV, QKT_BC_DIV_DEN, QKT_BC_IF_TRUE, QKT_BC_IF_FALSE } qkt_bc_term;
/* dx[j] += sum over the output elements o that read operand k's element j of term(o),
 * summed in float64 in a fixed order; threads own destination elements, so the result
 * does not depend on the thread count. */
void qkt__bcast_reduce(const qkt_bcast *b, int k, qkt_bc_term term, const qkt_real *dy, int other_k,
                       const qkt_real *other, const qkt_real *self, qkt_real *dx);

/* "op: axis 3 out of range for shape (2, 3)" unless -ndim <= axis < ndim; returns the
 * axis in [0, ndim). */
int qkt__axis(const char *op, const qkt_tensor *x, int axis);
/* x viewed as (outer, n, inner) around `axis`. */
static inline void qkt__axis_view(const qkt_tensor *x, int axis, int64_t *outer, int *n, int64_t *inner) {
    int64_t o = 1, i = 1;
    for (int d = 0; d < axis; d++) o *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) i *= x->shape[d];
    *outer = o, *n = x->shape[axis], *inner = i;
}

#endif
