/* Float64 gradient checks of the fused attention's masks and terms beyond the causal
 * self-attention of op_cases.h: the full mask, an additive bias of each shape with its
 * gradient (summed over the batch when shared), ALiBi, cross-attention with Tq < Tk and
 * Tq > Tk under both masks, key padding with them (fully blocked rows included: their
 * gradient is 0, which the check verifies too), dropout with all of them, the packed
 * entry point, and shapes past one 32-wide tile. Each case lists its inputs: q, k, v
 * (or a packed qkv), then the learned log-scale and/or the bias when it has them. */
#include <stdlib.h>
#include <string.h>

#include "qkt_gradcheck.h"
#include "qkt_test.h"

#define TOL 1e-6

typedef struct {
    int H;
    bool full, alibi, learned, packed;
    int bias; /* 0 none; else the input holding it (its shape says which kind) */
    int pad;  /* 0 none; 1 a pattern (key 0 of batch row 0, every 7th key); 2 also every key of the last batch row */
    double dropout;
} attn_case;

static qkt_tensor *f_attn(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    const attn_case *a = c->user;
    int B = x[0]->shape[0], Tk = a->packed ? x[0]->shape[1] : x[1]->shape[1];
    static uint8_t pad[4 * 128];
    QKT_CHECK(B * Tk <= 4 * 128, "pad buffer");
    for (int i = 0; i < B * Tk; i++) pad[i] = i == 0 || i % 7 == 3 || (a->pad == 2 && i >= (B - 1) * Tk);
    qkt_real slopes[8];
    qkt_alibi_slopes(a->H, slopes);
    int nx = a->packed ? 1 : 3;
    qkt_attn_opts o = {.scale = 0.45, .dropout = a->dropout, .log_scale = a->learned ? x[nx] : NULL, .key_pad = a->pad ? pad : NULL,
                       .full = a->full, .bias = a->bias ? x[a->bias] : NULL, .alibi = a->alibi ? slopes : NULL};
    return a->packed ? qkt_attention_qkv(ctx, x[0], a->H, &o) : qkt_attention(ctx, x[0], x[1], x[2], a->H, &o);
}

#define A(...) (&(const attn_case){__VA_ARGS__})
#define CASE(nm, ac, nin, ...) {.name = nm, .fn = f_attn, .tol = TOL, .user = ac, .n_inputs = nin, __VA_ARGS__}
#define QKV(B, Tq, Tk, C) {B, Tq, C}, {B, Tk, C}, {B, Tk, C}

static const qkt_gc_case cases[] = {
    CASE("full mask", A(.H = 3, .full = true), 3, .ndim = {3, 3, 3}, .shape = {QKV(2, 5, 5, 12)}),
    CASE("full, pad (a batch row all padded), learned", A(.H = 3, .full = true, .pad = 2, .learned = true), 4,
         .ndim = {3, 3, 3, 1}, .shape = {QKV(2, 5, 5, 12), {3}}),
    CASE("causal, bias (H, Tq, Tk) shared by B = 2", A(.H = 3, .bias = 3), 4, .ndim = {3, 3, 3, 3},
         .shape = {QKV(2, 5, 5, 12), {3, 5, 5}}),
    CASE("full, bias (B, H, Tq, Tk)", A(.H = 3, .full = true, .bias = 3), 4, .ndim = {3, 3, 3, 4},
         .shape = {QKV(2, 5, 5, 12), {2, 3, 5, 5}}),
    CASE("causal, bias (1, H, Tq, Tk), pad", A(.H = 2, .bias = 3, .pad = 1), 4, .ndim = {3, 3, 3, 4},
         .shape = {QKV(3, 6, 6, 8), {1, 2, 6, 6}}),
    CASE("causal, ALiBi, learned", A(.H = 3, .alibi = true, .learned = true), 4, .ndim = {3, 3, 3, 1},
         .shape = {QKV(2, 7, 7, 12), {3}}),
    CASE("full, ALiBi, pad", A(.H = 4, .full = true, .alibi = true, .pad = 1), 3, .ndim = {3, 3, 3},
         .shape = {QKV(2, 7, 7, 8)}),
    CASE("cross causal Tq=3 < Tk=7, learned", A(.H = 3, .learned = true), 4, .ndim = {3, 3, 3, 1},
         .shape = {QKV(2, 3, 7, 12), {3}}),
    CASE("cross causal Tq=7 > Tk=3, pad", A(.H = 3, .pad = 1), 3, .ndim = {3, 3, 3}, .shape = {QKV(2, 7, 3, 12)}),
    CASE("cross full Tq=5 Tk=9, bias, ALiBi", A(.H = 3, .full = true, .bias = 3, .alibi = true), 4, .ndim = {3, 3, 3, 3},
         .shape = {QKV(2, 5, 9, 12), {3, 5, 9}}),
    CASE("cross full Tq=9 Tk=4, pad, ALiBi, learned", A(.H = 2, .full = true, .pad = 1, .alibi = true, .learned = true), 4,
         .ndim = {3, 3, 3, 1}, .shape = {QKV(2, 9, 4, 6), {2}}),
    CASE("cross causal Tq=1 Tk=9 (decoding), bias", A(.H = 2, .bias = 3), 4, .ndim = {3, 3, 3, 3},
         .shape = {QKV(2, 1, 9, 6), {2, 1, 9}}),
    CASE("cross causal Tq=9 Tk=1 (8 rows see no key)", A(.H = 2), 3, .ndim = {3, 3, 3}, .shape = {QKV(2, 9, 1, 6)}),
    /* past one tile of 32 keys and queries */
    CASE("cross causal Tq=40 Tk=70, bias, ALiBi, pad", A(.H = 2, .bias = 3, .alibi = true, .pad = 1), 4,
         .ndim = {3, 3, 3, 3}, .shape = {QKV(1, 40, 70, 8), {2, 40, 70}}),
    CASE("cross full Tq=70 Tk=33, ALiBi, pad, learned", A(.H = 2, .full = true, .alibi = true, .pad = 1, .learned = true), 4,
         .ndim = {3, 3, 3, 1}, .shape = {QKV(1, 70, 33, 8), {2}}),
    CASE("cross causal Tq=70 Tk=40, bias (B, H, ..)", A(.H = 1, .bias = 3), 4, .ndim = {3, 3, 3, 4},
         .shape = {QKV(2, 70, 40, 4), {2, 1, 70, 40}}),
    CASE("packed qkv full, bias, ALiBi, learned", A(.H = 3, .packed = true, .full = true, .bias = 2, .alibi = true, .learned = true), 3,
         .ndim = {3, 1, 3}, .shape = {{2, 33, 36}, {3}, {3, 33, 33}}),
    /* dropout on P: the same mask in every evaluation of the check (a hash of the seed) */
    CASE("dropout, cross full Tq=5 Tk=7, bias, pad", A(.H = 3, .full = true, .bias = 3, .pad = 1, .dropout = 0.3), 4,
         .ndim = {3, 3, 3, 4}, .shape = {QKV(2, 5, 7, 12), {2, 3, 5, 7}}),
    CASE("dropout, causal Tq=40 Tk=70, ALiBi", A(.H = 2, .alibi = true, .dropout = 0.3), 3, .ndim = {3, 3, 3},
         .shape = {QKV(1, 40, 70, 8)}),
};

int main(void) {
    qkt_test_isa_or_skip();
    QKT_CHECK(sizeof(qkt_real) == 8, "test_gc_attention must be built with QKT_DOUBLE");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        const qkt_gc_case *c = &cases[i];
        qkt_gc_result r;
        bool ok = qkt_gradcheck(c, 2000 + (uint64_t)i, &r);
        char msg[256];
        printf("%-48s err %.2e (tol %.0e, %d points) %s\n", c->name, r.worst, c->tol, r.points_checked, ok ? "ok" : "FAIL");
        EXPECT(ok, "%s", qkt_gc_describe(c, &r, msg, sizeof msg));
    }
    /* The slopes: 8 heads 1/2 .. 1/256; 6 heads (not a power of two) the 4-head list
     * 2^-2, 2^-4, 2^-6, 2^-8 then 2^-1, 2^-3 (the odd ones of 8 heads). */
    qkt_real s8[8], s6[6];
    qkt_alibi_slopes(8, s8);
    qkt_alibi_slopes(6, s6);
    for (int h = 0; h < 8; h++) EXPECT_NEAR(s8[h], pow(2, -(h + 1)), 1e-15);
    const double want6[6] = {0.25, 0.0625, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
    for (int h = 0; h < 6; h++) EXPECT_NEAR(s6[h], want6[h], 1e-15);
    return qkt_test_finish();
}
