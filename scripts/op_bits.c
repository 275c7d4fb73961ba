/* Compiled by scripts/op_bits.sh against two builds of the autograd library: prints a hash
 * of the outputs and grads of ops (softmax causal and additive, log-softmax, ReLU, GELU,
 * scale, split, reshape, sum/mean/max/logsumexp along an axis, narrow, index_select, gather,
 * permute, and mul/div/add with broadcasting), each at 1 and 2 threads, on a small case and on
 * one above QKT_PAR_MIN (autograd/ops_internal.h), one line per tensor. */
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

int main(void) {
    for (int th = 1; th <= 2; th++)
        for (int big = 0; big < 2; big++) run(th, big);
    return 0;
}
