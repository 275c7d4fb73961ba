/* Causal multi-head self-attention with every scale variant. The score math
 * (scale, mask, softmax, P V, capture) is the fused qkt_attention op; this layer
 * adds the projections and hands the variant (its registry entry, nn/variants.c)
 * the choice of q, k and the per-head scale. */
#include <math.h>
#include <stdio.h>

#include "qkt_nn.h"

#define QKT_NAME_LEN 256

static double fixed_scale(const qkt_attn_variant *v, int C, int d) {
    return v->scale ? v->scale(v, C, d) : 1.0 / sqrt((double)d);
}

double qkt_attn_scale_at_init(qkt_attn_scale kind, int n_embd, int d_k) {
    const qkt_attn_variant *v = qkt_attn_variant_get(kind);
    QKT_CHECK(v, "unknown attn_scale %d", (int)kind);
    return fixed_scale(v, n_embd, d_k) * (v->init_scale ? v->init_scale(v, n_embd, d_k) : 1.0);
}

qkt_tensor *qkt_attn_param(qkt_attn *a, qkt_params *p, const char *suffix, int ndim, const int *shape, int flags) {
    QKT_CHECK(a->n_vp < QKT_ATTN_MAX_VP, "attention variant %s: more than %d tensors", a->variant->name, QKT_ATTN_MAX_VP);
    char name[QKT_NAME_LEN];
    int n = snprintf(name, sizeof name, "%s.%s", a->prefix, suffix);
    QKT_CHECK(n > 0 && n < (int)sizeof name, "parameter name %s.%s is too long", a->prefix, suffix);
    return a->vp[a->n_vp++] = qkt_params_add(p, name, ndim, shape, flags);
}

void qkt_attn_add(qkt_attn *a, qkt_params *p, const char *prefix, const qkt_gpt_config *c) {
    int C = c->n_embd, H = c->n_head, d = C / H;
    const qkt_attn_variant *v = qkt_attn_variant_get(c->attn_scale);
    QKT_CHECK(v, "unknown attn_scale %d", (int)c->attn_scale);
    char name[QKT_NAME_LEN];
    *a = (qkt_attn){.n_embd = C, .n_head = H, .kind = c->attn_scale, .variant = v};
    int n = snprintf(a->prefix, sizeof a->prefix, "%s", prefix);
    QKT_CHECK(n >= 0 && n < (int)sizeof a->prefix, "attention prefix %s is too long", prefix);
    a->scale = fixed_scale(v, C, d) * c->attn_temp;
    a->dropout = c->dropout;
    a->pos = c->pos;
    a->rope_base = c->rope_base > 0 ? c->rope_base : 10000.0;
    snprintf(name, sizeof name, "%s.c_attn", prefix);
    qkt_linear_add(&a->c_attn, p, name, C, 3 * C, c->bias);
    snprintf(name, sizeof name, "%s.c_proj", prefix);
    qkt_linear_add(&a->c_proj, p, name, C, C, c->bias);
    if (v->add) v->add(a, p, c);
}

qkt_tensor *qkt_attn_project(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x) {
    return qkt_linear_forward(ctx, &a->c_attn, x);
}

void qkt_attn_split(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *packed, qkt_attn_qk *io) {
    int C = a->n_embd;
    qkt_tensor *qkv[3];
    qkt_split(ctx, packed, 3, (int[]){C, C, C}, qkv); /* (B, T, C) each */
    io->packed = NULL, io->q = qkv[0], io->k = qkv[1], io->v = qkv[2];
}

/* The attention of x, then c_proj; r (or NULL) added in c_proj's product. */
static qkt_tensor *attn_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const qkt_attn_call *call, qkt_tensor *r) {
    int C = a->n_embd;
    QKT_CHECK(x->ndim == 3 && x->shape[2] == C, "attention input must be (B, T, %d), got %d dims, last %d", C, x->ndim,
              x->shape[x->ndim - 1]);
    qkt_attn_call none = {0};
    if (!call) call = &none;
    qkt_attn_opts o = {.scale = a->scale, .dropout = a->dropout, .key_pad = call->key_pad, .capture = call->capture,
                       .bias = call->capture ? call->capture->dz : NULL}; /* a dL/dz probe */
    qkt_attn_qk io = {.x = x};
    qkt_tensor *y;
    if (a->variant->advance && ctx->training && !ctx->no_grad && !call->hold_state) a->variant->advance(a);
    if (a->variant->forward) {
        a->variant->forward(ctx, a, &io);
        QKT_CHECK(io.packed || (io.q && io.k && io.v), "attention variant %s gave no q, k, v", a->variant->name);
    } else {
        io.packed = qkt_attn_project(ctx, a, x);
    }
    if (a->pos == QKT_POS_ROPE) { /* rotate q and k after the variant (a norm on q, k comes first) */
        if (io.packed) qkt_attn_split(ctx, a, io.packed, &io);
        io.q = qkt_rope(ctx, io.q, a->n_head, a->rope_base);
        io.k = qkt_rope(ctx, io.k, a->n_head, a->rope_base);
    }
    if (a->pos == QKT_POS_ALIBI) { /* Press et al.'s slopes, the geometric sequence from 2^(-8/H) */
        qkt_real *m = qkt_arena_alloc(&ctx->arena, (size_t)a->n_head * sizeof *m);
        qkt_alibi_slopes(a->n_head, m);
        o.alibi = m;
    }
    o.log_scale = io.log_scale;
    if (io.packed) y = qkt_attention_qkv(ctx, io.packed, a->n_head, &o); /* reads q, k, v in place: no split copies */
    else y = qkt_attention(ctx, io.q, io.k, io.v, a->n_head, &o);
    /* y (B, T, C), heads merged */
    return r ? qkt_linear_forward_add(ctx, &a->c_proj, y, r) : qkt_linear_forward(ctx, &a->c_proj, y);
}

qkt_tensor *qkt_attn_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const qkt_attn_call *call) {
    return attn_forward(ctx, a, x, call, NULL);
}

qkt_tensor *qkt_attn_forward_add(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const qkt_attn_call *call, qkt_tensor *r) {
    QKT_CHECK(r, "qkt_attn_forward_add: the residual r is NULL");
    return attn_forward(ctx, a, x, call, r);
}
