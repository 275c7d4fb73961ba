/* Data-parallel replicas (nn's qkt_dp): the sharded step computes the whole batch's
 * loss and gradient (uneven shards, ignored targets, a shard with nothing counted),
 * n = 1 is the plain step bit for bit, results do not depend on the thread count,
 * dropout streams come from replica 0's RNG, and a redirected context writes its
 * parameter grads to its own buffer only. test_gc_nn.c repeats the comparison in
 * float64 at 1e-12. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"
#include "qkt_test.h"
#include "nn_fixtures.h"

static qkt_gpt_config cfg_of(double dropout) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 13, c.block_size = 9, c.n_layer = 2, c.n_head = 2, c.n_embd = 16, c.dropout = dropout;
    c.init_std = 0.2; /* away from uniform attention, so the attention grads are not tiny */
    return c;
}

enum { B = 7, T = 9 };

static void batch(int32_t *idx, int32_t *tgt, int V) {
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)qkt_rng_below(&r, (uint32_t)V);
    for (int i = 0; i < B * T; i++) tgt[i] = qkt_rng_below(&r, 4) == 0 ? QKT_IGNORE : (int32_t)qkt_rng_below(&r, (uint32_t)V);
    for (int i = 0; i < 2 * T; i++) tgt[i] = QKT_IGNORE; /* rows 0-1: replica 0 of 3 counts nothing */
}

/* A model and a batch. */
typedef struct {
    qkt_gpt_config c;
    qkt_gpt g;
    int32_t idx[B * T], tgt[B * T];
    int64_t P; /* parameter count */
} fixture;
static void fixture_init(fixture *f, double dropout) {
    f->c = cfg_of(dropout);
    make_gpt(&f->g, &f->c, 7);
    batch(f->idx, f->tgt, f->c.vocab_size);
    f->P = f->g.params.size;
}

/* loss and grads (copied to out, g->params.size values) of one step with n replicas on `threads` threads */
static double step(qkt_gpt *g, int n, int threads, const int32_t *idx, const int32_t *tgt, qkt_real *out,
                   uint64_t *rng_after) {
    qkt_set_threads(threads);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 99);
    ctx.training = true;
    qkt_dp dp;
    qkt_dp_init(&dp, &ctx, &g->params, n);
    double loss = qkt_dp_forward_backward(&dp, g, idx, tgt, B, T);
    memcpy(out, g->params.grad, (size_t)g->params.size * sizeof *out);
    if (rng_after) *rng_after = qkt_rng_u64(&ctx.rng);
    qkt_dp_free(&dp);
    qkt_ctx_free(&ctx);
    return loss;
}

/* max |a - b| / max |b| */
static double rel_err(const qkt_real *a, const qkt_real *b, int64_t n) {
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

static void test_same_gradient(void) {
    static fixture f;
    fixture_init(&f, 0);
    qkt_gpt *g = &f.g;
    const int32_t *idx = f.idx, *tgt = f.tgt;
    int64_t P = f.P;
    qkt_real *ref = malloc((size_t)P * sizeof *ref), *got = malloc((size_t)P * sizeof *got);

    /* n = 1 is the plain step exactly */
    qkt_set_threads(1);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *l = qkt_gpt_forward(&ctx, g, idx, tgt, B, T, NULL, NULL);
    qkt_params_zero_grad(&g->params);
    qkt_backward(&ctx, l, NULL);
    double plain = l->data[0];
    memcpy(ref, g->params.grad, (size_t)P * sizeof *ref);
    qkt_ctx_free(&ctx);
    double l1 = step(g, 1, 2, idx, tgt, got, NULL);
    EXPECT(l1 == plain, "n=1 loss %.9g, plain step %.9g", l1, plain);
    EXPECT(memcmp(got, ref, (size_t)P * sizeof *ref) == 0, "n=1 grads differ from the plain step's");

    /* n = 2, 3, 7 (uneven shards; with 3, replica 0 counts no target): the same loss and
     * grads up to float32 rounding. A replica weighted by 1/n instead of its share of the
     * counted targets is off by 30-70 % of the largest grad here (checked). */
    int ns[] = {2, 3, 7};
    for (int k = 0; k < 3; k++) {
        double ln = step(g, ns[k], 2, idx, tgt, got, NULL);
        EXPECT(fabs(ln - plain) <= 1e-6 * fabs(plain), "n=%d loss %.9g, plain %.9g", ns[k], ln, plain);
        double e = rel_err(got, ref, P);
        EXPECT(e <= 1e-5, "n=%d grads: max error %.3g of the largest grad", ns[k], e);
    }

    /* Results depend on n, not on the threads: bit-identical on 1, 2 and 3 threads. */
    qkt_real *t1 = malloc((size_t)P * sizeof *t1);
    double a = step(g, 3, 1, idx, tgt, t1, NULL);
    for (int th = 2; th <= 3; th++) {
        double b = step(g, 3, th, idx, tgt, got, NULL);
        EXPECT(a == b, "n=3 loss on 1 thread %.9g, on %d %.9g", a, th, b);
        EXPECT(memcmp(got, t1, (size_t)P * sizeof *t1) == 0, "n=3 grads on %d threads differ from 1 thread's", th);
    }

    /* Nothing counted in the whole batch: loss 0, grads 0. */
    int32_t none[B * T];
    for (int i = 0; i < B * T; i++) none[i] = QKT_IGNORE;
    double z = step(g, 3, 2, idx, none, got, NULL);
    double mx = 0;
    for (int64_t i = 0; i < P; i++) mx = fmax(mx, fabs((double)got[i]));
    EXPECT(z == 0 && mx == 0, "no counted target: loss %g, max |grad| %g", z, mx);
    free(ref), free(got), free(t1);
    qkt_gpt_free(g);
}

static void test_dropout_streams(void) {
    static fixture f, f0;
    fixture_init(&f, 0.3);
    qkt_gpt *g = &f.g;
    const int32_t *idx = f.idx, *tgt = f.tgt;
    int64_t P = f.P;
    qkt_real *a = malloc((size_t)P * sizeof *a), *b = malloc((size_t)P * sizeof *b);
    uint64_t ra, rb;
    double la = step(g, 2, 1, idx, tgt, a, &ra), lb = step(g, 2, 2, idx, tgt, b, &rb);
    EXPECT(la == lb && memcmp(a, b, (size_t)P * sizeof *a) == 0, "dropout, n=2: 1 and 2 threads differ (%.9g, %.9g)", la, lb);
    EXPECT(ra == rb, "replica 0's RNG ends in a different state on 1 and 2 threads");
    /* dropout is active in both replicas: the loss differs from the model without it */
    fixture_init(&f0, 0);
    double l0 = step(&f0.g, 2, 2, idx, tgt, b, NULL);
    double e = rel_err(a, b, P);
    EXPECT(l0 != la && e > 0.05, "dropout 0.3 left loss %.9g (no dropout %.9g) and grads (off by %.3g) nearly unchanged", la, l0, e);
    free(a), free(b);
    qkt_gpt_free(g);
    qkt_gpt_free(&f0.g);
}

static void test_redirect(void) {
    static fixture f;
    fixture_init(&f, 0);
    qkt_gpt *g = &f.g;
    const int32_t *idx = f.idx, *tgt = f.tgt;
    int64_t P = f.P;
    qkt_real *mine = calloc((size_t)P, sizeof *mine);
    qkt_set_threads(1);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_ctx_redirect_param_grads(&ctx, &g->params, mine);
    qkt_params_zero_grad(&g->params);
    qkt_tensor *l = qkt_gpt_forward(&ctx, g, idx, tgt, B, T, NULL, NULL);
    qkt_backward(&ctx, l, NULL);
    double home = 0, own = 0;
    for (int64_t i = 0; i < P; i++) home = fmax(home, fabs((double)g->params.grad[i])), own = fmax(own, fabs((double)mine[i]));
    EXPECT(home == 0, "the store's grads were written (max %g) while redirected", home);
    EXPECT(own > 0, "the redirected buffer got no grads");
    qkt_ctx_free(&ctx);
    free(mine);
    qkt_gpt_free(g);
}

int main(void) {
    test_same_gradient();
    test_dropout_streams();
    test_redirect();
    return qkt_test_finish();
}
