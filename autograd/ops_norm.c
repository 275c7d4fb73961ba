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
#pragma omp parallel for schedule(static) if (x->size > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = X + r * C;
        qkt_real *yr = Y + r * C;
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)xr[j] * xr[j];
        qkt_real rs = (qkt_real)(1.0 / sqrt(ss / C + eps));
        R[r] = rs;
        for (int j = 0; j < C; j++) yr[j] = xr[j] * rs * (W ? W[j] : (qkt_real)1);
    }
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
#pragma omp parallel for schedule(static) if (x->size > QKT_PAR_MIN)
        for (int64_t r = 0; r < rows; r++) {
            const qkt_real *xr = X + r * C, *gr = dY + r * C;
            qkt_real *dxr = dX + r * C;
            double rs = R[r], gh = 0;
            for (int j = 0; j < C; j++) gh += (double)gr[j] * (W ? W[j] : 1) * xr[j] * rs;
            gh /= C;
            for (int j = 0; j < C; j++) dxr[j] += (qkt_real)(rs * ((double)gr[j] * (W ? W[j] : 1) - xr[j] * rs * gh));
        }
    }
    /* dw_j = sum_r dy_rj x_rj rstd_r */
    if (qkt__needs_grad(w)) qkt__colsum(ctx, rows, C, dY, X, NULL, R, 1, qkt_grad(ctx, w));
}

/* ---------------------------------------------------------------- L2 normalisation */
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
#pragma omp parallel for schedule(static) if (x->size > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)X[r * C + j] * X[r * C + j];
        double nrm = sqrt(ss);
        /* the sign of inv marks a clamped row (norm below eps): its derivative is 1/eps */
        inv[r] = (qkt_real)(nrm > eps ? 1.0 / nrm : -1.0 / eps);
        qkt_real m = (qkt_real)fabs((double)inv[r]);
        for (int j = 0; j < C; j++) Y[r * C + j] = X[r * C + j] * m;
    }
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
#pragma omp parallel for schedule(static) if (x->size > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *g = dY + r * C, *y = Y + r * C;
        qkt_real *dx = dX + r * C;
        if (inv[r] < 0) {
            for (int j = 0; j < C; j++) dx[j] += g[j] * -inv[r];
            continue;
        }
        double yg = 0;
        for (int j = 0; j < C; j++) yg += (double)y[j] * g[j];
        for (int j = 0; j < C; j++) dx[j] += (qkt_real)(((double)g[j] - y[j] * yg) * inv[r]);
    }
}
