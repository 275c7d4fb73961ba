/* Causal multi-head self-attention with every scale variant. The score math
 * (scale, mask, softmax, P V, capture) is the fused qkt_attention op; this layer
 * adds the projections, the qk LayerNorm and the choice of scale. */
#include <math.h>
#include <stdio.h>

#include "qkt_nn.h"

#define QKT_NAME_LEN 256

/* The fixed factor of the scale per variant (learned: its exp(log_scale) is applied
 * by the op on top). attn_temp multiplies every variant. */
static double variant_scale(qkt_attn_scale kind, int C, int d) {
    switch (kind) {
    case QKT_ATTN_SQRT_DK:
    case QKT_ATTN_QK_LAYERNORM: return 1.0 / sqrt((double)d);
    case QKT_ATTN_NONE:
    case QKT_ATTN_LEARNED: return 1.0;
    case QKT_ATTN_DK: return 1.0 / d;
    case QKT_ATTN_SQRT_DMODEL: return 1.0 / sqrt((double)C);
    default: QKT_CHECK(0, "unknown attn_scale %d", (int)kind);
    }
}

double qkt_attn_scale_at_init(qkt_attn_scale kind, int n_embd, int d_k) {
    /* learned: the fixed factor is 1 and exp(log_scale) starts at the standard 1/sqrt(d_k) */
    return kind == QKT_ATTN_LEARNED ? variant_scale(QKT_ATTN_SQRT_DK, n_embd, d_k) : variant_scale(kind, n_embd, d_k);
}

void qkt_attn_add(qkt_attn *a, qkt_params *p, const char *prefix, const qkt_gpt_config *c) {
    int C = c->n_embd, H = c->n_head, d = C / H;
    char name[QKT_NAME_LEN];
    *a = (qkt_attn){.n_embd = C, .n_head = H, .kind = c->attn_scale};
    a->scale = variant_scale(c->attn_scale, C, d) * c->attn_temp;
    a->dropout = c->dropout;
    snprintf(name, sizeof name, "%s.c_attn", prefix);
    qkt_linear_add(&a->c_attn, p, name, C, 3 * C, c->bias);
    snprintf(name, sizeof name, "%s.c_proj", prefix);
    qkt_linear_add(&a->c_proj, p, name, C, C, c->bias);
    if (c->attn_scale == QKT_ATTN_LEARNED) {
        snprintf(name, sizeof name, "%s.log_scale", prefix);
        a->log_scale = qkt_params_add(p, name, 1, (int[]){H}, 0);
    } else if (c->attn_scale == QKT_ATTN_QK_LAYERNORM) {
        snprintf(name, sizeof name, "%s.q_ln", prefix);
        qkt_ln_add(&a->q_ln, p, name, d, c->bias, c->ln_eps);
        snprintf(name, sizeof name, "%s.k_ln", prefix);
        qkt_ln_add(&a->k_ln, p, name, d, c->bias, c->ln_eps);
    }
}

/* LayerNorm over each head's d_k channels: (B, T, C) viewed as (B, T, H, d), one
 * (d) weight and bias shared by the heads. */
static qkt_tensor *head_ln(qkt_ctx *ctx, const qkt_ln *ln, qkt_tensor *x, int H) {
    int B = x->shape[0], T = x->shape[1], C = x->shape[2];
    qkt_tensor *x4 = qkt_reshape(ctx, x, 4, (int[]){B, T, H, C / H});
    return qkt_reshape(ctx, qkt_ln_forward(ctx, ln, x4), 3, (int[]){B, T, C});
}

qkt_tensor *qkt_attn_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const uint8_t *key_pad,
                             qkt_attn_capture *capture) {
    int C = a->n_embd;
    QKT_CHECK(x->ndim == 3 && x->shape[2] == C, "attention input must be (B, T, %d), got %d dims, last %d", C, x->ndim,
              x->shape[x->ndim - 1]);
    qkt_attn_opts o = {.scale = a->scale, .dropout = a->dropout, .log_scale = a->log_scale, .key_pad = key_pad, .capture = capture};
    qkt_tensor *packed = qkt_linear_forward(ctx, &a->c_attn, x), *y; /* (B, T, 3C) = [q | k | v] */
    if (a->kind == QKT_ATTN_QK_LAYERNORM) {
        qkt_tensor *qkv[3];
        qkt_split(ctx, packed, 3, (int[]){C, C, C}, qkv); /* (B, T, C) each */
        qkv[0] = head_ln(ctx, &a->q_ln, qkv[0], a->n_head);
        qkv[1] = head_ln(ctx, &a->k_ln, qkv[1], a->n_head);
        y = qkt_attention(ctx, qkv[0], qkv[1], qkv[2], a->n_head, &o);
    } else {
        y = qkt_attention_qkv(ctx, packed, a->n_head, &o); /* reads q, k, v in place: no split copies */
    }
    return qkt_linear_forward(ctx, &a->c_proj, y); /* y (B, T, C), heads merged */
}
