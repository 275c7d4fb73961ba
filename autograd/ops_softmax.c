/* Softmax (scale, then mask, then softmax over the last axis) and log-softmax. */
#include "ops_internal.h"

typedef struct {
    int N, Tq;      /* last axis (keys), queries per causal block */
    int64_t mperiod; /* additive mask period (mask->size) */
    const qkt_real *mask;
    int kind;
} sm_geom;

/* Is entry (row r, col j) allowed, and its additive term. */
static inline bool sm_allowed(const sm_geom *g, int64_t r, int j, qkt_real *add) {
    *add = 0;
    if (g->kind == QKT_MASK_CAUSAL) return j <= (int)(r % g->Tq) + (g->N - g->Tq);
    if (g->kind == QKT_MASK_ADDITIVE) {
        qkt_real m = g->mask[(r * g->N + j) % g->mperiod];
        if (m == -INFINITY) return false;
        *add = m;
    }
    return true;
}

static void softmax_row(const sm_geom *g, qkt_real scale, const qkt_real *x, qkt_real *y, int64_t r) {
    int N = g->N;
    const qkt_real *xr = x + r * N;
    qkt_real *yr = y + r * N, add;
    qkt_real mx = -INFINITY;
    for (int j = 0; j < N; j++) {
        if (sm_allowed(g, r, j, &add)) {
            qkt_real z = scale * xr[j] + add;
            yr[j] = z;
            if (z > mx) mx = z;
        } else {
            yr[j] = -INFINITY;
        }
    }
    if (mx == -INFINITY) { /* every entry blocked: zeros, no NaN */
        for (int j = 0; j < N; j++) yr[j] = 0;
        return;
    }
    double sum = 0;
    for (int j = 0; j < N; j++) {
        qkt_real e = yr[j] == -INFINITY ? 0 : exp(yr[j] - mx);
        yr[j] = e;
        sum += e;
    }
    qkt_real inv = (qkt_real)(1.0 / sum);
    for (int j = 0; j < N; j++) yr[j] *= inv;
}
static void softmax_rows(const sm_geom *g, qkt_real scale, const qkt_real *x, qkt_real *y, int64_t rows) {
    QKT_PAR_FOR(qkt_parallel_worth(rows * g->N > QKT_PAR_MIN), r, rows, softmax_row(g, scale, x, y, r));
}

qkt_tensor *qkt_softmax(qkt_ctx *ctx, qkt_tensor *x, double scale, qkt_mask_kind kind, qkt_tensor *mask) {
    QKT_LIVE_OPT(ctx, "softmax", 1, x, mask);
    QKT_CHECK(x->ndim >= 1, "softmax of a scalar");
    sm_geom g = {.N = qkt__last(x), .Tq = 1, .kind = kind};
    if (kind == QKT_MASK_CAUSAL) {
        QKT_CHECK(x->ndim >= 2, "causal softmax needs (..., Tq, Tk), got %d dims", x->ndim);
        g.Tq = x->shape[x->ndim - 2];
        QKT_CHECK(g.Tq <= g.N, "causal softmax: %d queries but only %d keys", g.Tq, g.N);
    } else if (kind == QKT_MASK_ADDITIVE) {
        QKT_CHECK(mask, "additive softmax needs a mask");
        bool ok = mask->ndim <= x->ndim;
        for (int i = 0; ok && i < mask->ndim; i++) ok = mask->shape[mask->ndim - 1 - i] == x->shape[x->ndim - 1 - i];
        QKT_CHECK_SHAPES(ok, "softmax mask", x, mask);
        g.mask = mask->data;
        g.mperiod = mask->size;
    }
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    softmax_rows(&g, (qkt_real)scale, x->data, y->data, x->size / g.N);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_SOFTMAX, y, 1, &x); /* the mask gets no gradient */
    if (n) n->p.f[0] = scale;
    qkt_op_done(ctx, QKT_OP_SOFTMAX, y);
    return y;
}

/* One row of the softmax's dx. */
static void softmax_row_dx(const qkt_real *yr, const qkt_real *gr, qkt_real s, qkt_real *dx, int N) {
    double dot = 0;
    for (int j = 0; j < N; j++) dot += (double)yr[j] * gr[j];
    for (int j = 0; j < N; j++) dx[j] += s * yr[j] * (gr[j] - (qkt_real)dot);
}

/* y = softmax(s x + m):  dx_j += s y_j (dy_j - sum_k y_k dy_k). Blocked entries have
 * y_j = 0, so they get exactly 0; a fully blocked row passes nothing. */
void qkt__softmax_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int N = qkt__last(x);
    int64_t rows = x->size / N;
    qkt_real s = (qkt_real)n->p.f[0], *dX = qkt_grad(ctx, x);
    const qkt_real *Y = n->out->data, *dY = n->out->grad;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, softmax_row_dx(Y + r * N, dY + r * N, s, dX + r * N, N));
}

/* ---------------------------------------------------------------- log-softmax */
/* One row: y = x - logsumexp(x). */
static void log_softmax_row(const qkt_real *xr, qkt_real *yr, int N) {
    qkt_real mx = xr[0];
    for (int j = 1; j < N; j++) mx = xr[j] > mx ? xr[j] : mx;
    double sum = 0;
    for (int j = 0; j < N; j++) sum += exp(xr[j] - mx);
    qkt_real lse = mx + (qkt_real)log(sum);
    for (int j = 0; j < N; j++) yr[j] = xr[j] - lse;
}
/* One row: dx += dy - softmax(x) sum(dy), softmax(x) = e^y. */
static void log_softmax_row_dx(const qkt_real *Y, const qkt_real *dY, qkt_real *dX, int N) {
    double sg = 0;
    for (int j = 0; j < N; j++) sg += dY[j];
    for (int j = 0; j < N; j++) dX[j] += dY[j] - exp(Y[j]) * (qkt_real)sg;
}

qkt_tensor *qkt_log_softmax(qkt_ctx *ctx, qkt_tensor *x) {
    QKT_LIVE(ctx, "log_softmax", x);
    QKT_CHECK(x->ndim >= 1, "log_softmax of a scalar");
    int N = qkt__last(x);
    int64_t rows = x->size / N;
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, log_softmax_row(x->data + r * N, y->data + r * N, N));
    qkt_op_record(ctx, QKT_OP_LOG_SOFTMAX, y, 1, &x);
    qkt_op_done(ctx, QKT_OP_LOG_SOFTMAX, y);
    return y;
}
/* dx_j += dy_j - exp(y_j) sum_k dy_k */
void qkt__log_softmax_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int N = qkt__last(x);
    int64_t rows = x->size / N;
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *Y = n->out->data, *dY = n->out->grad;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows,
                log_softmax_row_dx(Y + r * N, dY + r * N, dX + r * N, N));
}
