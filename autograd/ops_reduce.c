/* Full reductions to a scalar: sum and mean. */
#include "kern_table.h"
#include "ops_internal.h"

static qkt_tensor *reduce(qkt_ctx *ctx, qkt_op op, qkt_tensor *x) {
    QKT_LIVE(ctx, qkt_op_name(op), x);
    qkt_tensor *y = qkt__op_output(ctx, 0, NULL);
    /* in index order on one thread: a reduction over threads would make the bits depend on
     * their number (the sum is memory-bound; one pass over x is all it costs) */
    double acc = 0;
    for (int64_t i = 0; i < x->size; i++) acc += x->data[i];
    y->data[0] = (qkt_real)(op == QKT_OP_MEAN ? acc / (double)x->size : acc);
    qkt_op_record(ctx, op, y, 1, &x);
    qkt_op_done(ctx, op, y);
    return y;
}

qkt_tensor *qkt_sum(qkt_ctx *ctx, qkt_tensor *x) { return reduce(ctx, QKT_OP_SUM, x); }
qkt_tensor *qkt_mean(qkt_ctx *ctx, qkt_tensor *x) { return reduce(ctx, QKT_OP_MEAN, x); }

/* sum: dx_i += dy.  mean: dx_i += dy / n */
static void reduce_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    qkt_real *dX = qkt_grad(ctx, x);
    qkt_real g = n->out->grad[0];
    if (n->op == QKT_OP_MEAN) g /= (qkt_real)x->size;
#pragma omp parallel for simd if (x->size > QKT_PAR_MIN)
    for (int64_t i = 0; i < x->size; i++) dX[i] += g;
}
void qkt__sum_backward(qkt_ctx *ctx, qkt_node *n) { reduce_backward(ctx, n); }
void qkt__mean_backward(qkt_ctx *ctx, qkt_node *n) { reduce_backward(ctx, n); }

/* ---------------------------------------------------------------- column sums */
/* The kernel's column sums with their chunks' partial sums in the arena (a second block
 * for out2). */
static void colsums(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                    const qkt_real *mul, qkt_real sign, qkt_real *out, qkt_real *out2) {
    int64_t nch = (rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS;
    if (nch == 0) return;
    double *part = qkt_arena_alloc(&ctx->arena, (size_t)((out2 ? 2 : 1) * nch * cols) * sizeof *part);
    qkt__kern_get()->colsum(rows, cols, X, Y, sub, mul, sign, out, part, out2, out2 ? part + nch * cols : NULL);
}
void qkt__colsum(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                 const qkt_real *mul, qkt_real sign, qkt_real *out) {
    colsums(ctx, rows, cols, X, Y, sub, mul, sign, out, NULL);
}
void qkt__colsum2(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                  const qkt_real *mul, qkt_real *out, qkt_real *out2) {
    colsums(ctx, rows, cols, X, Y, sub, mul, 1, out, out2);
}
