/* Fused LayerNorm over the last axis. */
#include "kern.h"
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
    qkt__kern_get()->layernorm_forward(x->data, W, Bb, y->data, s->mean, s->rstd, rows, C, eps);
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
        qkt__kern_get()->layernorm_backward(fresh, x->data, W, dY, s->mean, s->rstd, dX, rows, C);
    }
    /* dw_j = sum_r dy_rj (x_rj - mean_r) rstd_r,  db_j = sum_r dy_rj */
    if (qkt__needs_grad(w)) qkt__colsum(ctx, rows, C, dY, x->data, s->mean, s->rstd, 1, qkt_grad(ctx, w));
    if (qkt__needs_grad(b)) qkt__colsum(ctx, rows, C, dY, NULL, NULL, NULL, 1, qkt_grad(ctx, b));
}
