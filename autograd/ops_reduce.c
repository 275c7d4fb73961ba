/* Full reductions to a scalar: sum and mean. */
#include "ops_internal.h"

static qkt_tensor *reduce(qkt_ctx *ctx, qkt_op op, qkt_tensor *x) {
    QKT_LIVE(ctx, qkt_op_name(op), x);
    qkt_tensor *y = qkt_op_output(ctx, 0, NULL);
    double acc = 0;
#pragma omp parallel for reduction(+ : acc) if (x->size > QKT_PAR_MIN)
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
#define QKT_COLSUM_ROWS 64 /* rows per chunk: fixed, so results are thread-count independent */

void qkt__colsum(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                 const qkt_real *mul, qkt_real sign, qkt_real *out) {
    int64_t nch = (rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS;
    if (nch == 0) return;
    double *part = qkt_arena_alloc(&ctx->arena, (size_t)(nch * cols) * sizeof *part);
#pragma omp parallel for if (rows * cols > QKT_PAR_MIN)
    for (int64_t c = 0; c < nch; c++) {
        double *p = part + c * cols;
        for (int64_t j = 0; j < cols; j++) p[j] = 0;
        int64_t r1 = (c + 1) * QKT_COLSUM_ROWS < rows ? (c + 1) * QKT_COLSUM_ROWS : rows;
        for (int64_t r = c * QKT_COLSUM_ROWS; r < r1; r++) {
            const qkt_real *xr = X + r * cols;
            if (Y) {
                const qkt_real *yr = Y + r * cols;
                qkt_real s = sub ? sub[r] : 0, m = mul ? mul[r] : 1;
#pragma omp simd
                for (int64_t j = 0; j < cols; j++) p[j] += (double)(xr[j] * ((yr[j] - s) * m));
            } else {
#pragma omp simd
                for (int64_t j = 0; j < cols; j++) p[j] += (double)xr[j];
            }
        }
    }
    for (int64_t c = 1; c < nch; c++) {
        const double *p = part + c * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) part[j] += p[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) out[j] += sign * (qkt_real)part[j];
}
