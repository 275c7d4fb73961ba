/* qkt_init_normal / qkt_init_uniform on one's own tensors: the moments and range of the
 * draws, the same values from the same seed (and the values of qkt_rng_normal / _uniform
 * in storage order), and a usage error for a NULL tensor or a parameter before finalize.
 * qkt_rng_fill_normal's vectorised Box-Muller against the loop of qkt_rng_normal bit for bit
 * (CTest runs this once per kernel path with QKT_ISA, tests/isa.cmake). */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

/* qkt_rng_fill_normal against (qkt_real)(mean + std * qkt_rng_normal(r)) drawn one at a time:
 * every float equal (memcmp) and the generator left in the same state, over 2^21 draws for
 * each of a typical init std, wide and narrow ones, a mean far from 0 (more values near a
 * rounding point), subnormal results (all from libm) and std 0; n not a multiple of the
 * block. A log or cos term dropped from the fast path fails here. */
static void test_fill_normal(void) {
    static const double mv[][2] = {{0, 1}, {0, 0.02}, {0.5, 2}, {-3, 1e-3}, {7, 1e6}, {0, 1e-30}, {0, 1e-41}, {1, 0}};
    int64_t n = ((int64_t)1 << 21) + 37;
    qkt_real *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    for (size_t c = 0; c < sizeof mv / sizeof mv[0]; c++) {
        qkt_rng r, q;
        qkt_rng_seed(&r, 100 + c), qkt_rng_seed(&q, 100 + c);
        qkt_rng_fill_normal(&r, a, n, mv[c][0], mv[c][1]);
        for (int64_t i = 0; i < n; i++) b[i] = (qkt_real)(mv[c][0] + mv[c][1] * qkt_rng_normal(&q));
        int64_t diff = 0, first = -1;
        for (int64_t i = 0; i < n; i++)
            if (memcmp(a + i, b + i, sizeof *a)) diff++, first = first < 0 ? i : first;
        EXPECT(diff == 0, "fill_normal(mean %g, std %g): %lld of %lld values differ (the first at %lld: %.9g, not %.9g)",
               mv[c][0], mv[c][1], (long long)diff, (long long)n, (long long)first, first < 0 ? 0.0 : (double)a[first],
               first < 0 ? 0.0 : (double)b[first]);
        EXPECT(!memcmp(&r, &q, sizeof r), "fill_normal(mean %g, std %g) left the generator elsewhere", mv[c][0], mv[c][1]);
    }
    free(a), free(b);
}

int main(void) {
    qkt_test_isa_or_skip();
    test_fill_normal();
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *w = qkt_params_add(&p, "w", 2, (int[]){100, 200}, 0);
    qkt_set_fatal_handler(qkt_test_fatal_hook, NULL);
    qkt_test_fatal_msg[0] = 0;
    qkt_rng r;
    qkt_rng_seed(&r, 7);
    if (setjmp(qkt_test_fatal_jb) == 0) {
        qkt_init_normal(w, &r, 0, 1);
        EXPECT(0, "a parameter before finalize was initialised");
    }
    EXPECT(strstr(qkt_test_fatal_msg, "qkt_init_normal: tensor w has no data yet"), "qkt_test_fatal_msg '%s'", qkt_test_fatal_msg);
    qkt_test_fatal_msg[0] = 0;
    if (setjmp(qkt_test_fatal_jb) == 0) {
        qkt_init_uniform(qkt_params_find(&p, "nope"), &r, 0, 1);
        EXPECT(0, "a NULL tensor was initialised");
    }
    EXPECT(strstr(qkt_test_fatal_msg, "qkt_init_uniform: the tensor is NULL"), "qkt_test_fatal_msg '%s'", qkt_test_fatal_msg);
    qkt_set_fatal_handler(NULL, NULL);
    qkt_params_finalize(&p);

    qkt_rng_seed(&r, 7);
    qkt_init_normal(w, &r, 0.5, 2);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < w->size; i++) s += w->data[i], s2 += (double)w->data[i] * w->data[i];
    double mean = s / (double)w->size, sd = sqrt(s2 / (double)w->size - mean * mean);
    EXPECT(fabs(mean - 0.5) < 0.05 && fabs(sd - 2) < 0.05, "normal(0.5, 2): mean %g, std %g", mean, sd);
    qkt_rng q;
    qkt_rng_seed(&q, 7);
    int same = 1;
    for (int64_t i = 0; i < w->size; i++) same &= w->data[i] == (qkt_real)(0.5 + 2 * qkt_rng_normal(&q));
    EXPECT(same, "qkt_init_normal is not mean + std * qkt_rng_normal in storage order");

    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x = qkt_tensor_new(&ctx, 1, (int[]){10000});
    qkt_rng_seed(&r, 9);
    qkt_init_uniform(x, &r, -3, 1);
    double lo = 1e9, hi = -1e9;
    s = 0;
    for (int64_t i = 0; i < x->size; i++) lo = fmin(lo, x->data[i]), hi = fmax(hi, x->data[i]), s += x->data[i];
    EXPECT(lo >= -3 && hi < 1 && lo < -2.99 && hi > 0.99, "uniform[-3, 1): range [%g, %g]", lo, hi);
    EXPECT(fabs(s / (double)x->size + 1) < 0.05, "uniform[-3, 1): mean %g", s / (double)x->size);
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return qkt_test_finish();
}
