/* Fused LayerNorm over the last axis. */
#include "ops_internal.h"

typedef struct {
    qkt_real *mean, *rstd; /* per row */
} ln_saved;

qkt_tensor *qkt_layernorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, double eps) {
    QKT_LIVE(ctx, "layernorm", x, w, b);
    QKT_CHECK(x->ndim >= 1, "layernorm of a scalar");
    int C = qkt__last(x);
    if (w) QKT_CHECK_SHAPES(w->size == C && w->ndim == 1, "layernorm weight", x, w);
    if (b) QKT_CHECK_SHAPES(b->size == C && b->ndim == 1, "layernorm bias", x, b);
    int64_t rows = x->size / C;
    ln_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->mean = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    s->rstd = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    const qkt_real *W = w ? w->data : NULL, *Bb = b ? b->data : NULL;
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = x->data + r * C;
        double m = 0, v = 0;
#pragma omp simd reduction(+ : m)
        for (int j = 0; j < C; j++) m += xr[j];
        m /= C;
#pragma omp simd reduction(+ : v)
        for (int j = 0; j < C; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);
        v /= C;
        qkt_real rs = (qkt_real)(1.0 / sqrt(v + eps)), mm = (qkt_real)m;
        s->mean[r] = mm, s->rstd[r] = rs;
        qkt_real *yr = y->data + r * C;
        if (W && Bb) {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j] + Bb[j];
        } else if (W) {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j];
        } else {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs + (Bb ? Bb[j] : 0);
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
    const qkt_real *W = w ? w->data : NULL;
    if (qkt__needs_grad(x)) {
        bool fresh;
        qkt_real *dX = qkt__grad_out(ctx, x, &fresh);
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) {
            const qkt_real *xr = x->data + r * C, *gr = dY + r * C;
            qkt_real m = s->mean[r], rs = s->rstd[r];
            double mg = 0, mgh = 0;
#pragma omp simd reduction(+ : mg, mgh)
            for (int j = 0; j < C; j++) {
                qkt_real g = gr[j] * (W ? W[j] : 1);
                mg += g;
                mgh += (double)g * ((xr[j] - m) * rs);
            }
            qkt_real a = (qkt_real)(mg / C), c = (qkt_real)(mgh / C);
            qkt_real *dx = dX + r * C;
            if (fresh) {
#pragma omp simd
                for (int j = 0; j < C; j++) dx[j] = rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
            } else {
#pragma omp simd
                for (int j = 0; j < C; j++) dx[j] += rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
            }
        }
    }
    /* dw_j = sum_r dy_rj (x_rj - mean_r) rstd_r,  db_j = sum_r dy_rj */
    if (qkt__needs_grad(w)) qkt__colsum(ctx, rows, C, dY, x->data, s->mean, s->rstd, 1, qkt_grad(ctx, w));
    if (qkt__needs_grad(b)) qkt__colsum(ctx, rows, C, dY, NULL, NULL, NULL, 1, qkt_grad(ctx, b));
}
