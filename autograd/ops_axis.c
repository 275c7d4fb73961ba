/* Reductions over one axis, with keepdim: sum, mean, max (gradient to the argmax), logsumexp.
 * x is viewed as (outer, n, inner) around the axis and y as (outer, inner): element (o, i)
 * of y reduces x[o, 0..n, i]. Each output element is computed by one thread, in a fixed
 * order (sums in float64), so results do not depend on the thread count. */
#include "ops_generic.h"

/* y's shape: x's without the axis, or with it as 1 (keepdim). */
static qkt_tensor *axis_out(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    int shape[QKT_MAX_DIMS], nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (d != axis) shape[nd++] = x->shape[d];
        else if (keepdim) shape[nd++] = 1;
    }
    return qkt__op_output(ctx, nd, shape);
}

static qkt_tensor *axis_done(qkt_ctx *ctx, qkt_op op, qkt_tensor *x, qkt_tensor *y, int axis, void *saved) {
    qkt_node *n = qkt_op_record(ctx, op, y, 1, &x);
    if (n) n->p.i[0] = axis, n->saved = saved;
    qkt_op_done(ctx, op, y);
    return y;
}

/* ---------------------------------------------------------------- sum, mean */
/* y[o, i] = sum_k x[o, k, i] / div, for j = o inner + i. */
static void sum_line(const qkt_real *X, qkt_real *Y, int n, int64_t inner, double div, int64_t j) {
    int64_t o = j / inner, i = j % inner;
    const qkt_real *p = X + o * n * inner + i;
    double acc = 0;
    for (int k = 0; k < n; k++) acc += p[k * inner];
    Y[j] = (qkt_real)(acc / div);
}

static qkt_tensor *sum_or_mean(qkt_ctx *ctx, qkt_op op, qkt_tensor *x, int axis, bool keepdim) {
    QKT_LIVE(ctx, qkt_op_name(op), x);
    axis = qkt__axis(qkt_op_name(op), x, axis);
    qkt_tensor *y = axis_out(ctx, x, axis, keepdim);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    double div = op == QKT_OP_MEAN_AXIS ? n : 1;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), j, outer * inner, sum_line(X, Y, n, inner, div, j));
    return axis_done(ctx, op, x, y, axis, NULL);
}
qkt_tensor *qkt_sum_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    return sum_or_mean(ctx, QKT_OP_SUM_AXIS, x, axis, keepdim);
}
qkt_tensor *qkt_mean_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    return sum_or_mean(ctx, QKT_OP_MEAN_AXIS, x, axis, keepdim);
}
/* dx[i] += dy[i] s, i < inner */
static void add_scaled(qkt_real *dx, const qkt_real *dy, qkt_real s, int64_t inner) {
    for (int64_t i = 0; i < inner; i++) dx[i] += dy[i] * s;
}

/* sum: dx[o, k, i] += dy[o, i];  mean: dx[o, k, i] += dy[o, i] / n */
static void sum_or_mean_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int64_t outer, inner;
    int len;
    qkt__axis_view(x, n->p.i[0], &outer, &len, &inner);
    qkt_real *dX = qkt_grad(ctx, x), s = n->op == QKT_OP_MEAN_AXIS ? (qkt_real)1 / (qkt_real)len : 1;
    const qkt_real *dY = n->out->grad;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), j, outer * len, add_scaled(dX + j * inner, dY + j / len * inner, s, inner));
}
void qkt__sum_axis_backward(qkt_ctx *ctx, qkt_node *n) { sum_or_mean_backward(ctx, n); }
void qkt__mean_axis_backward(qkt_ctx *ctx, qkt_node *n) { sum_or_mean_backward(ctx, n); }

/* ---------------------------------------------------------------- max */
/* The max of x[o, 0..n, i] and its index: the first of equal maxima; the first NaN if any. */
static inline qkt_real row_max(const qkt_real *p, int n, int64_t stride, int *arg) {
    qkt_real m = p[0];
    int a = 0;
    for (int k = 1; k < n && !isnan(m); k++) {
        qkt_real v = p[k * stride];
        if (v > m || isnan(v)) m = v, a = k;
    }
    *arg = a;
    return m;
}

/* y[j] and arg[j] for j = o inner + i. */
static void max_line(const qkt_real *X, qkt_real *Y, int32_t *arg, int n, int64_t inner, int64_t j) {
    int a;
    Y[j] = row_max(X + j / inner * n * inner + j % inner, n, inner, &a);
    arg[j] = a;
}

qkt_tensor *qkt_max_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    QKT_LIVE(ctx, "max_axis", x);
    axis = qkt__axis("max_axis", x, axis);
    qkt_tensor *y = axis_out(ctx, x, axis, keepdim);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    int32_t *arg = qkt_arena_alloc(&ctx->arena, (size_t)y->size * sizeof *arg);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), j, outer * inner, max_line(X, Y, arg, n, inner, j));
    return axis_done(ctx, QKT_OP_MAX_AXIS, x, y, axis, arg);
}
/* dx[o, argmax, i] += dy[o, i]; the other entries get nothing */
void qkt__max_axis_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int64_t outer, inner;
    int len;
    qkt__axis_view(x, n->p.i[0], &outer, &len, &inner);
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = n->out->grad;
    const int32_t *arg = n->saved;
    QKT_PAR_FOR(qkt_parallel_worth(n->out->size > QKT_PAR_MIN), j, n->out->size,
                dX[(j / inner * len + arg[j]) * inner + j % inner] += dY[j]);
}

/* ---------------------------------------------------------------- logsumexp */
/* y[j] = log sum_k e^x[o, k, i], j = o inner + i. */
static void lse_line(const qkt_real *X, qkt_real *Y, int n, int64_t inner, int64_t j) {
    const qkt_real *p = X + j / inner * n * inner + j % inner;
    int a;
    qkt_real m = row_max(p, n, inner, &a);
    qkt_real r;
    if (isinf(m)) {
        r = m; /* all -inf: -inf; a +inf: +inf (e^(x - m) would be NaN) */
    } else {   /* NaN: m is NaN and so is the sum */
        double s = 0;
        for (int k = 0; k < n; k++) s += QKT_M(exp)(p[k * inner] - m);
        r = (qkt_real)((double)m + log(s));
    }
    Y[j] = r;
}

qkt_tensor *qkt_logsumexp(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    QKT_LIVE(ctx, "logsumexp", x);
    axis = qkt__axis("logsumexp", x, axis);
    qkt_tensor *y = axis_out(ctx, x, axis, keepdim);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), j, outer * inner, lse_line(X, Y, n, inner, j));
    return axis_done(ctx, QKT_OP_LOGSUMEXP, x, y, axis, NULL);
}
/* Line j = o inner + i of logsumexp's dx. */
static void lse_line_dx(const qkt_real *X, const qkt_real *Y, const qkt_real *dY, qkt_real *dX, int len, int64_t inner,
                        int64_t j) {
    int64_t o = j / inner, i = j % inner;
    qkt_real lse = Y[j], g = dY[j];
    if (lse == -INFINITY) return;
    for (int k = 0; k < len; k++) {
        int64_t e = (o * len + k) * inner + i;
        dX[e] += g * QKT_M(exp)(X[e] - lse);
    }
}

/* dx[o, k, i] += dy[o, i] e^(x[o, k, i] - y[o, i]) (the softmax along the axis). A row of
 * all -inf (y = -inf) passes no gradient; a row with +inf (y = +inf) gets NaN from
 * e^(inf - inf), as the softmax there is undefined. */
void qkt__logsumexp_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int64_t outer, inner;
    int len;
    qkt__axis_view(x, n->p.i[0], &outer, &len, &inner);
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = n->out->grad, *X = x->data, *Y = n->out->data;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), j, outer * inner, lse_line_dx(X, Y, dY, dX, len, inner, j));
}
