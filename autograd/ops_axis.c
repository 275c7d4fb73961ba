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
#pragma omp parallel for collapse(2) if (x->size > QKT_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const qkt_real *p = X + o * n * inner + i;
            double acc = 0;
            for (int k = 0; k < n; k++) acc += p[k * inner];
            Y[o * inner + i] = (qkt_real)(acc / div);
        }
    return axis_done(ctx, op, x, y, axis, NULL);
}
qkt_tensor *qkt_sum_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    return sum_or_mean(ctx, QKT_OP_SUM_AXIS, x, axis, keepdim);
}
qkt_tensor *qkt_mean_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    return sum_or_mean(ctx, QKT_OP_MEAN_AXIS, x, axis, keepdim);
}
/* sum: dx[o, k, i] += dy[o, i];  mean: dx[o, k, i] += dy[o, i] / n */
static void sum_or_mean_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int64_t outer, inner;
    int len;
    qkt__axis_view(x, n->p.i[0], &outer, &len, &inner);
    qkt_real *dX = qkt_grad(ctx, x), s = n->op == QKT_OP_MEAN_AXIS ? (qkt_real)1 / (qkt_real)len : 1;
    const qkt_real *dY = n->out->grad;
#pragma omp parallel for collapse(2) if (x->size > QKT_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < len; k++) {
            qkt_real *dx = dX + (o * len + k) * inner;
            const qkt_real *dy = dY + o * inner;
            for (int64_t i = 0; i < inner; i++) dx[i] += dy[i] * s;
        }
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
#pragma omp parallel for collapse(2) if (x->size > QKT_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int a;
            Y[o * inner + i] = row_max(X + o * n * inner + i, n, inner, &a);
            arg[o * inner + i] = a;
        }
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
#pragma omp parallel for if (n->out->size > QKT_PAR_MIN)
    for (int64_t j = 0; j < n->out->size; j++) {
        int64_t o = j / inner, i = j % inner;
        dX[(o * len + arg[j]) * inner + i] += dY[j];
    }
}

/* ---------------------------------------------------------------- logsumexp */
qkt_tensor *qkt_logsumexp(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim) {
    QKT_LIVE(ctx, "logsumexp", x);
    axis = qkt__axis("logsumexp", x, axis);
    qkt_tensor *y = axis_out(ctx, x, axis, keepdim);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
#pragma omp parallel for collapse(2) if (x->size > QKT_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const qkt_real *p = X + o * n * inner + i;
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
            Y[o * inner + i] = r;
        }
    return axis_done(ctx, QKT_OP_LOGSUMEXP, x, y, axis, NULL);
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
#pragma omp parallel for collapse(2) if (x->size > QKT_PAR_MIN)
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            qkt_real lse = Y[o * inner + i], g = dY[o * inner + i];
            if (lse == -INFINITY) continue;
            for (int k = 0; k < len; k++) {
                int64_t e = (o * len + k) * inner + i;
                dX[e] += g * QKT_M(exp)(X[e] - lse);
            }
        }
}
