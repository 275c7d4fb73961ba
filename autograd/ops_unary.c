/* Elementwise maths: exp, log, sqrt, rsqrt, pow by a constant, sigmoid, tanh, SiLU, abs,
 * clamp. Each forward is one loop; each backward accumulates dx += dy f'(x), written
 * from x or y (the output, kept in the arena). NaN goes through: f(NaN) = NaN, and a NaN
 * x sends a NaN gradient (abs and clamp included, whose f' is otherwise a comparison). */
#include "ops_generic.h"

/* for i < N (a local of the function), split over threads when N is large */
#define FOR_EACH _Pragma("omp parallel for simd if (N > QKT_PAR_MIN)") for (int64_t i = 0; i < N; i++)

/* The output, forward computed by the caller, then recorded with optional constants. */
static qkt_tensor *unary_out(qkt_ctx *ctx, const char *name, qkt_tensor *x) {
    QKT_LIVE(ctx, name, x);
    return qkt__op_output(ctx, x->ndim, x->shape);
}
static qkt_tensor *unary_done(qkt_ctx *ctx, qkt_op op, qkt_tensor *x, qkt_tensor *y, double c0, double c1) {
    qkt_node *n = qkt_op_record(ctx, op, y, 1, &x);
    if (n) n->p.f[0] = c0, n->p.f[1] = c1;
    qkt_op_done(ctx, op, y);
    return y;
}

/* ---------------------------------------------------------------- exp */
qkt_tensor *qkt_exp(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "exp", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = QKT_M(exp)(X[i]);
    return unary_done(ctx, QKT_OP_EXP, x, y, 0, 0);
}
/* dx += dy y */
void qkt__exp_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *Y = n->out->data;
    FOR_EACH dX[i] += dY[i] * Y[i];
}

/* ---------------------------------------------------------------- log */
qkt_tensor *qkt_log(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "log", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = QKT_M(log)(X[i]);
    return unary_done(ctx, QKT_OP_LOG, x, y, 0, 0);
}
/* dx += dy / x  (x = 0: +-inf; x < 0: the forward is already NaN) */
void qkt__log_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *X = n->in[0]->data;
    FOR_EACH dX[i] += dY[i] / X[i];
}

/* ---------------------------------------------------------------- sqrt, rsqrt */
qkt_tensor *qkt_sqrt(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "sqrt", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = QKT_M(sqrt)(X[i]);
    return unary_done(ctx, QKT_OP_SQRT, x, y, 0, 0);
}
/* dx += dy / (2 y)  (y = 0: +inf) */
void qkt__sqrt_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *Y = n->out->data;
    FOR_EACH dX[i] += dY[i] / (2 * Y[i]);
}

qkt_tensor *qkt_rsqrt(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "rsqrt", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = 1 / QKT_M(sqrt)(X[i]);
    return unary_done(ctx, QKT_OP_RSQRT, x, y, 0, 0);
}
/* y = x^-1/2: dx += dy (-1/2) x^-3/2 = -dy y^3 / 2  (x = 0: -inf) */
void qkt__rsqrt_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *Y = n->out->data;
    FOR_EACH dX[i] -= dY[i] * (Y[i] * Y[i] * Y[i]) / 2;
}

/* ---------------------------------------------------------------- pow */
qkt_tensor *qkt_pow(qkt_ctx *ctx, qkt_tensor *x, double p) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "pow", x);
    QKT_CHECK(isfinite(p), "pow: exponent %g is not finite", p);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data, pp = (qkt_real)p;
    if (p == 2) {
        FOR_EACH Y[i] = X[i] * X[i];
    } else {
        FOR_EACH Y[i] = QKT_M(pow)(X[i], pp);
    }
    return unary_done(ctx, QKT_OP_POW, x, y, p, 0);
}
/* dx += dy p x^(p-1); p = 0: y = 1 whatever x, grad 0 (NaN x: NaN) */
void qkt__pow_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *X = n->in[0]->data;
    qkt_real p = (qkt_real)n->p.f[0], pm1 = (qkt_real)(n->p.f[0] - 1);
    if (p == 0) {
        FOR_EACH dX[i] += isnan(X[i]) ? X[i] : 0;
    } else if (p == 1) {
        FOR_EACH dX[i] += dY[i];
    } else if (p == 2) {
        FOR_EACH dX[i] += dY[i] * 2 * X[i];
    } else {
        FOR_EACH dX[i] += dY[i] * p * QKT_M(pow)(X[i], pm1);
    }
}

/* ---------------------------------------------------------------- sigmoid, tanh, SiLU */
/* 1 / (1 + e^-x) without overflow: for x < 0 it is e^x / (1 + e^x) */
static inline qkt_real sigmoid1(qkt_real v) {
    if (v >= 0) return 1 / (1 + QKT_M(exp)(-v));
    qkt_real e = QKT_M(exp)(v); /* NaN lands here too and stays NaN */
    return e / (1 + e);
}

qkt_tensor *qkt_sigmoid(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "sigmoid", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = sigmoid1(X[i]);
    return unary_done(ctx, QKT_OP_SIGMOID, x, y, 0, 0);
}
/* dx += dy y (1 - y) */
void qkt__sigmoid_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *Y = n->out->data;
    FOR_EACH dX[i] += dY[i] * Y[i] * (1 - Y[i]);
}

qkt_tensor *qkt_tanh(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "tanh", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = QKT_M(tanh)(X[i]);
    return unary_done(ctx, QKT_OP_TANH, x, y, 0, 0);
}
/* dx += dy (1 - y^2) */
void qkt__tanh_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *Y = n->out->data;
    FOR_EACH dX[i] += dY[i] * (1 - Y[i] * Y[i]);
}

qkt_tensor *qkt_silu(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "silu", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = X[i] * sigmoid1(X[i]);
    return unary_done(ctx, QKT_OP_SILU, x, y, 0, 0);
}
/* y = x s, s = sigmoid(x): dx += dy (s + x s (1 - s)) = dy s (1 + x (1 - s)) */
void qkt__silu_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *X = n->in[0]->data;
    FOR_EACH {
        qkt_real s = sigmoid1(X[i]);
        dX[i] += dY[i] * s * (1 + X[i] * (1 - s));
    }
}

/* ---------------------------------------------------------------- abs, clamp */
qkt_tensor *qkt_abs(qkt_ctx *ctx, qkt_tensor *x) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "abs", x);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    FOR_EACH Y[i] = QKT_M(fabs)(X[i]);
    return unary_done(ctx, QKT_OP_ABS, x, y, 0, 0);
}
/* dx += dy sign(x): +1, -1, 0 at 0; a NaN x gets NaN */
void qkt__abs_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *X = n->in[0]->data;
    FOR_EACH {
        qkt_real v = X[i];
        dX[i] += v > 0 ? dY[i] : v < 0 ? -dY[i] : v == 0 ? 0 : v;
    }
}

qkt_tensor *qkt_clamp(qkt_ctx *ctx, qkt_tensor *x, double lo, double hi) {
    const int64_t N = x->size;
    qkt_tensor *y = unary_out(ctx, "clamp", x);
    QKT_CHECK(!isnan(lo) && !isnan(hi) && lo <= hi, "clamp: bounds [%g, %g] (need lo <= hi, no NaN)", lo, hi);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data, l = (qkt_real)lo, h = (qkt_real)hi;
    FOR_EACH {
        qkt_real v = X[i];
        Y[i] = v < l ? l : v > h ? h : v; /* NaN fails both tests: stays NaN */
    }
    return unary_done(ctx, QKT_OP_CLAMP, x, y, lo, hi);
}
/* dx += dy for lo <= x <= hi (the bounds pass the gradient, as PyTorch), else 0; NaN x: NaN */
void qkt__clamp_backward(qkt_ctx *ctx, qkt_node *n) {
    const int64_t N = n->out->size;
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *X = n->in[0]->data;
    qkt_real l = (qkt_real)n->p.f[0], h = (qkt_real)n->p.f[1];
    FOR_EACH {
        qkt_real v = X[i];
        dX[i] += v >= l && v <= h ? dY[i] : isnan(v) ? v : 0;
    }
}
