/* The simple layers: Linear, Embedding, LayerNorm, MLP. Each registers its
 * parameters under nanoGPT's names and records ordinary autograd ops. */
#include <math.h>
#include <stdio.h>

#include "qkt_nn.h"

#define QKT_NAME_LEN 256

static qkt_tensor *add_param(qkt_params *p, const char *prefix, const char *suffix, int ndim, const int *shape,
                             int flags) {
    char name[QKT_NAME_LEN];
    int n = snprintf(name, sizeof name, "%s%s%s", prefix, *prefix && *suffix ? "." : "", suffix);
    QKT_CHECK(n > 0 && n < (int)sizeof name, "parameter name %s.%s is too long", prefix, suffix);
    return qkt_params_add(p, name, ndim, shape, flags);
}

/* ---------------------------------------------------------------- Linear */
void qkt_linear_add(qkt_linear *l, qkt_params *p, const char *prefix, int in, int out, bool bias) {
    l->weight = add_param(p, prefix, "weight", 2, (int[]){out, in}, QKT_PARAM_DECAY);
    l->bias = bias ? add_param(p, prefix, "bias", 1, (int[]){out}, 0) : NULL;
    l->sigma_gamma = l->sigma_u = NULL;
}

/* x (..., in) W^T (in, out) + b as one fused op: one gemm over all leading dims, the
 * bias added inside it (no separate x W^T tensor or bias pass). */
qkt_tensor *qkt_linear_forward(qkt_ctx *ctx, const qkt_linear *l, qkt_tensor *x) {
    return qkt_affine(ctx, x, qkt_linear_weight(ctx, l), l->bias);
}

qkt_tensor *qkt_linear_forward_add(qkt_ctx *ctx, const qkt_linear *l, qkt_tensor *x, qkt_tensor *r) {
    return qkt_affine_add(ctx, x, qkt_linear_weight(ctx, l), l->bias, r);
}

/* ---------------------------------------------------------------- Embedding */
void qkt_embed_add(qkt_embed *e, qkt_params *p, const char *name, int n, int C) {
    e->weight = add_param(p, name, "", 2, (int[]){n, C}, QKT_PARAM_DECAY);
}

qkt_tensor *qkt_embed_forward(qkt_ctx *ctx, const qkt_embed *e, const int32_t *idx, int ndim, const int *shape) {
    return qkt_embedding(ctx, e->weight, idx, ndim, shape);
}

/* ---------------------------------------------------------------- LayerNorm */
void qkt_ln_add(qkt_ln *ln, qkt_params *p, const char *prefix, int C, bool bias, double eps) {
    ln->rms = false;
    ln->weight = add_param(p, prefix, "weight", 1, (int[]){C}, 0);
    ln->bias = bias ? add_param(p, prefix, "bias", 1, (int[]){C}, 0) : NULL;
    ln->eps = eps;
}

void qkt_norm_add(qkt_ln *ln, qkt_params *p, const char *prefix, int C, const qkt_gpt_config *c) {
    if (c->norm == QKT_NORM_RMSNORM) {
        ln->weight = add_param(p, prefix, "weight", 1, (int[]){C}, 0);
        ln->bias = NULL;
        ln->eps = c->ln_eps;
        ln->rms = true;
    } else {
        qkt_ln_add(ln, p, prefix, C, c->bias, c->ln_eps);
        ln->rms = false;
    }
}

qkt_tensor *qkt_ln_forward(qkt_ctx *ctx, const qkt_ln *ln, qkt_tensor *x) {
    if (ln->rms) return qkt_rmsnorm(ctx, x, ln->weight, ln->eps);
    return qkt_layernorm(ctx, x, ln->weight, ln->bias, ln->eps);
}

/* ---------------------------------------------------------------- MLP */
void qkt_mlp_add_kind(qkt_mlp *m, qkt_params *p, const char *prefix, int C, bool bias, qkt_mlp_kind kind) {
    char name[QKT_NAME_LEN];
    int F = kind == QKT_MLP_SWIGLU ? qkt_swiglu_hidden(C) : 4 * C, fc = kind == QKT_MLP_SWIGLU ? 2 * F : F;
    m->swiglu = kind == QKT_MLP_SWIGLU;
    snprintf(name, sizeof name, "%s.c_fc", prefix);
    qkt_linear_add(&m->c_fc, p, name, C, fc, bias);
    snprintf(name, sizeof name, "%s.c_proj", prefix);
    qkt_linear_add(&m->c_proj, p, name, F, C, bias);
}

void qkt_mlp_add(qkt_mlp *m, qkt_params *p, const char *prefix, int C, bool bias) {
    qkt_mlp_add_kind(m, p, prefix, C, bias, QKT_MLP_GELU);
}

/* GELU: c_fc and the GELU as one op (qkt_affine_gelu: the same bits, one pass fewer).
 * r (or NULL): added in c_proj's product. */
static qkt_tensor *mlp(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x, qkt_tensor *r) {
    qkt_tensor *h = m->swiglu ? qkt_swiglu(ctx, qkt_linear_forward(ctx, &m->c_fc, x))
                              : qkt_affine_gelu(ctx, x, qkt_linear_weight(ctx, &m->c_fc), m->c_fc.bias);
    return r ? qkt_linear_forward_add(ctx, &m->c_proj, h, r) : qkt_linear_forward(ctx, &m->c_proj, h);
}

qkt_tensor *qkt_mlp_forward(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x) { return mlp(ctx, m, x, NULL); }

qkt_tensor *qkt_mlp_forward_add(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x, qkt_tensor *r) {
    QKT_CHECK(r, "qkt_mlp_forward_add: the residual r is NULL");
    return mlp(ctx, m, x, r);
}

/* ---------------------------------------------------------------- SwiGLU */
/* Row r of the backward: with s = sigmoid(a), dy/da = b s (1 + a (1 - s)), dy/db = a s. */
static void swiglu_backward_row(const qkt_real *X, const qkt_real *G, qkt_real *dX, int64_t r, int F) {
    const qkt_real *a = X + r * 2 * F, *b = a + F, *g = G + r * F;
    qkt_real *da = dX + r * 2 * F, *db = da + F;
    for (int j = 0; j < F; j++) {
        double s = 1.0 / (1.0 + exp(-(double)a[j]));
        da[j] += (qkt_real)(g[j] * b[j] * s * (1.0 + a[j] * (1.0 - s)));
        db[j] += (qkt_real)(g[j] * a[j] * s);
    }
}

/* Rows independent; on the OpenMP team only where it runs on more than one thread
 * (qkt_parallel_worth), as a custom op's loops should. */
static void swiglu_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!x->requires_grad) return;
    int F = n->out->shape[n->out->ndim - 1];
    int64_t rows = n->out->size / F;
    const qkt_real *X = x->data, *G = n->out->grad;
    qkt_real *dX = qkt_grad(ctx, x);
    if (qkt_parallel_worth(x->size > (1 << 15))) {
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; r++) swiglu_backward_row(X, G, dX, r, F);
    } else {
        for (int64_t r = 0; r < rows; r++) swiglu_backward_row(X, G, dX, r, F);
    }
}

/* Row r of y = silu(a) b. */
static void swiglu_row(const qkt_real *X, qkt_real *Y, int64_t r, int F) {
    const qkt_real *a = X + r * 2 * F, *b = a + F;
    for (int j = 0; j < F; j++) Y[r * F + j] = (qkt_real)((double)a[j] / (1.0 + exp(-(double)a[j])) * b[j]);
}

qkt_tensor *qkt_swiglu(qkt_ctx *ctx, qkt_tensor *x) {
    qkt_op_check_inputs(ctx, "swiglu", 1, &x);
    QKT_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] % 2 == 0, "swiglu: the last axis (%d) must be even",
              x->ndim ? x->shape[x->ndim - 1] : 0);
    int shape[QKT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    int F = shape[x->ndim - 1] /= 2;
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, shape);
    int64_t rows = y->size / F;
    const qkt_real *X = x->data;
    qkt_real *Y = y->data;
    if (qkt_parallel_worth(x->size > (1 << 15))) {
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; r++) swiglu_row(X, Y, r, F);
    } else {
        for (int64_t r = 0; r < rows; r++) swiglu_row(X, Y, r, F);
    }
    qkt_op_record_custom(ctx, "swiglu", swiglu_backward, y, 1, (qkt_tensor *[]){x});
    return y;
}
