/* Fused normalisations over the last axis: LayerNorm, RMSNorm, L2 normalisation. */
#include "kern_table.h"
#include "ops_internal.h"

typedef struct {
    qkt_real *mean, *rstd; /* per row */
} ln_saved;

qkt_tensor *qkt_layernorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, double eps) {
    QKT_LIVE_OPT(ctx, "layernorm", 1, x, w, b);
    QKT_CHECK(x->ndim >= 1, "layernorm of a scalar");
    int C = qkt__last(x);
    if (w) QKT_CHECK_SHAPES(w->size == C && w->ndim == 1, "layernorm weight", x, w);
    if (b) QKT_CHECK_SHAPES(b->size == C && b->ndim == 1, "layernorm bias", x, b);
    int64_t rows = x->size / C;
    ln_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->mean = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    s->rstd = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
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
    bool gw = qkt__needs_grad(w), gb = qkt__needs_grad(b);
    if (gw && gb) qkt__colsum2(ctx, rows, C, dY, x->data, s->mean, s->rstd, qkt_grad(ctx, w), qkt_grad(ctx, b));
    else if (gw) qkt__colsum(ctx, rows, C, dY, x->data, s->mean, s->rstd, 1, qkt_grad(ctx, w));
    else if (gb) qkt__colsum(ctx, rows, C, dY, NULL, NULL, NULL, 1, qkt_grad(ctx, b));
}

/* ---------------------------------------------------------------- RMSNorm */
/* Rows are independent; each thread owns whole rows, so results do not depend on the
 * thread count. Sums in double (the rows are short: d_k or n_embd). */
typedef struct {
    qkt_real *rstd; /* per row: 1/sqrt(mean(x^2) + eps) */
} rms_saved;

/* One row: y = x rstd w, rstd = 1/sqrt(mean(x^2) + eps) into *R. */
static inline void rms_row(const qkt_real *xr, const qkt_real *W, double eps, qkt_real *R, qkt_real *yr, int C) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)xr[j] * xr[j];
    qkt_real rs = (qkt_real)(1.0 / sqrt(ss / C + eps));
    *R = rs;
    for (int j = 0; j < C; j++) yr[j] = xr[j] * rs * (W ? W[j] : (qkt_real)1);
}

/* One row of rmsnorm's dx: dx += rstd (g - h mean(g h)). */
static inline void rms_row_dx(const qkt_real *xr, const qkt_real *gr, const qkt_real *W, double rs, qkt_real *dxr, int C) {
    double gh = 0;
    for (int j = 0; j < C; j++) gh += (double)gr[j] * (W ? W[j] : 1) * xr[j] * rs;
    gh /= C;
    for (int j = 0; j < C; j++) dxr[j] += (qkt_real)(rs * ((double)gr[j] * (W ? W[j] : 1) - xr[j] * rs * gh));
}

qkt_tensor *qkt_rmsnorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, double eps) {
    QKT_LIVE_OPT(ctx, "rmsnorm", 1, x, w);
    QKT_CHECK(x->ndim >= 1, "rmsnorm of a scalar");
    QKT_CHECK(eps > 0, "rmsnorm eps %g <= 0", eps);
    int C = qkt__last(x);
    if (w) QKT_CHECK_SHAPES(w->size == C && w->ndim == 1, "rmsnorm weight", x, w);
    int64_t rows = x->size / C;
    rms_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->rstd = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    const qkt_real *X = x->data, *W = w ? w->data : NULL;
    qkt_real *Y = y->data, *R = s->rstd;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, rms_row(X + r * C, W, eps, R + r, Y + r * C, C));
    qkt_node *n = qkt_op_record(ctx, QKT_OP_RMSNORM, y, 2, (qkt_tensor *[]){x, w});
    if (n) n->saved = s, n->p.f[0] = eps;
    qkt_op_done(ctx, QKT_OP_RMSNORM, y);
    return y;
}

/* h = x rstd, g = dy * w:  dx += rstd (g - h mean(g h));  dw += sum_rows dy h */
void qkt__rmsnorm_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0], *w = n->in[1];
    rms_saved *s = n->saved;
    int C = qkt__last(x);
    int64_t rows = x->size / C;
    const qkt_real *dY = n->out->grad, *X = x->data, *W = w ? w->data : NULL, *R = s->rstd;
    if (qkt__needs_grad(x)) {
        qkt_real *dX = qkt_grad(ctx, x);
        QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows,
                    rms_row_dx(X + r * C, dY + r * C, W, R[r], dX + r * C, C));
    }
    /* dw_j = sum_r dy_rj x_rj rstd_r */
    if (qkt__needs_grad(w)) qkt__colsum(ctx, rows, C, dY, X, NULL, R, 1, qkt_grad(ctx, w));
}

/* ---------------------------------------------------------------- L2 normalisation */
/* One row: y = x / max(||x||, eps); *inv = 1/||x||, or -1/eps for a clamped row (the sign
 * marks it: its derivative is 1/eps). */
static inline void l2_row(const qkt_real *X, double eps, qkt_real *inv, qkt_real *Y, int C) {
    double ss = 0;
    for (int j = 0; j < C; j++) ss += (double)X[j] * X[j];
    double nrm = sqrt(ss);
    *inv = (qkt_real)(nrm > eps ? 1.0 / nrm : -1.0 / eps);
    qkt_real m = (qkt_real)fabs((double)*inv);
    for (int j = 0; j < C; j++) Y[j] = X[j] * m;
}

/* One row of l2norm's dx (inv: the row's l2_row value). */
static inline void l2_row_dx(const qkt_real *g, const qkt_real *y, qkt_real inv, qkt_real *dx, int C) {
    if (inv < 0) {
        for (int j = 0; j < C; j++) dx[j] += g[j] * -inv;
        return;
    }
    double yg = 0;
    for (int j = 0; j < C; j++) yg += (double)y[j] * g[j];
    for (int j = 0; j < C; j++) dx[j] += (qkt_real)(((double)g[j] - y[j] * yg) * inv);
}

/* y = x / max(||x||_2, eps) over the last axis (torch.nn.functional.normalize). */
qkt_tensor *qkt_l2norm(qkt_ctx *ctx, qkt_tensor *x, double eps) {
    QKT_LIVE(ctx, "l2norm", x);
    QKT_CHECK(x->ndim >= 1, "l2norm of a scalar");
    QKT_CHECK(eps > 0, "l2norm eps %g <= 0", eps);
    int C = qkt__last(x);
    int64_t rows = x->size / C;
    qkt_real *inv = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real)); /* 1/max(||x||, eps) */
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, l2_row(X + r * C, eps, inv + r, Y + r * C, C));
    qkt_node *n = qkt_op_record(ctx, QKT_OP_L2NORM, y, 1, (qkt_tensor *[]){x});
    if (n) n->saved = inv, n->p.f[0] = eps;
    qkt_op_done(ctx, QKT_OP_L2NORM, y);
    return y;
}

/* ||x|| > eps: dx += (g - y (y . g)) / ||x||;  else (y = x/eps): dx += g / eps */
void qkt__l2norm_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!qkt__needs_grad(x)) return;
    int C = qkt__last(x);
    int64_t rows = x->size / C;
    const qkt_real *dY = n->out->grad, *Y = n->out->data, *inv = n->saved;
    qkt_real *dX = qkt_grad(ctx, x);
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, l2_row_dx(dY + r * C, Y + r * C, inv[r], dX + r * C, C));
}
