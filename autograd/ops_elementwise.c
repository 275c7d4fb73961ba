/* Elementwise ops: add, sub, mul (b broadcast over a's leading dims), scale,
 * GELU, ReLU, dropout. */
#include "kern.h"
#include "ops_internal.h"

/* b must have a's shape or a's trailing dims. Returns the broadcast period (b->size). */
static int64_t bcast_check(const char *op, const qkt_tensor *a, const qkt_tensor *b) {
    bool ok = b->ndim <= a->ndim && a->size % b->size == 0;
    for (int i = 0; ok && i < b->ndim; i++) ok = b->shape[b->ndim - 1 - i] == a->shape[a->ndim - 1 - i];
    QKT_CHECK_SHAPES(ok, op, a, b);
    return b->size;
}

static qkt_tensor *binary(qkt_ctx *ctx, qkt_op op, const char *name, qkt_tensor *a, qkt_tensor *b) {
    QKT_LIVE(ctx, name, a, b);
    int64_t nb = bcast_check(name, a, b), na = a->size;
    qkt_tensor *y = qkt_op_output(ctx, a->ndim, a->shape);
    qkt__kern_get()->binary_forward(op, a->data, b->data, y->data, na, nb);
    qkt_op_record(ctx, op, y, 2, (qkt_tensor *[]){a, b});
    qkt_op_done(ctx, op, y);
    return y;
}

qkt_tensor *qkt_add(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_ADD, "add", a, b); }
qkt_tensor *qkt_sub(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_SUB, "sub", a, b); }
qkt_tensor *qkt_mul(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_MUL, "mul", a, b); }

/* y = a +- b: da += dy; db += +-sum over broadcast rows of dy.
 * y = a * b:  da += dy * b; db += sum over rows of dy * a. */
static void binary_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *a = n->in[0], *b = n->in[1];
    const qkt_real *dY = n->out->grad;
    int64_t na = a->size, nb = b->size, rows = na / nb;
    qkt_op op = n->op;
    if (qkt__needs_grad(b)) {
        qkt_real sign = op == QKT_OP_SUB ? -1 : 1;
        if (rows == 1 && op != QKT_OP_MUL) { /* same shapes: no reduction */
            bool fresh;
            qkt_real *dB = qkt__grad_out(ctx, b, &fresh);
            if (fresh) {
#pragma omp parallel for simd if (nb > QKT_PAR_MIN)
                for (int64_t j = 0; j < nb; j++) dB[j] = sign * dY[j];
            } else {
#pragma omp parallel for simd if (nb > QKT_PAR_MIN)
                for (int64_t j = 0; j < nb; j++) dB[j] += sign * dY[j];
            }
        } else if (rows == 1) {
            qkt_real *dB = qkt_grad(ctx, b);
#pragma omp parallel for simd if (nb > QKT_PAR_MIN)
            for (int64_t j = 0; j < nb; j++) dB[j] += dY[j] * a->data[j];
        } else {
            qkt__colsum(ctx, rows, nb, dY, op == QKT_OP_MUL ? a->data : NULL, NULL, NULL, sign, qkt_grad(ctx, b));
        }
    }
    /* A residual add (same shapes) whose a has no grad yet: a's grad is dy itself. The
     * buffer changes hands instead of being copied (y's grad is released after this
     * backward anyway; with keep_grads both must stay). */
    if (qkt__needs_grad(a) && op == QKT_OP_ADD && na == nb && !a->grad && !a->is_param && !ctx->keep_grads &&
        a != b && n->out->grad != NULL) {
        a->grad = n->out->grad;
        n->out->grad = NULL;
        return;
    }
    if (qkt__needs_grad(a)) {
        bool fresh;
        qkt_real *dA = qkt__grad_out(ctx, a, &fresh);
        qkt__kern_get()->binary_backward_a(op, fresh, dY, b->data, dA, na, nb);
    }
}
void qkt__add_backward(qkt_ctx *ctx, qkt_node *n) { binary_backward(ctx, n); }
void qkt__sub_backward(qkt_ctx *ctx, qkt_node *n) { binary_backward(ctx, n); }
void qkt__mul_backward(qkt_ctx *ctx, qkt_node *n) { binary_backward(ctx, n); }

/* ---------------------------------------------------------------- scale */
qkt_tensor *qkt_scale(qkt_ctx *ctx, qkt_tensor *x, double c) {
    QKT_LIVE(ctx, "scale", x);
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    qkt_real cc = (qkt_real)c;
#pragma omp parallel for simd if (x->size > QKT_PAR_MIN)
    for (int64_t i = 0; i < x->size; i++) y->data[i] = cc * x->data[i];
    qkt_node *n = qkt_op_record(ctx, QKT_OP_SCALE, y, 1, &x);
    if (n) n->p.f[0] = c;
    qkt_op_done(ctx, QKT_OP_SCALE, y);
    return y;
}
/* dx += c dy */
void qkt__scale_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dX = qkt_grad(ctx, n->in[0]), c = (qkt_real)n->p.f[0];
    const qkt_real *dY = n->out->grad;
#pragma omp parallel for simd if (n->out->size > QKT_PAR_MIN)
    for (int64_t i = 0; i < n->out->size; i++) dX[i] += c * dY[i];
}

/* ---------------------------------------------------------------- GELU (tanh form) */
qkt_tensor *qkt_gelu(qkt_ctx *ctx, qkt_tensor *x) {
    QKT_LIVE(ctx, "gelu", x);
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    qkt__kern_get()->gelu_forward(x->data, y->data, x->size);
    qkt_op_record(ctx, QKT_OP_GELU, y, 1, &x);
    qkt_op_done(ctx, QKT_OP_GELU, y);
    return y;
}
/* u = k (x + c x^3), t = tanh u:  dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
void qkt__gelu_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    bool fresh;
    qkt_real *dX = qkt__grad_out(ctx, x, &fresh);
    qkt__kern_get()->gelu_backward(fresh, x->data, n->out->grad, dX, x->size);
}

/* ---------------------------------------------------------------- ReLU */
qkt_tensor *qkt_relu(qkt_ctx *ctx, qkt_tensor *x) {
    QKT_LIVE(ctx, "relu", x);
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
#pragma omp parallel for if (x->size > QKT_PAR_MIN)
    for (int64_t i = 0; i < x->size; i++) y->data[i] = x->data[i] > 0 || isnan(x->data[i]) ? x->data[i] : 0; /* NaN passes */
    qkt_op_record(ctx, QKT_OP_RELU, y, 1, &x);
    qkt_op_done(ctx, QKT_OP_RELU, y);
    return y;
}
/* dx += dy * [x > 0]; a NaN x passes NaN on (as the forward does) */
void qkt__relu_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = n->out->grad;
    for (int64_t i = 0; i < x->size; i++)
        if (x->data[i] > 0) dX[i] += dY[i];
        else if (isnan(x->data[i])) dX[i] = x->data[i];
}

/* ---------------------------------------------------------------- dropout */
qkt_tensor *qkt_dropout(qkt_ctx *ctx, qkt_tensor *x, double p) {
    QKT_LIVE(ctx, "dropout", x);
    QKT_CHECK(p >= 0 && p < 1, "dropout probability %g not in [0, 1)", p);
    if (!ctx->training || p == 0) return x; /* identity: no node, no copy */
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    /* The mask holds 0 or 1/(1-p); drawn serially so the result is independent of threads. */
    qkt_real *mask = qkt_arena_alloc(&ctx->arena, (size_t)x->size * sizeof(qkt_real));
    qkt_real keep = (qkt_real)(1.0 / (1.0 - p));
    for (int64_t i = 0; i < x->size; i++) mask[i] = qkt_rng_uniform(&ctx->rng) >= p ? keep : 0;
    for (int64_t i = 0; i < x->size; i++) y->data[i] = x->data[i] * mask[i];
    qkt_node *n = qkt_op_record(ctx, QKT_OP_DROPOUT, y, 1, &x);
    if (n) n->saved = mask;
    qkt_op_done(ctx, QKT_OP_DROPOUT, y);
    return y;
}
/* dx += dy * mask */
void qkt__dropout_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad, *mask = n->saved;
    for (int64_t i = 0; i < n->out->size; i++) dX[i] += dY[i] * mask[i];
}
