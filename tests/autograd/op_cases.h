/* The op cases shared by the float64 gradient checks (test_gc_ops.c) and the
 * float32-vs-float64 forward comparison (test_ops_f32.c). Shapes include odd sizes
 * (1, 3, 7, 33), broadcasting, masks, and an input used twice. Each case states its
 * tolerance on the gradcheck metric (gradcheck.h); in float64 with h = 1e-6 the
 * observed errors are ~1e-9, so 1e-6 leaves margin yet catches any wrong term. */
#ifndef QKT_OP_CASES_H
#define QKT_OP_CASES_H
#include <math.h>

#include "qkt_gradcheck.h"

#define TOL 1e-6

static qkt_tensor *f_matmul(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return qkt_matmul(ctx, x[0], x[1], c->flags & 1, c->flags & 2);
}
static qkt_tensor *f_affine(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return qkt_affine(ctx, x[0], x[1], c->flags ? NULL : x[2]);
}
/* A chain whose intermediate grads are all new when first written (the ops store
 * instead of accumulating into unzeroed buffers): affine, GELU, LayerNorm, mul, add,
 * attention on a packed qkv, each on a computed input. x0 (2, 5, 6), W (18, 6), b (18). */
static qkt_tensor *f_fresh_chain(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *h = qkt_scale(ctx, x[0], 1.3);
    qkt_tensor *qkv = qkt_affine(ctx, qkt_layernorm(ctx, h, NULL, NULL, 1e-5), x[1], x[2]); /* (2, 5, 18) */
    qkt_tensor *y = qkt_attention_qkv(ctx, qkt_gelu(ctx, qkv), 2, &(qkt_attn_opts){.scale = 0.6}); /* (2, 5, 6) */
    qkt_tensor *z = qkt_layernorm(ctx, qkt_add(ctx, y, h), NULL, NULL, 1e-5);
    return qkt_mul(ctx, z, qkt_scale(ctx, h, 0.7));
}
static qkt_tensor *f_add(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_add(ctx, x[0], x[1]); }
static qkt_tensor *f_sub(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_sub(ctx, x[0], x[1]); }
static qkt_tensor *f_mul(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_mul(ctx, x[0], x[1]); }
static qkt_tensor *f_scale(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_scale(ctx, x[0], -1.7); }
static qkt_tensor *f_sum(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_sum(ctx, qkt_mul(ctx, x[0], x[0])); }
static qkt_tensor *f_mean(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_mean(ctx, qkt_mul(ctx, x[0], x[0])); }
/* reshape then a broadcast op that depends on the new shape */
static qkt_tensor *f_reshape(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_mul(ctx, qkt_reshape(ctx, x[0], 2, (int[]){7, 6}), x[1]);
}
static qkt_tensor *f_permute(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    static const int perms[3][4] = {{0, 2, 1, 3}, {3, 1, 0, 2}, {2, 0, 1, 3}};
    return qkt_mul(ctx, qkt_permute(ctx, x[0], perms[c->flags]), qkt_permute(ctx, x[0], perms[c->flags]));
}
static qkt_tensor *f_transpose(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_matmul(ctx, qkt_transpose(ctx, x[0], 0, 1), x[1], false, false);
}
/* split into 3 parts, recombine as p2 * p0 + p1 (each part used, unequal widths) */
static qkt_tensor *f_split(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *p[3];
    qkt_split(ctx, x[0], 3, (int[]){11, 11, 11}, p);
    return qkt_concat(ctx, 2, (qkt_tensor *[]){qkt_add(ctx, qkt_mul(ctx, p[2], p[0]), p[1]), p[1]});
}
static qkt_tensor *f_concat(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_concat(ctx, 3, (qkt_tensor *[]){x[0], x[1], x[2]});
}
static const int32_t emb_idx[12] = {0, 6, 3, 3, 1, 6, 6, 2, 0, 5, 4, 3}; /* repeats: scatter-add */
static qkt_tensor *f_embedding(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_embedding(ctx, x[0], emb_idx, 2, (int[]){3, 4});
}
static qkt_tensor *f_gelu(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_gelu(ctx, qkt_scale(ctx, x[0], 2.0)); }
static qkt_tensor *f_relu(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_relu(ctx, x[0]); }
static qkt_tensor *f_dropout(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_dropout(ctx, x[0], 0.3); }
static qkt_tensor *f_softmax(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    if (c->flags == QKT_MASK_ADDITIVE) {
        /* mask (5, 7): some -inf, some finite, and row 3 fully blocked */
        qkt_tensor *m = qkt_tensor_2d(ctx, 5, 7);
        for (int i = 0; i < 35; i++) m->data[i] = (i % 4 == 1) ? -INFINITY : (qkt_real)(0.1 * (i % 5) - 0.2);
        for (int j = 0; j < 7; j++) m->data[3 * 7 + j] = -INFINITY;
        return qkt_softmax(ctx, x[0], 0.8, QKT_MASK_ADDITIVE, m);
    }
    return qkt_softmax(ctx, x[0], c->flags == QKT_MASK_CAUSAL ? 1.3 : 0.7, c->flags, NULL);
}
static qkt_tensor *f_log_softmax(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_log_softmax(ctx, x[0]); }
static const int32_t ce_targets[12] = {3, -1, 0, 6, 6, -1, 1, 2, -1, 5, 4, 0};
static qkt_tensor *f_cross_entropy(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_cross_entropy(ctx, x[0], ce_targets, NULL);
}
static qkt_tensor *f_layernorm(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    if (c->flags) return qkt_layernorm(ctx, x[0], NULL, NULL, 1e-5);
    return qkt_layernorm(ctx, x[0], x[1], x[2], 1e-5);
}
/* model branch: RMSNorm (flags 1: no weight) and per-row L2 normalisation */
static qkt_tensor *f_rmsnorm(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return qkt_rmsnorm(ctx, x[0], c->flags ? NULL : x[1], 1e-5);
}
static qkt_tensor *f_rope(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { return qkt_rope(ctx, x[0], c->flags, 100.0); }
static qkt_tensor *f_l2norm(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { (void)c; return qkt_l2norm(ctx, x[0], 1e-12); }
static const uint8_t attn_pad[2 * 5] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 1}; /* b=1 row 0 fully blocked */
/* key padding for the tiled cases: (2, 33) and (1, 70); blocked keys straddle the
 * 32-key tile boundary, and key 0 blocked makes query row 0 fully blocked */
static uint8_t attn_pad33[2 * 33], attn_pad70[70];
static const uint8_t *attn_pad_tiled(int T) {
    uint8_t *p = T == 33 ? attn_pad33 : attn_pad70;
    int n = T == 33 ? 2 * 33 : 70;
    for (int i = 0; i < n; i++) p[i] = (i % T == 0 && i < T) || (i % T >= 30 && i % T <= 34) || i % 7 == 3;
    return p;
}
/* flags: 1 learned scale (x[3], or x[1] when packed), 2 key padding, 4 dropout 0.3 on P,
 * 8 packed qkv (x[0] is (B, T, 3C)), bits 4.. the head count (0: 3 heads) */
static qkt_tensor *f_attention(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    int H = (c->flags >> 4) ? c->flags >> 4 : 3, T = x[0]->shape[1];
    bool packed = c->flags & 8;
    const uint8_t *pad = NULL;
    if (c->flags & 2) pad = T == 5 ? attn_pad : attn_pad_tiled(T);
    qkt_attn_opts o = {.scale = 0.45, .log_scale = (c->flags & 1) ? x[packed ? 1 : 3] : NULL, .key_pad = pad,
                       .dropout = (c->flags & 4) ? 0.3 : 0};
    return packed ? qkt_attention_qkv(ctx, x[0], H, &o) : qkt_attention(ctx, x[0], x[1], x[2], H, &o);
}
/* an input used twice in one graph: y = x W + x * x (broadcast-free) */
static qkt_tensor *f_twice(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return qkt_add(ctx, qkt_matmul(ctx, x[0], x[1], false, false), qkt_mul(ctx, x[0], x[0]));
}

#define S1(a) 1, {{a}}
#define CASE(nm, f, tol_, fl, nin, ...) {.name = nm, .fn = f, .tol = tol_, .flags = fl, .n_inputs = nin, __VA_ARGS__}

static const qkt_gc_case op_cases[] = {
    CASE("matmul 2d", f_matmul, TOL, 0, 2, .ndim = {2, 2}, .shape = {{3, 7}, {7, 5}}),
    CASE("matmul 2d ta", f_matmul, TOL, 1, 2, .ndim = {2, 2}, .shape = {{7, 3}, {7, 5}}),
    CASE("matmul 2d tb", f_matmul, TOL, 2, 2, .ndim = {2, 2}, .shape = {{3, 7}, {5, 7}}),
    CASE("matmul 2d ta tb", f_matmul, TOL, 3, 2, .ndim = {2, 2}, .shape = {{7, 1}, {5, 7}}),
    CASE("matmul batched", f_matmul, TOL, 0, 2, .ndim = {4, 4}, .shape = {{2, 3, 4, 5}, {2, 3, 5, 7}}),
    CASE("matmul batched ta tb", f_matmul, TOL, 3, 2, .ndim = {3, 3}, .shape = {{3, 5, 4}, {3, 7, 5}}),
    CASE("matmul batched ta", f_matmul, TOL, 1, 2, .ndim = {3, 3}, .shape = {{2, 5, 3}, {2, 5, 1}}),
    CASE("matmul shared B", f_matmul, TOL, 0, 2, .ndim = {3, 2}, .shape = {{2, 7, 3}, {3, 33}}),
    CASE("matmul shared B^T (linear)", f_matmul, TOL, 2, 2, .ndim = {3, 2}, .shape = {{2, 3, 7}, {5, 7}}),
    CASE("matmul shared B, ta", f_matmul, TOL, 1, 2, .ndim = {3, 2}, .shape = {{2, 3, 4}, {3, 5}}),
    CASE("affine x W^T + b", f_affine, TOL, 0, 3, .ndim = {3, 2, 1}, .shape = {{2, 3, 7}, {5, 7}, {5}}),
    CASE("affine no bias, 2d", f_affine, TOL, 1, 2, .ndim = {2, 2}, .shape = {{33, 4}, {3, 4}}),
    CASE("add same", f_add, TOL, 0, 2, .ndim = {3, 3}, .shape = {{2, 3, 7}, {2, 3, 7}}),
    CASE("add bias (C)", f_add, TOL, 0, 2, .ndim = {3, 1}, .shape = {{2, 3, 7}, {7}}),
    CASE("add (T, C) over B", f_add, TOL, 0, 2, .ndim = {3, 2}, .shape = {{2, 3, 7}, {3, 7}}),
    CASE("sub bias", f_sub, TOL, 0, 2, .ndim = {2, 1}, .shape = {{33, 3}, {3}}),
    CASE("mul bias", f_mul, TOL, 0, 2, .ndim = {3, 1}, .shape = {{1, 3, 7}, {7}}),
    CASE("mul same", f_mul, TOL, 0, 2, .ndim = {2, 2}, .shape = {{3, 7}, {3, 7}}),
    CASE("scale", f_scale, TOL, 0, 1, .ndim = {2}, .shape = {{3, 7}}),
    CASE("sum", f_sum, TOL, 0, 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("mean", f_mean, TOL, 0, 1, .ndim = {1}, .shape = {{33}}),
    CASE("reshape", f_reshape, TOL, 0, 2, .ndim = {3, 1}, .shape = {{2, 3, 7}, {6}}),
    CASE("permute (B,T,H,d)->(B,H,T,d)", f_permute, TOL, 0, 1, .ndim = {4}, .shape = {{2, 3, 4, 5}}),
    CASE("permute 3102", f_permute, TOL, 1, 1, .ndim = {4}, .shape = {{2, 3, 1, 7}}),
    CASE("permute 3d", f_permute, TOL, 2, 1, .ndim = {3}, .shape = {{3, 4, 5}}),
    CASE("transpose", f_transpose, TOL, 0, 2, .ndim = {2, 2}, .shape = {{7, 3}, {7, 5}}),
    CASE("split 33 -> 11,11,11", f_split, TOL, 0, 1, .ndim = {3}, .shape = {{2, 3, 33}}),
    CASE("concat widths 1,3,7", f_concat, TOL, 0, 3, .ndim = {2, 2, 2}, .shape = {{5, 1}, {5, 3}, {5, 7}}),
    CASE("embedding (repeats)", f_embedding, TOL, 0, 1, .ndim = {2}, .shape = {{7, 5}}),
    CASE("gelu", f_gelu, TOL, 0, 1, .ndim = {2}, .shape = {{7, 33}}),
    CASE("relu (away from 0)", f_relu, TOL, 0, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.05),
    CASE("dropout p=0.3", f_dropout, TOL, 0, 1, .ndim = {2}, .shape = {{7, 33}}),
    CASE("softmax scale", f_softmax, TOL, QKT_MASK_NONE, 1, .ndim = {2}, .shape = {{3, 7}}),
    CASE("softmax causal (T, T)", f_softmax, TOL, QKT_MASK_CAUSAL, 1, .ndim = {4}, .shape = {{2, 3, 5, 5}}),
    CASE("softmax causal Tq < Tk", f_softmax, TOL, QKT_MASK_CAUSAL, 1, .ndim = {2}, .shape = {{4, 7}}),
    CASE("softmax additive -inf mask", f_softmax, TOL, QKT_MASK_ADDITIVE, 1, .ndim = {3}, .shape = {{2, 5, 7}}),
    CASE("log_softmax", f_log_softmax, TOL, 0, 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("cross_entropy (ignore -1)", f_cross_entropy, TOL, 0, 1, .ndim = {3}, .shape = {{3, 4, 7}}),
    CASE("layernorm affine", f_layernorm, TOL, 0, 3, .ndim = {3, 1, 1}, .shape = {{2, 3, 7}, {7}, {7}}),
    CASE("layernorm no affine C=33", f_layernorm, TOL, 1, 1, .ndim = {2}, .shape = {{3, 33}}),
    CASE("attention", f_attention, TOL, 0, 3, .ndim = {3, 3, 3}, .shape = {{2, 5, 12}, {2, 5, 12}, {2, 5, 12}}),
    CASE("attention learned scale", f_attention, TOL, 1, 4, .ndim = {3, 3, 3, 1},
         .shape = {{2, 5, 12}, {2, 5, 12}, {2, 5, 12}, {3}}),
    CASE("attention key padding", f_attention, TOL, 3, 4, .ndim = {3, 3, 3, 1},
         .shape = {{2, 5, 12}, {2, 5, 12}, {2, 5, 12}, {3}}),
    /* the tiled kernel: T = 33 (tiles of 32 do not divide it), d = 1, one head and one
     * batch, and T = 70 spanning three tiles with padding across a tile boundary */
    CASE("attention T=33 learned+pad", f_attention, TOL, 3, 4, .ndim = {3, 3, 3, 1},
         .shape = {{2, 33, 12}, {2, 33, 12}, {2, 33, 12}, {3}}),
    CASE("attention d=1", f_attention, TOL, 1, 4, .ndim = {3, 3, 3, 1}, .shape = {{2, 7, 3}, {2, 7, 3}, {2, 7, 3}, {3}}),
    CASE("attention B=1 H=1", f_attention, TOL, 1 | 1 << 4, 4, .ndim = {3, 3, 3, 1},
         .shape = {{1, 9, 5}, {1, 9, 5}, {1, 9, 5}, {1}}),
    CASE("attention T=70 > tile, pad", f_attention, TOL, 3 | 2 << 4, 4, .ndim = {3, 3, 3, 1},
         .shape = {{1, 70, 8}, {1, 70, 8}, {1, 70, 8}, {2}}),
    CASE("attention T=70 d=40", f_attention, TOL, 1 | 1 << 4, 4, .ndim = {3, 3, 3, 1},
         .shape = {{1, 70, 40}, {1, 70, 40}, {1, 70, 40}, {1}}),
    CASE("attention packed qkv, learned+pad", f_attention, TOL, 1 | 2 | 8, 2, .ndim = {3, 1},
         .shape = {{2, 33, 36}, {3}}),
    CASE("attention packed qkv, T=70", f_attention, TOL, 8 | 2 << 4, 1, .ndim = {3}, .shape = {{1, 70, 24}}),
    /* dropout on P: the mask (a hash of the seed drawn from ctx->rng) is the same in
     * every evaluation of the check */
    CASE("attention dropout, learned", f_attention, TOL, 1 | 4, 4, .ndim = {3, 3, 3, 1},
         .shape = {{2, 5, 12}, {2, 5, 12}, {2, 5, 12}, {3}}),
    CASE("attention dropout T=70, pad", f_attention, TOL, 1 | 2 | 4 | 2 << 4, 4, .ndim = {3, 3, 3, 1},
         .shape = {{1, 70, 8}, {1, 70, 8}, {1, 70, 8}, {2}}),
    CASE("rmsnorm weighted", f_rmsnorm, TOL, 0, 2, .ndim = {3, 1}, .shape = {{2, 3, 7}, {7}}),
    CASE("rmsnorm no weight C=33", f_rmsnorm, TOL, 1, 1, .ndim = {2}, .shape = {{3, 33}}),
    CASE("rope 3 heads d=4, T=5", f_rope, TOL, 3, 1, .ndim = {3}, .shape = {{2, 5, 12}}),
    CASE("l2norm per head (B,T,H,d)", f_l2norm, TOL, 0, 1, .ndim = {4}, .shape = {{2, 3, 2, 5}}),
    CASE("chain with fresh grads", f_fresh_chain, TOL, 0, 3, .ndim = {3, 2, 1}, .shape = {{2, 5, 6}, {18, 6}, {18}}),
    CASE("input used twice", f_twice, TOL, 0, 2, .ndim = {2, 2}, .shape = {{3, 3}, {3, 3}}),
};
#define N_OP_CASES ((int)(sizeof op_cases / sizeof op_cases[0]))

#endif
