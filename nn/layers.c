/* The simple layers: Linear, Embedding, LayerNorm, MLP. Each registers its
 * parameters under nanoGPT's names and records ordinary autograd ops. */
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
}

/* x (..., in) W^T (in, out) + b as one fused op: one gemm over all leading dims, the
 * bias added inside it (no separate x W^T tensor or bias pass). */
qkt_tensor *qkt_linear_forward(qkt_ctx *ctx, const qkt_linear *l, qkt_tensor *x) {
    return qkt_affine(ctx, x, l->weight, l->bias);
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
    ln->weight = add_param(p, prefix, "weight", 1, (int[]){C}, 0);
    ln->bias = bias ? add_param(p, prefix, "bias", 1, (int[]){C}, 0) : NULL;
    ln->eps = eps;
}

qkt_tensor *qkt_ln_forward(qkt_ctx *ctx, const qkt_ln *ln, qkt_tensor *x) {
    return qkt_layernorm(ctx, x, ln->weight, ln->bias, ln->eps);
}

/* ---------------------------------------------------------------- MLP */
void qkt_mlp_add(qkt_mlp *m, qkt_params *p, const char *prefix, int C, bool bias) {
    char name[QKT_NAME_LEN];
    snprintf(name, sizeof name, "%s.c_fc", prefix);
    qkt_linear_add(&m->c_fc, p, name, C, 4 * C, bias);
    snprintf(name, sizeof name, "%s.c_proj", prefix);
    qkt_linear_add(&m->c_proj, p, name, 4 * C, C, bias);
}

qkt_tensor *qkt_mlp_forward(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x) {
    return qkt_linear_forward(ctx, &m->c_proj, qkt_gelu(ctx, qkt_linear_forward(ctx, &m->c_fc, x)));
}
