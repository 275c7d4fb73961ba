/* matmul: C = op(A) op(B), 2-D or batched, with transpose flags. */
#include "kern_table.h"
#include "ops_internal.h"

/* Geometry of one matmul, saved in node->p.i. */
typedef struct {
    int batch, M, N, K;
    int ta, tb, b_shared; /* b_shared: B is 2-D and used by every batch */
} mm_geom;

static mm_geom geom_of(const qkt_node *n) {
    mm_geom g = {n->p.i[0], n->p.i[1], n->p.i[2], n->p.i[3], n->p.i[4], n->p.i[5], n->p.i[6]};
    return g;
}

/* Batched C[b] = op(A[b]) op(B[b]) + beta C[b] via the one wrapper (qkt__gemm). When B is shared
 * and A is not transposed, the batch folds into M: one large gemm instead of many. */
static void mm_run(qkt_ctx *ctx, int batch, int M, int N, int K, bool ta, bool tb, bool b_shared, const qkt_real *A,
                   const qkt_real *B, qkt_real beta, qkt_real *C) {
    int lda = ta ? M : K, ldb = tb ? K : N;
    if (b_shared && !ta) {
        qkt__gemm(ctx, false, tb, batch * M, N, K, A, lda, B, ldb, beta, C, N);
        return;
    }
    for (int b = 0; b < batch; b++)
        qkt__gemm(ctx, ta, tb, M, N, K, A + (size_t)b * M * K, lda, b_shared ? B : B + (size_t)b * K * N, ldb, beta,
                  C + (size_t)b * M * N, N);
}

qkt_tensor *qkt_matmul(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b, bool ta, bool tb) {
    QKT_LIVE(ctx, "matmul", a, b);
    QKT_CHECK_SHAPES(a->ndim >= 2 && b->ndim >= 2, "matmul", a, b);
    int M = ta ? a->shape[a->ndim - 1] : a->shape[a->ndim - 2];
    int K = ta ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
    int Kb = tb ? b->shape[b->ndim - 1] : b->shape[b->ndim - 2];
    int N = tb ? b->shape[b->ndim - 2] : b->shape[b->ndim - 1];
    QKT_CHECK_SHAPES(K == Kb, "matmul (inner dims)", a, b);
    bool b_shared = b->ndim == 2;
    if (!b_shared) {
        QKT_CHECK_SHAPES(b->ndim == a->ndim, "matmul (batch dims)", a, b);
        for (int i = 0; i < a->ndim - 2; i++) QKT_CHECK_SHAPES(a->shape[i] == b->shape[i], "matmul (batch dims)", a, b);
    }
    int batch = (int)(a->size / ((int64_t)M * K));
    int shape[QKT_MAX_DIMS];
    for (int i = 0; i < a->ndim - 2; i++) shape[i] = a->shape[i];
    shape[a->ndim - 2] = M;
    shape[a->ndim - 1] = N;
    qkt_tensor *c = qkt__op_output(ctx, a->ndim, shape);
    mm_run(ctx, batch, M, N, K, ta, tb, b_shared, a->data, b->data, 0, c->data);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_MATMUL, c, 2, (qkt_tensor *[]){a, b});
    if (n) {
        int *p = n->p.i;
        p[0] = batch, p[1] = M, p[2] = N, p[3] = K, p[4] = ta, p[5] = tb, p[6] = b_shared;
    }
    qkt_op_done(ctx, QKT_OP_MATMUL, c);
    return c;
}

/* C = A B:     dA = dC B^T, dB = A^T dC.   With transposes, the same identities on
 * op(A), op(B) give: dA (stored layout) = ta ? op(B) dC^T : dC op(B)^T, and
 * dB = tb ? dC^T op(A) : op(A)^T dC. A shared B sums dB over the batch. */
void qkt__matmul_backward(qkt_ctx *ctx, qkt_node *n) {
    mm_geom g = geom_of(n);
    qkt_tensor *a = n->in[0], *b = n->in[1];
    const qkt_real *dC = n->out->grad;
    int lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
    if (qkt__needs_grad(a)) {
        qkt_real *dA = qkt_grad(ctx, a);
        if (g.b_shared && !g.ta) {
            /* (batch*M, N) x op(B)^T -> (batch*M, K) */
            qkt__gemm(ctx, false, !g.tb, g.batch * g.M, g.K, g.N, dC, g.N, b->data, ldb, 1, dA, lda);
        } else {
            for (int i = 0; i < g.batch; i++) {
                const qkt_real *Bi = g.b_shared ? b->data : b->data + (size_t)i * g.K * g.N;
                const qkt_real *dCi = dC + (size_t)i * g.M * g.N;
                qkt_real *dAi = dA + (size_t)i * g.M * g.K;
                if (!g.ta) /* dA (M,K) = dC (M,N) op(B)^T */
                    qkt__gemm(ctx, false, !g.tb, g.M, g.K, g.N, dCi, g.N, Bi, ldb, 1, dAi, lda);
                else /* dA stored (K,M) = op(B) (K,N) dC^T */
                    qkt__gemm(ctx, g.tb, true, g.K, g.M, g.N, Bi, ldb, dCi, g.N, 1, dAi, lda);
            }
        }
    }
    if (qkt__needs_grad(b)) {
        qkt_real *dB = qkt_grad(ctx, b);
        if (g.b_shared && !g.ta) {
            if (!g.tb) /* dB (K,N) = A^T (K, batch*M) dC (batch*M, N) */
                qkt__gemm(ctx, true, false, g.K, g.N, g.batch * g.M, a->data, lda, dC, g.N, 1, dB, ldb);
            else /* dB stored (N,K) = dC^T (N, batch*M) A (batch*M, K) */
                qkt__gemm(ctx, true, false, g.N, g.K, g.batch * g.M, dC, g.N, a->data, lda, 1, dB, ldb);
        } else {
            for (int i = 0; i < g.batch; i++) {
                const qkt_real *Ai = a->data + (size_t)i * g.M * g.K;
                const qkt_real *dCi = dC + (size_t)i * g.M * g.N;
                qkt_real *dBi = g.b_shared ? dB : dB + (size_t)i * g.K * g.N;
                if (!g.tb) /* dB (K,N) = op(A)^T (K,M) dC (M,N) */
                    qkt__gemm(ctx, !g.ta, false, g.K, g.N, g.M, Ai, lda, dCi, g.N, 1, dBi, ldb);
                else /* dB stored (N,K) = dC^T (N,M) op(A) (M,K) */
                    qkt__gemm(ctx, true, g.ta, g.N, g.K, g.M, dCi, g.N, Ai, lda, 1, dBi, ldb);
            }
        }
    }
}

/* ---------------------------------------------------------------- affine (Linear) */
/* y = x W^T + b in one node: every sum of the gemm starts at the bias (qkt__gemm_bias:
 * in the registers on the own-gemm paths, written into y first for BLAS), so no
 * separate (rows, out) tensor exists for x W^T, and backward takes db from dy directly. */
/* The names an affine-shaped op's usage errors give: its own, then its two shape checks. */
static const struct {
    const char *op, *xw, *wb;
} affine_names[] = {{"affine", "affine (x, W)", "affine (W, b)"},
                    {"affine_gelu", "affine_gelu (x, W)", "affine_gelu (W, b)"},
                    {"affine_add", "affine_add (x, W)", "affine_add (W, b)"}};

/* x (..., in), W (out, in) and b (out) or NULL, checked for op affine_names[k]; y's shape
 * (x's with out last) into shape. Returns x's rows. */
static int64_t affine_shape(qkt_ctx *ctx, int k, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, int *shape) {
    QKT_LIVE_OPT(ctx, affine_names[k].op, 2, x, w, b);
    QKT_CHECK_SHAPES(x->ndim >= 1 && w->ndim == 2 && qkt__last(x) == w->shape[1], affine_names[k].xw, x, w);
    int in = w->shape[1], out = w->shape[0];
    if (b) QKT_CHECK_SHAPES(b->ndim == 1 && b->shape[0] == out, affine_names[k].wb, w, b);
    memcpy(shape, x->shape, QKT_MAX_DIMS * sizeof *shape);
    shape[x->ndim - 1] = out;
    return x->size / in;
}

qkt_tensor *qkt_affine(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b) {
    int shape[QKT_MAX_DIMS];
    int64_t rows = affine_shape(ctx, 0, x, w, b, shape);
    int in = w->shape[1], out = w->shape[0];
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
    qkt__gemm_bias(ctx, (int)rows, out, in, x->data, in, w->data, in, b ? b->data : NULL, y->data, out);
    qkt_op_record(ctx, QKT_OP_AFFINE, y, 3, (qkt_tensor *[]){x, w, b});
    qkt_op_done(ctx, QKT_OP_AFFINE, y);
    return y;
}

/* dx += dy W;  dW += dy^T x;  db += sum_rows dy */
static void affine_backward_dy(qkt_ctx *ctx, const qkt_node *n, const qkt_real *dY, bool db_done) {
    qkt_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    int in = w->shape[1], out = w->shape[0];
    int rows = (int)(x->size / in);
    if (qkt__needs_grad(x)) {
        bool fresh;
        qkt_real *dX = qkt__grad_out(ctx, x, &fresh);
        qkt__gemm(ctx, false, false, rows, in, out, dY, out, w->data, in, fresh ? 0 : 1, dX, in);
    }
    if (qkt__needs_grad(w)) qkt__gemm(ctx, true, false, out, in, rows, dY, out, x->data, in, 1, qkt_grad(ctx, w), in);
    if (qkt__needs_grad(b) && !db_done) qkt__colsum(ctx, rows, out, dY, NULL, NULL, NULL, 1, qkt_grad(ctx, b));
}

void qkt__affine_backward(qkt_ctx *ctx, qkt_node *n) { affine_backward_dy(ctx, n, n->out->grad, false); }

/* ---------------------------------------------------------------- affine + residual (an output projection) */
/* y = r + (x W^T + b) in one node: the product's epilogue adds r to each block of sums
 * while it is in cache (kern_gemm.c), so x W^T + b is never a tensor and no pass adds r.
 * The bits of qkt_add(r, qkt_affine(x, W, b)) on every path and thread count. */
qkt_tensor *qkt_affine_add(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, qkt_tensor *r) {
    int shape[QKT_MAX_DIMS];
    int64_t rows = affine_shape(ctx, 2, x, w, b, shape);
    qkt__check_live(ctx, "affine_add", r, 3, false);
    int in = w->shape[1], out = w->shape[0];
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
    bool fits = r->ndim == y->ndim && !memcmp(r->shape, y->shape, (size_t)y->ndim * sizeof *shape);
    QKT_CHECK_SHAPES(fits, "affine_add (x W^T, r)", y, r);
    qkt__gemm_bias_add(ctx, (int)rows, out, in, x->data, in, w->data, in, b ? b->data : NULL, r->data, y->data, out);
    qkt_op_record(ctx, QKT_OP_AFFINE_ADD, y, 4, (qkt_tensor *[]){x, w, b, r});
    qkt_op_done(ctx, QKT_OP_AFFINE_ADD, y);
    return y;
}

/* As the residual add's backward, then the affine's: r's grad is dy's buffer itself when r
 * has none yet (the buffer changes hands: y's grad would be released after this backward;
 * not with keep_grads, nor when r is x, whose dx the product below adds into), else dr
 * (=|+=) dy; then dx, dW, db from dy. */
void qkt__affine_add_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0], *r = n->in[3];
    const qkt_real *dY = n->out->grad;
    if (qkt__needs_grad(r)) {
        if (!r->grad && !r->is_param && !ctx->keep_grads && r != x) {
            r->grad = n->out->grad;
            n->out->grad = NULL;
        } else {
            bool fresh;
            qkt_real *dR = qkt__grad_out(ctx, r, &fresh);
            qkt__kern_get()->binary_backward_a(QKT_OP_ADD, fresh, dY, NULL, dR, r->size, r->size);
        }
    }
    affine_backward_dy(ctx, n, dY, false);
}

/* ---------------------------------------------------------------- affine + GELU (an MLP's c_fc) */
/* h = gelu(x W^T + b) in one node: the product's epilogue turns each block of sums into
 * GELU while it is in cache and saves gelu' there (kern_gemm.c), so neither x W^T + b nor
 * a pass over it exists, and backward needs no tanh: du = gelu'(u) dh, then the affine's
 * products. The bits of qkt_gelu(qkt_affine(x, W, b)) on every path and thread count. */
qkt_tensor *qkt_affine_gelu(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b) {
    int shape[QKT_MAX_DIMS];
    int64_t rows = affine_shape(ctx, 1, x, w, b, shape);
    int in = w->shape[1], out = w->shape[0];
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, shape);
    /* gelu'(u), (rows, out): only when backward may run */
    qkt_real *g = ctx->no_grad ? NULL : qkt_arena_alloc(&ctx->arena, (size_t)y->size * sizeof *g);
    qkt__gemm_bias_gelu(ctx, (int)rows, out, in, x->data, in, w->data, in, b ? b->data : NULL, y->data, g, out);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_AFFINE_GELU, y, 3, (qkt_tensor *[]){x, w, b});
    if (n) n->saved = g;
    qkt_op_done(ctx, QKT_OP_AFFINE_GELU, y);
    return y;
}

/* du = gelu'(u) dh (in dh's buffer, which no other backward reads, unless grads are kept),
 * with db += sum_rows du in the same pass; then dx += du W;  dW += du^T x */
void qkt__affine_gelu_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dH = n->out->grad, *dU = dH;
    qkt_tensor *b = n->in[2];
    int64_t size = n->out->size, out = n->in[1]->shape[0], rows = size / out;
    if (ctx->keep_grads) dU = qkt_arena_alloc(&ctx->arena, (size_t)size * sizeof *dU);
    const qkt__kern *kn = qkt__kern_get();
    bool db = qkt__needs_grad(b) && rows > 0;
    if (db) { /* colsum's partial sums (qkt__colsum) */
        double *part = qkt_arena_alloc(&ctx->arena, (size_t)((rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS * out) * sizeof *part);
        kn->mul_colsum(rows, out, n->saved, dH, dU, qkt_grad(ctx, b), part);
    } else {
        kn->binary_forward(QKT_OP_MUL, n->saved, dH, dU, size, size);
    }
    affine_backward_dy(ctx, n, dU, db);
}
