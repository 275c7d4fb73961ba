/* Elementwise ops: add, sub, mul, div (NumPy broadcasting), where and masked_fill, scale,
 * GELU, ReLU, dropout. */
#include "ops_generic.h"
#include "kern_table.h"

/* ---------------------------------------------------------------- add, sub, mul, div */
/* NumPy broadcasting (ops_generic.h). The fast path, the kernels' own loops, is the
 * GPT's every use: a with the output's shape and b a suffix of it (after dropping b's
 * leading 1s): same shapes, a bias row (C) on (B, T, C), (T, C) over B. Then b repeats
 * with period b->size over a's flat data. add and mul also take it with the operands
 * swapped ((C) + (B, T, C)). Everything else, and every div, takes the general strided
 * loops. */
static bool fast_path(const qkt_bcast *bc, const qkt_tensor *a, int kb) {
    if (a->size != (int64_t)bc->shape[0] * bc->shape[1] * bc->shape[2] * bc->shape[3]) return false;
    int d = 0;
    while (d < 4 && bc->dims[kb][d] == 1) d++;
    for (; d < 4; d++)
        if (bc->dims[kb][d] != bc->shape[d]) return false;
    return true;
}

static qkt_tensor *binary(qkt_ctx *ctx, qkt_op op, const char *name, qkt_tensor *a, qkt_tensor *b) {
    QKT_LIVE(ctx, name, a, b);
    qkt_bcast bc;
    QKT_CHECK_SHAPES(qkt__bcast_init(&bc, 2, (qkt_tensor *[]){a, b}), name, a, b);
    int shape[QKT_MAX_DIMS];
    qkt__bcast_shape(&bc, shape);
    qkt_tensor *y = qkt__op_output(ctx, bc.ndim, shape);
    /* p.i[0]: 0 general, 1 fast, 2 fast with a and b swapped */
    int fast = op == QKT_OP_DIV ? 0 : fast_path(&bc, a, 1) ? 1 : op != QKT_OP_SUB && fast_path(&bc, b, 0) ? 2 : 0;
    if (fast == 1)
        qkt__kern_get()->binary_forward(op, a->data, b->data, y->data, a->size, b->size);
    else if (fast == 2)
        qkt__kern_get()->binary_forward(op, b->data, a->data, y->data, b->size, a->size);
    else
        qkt__bcast_forward(&bc, op, a->data, b->data, NULL, y->data);
    qkt_node *n = qkt_op_record(ctx, op, y, 2, (qkt_tensor *[]){a, b});
    if (n) n->p.i[0] = fast;
    qkt_op_done(ctx, op, y);
    return y;
}

qkt_tensor *qkt_add(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_ADD, "add", a, b); }
qkt_tensor *qkt_sub(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_SUB, "sub", a, b); }
qkt_tensor *qkt_mul(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_MUL, "mul", a, b); }
qkt_tensor *qkt_div(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b) { return binary(ctx, QKT_OP_DIV, "div", a, b); }

/* The general path's backward: each input's grad sums its terms over the dims it was
 * broadcast along (qkt__bcast_reduce).
 *   a + b: da = dy, db = dy;  a - b: da = dy, db = -dy;  a * b: da = dy b, db = dy a;
 *   a / b: da = dy / b, db = -dy a / b^2 */
static void binary_backward_general(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *a = n->in[0], *b = n->in[1];
    qkt_bcast bc;
    qkt__bcast_init(&bc, 2, n->in);
    const qkt_real *dY = n->out->grad;
    qkt_op op = n->op;
    if (qkt__needs_grad(a)) {
        qkt_bc_term t = op == QKT_OP_MUL ? QKT_BC_MUL : op == QKT_OP_DIV ? QKT_BC_DIV : QKT_BC_DY;
        qkt__bcast_reduce(&bc, 0, t, dY, 1, b->data, a->data, qkt_grad(ctx, a));
    }
    if (qkt__needs_grad(b)) {
        qkt_bc_term t = op == QKT_OP_ADD ? QKT_BC_DY : op == QKT_OP_SUB ? QKT_BC_NEG_DY : op == QKT_OP_MUL ? QKT_BC_MUL : QKT_BC_DIV_DEN;
        qkt__bcast_reduce(&bc, 1, t, dY, 0, a->data, b->data, qkt_grad(ctx, b));
    }
}

/* The fast path's backward (b a suffix of a's shape; for a swapped add or mul, a and b
 * below are the inputs 1 and 0):
 * y = a +- b: da += dy; db += +-sum over broadcast rows of dy.
 * y = a * b:  da += dy * b; db += sum over rows of dy * a. */
static void binary_backward(qkt_ctx *ctx, qkt_node *n) {
    if (!n->p.i[0]) {
        binary_backward_general(ctx, n);
        return;
    }
    bool swap = n->p.i[0] == 2;
    qkt_tensor *a = n->in[swap], *b = n->in[!swap];
    const qkt_real *dY = n->out->grad;
    int64_t na = a->size, nb = b->size, rows = na / nb;
    qkt_op op = n->op;
    if (qkt__needs_grad(b)) {
        qkt_real sign = op == QKT_OP_SUB ? -1 : 1;
        if (rows == 1 && op != QKT_OP_MUL) { /* same shapes: no reduction */
            bool fresh;
            qkt_real *dB = qkt__grad_out(ctx, b, &fresh);
            bool team = qkt_parallel_worth(nb > QKT_PAR_MIN);
            if (fresh) QKT_PAR_FOR_SIMD(team, j, nb, dB[j] = sign * dY[j]);
            else QKT_PAR_FOR_SIMD(team, j, nb, dB[j] += sign * dY[j]);
        } else if (rows == 1) {
            qkt_real *dB = qkt_grad(ctx, b);
            const qkt_real *A = a->data;
            QKT_PAR_FOR_SIMD(qkt_parallel_worth(nb > QKT_PAR_MIN), j, nb, dB[j] += dY[j] * A[j]);
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
void qkt__div_backward(qkt_ctx *ctx, qkt_node *n) { binary_backward_general(ctx, n); }

/* ---------------------------------------------------------------- where, masked_fill */
qkt_tensor *qkt_tensor_scalar(qkt_ctx *ctx, double v) {
    qkt_tensor *t = qkt_tensor_new(ctx, 0, NULL);
    t->data[0] = (qkt_real)v;
    return t;
}

qkt_tensor *qkt_where(qkt_ctx *ctx, qkt_tensor *cond, qkt_tensor *a, qkt_tensor *b) {
    QKT_LIVE(ctx, "where", cond, a, b);
    qkt_bcast bc;
    if (!qkt__bcast_init(&bc, 3, (qkt_tensor *[]){cond, a, b})) {
        char s0[64], s1[64], s2[64];
        QKT_CHECK(false, "where: shapes %s (cond), %s (a) and %s (b) do not broadcast", qkt_shape_str(cond, s0, sizeof s0),
                  qkt_shape_str(a, s1, sizeof s1), qkt_shape_str(b, s2, sizeof s2));
    }
    int shape[QKT_MAX_DIMS];
    qkt__bcast_shape(&bc, shape);
    qkt_tensor *y = qkt__op_output(ctx, bc.ndim, shape);
    qkt__bcast_forward(&bc, QKT_OP_WHERE, cond->data, a->data, b->data, y->data);
    qkt_op_record(ctx, QKT_OP_WHERE, y, 3, (qkt_tensor *[]){cond, a, b});
    qkt_op_done(ctx, QKT_OP_WHERE, y);
    return y;
}
/* da = dy where cond != 0, db = dy where cond == 0 (summed over broadcast dims); cond none */
void qkt__where_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_bcast bc;
    qkt__bcast_init(&bc, 3, n->in);
    const qkt_real *dY = n->out->grad, *cond = n->in[0]->data;
    if (qkt__needs_grad(n->in[1])) qkt__bcast_reduce(&bc, 1, QKT_BC_IF_TRUE, dY, 0, cond, NULL, qkt_grad(ctx, n->in[1]));
    if (qkt__needs_grad(n->in[2])) qkt__bcast_reduce(&bc, 2, QKT_BC_IF_FALSE, dY, 0, cond, NULL, qkt_grad(ctx, n->in[2]));
}

qkt_tensor *qkt_masked_fill(qkt_ctx *ctx, qkt_tensor *x, const uint8_t *mask, int ndim, const int *shape,
                            double value) {
    QKT_LIVE(ctx, "masked_fill", x);
    qkt_tensor *m = qkt_tensor_new(ctx, ndim, shape);
    for (int64_t i = 0; i < m->size; i++) m->data[i] = mask[i] != 0;
    qkt_bcast bc;
    bool ok = qkt__bcast_init(&bc, 2, (qkt_tensor *[]){x, m});
    for (int d = 0; ok && d < 4; d++) ok = bc.shape[d] == bc.dims[0][d];
    ok = ok && m->ndim <= x->ndim;
    QKT_CHECK_SHAPES(ok, "masked_fill (mask must broadcast to x)", x, m);
    return qkt_where(ctx, m, qkt_tensor_scalar(ctx, value), x);
}

/* ---------------------------------------------------------------- scale */
qkt_tensor *qkt_scale(qkt_ctx *ctx, qkt_tensor *x, double c) {
    QKT_LIVE(ctx, "scale", x);
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    qkt_real cc = (qkt_real)c;
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    QKT_PAR_FOR_SIMD(qkt_parallel_worth(x->size > QKT_PAR_MIN), i, x->size, Y[i] = cc * X[i]);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_SCALE, y, 1, &x);
    if (n) n->p.f[0] = c;
    qkt_op_done(ctx, QKT_OP_SCALE, y);
    return y;
}
/* dx += c dy */
void qkt__scale_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dX = qkt_grad(ctx, n->in[0]), c = (qkt_real)n->p.f[0];
    const qkt_real *dY = n->out->grad;
    QKT_PAR_FOR_SIMD(qkt_parallel_worth(n->out->size > QKT_PAR_MIN), i, n->out->size, dX[i] += c * dY[i]);
}

/* ---------------------------------------------------------------- GELU (tanh form) */
qkt_tensor *qkt_gelu(qkt_ctx *ctx, qkt_tensor *x) {
    QKT_LIVE(ctx, "gelu", x);
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
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
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), i, x->size, Y[i] = X[i] > 0 || isnan(X[i]) ? X[i] : 0); /* NaN passes */
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
    if (!ctx->training || p == 0) { /* identity: no node, no copy */
        qkt__call_set(NULL, NULL, false);
        return x;
    }
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, x->shape);
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
