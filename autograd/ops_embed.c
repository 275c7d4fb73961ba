/* Embedding gather with scatter-add backward. */
#include "ops_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

qkt_tensor *qkt_embedding(qkt_ctx *ctx, qkt_tensor *w, const int32_t *idx, int ndim, const int *shape) {
    QKT_LIVE(ctx, "embedding", w);
    QKT_CHECK(w->ndim == 2, "embedding: weight must be (V, C), got %d dims", w->ndim);
    QKT_CHECK(ndim >= 1 && ndim < QKT_MAX_DIMS, "embedding: index tensor has %d dims (1 to %d)", ndim, QKT_MAX_DIMS - 1);
    int V = w->shape[0], C = w->shape[1], oshape[QKT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) oshape[d] = shape[d];
    oshape[ndim] = C;
    int64_t n_idx = qkt_shape_size(ndim, shape);
    int32_t *saved = qkt_arena_alloc(&ctx->arena, (size_t)n_idx * sizeof(int32_t));
    for (int64_t i = 0; i < n_idx; i++) {
        QKT_CHECK(idx[i] >= 0 && idx[i] < V, "embedding: index %d at position %lld is outside [0, %d)", idx[i], (long long)i, V);
        saved[i] = idx[i];
    }
    qkt_tensor *y = qkt__op_output(ctx, ndim + 1, oshape);
    QKT_PAR_FOR(qkt_parallel_worth(y->size > QKT_PAR_MIN), i, n_idx,
                memcpy(y->data + i * C, w->data + (int64_t)saved[i] * C, (size_t)C * sizeof(qkt_real)));
    qkt_node *n = qkt_op_record(ctx, QKT_OP_EMBEDDING, y, 1, &w);
    if (n) n->saved = saved, n->p.i[0] = (int)n_idx;
    qkt_op_done(ctx, QKT_OP_EMBEDDING, y);
    return y;
}

/* Columns [c0, c1) of dW[idx[i], :] += dy[i, :], i in order. */
static void embedding_backward_cols(qkt_real *dW, const qkt_real *dY, const int32_t *idx, int n_idx, int C, int c0,
                                    int c1) {
    for (int i = 0; i < n_idx; i++) {
        qkt_real *row = dW + (int64_t)idx[i] * C;
        const qkt_real *g = dY + (int64_t)i * C;
        for (int c = c0; c < c1; c++) row[c] += g[c];
    }
}

/* dW[idx[i], :] += dy[i, :]. Scatter with possible repeats: each thread owns a slice of
 * the C columns, so no two threads write the same element. */
void qkt__embedding_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *w = n->in[0];
    int C = w->shape[1], n_idx = n->p.i[0];
    const int32_t *idx = n->saved;
    qkt_real *dW = qkt_grad(ctx, w);
    const qkt_real *dY = n->out->grad;
    if (!qkt_parallel_worth((int64_t)n_idx * C > QKT_PAR_MIN)) {
        embedding_backward_cols(dW, dY, idx, n_idx, C, 0, C);
        return;
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        embedding_backward_cols(dW, dY, idx, n_idx, C, (int)((int64_t)C * t / nt), (int)((int64_t)C * (t + 1) / nt));
    }
}
