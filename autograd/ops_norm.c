/* Fused LayerNorm over the last axis. */
#include "ops_internal.h"

typedef struct {
    qkt_real *mean, *rstd; /* per row */
} ln_saved;

qkt_tensor *qkt_layernorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, double eps) {
    QKT_CHECK(x->ndim >= 1, "layernorm of a scalar");
    int C = qkt__last(x);
    if (w) QKT_CHECK_SHAPES(w->size == C && w->ndim == 1, "layernorm weight", x, w);
    if (b) QKT_CHECK_SHAPES(b->size == C && b->ndim == 1, "layernorm bias", x, b);
    int64_t rows = x->size / C;
    ln_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->mean = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    s->rstd = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = x->data + r * C;
        double m = 0, v = 0;
        for (int j = 0; j < C; j++) m += xr[j];
        m /= C;
        for (int j = 0; j < C; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);
        v /= C;
        qkt_real rs = (qkt_real)(1.0 / sqrt(v + eps)), mm = (qkt_real)m;
        s->mean[r] = mm, s->rstd[r] = rs;
        qkt_real *yr = y->data + r * C;
        for (int j = 0; j < C; j++) {
            qkt_real h = (xr[j] - mm) * rs;
            yr[j] = h * (w ? w->data[j] : 1) + (b ? b->data[j] : 0);
        }
    }
    qkt_node *n = qkt_op_record(ctx, QKT_OP_LAYERNORM, y, 3, (qkt_tensor *[]){x, w, b});
    if (n) n->saved = s, n->p.f[0] = eps;
    qkt_op_done(ctx, QKT_OP_LAYERNORM, y);
    return y;
}

/* h = (x - mean) rstd, g = dy * w:
 *   dx += rstd (g - mean(g) - h mean(g h));  dw += sum_rows dy h;  db += sum_rows dy */
void qkt__layernorm_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    ln_saved *s = n->saved;
    int C = qkt__last(x);
    int64_t rows = x->size / C;
    const qkt_real *dY = n->out->grad;
    if (qkt__needs_grad(x)) {
        qkt_real *dX = qkt_grad(ctx, x);
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) {
            const qkt_real *xr = x->data + r * C, *gr = dY + r * C;
            qkt_real m = s->mean[r], rs = s->rstd[r];
            double mg = 0, mgh = 0;
            for (int j = 0; j < C; j++) {
                qkt_real g = gr[j] * (w ? w->data[j] : 1);
                mg += g;
                mgh += (double)g * (xr[j] - m) * rs;
            }
            mg /= C, mgh /= C;
            for (int j = 0; j < C; j++) {
                qkt_real g = gr[j] * (w ? w->data[j] : 1), h = (xr[j] - m) * rs;
                dX[r * C + j] += rs * (g - (qkt_real)mg - h * (qkt_real)mgh);
            }
        }
    }
    bool dw = qkt__needs_grad(w), db = qkt__needs_grad(b);
    if (dw || db) {
        qkt_real *dW = dw ? qkt_grad(ctx, w) : NULL, *dB = db ? qkt_grad(ctx, b) : NULL;
        /* Column-parallel reduction over rows: each thread owns its columns. */
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
        for (int j = 0; j < C; j++) {
            double aw = 0, ab = 0;
            for (int64_t r = 0; r < rows; r++) {
                qkt_real g = dY[r * C + j];
                aw += (double)g * (x->data[r * C + j] - s->mean[r]) * s->rstd[r];
                ab += g;
            }
            if (dw) dW[j] += (qkt_real)aw;
            if (db) dB[j] += (qkt_real)ab;
        }
    }
}
