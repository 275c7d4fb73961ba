/* Compiled by scripts/op_bits.sh against two builds of the autograd library: prints a hash
 * of the outputs and grads of ops (softmax causal and additive, log-softmax, ReLU, GELU,
 * scale, split, reshape, sum/mean/max/logsumexp along an axis, narrow, index_select, gather,
 * permute, and mul/div/add with broadcasting), each at 1 and 2 threads, on a small case and on
 * one above QKT_PAR_MIN (autograd/ops_internal.h), one line per tensor; and of the fused
 * attention's output and input grads in 18 configurations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_autograd.h"

/* FNV-1a over the float32 bits */
static void dump(int th, int big, const char *what, const qkt_real *x, int64_t n) {
    unsigned long long h = 1469598103934665603ull;
    for (int64_t i = 0; i < n; i++) {
        unsigned char u[sizeof *x];
        memcpy(u, &x[i], sizeof u);
        for (size_t k = 0; k < sizeof u; k++) h = (h ^ u[k]) * 1099511628211ull;
    }
    printf("threads %d case %d %s %016llx\n", th, big, what, h);
}

/* loss = sum_i sum(o_i * c_i), c_i random: every output gets a gradient of its own */
static qkt_tensor *weighted_sum(qkt_ctx *ctx, qkt_tensor **o, int n, qkt_rng *r) {
    qkt_tensor *loss = NULL;
    for (int i = 0; i < n; i++) {
        qkt_tensor *c = qkt_tensor_new(ctx, o[i]->ndim, o[i]->shape);
        qkt_init_normal(c, r, 0, 1);
        qkt_tensor *t = qkt_sum(ctx, qkt_mul(ctx, o[i], c));
        loss = loss ? qkt_add(ctx, loss, t) : t;
    }
    return loss;
}

static void run(int th, int big) {
    qkt_set_threads(th);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 256 << 20, 7);
    int B = big ? 8 : 2, T = big ? 64 : 8, C = big ? 128 : 16;
    qkt_tensor *x = qkt_tensor_new(&ctx, 3, (int[]){B, T, C});
    qkt_tensor *s = qkt_tensor_new(&ctx, 3, (int[]){B, T, T});
    qkt_tensor *w = qkt_tensor_new(&ctx, 2, (int[]){T, 1});
    qkt_tensor *v = qkt_tensor_new(&ctx, 1, (int[]){C});
    qkt_tensor *m = qkt_tensor_new(&ctx, 2, (int[]){T, T});
    x->requires_grad = s->requires_grad = w->requires_grad = v->requires_grad = true;
    qkt_rng r;
    qkt_rng_seed(&r, 11);
    qkt_init_normal(x, &r, 0, 1), qkt_init_normal(s, &r, 0, 2), qkt_init_uniform(w, &r, 0.5, 1.5);
    qkt_init_normal(v, &r, 0, 1), qkt_init_normal(m, &r, 0, 1);
    static int32_t idx[64], gidx[8 * 64 * 8];
    for (int i = 0; i < 64; i++) idx[i] = (i * 7) % T;
    for (int i = 0; i < B * T * 8; i++) gidx[i] = (i * 5) % C;
    qkt_tensor *parts[2];
    qkt_split(&ctx, x, 2, (int[]){C / 2, C / 2}, parts);
    qkt_tensor *o[] = {
        qkt_softmax(&ctx, s, 0.5, QKT_MASK_CAUSAL, NULL),
        qkt_softmax(&ctx, s, 1.0, QKT_MASK_ADDITIVE, m),
        qkt_log_softmax(&ctx, x),
        qkt_relu(&ctx, x),
        qkt_gelu(&ctx, x),
        qkt_scale(&ctx, x, 0.3),
        parts[0],
        qkt_reshape(&ctx, parts[1], 2, (int[]){B * T, C / 2}),
        qkt_sum_axis(&ctx, x, 1, false),
        qkt_mean_axis(&ctx, x, 2, true),
        qkt_max_axis(&ctx, x, 1, false),
        qkt_logsumexp(&ctx, x, 2, false),
        qkt_narrow(&ctx, x, 1, 1, T / 2),
        qkt_index_select(&ctx, x, 1, idx, T / 2),
        qkt_gather(&ctx, x, 2, gidx, 3, (int[]){B, T, 8}),
        qkt_permute(&ctx, x, (int[]){2, 0, 1}),
        qkt_div(&ctx, qkt_mul(&ctx, x, w), qkt_add(&ctx, w, qkt_tensor_scalar(&ctx, 2))),
        qkt_add(&ctx, x, v),
    };
    int n = (int)(sizeof o / sizeof *o);
    qkt_rng_seed(&r, 3);
    qkt_backward(&ctx, weighted_sum(&ctx, o, n, &r), NULL);
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "output %d", i);
        dump(th, big, what, o[i]->data, o[i]->size);
    }
    dump(th, big, "dx", qkt_grad(&ctx, x), x->size);
    dump(th, big, "ds", qkt_grad(&ctx, s), s->size);
    dump(th, big, "dw", qkt_grad(&ctx, w), w->size);
    dump(th, big, "dv", qkt_grad(&ctx, v), v->size);
    qkt_ctx_free(&ctx);
}

/* The fused attention: y and the grads of its inputs (packed qkv, or q, k, v split from it)
 * over head widths 8 to 64, causal and full masks, P kept and recomputed, ALiBi, key padding,
 * dropout, cross-attention (Tq = T - 10) with k and v one tensor or two. */
static void attention_cases(int th) {
    static const struct {
        int B, T, C, H, full, recompute, extra; /* extra: 1 ALiBi, 2 key padding, 3 dropout, 4 q, k = v, 5 q, k, v */
    } cs[] = {{32, 32, 32, 2, 0, 0, 0},  {16, 64, 64, 4, 0, 0, 0}, {16, 128, 128, 4, 0, 0, 0}, {16, 32, 128, 2, 0, 0, 0},
              {16, 32, 16, 2, 0, 0, 0},  {4, 100, 48, 3, 0, 0, 0}, {4, 70, 64, 4, 1, 0, 0},    {4, 96, 64, 4, 0, 1, 0},
              {2, 40, 40, 5, 0, 0, 0},   {2, 33, 32, 2, 1, 1, 0},  {4, 64, 64, 4, 0, 0, 1},    {4, 40, 32, 2, 1, 0, 2},
              {4, 64, 32, 2, 0, 0, 3},   {3, 32, 48, 3, 0, 1, 3},  {4, 70, 32, 2, 0, 0, 4},    {4, 70, 32, 2, 1, 0, 4},
              {4, 64, 64, 4, 0, 0, 5},   {4, 40, 16, 2, 0, 1, 4}};
    qkt_set_threads(th);
    for (int c = 0; c < (int)(sizeof cs / sizeof *cs); c++) {
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 7);
        int B = cs[c].B, T = cs[c].T, C = cs[c].C, H = cs[c].H;
        qkt_tensor *qkv = qkt_tensor_new(&ctx, 3, (int[]){B, T, 3 * C}), *w = qkt_tensor_new(&ctx, 3, (int[]){B, T, C});
        qkt_rng r;
        qkt_rng_seed(&r, 11 + c);
        qkt_init_normal(qkv, &r, 0, 1.5), qkt_init_normal(w, &r, 0, 1);
        qkv->requires_grad = true;
        qkt_real slopes[8];
        static uint8_t pad[4096];
        qkt_alibi_slopes(H, slopes);
        for (int i = 0; i < B * T; i++) pad[i] = i % 7 == 3;
        qkt_attn_opts o = {.scale = 0.25, .full = cs[c].full, .recompute_p = cs[c].recompute};
        if (cs[c].extra == 1) o.alibi = slopes;
        if (cs[c].extra == 2) o.key_pad = pad;
        if (cs[c].extra == 3) o.dropout = 0.2, ctx.training = true;
        qkt_tensor *y;
        if (cs[c].extra >= 4) {
            qkt_tensor *parts[3];
            qkt_split(&ctx, qkv, 3, (int[]){C, C, C}, parts);
            y = qkt_attention(&ctx, qkt_narrow(&ctx, parts[0], 1, 10, T - 10), parts[1], cs[c].extra == 4 ? parts[1] : parts[2],
                              H, &o);
            w = qkt_narrow(&ctx, w, 1, 10, T - 10);
        } else {
            y = qkt_attention_qkv(&ctx, qkv, H, &o);
        }
        qkt_backward(&ctx, qkt_sum(&ctx, qkt_mul(&ctx, y, w)), NULL);
        char what[48];
        snprintf(what, sizeof what, "attention %d y", c);
        dump(th, 0, what, y->data, y->size);
        snprintf(what, sizeof what, "attention %d dqkv", c);
        dump(th, 0, what, qkt_grad(&ctx, qkv), qkv->size);
        qkt_ctx_free(&ctx);
    }
}

int main(void) {
    for (int th = 1; th <= 2; th++) {
        for (int big = 0; big < 2; big++) run(th, big);
        attention_cases(th);
    }
    return 0;
}
