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
static qkt_tensor *f_affine_gelu(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return qkt_affine_gelu(ctx, x[0], x[1], c->flags ? NULL : x[2]);
}
/* r + x W^T + b. flags: 0 r an input; 1 no bias; 2 r = x (W square); 3 r computed, so
 * its grad is dy's buffer handed over; 4 r computed and also used after, so its grad
 * exists when the fused op's backward runs (dr += dy). */
static qkt_tensor *f_affine_add(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    switch (c->flags) {
    case 1: return qkt_affine_add(ctx, x[0], x[1], NULL, x[2]);
    case 2: return qkt_affine_add(ctx, x[0], x[1], x[2], x[0]);
    case 3: return qkt_affine_add(ctx, x[0], x[1], x[2], qkt_scale(ctx, x[3], 0.7));
    case 4: {
        qkt_tensor *r = qkt_scale(ctx, x[3], 0.7);
        return qkt_mul(ctx, qkt_affine_add(ctx, x[0], x[1], x[2], r), r);
    }
    default: return qkt_affine_add(ctx, x[0], x[1], x[2], x[3]);
    }
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

/* ---------------------------------------------------------------- generic ops */
/* Broadcasting binary ops: flags 0 add, 1 sub, 2 mul, 3 div (x[1] is the divisor). */
static qkt_tensor *f_bcast(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    qkt_tensor *(*op[4])(qkt_ctx *, qkt_tensor *, qkt_tensor *) = {qkt_add, qkt_sub, qkt_mul, qkt_div};
    return op[c->flags](ctx, x[0], x[1]);
}
/* an input used as both operands of a broadcast op, and a constant scalar operand */
static qkt_tensor *f_bcast_twice(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *t = qkt_mul(ctx, x[0], qkt_reshape(ctx, x[0], 3, (int[]){3, 1, 1})); /* (3) * (3,1,1) -> (3,1,3) */
    return qkt_div(ctx, qkt_sub(ctx, qkt_tensor_scalar(ctx, 0.5), t), qkt_add(ctx, x[1], qkt_tensor_scalar(ctx, 3.0)));
}
/* Unary maths; flags pick the op. log, sqrt, rsqrt and pow -1.5 see |x| (inputs |x| >= 0.3). */
static qkt_tensor *f_unary(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    switch (c->flags) {
    case 0: return qkt_exp(ctx, x[0]);
    case 1: return qkt_log(ctx, qkt_abs(ctx, x[0]));
    case 2: return qkt_sqrt(ctx, qkt_abs(ctx, x[0]));
    case 3: return qkt_rsqrt(ctx, qkt_abs(ctx, x[0]));
    case 4: return qkt_pow(ctx, x[0], 3.0);
    case 5: return qkt_pow(ctx, qkt_abs(ctx, x[0]), -1.5);
    case 6: return qkt_pow(ctx, x[0], 2.0);
    case 7: return qkt_sigmoid(ctx, qkt_scale(ctx, x[0], 3.0));
    case 8: return qkt_tanh(ctx, qkt_scale(ctx, x[0], 1.5));
    case 9: return qkt_silu(ctx, qkt_scale(ctx, x[0], 2.0));
    case 10: return qkt_abs(ctx, x[0]);
    default: return qkt_clamp(ctx, x[0], -0.5, 0.8);
    }
}
/* where(cond, a, b): cond (2, 1, 7) a fixed pattern, a (2, 3, 7), b (3, 1) or a scalar
 * constant (flags 1); masked_fill (flags 2): x (2, 3, 5), mask (3, 5), value -2.5. */
static const uint8_t mf_mask[15] = {1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1};
static qkt_tensor *f_where(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    if (c->flags == 2) return qkt_masked_fill(ctx, x[0], mf_mask, 2, (int[]){3, 5}, -2.5);
    qkt_tensor *cond = qkt_tensor_new(ctx, 3, (int[]){2, 1, 7});
    for (int i = 0; i < 14; i++) cond->data[i] = (qkt_real)(i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : -2); /* nonzero = true */
    return qkt_where(ctx, cond, x[0], c->flags == 1 ? qkt_tensor_scalar(ctx, 0.25) : x[1]);
}
/* Reductions: flags = op (0 sum, 1 mean, 2 max, 3 logsumexp) + 4 * (axis + 4) + 64 * keepdim */
static qkt_tensor *f_reduce_axis(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    qkt_tensor *(*op[4])(qkt_ctx *, qkt_tensor *, int, bool) = {qkt_sum_axis, qkt_mean_axis, qkt_max_axis, qkt_logsumexp};
    return op[c->flags & 3](ctx, x[0], ((c->flags >> 2) & 15) - 4, (c->flags & 64) != 0);
}
#define RED(op, axis, keep) ((op) + 4 * ((axis) + 4) + 64 * (keep))
/* reduced twice, so the upstream grad of the first reduction is not uniform */
static qkt_tensor *f_reduce_chain(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *m = qkt_max_axis(ctx, x[0], 1, true);                     /* (2, 1, 4, 3) */
    qkt_tensor *l = qkt_logsumexp(ctx, qkt_sub(ctx, x[0], m), -1, false); /* (2, 5, 4) */
    return qkt_mul(ctx, qkt_mean_axis(ctx, l, 0, false), qkt_sum_axis(ctx, x[0], 3, false)); /* (5, 4) * (2, 5, 4) */
}
/* narrow: flags 0 axis 1 of (2, 5, 7) [1, 4); 1 the last axis [6, 7); 2 axis 0 of (4, 3) [2, 4) */
static qkt_tensor *f_narrow(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    if (c->flags == 0) return qkt_narrow(ctx, x[0], 1, 1, 3);
    if (c->flags == 1) return qkt_narrow(ctx, x[0], -1, 6, 1);
    return qkt_narrow(ctx, x[0], 0, 2, 2);
}
static const int32_t isel_idx[6] = {4, 0, 2, 2, 4, 1}; /* repeats */
/* index_select: flags 0 axis 0 of (5, 3), 6 indices; 1 axis 2 of (2, 3, 5, 2), 4 indices */
static qkt_tensor *f_index_select(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return c->flags == 0 ? qkt_index_select(ctx, x[0], 0, isel_idx, 6) : qkt_index_select(ctx, x[0], 2, isel_idx, 4);
}
/* gather: flags 0 axis 1 of x (3, 4, 5) with idx (2, 6, 5); 1 axis 0 of x (4, 3) with idx (5, 2) */
static int32_t gather_idx[60];
static qkt_tensor *f_gather(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    int n = x[0]->shape[c->flags == 0 ? 1 : 0];
    for (int i = 0; i < 60; i++) gather_idx[i] = (int32_t)((i * 7 + 3) % n); /* repeats */
    if (c->flags == 0) return qkt_gather(ctx, x[0], 1, gather_idx, 3, (int[]){2, 6, 5});
    return qkt_gather(ctx, x[0], 0, gather_idx, 2, (int[]){5, 2});
}
/* concat on axis 0 (flags 0) or 1 (flags 1) of 3 inputs; flags 2: 6 inputs (grouped) */
static qkt_tensor *f_concat_axis(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    if (c->flags == 2) return qkt_concat_axis(ctx, 6, (qkt_tensor *[]){x[0], x[1], x[0], x[2], x[1], x[0]}, 1);
    return qkt_concat_axis(ctx, 3, (qkt_tensor *[]){x[0], x[1], x[2]}, c->flags);
}
/* stack 3 inputs of (3, 4) on axis flags - 3 (-3 .. 2) */
static qkt_tensor *f_stack(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    return qkt_stack(ctx, 3, (qkt_tensor *[]){x[0], x[1], x[2]}, c->flags - 3);
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
    CASE("affine_gelu x W^T + b", f_affine_gelu, TOL, 0, 3, .ndim = {3, 2, 1}, .shape = {{2, 3, 7}, {33, 7}, {33}}),
    CASE("affine_gelu no bias, 2d", f_affine_gelu, TOL, 1, 2, .ndim = {2, 2}, .shape = {{33, 4}, {17, 4}}),
    CASE("affine_add r + x W^T + b", f_affine_add, TOL, 0, 4, .ndim = {3, 2, 1, 3}, .shape = {{2, 3, 7}, {33, 7}, {33}, {2, 3, 33}}),
    CASE("affine_add no bias, 2d", f_affine_add, TOL, 1, 3, .ndim = {2, 2, 2}, .shape = {{33, 4}, {17, 4}, {33, 17}}),
    CASE("affine_add r = x", f_affine_add, TOL, 2, 3, .ndim = {3, 2, 1}, .shape = {{2, 3, 7}, {7, 7}, {7}}),
    CASE("affine_add r computed", f_affine_add, TOL, 3, 4, .ndim = {2, 2, 1, 2}, .shape = {{5, 3}, {6, 3}, {6}, {5, 6}}),
    CASE("affine_add r also used after", f_affine_add, TOL, 4, 4, .ndim = {2, 2, 1, 2}, .shape = {{5, 3}, {6, 3}, {6}, {5, 6}}),
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
    /* ---------------- generic ops; kink_margin 0.3 keeps divisors and the
     * arguments of log, sqrt, rsqrt and pow -1.5 (|x|) away from 0 */
    CASE("add (2,1) + (1,3)", f_bcast, TOL, 0, 2, .ndim = {2, 2}, .shape = {{2, 1}, {1, 3}}),
    CASE("add (C) + (B,T,C): a broadcast", f_bcast, TOL, 0, 2, .ndim = {1, 3}, .shape = {{7}, {2, 3, 7}}),
    CASE("add scalar", f_bcast, TOL, 0, 2, .ndim = {2, 0}, .shape = {{3, 7}, {0}}),
    CASE("sub (B,T,1) - (B,T,C)", f_bcast, TOL, 1, 2, .ndim = {3, 3}, .shape = {{2, 3, 1}, {2, 3, 5}}),
    CASE("sub (1,3,7) - (2,1,7)", f_bcast, TOL, 1, 2, .ndim = {3, 3}, .shape = {{1, 3, 7}, {2, 1, 7}}),
    CASE("mul (2,3,1,5) * (3,4,1)", f_bcast, TOL, 2, 2, .ndim = {4, 3}, .shape = {{2, 3, 1, 5}, {3, 4, 1}}),
    CASE("mul (B,T,C) * (B,T,1)", f_bcast, TOL, 2, 2, .ndim = {3, 3}, .shape = {{2, 5, 7}, {2, 5, 1}}),
    CASE("mul scalar * (3,5)", f_bcast, TOL, 2, 2, .ndim = {0, 2}, .shape = {{0}, {3, 5}}),
    CASE("div same", f_bcast, TOL, 3, 2, .ndim = {2, 2}, .shape = {{3, 7}, {3, 7}}, .kink_margin = 0.3),
    CASE("div (2,3,7) / (3,1)", f_bcast, TOL, 3, 2, .ndim = {3, 2}, .shape = {{2, 3, 7}, {3, 1}}, .kink_margin = 0.3),
    CASE("div (5) / (2,1,1)", f_bcast, TOL, 3, 2, .ndim = {1, 3}, .shape = {{5}, {2, 1, 1}}, .kink_margin = 0.3),
    CASE("div scalar / (2,3)", f_bcast, TOL, 3, 2, .ndim = {0, 2}, .shape = {{0}, {2, 3}}, .kink_margin = 0.3),
    CASE("broadcast, input twice, constants", f_bcast_twice, TOL, 0, 2, .ndim = {1, 2}, .shape = {{3}, {1, 3}}),
    CASE("exp", f_unary, TOL, 0, 1, .ndim = {2}, .shape = {{3, 7}}),
    CASE("log |x|", f_unary, TOL, 1, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.3),
    CASE("sqrt |x|", f_unary, TOL, 2, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.3),
    CASE("rsqrt |x|", f_unary, TOL, 3, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.3),
    CASE("pow 3", f_unary, TOL, 4, 1, .ndim = {3}, .shape = {{2, 3, 5}}),
    CASE("pow |x|^-1.5", f_unary, TOL, 5, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.3),
    CASE("pow 2", f_unary, TOL, 6, 1, .ndim = {1}, .shape = {{33}}),
    CASE("sigmoid 3x", f_unary, TOL, 7, 1, .ndim = {2}, .shape = {{7, 5}}),
    CASE("tanh 1.5x", f_unary, TOL, 8, 1, .ndim = {2}, .shape = {{7, 5}}),
    CASE("silu 2x", f_unary, TOL, 9, 1, .ndim = {2}, .shape = {{7, 5}}),
    CASE("abs (away from 0)", f_unary, TOL, 10, 1, .ndim = {2}, .shape = {{3, 7}}, .kink_margin = 0.05),
    CASE("clamp [-0.5, 0.8]", f_unary, TOL, 11, 1, .ndim = {2}, .shape = {{5, 7}}),
    CASE("where (2,1,7) ? (2,3,7) : (3,1)", f_where, TOL, 0, 2, .ndim = {3, 2}, .shape = {{2, 3, 7}, {3, 1}}),
    CASE("where cond ? x : scalar", f_where, TOL, 1, 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("masked_fill (3,5) on (2,3,5)", f_where, TOL, 2, 1, .ndim = {3}, .shape = {{2, 3, 5}}),
    CASE("sum_axis 1", f_reduce_axis, TOL, RED(0, 1, 0), 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("sum_axis 0 keepdim", f_reduce_axis, TOL, RED(0, 0, 1), 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("sum_axis of 1-D: scalar", f_reduce_axis, TOL, RED(0, 0, 0), 1, .ndim = {1}, .shape = {{33}}),
    CASE("mean_axis -1", f_reduce_axis, TOL, RED(1, -1, 0), 1, .ndim = {4}, .shape = {{2, 3, 1, 5}}),
    CASE("mean_axis 2 keepdim", f_reduce_axis, TOL, RED(1, 2, 1), 1, .ndim = {4}, .shape = {{2, 3, 4, 5}}),
    CASE("max_axis 1", f_reduce_axis, TOL, RED(2, 1, 0), 1, .ndim = {3}, .shape = {{2, 7, 3}}),
    CASE("max_axis -1 keepdim", f_reduce_axis, TOL, RED(2, -1, 1), 1, .ndim = {2}, .shape = {{5, 7}}),
    CASE("max_axis 0, size 1", f_reduce_axis, TOL, RED(2, 0, 0), 1, .ndim = {2}, .shape = {{1, 7}}),
    CASE("logsumexp -1", f_reduce_axis, TOL, RED(3, -1, 0), 1, .ndim = {3}, .shape = {{2, 3, 7}}),
    CASE("logsumexp 0 keepdim", f_reduce_axis, TOL, RED(3, 0, 1), 1, .ndim = {3}, .shape = {{5, 3, 2}}),
    CASE("max, logsumexp, mean, sum chained", f_reduce_chain, TOL, 0, 1, .ndim = {4}, .shape = {{2, 5, 4, 3}}),
    CASE("narrow axis 1 [1, 4)", f_narrow, TOL, 0, 1, .ndim = {3}, .shape = {{2, 5, 7}}),
    CASE("narrow last axis [6, 7)", f_narrow, TOL, 1, 1, .ndim = {3}, .shape = {{2, 5, 7}}),
    CASE("narrow axis 0 [2, 4)", f_narrow, TOL, 2, 1, .ndim = {2}, .shape = {{4, 3}}),
    CASE("index_select axis 0 (repeats)", f_index_select, TOL, 0, 1, .ndim = {2}, .shape = {{5, 3}}),
    CASE("index_select axis 2 of 4-D", f_index_select, TOL, 1, 1, .ndim = {4}, .shape = {{2, 3, 5, 2}}),
    CASE("gather axis 1, smaller index", f_gather, TOL, 0, 1, .ndim = {3}, .shape = {{3, 4, 5}}),
    CASE("gather axis 0", f_gather, TOL, 1, 1, .ndim = {2}, .shape = {{4, 3}}),
    CASE("concat axis 0", f_concat_axis, TOL, 0, 3, .ndim = {3, 3, 3}, .shape = {{1, 3, 2}, {2, 3, 2}, {3, 3, 2}}),
    CASE("concat axis 1", f_concat_axis, TOL, 1, 3, .ndim = {3, 3, 3}, .shape = {{2, 1, 3}, {2, 4, 3}, {2, 2, 3}}),
    CASE("concat 6 inputs (grouped)", f_concat_axis, TOL, 2, 3, .ndim = {2, 2, 2}, .shape = {{3, 2}, {3, 1}, {3, 4}}),
    CASE("stack axis 0", f_stack, TOL, 3, 3, .ndim = {2, 2, 2}, .shape = {{3, 4}, {3, 4}, {3, 4}}),
    CASE("stack axis 1", f_stack, TOL, 4, 3, .ndim = {2, 2, 2}, .shape = {{3, 4}, {3, 4}, {3, 4}}),
    CASE("stack axis -1", f_stack, TOL, 2, 3, .ndim = {2, 2, 2}, .shape = {{3, 4}, {3, 4}, {3, 4}}),
};
#define N_OP_CASES ((int)(sizeof op_cases / sizeof op_cases[0]))

#endif
