/* Engine tests: arena (no malloc after the first step, limit message), tape
 * (no-grad, accumulation for a tensor used twice), shape errors, numerics at
 * +-1e4 and with -inf masks, dropout, RNG. */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_test.h"

/* Runs fn in a child process; returns its stderr text and whether it died abnormally. */
static bool run_child(void (*fn)(void), char *err, size_t n) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t k = 0;
    ssize_t r;
    while (k + 1 < n && (r = read(fds[0], err + k, n - 1 - k)) > 0) k += (size_t)r;
    err[k] = 0;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void bad_matmul(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_matmul(&ctx, qkt_tensor_2d(&ctx, 3, 4), qkt_tensor_2d(&ctx, 5, 6), false, false);
}
static void bad_add(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_add(&ctx, qkt_tensor_3d(&ctx, 2, 3, 4), qkt_tensor_1d(&ctx, 3));
}
static void arena_limit(void) {
    qkt_arena a;
    qkt_arena_init(&a, 0, 1000);
    qkt_arena_alloc(&a, 600);
    qkt_arena_alloc(&a, 600);
}

/* The fatal hook: a program sees each kind with its message and can leave by longjmp
 * (here), never reaching abort() or exit(). */
static jmp_buf hook_jmp;
static qkt_fatal_kind hook_kind;
static char hook_msg[1024];
static void hook(qkt_fatal_kind kind, const char *msg, void *user) {
    hook_kind = kind;
    snprintf(hook_msg, sizeof hook_msg, "%s%s", (const char *)user, msg);
    longjmp(hook_jmp, 1);
}

static void test_fatal_hook(void) {
    qkt_fatal_fn prev = qkt_set_fatal_handler(hook, "hooked: ");
    if (!setjmp(hook_jmp)) {
        QKT_CHECK(1 + 1 == 3, "arithmetic %d", 2);
        EXPECT(0, "QKT_CHECK returned");
    }
    EXPECT(hook_kind == QKT_FATAL_USAGE && strstr(hook_msg, "hooked: usage error at ") && strstr(hook_msg, "arithmetic 2") &&
               strstr(hook_msg, "(check failed: 1 + 1 == 3)") && !strchr(hook_msg, '\n'),
           "usage: %d %s", (int)hook_kind, hook_msg);
    volatile size_t huge = SIZE_MAX / 2;
#ifndef __SANITIZE_ADDRESS__ /* ASan aborts on such a request itself, before malloc can return NULL */
    if (!setjmp(hook_jmp)) {
        void *p = qkt_malloc(huge);
        EXPECT(0, "qkt_malloc of %zu bytes returned %p", (size_t)huge, p);
    }
    EXPECT(hook_kind == QKT_FATAL_NOMEM && strstr(hook_msg, "out of memory") && strstr(hook_msg, "test_autograd.c"),
           "nomem: %d %s", (int)hook_kind, hook_msg);
#endif
    if (!setjmp(hook_jmp)) {
        void *p = qkt_calloc(huge, 4); /* n * size overflows */
        EXPECT(0, "qkt_calloc overflow returned %p", p);
    }
    EXPECT(hook_kind == QKT_FATAL_NOMEM && strstr(hook_msg, "out of memory") && strstr(hook_msg, "test_autograd.c"),
           "calloc overflow: %d %s", (int)hook_kind, hook_msg);
    hook_kind = QKT_FATAL_USAGE;
    if (!setjmp(hook_jmp)) {
        volatile size_t near_max = SIZE_MAX - 10;
        void *p = qkt_calloc64(near_max); /* + 64 for the alignment wraps */
        EXPECT(0, "qkt_calloc64 of %zu bytes returned %p", (size_t)near_max, p);
    }
    EXPECT(hook_kind == QKT_FATAL_NOMEM && strstr(hook_msg, "out of memory") && strstr(hook_msg, "test_autograd.c"),
           "calloc64 overflow: %d %s", (int)hook_kind, hook_msg);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    ctx.detect_anomaly = true;
    qkt_tensor *x = qkt_tensor_new(&ctx, 1, (int[]){3});
    x->data[0] = 1, x->data[1] = NAN, x->data[2] = 0;
    if (!setjmp(hook_jmp)) {
        qkt_scale(&ctx, x, 2);
        EXPECT(0, "a NaN passed detect_anomaly");
    }
    EXPECT(hook_kind == QKT_FATAL_ANOMALY && strstr(hook_msg, "anomaly: op scale") && strstr(hook_msg, "NaN at element 1"),
           "anomaly: %d %s", (int)hook_kind, hook_msg);
    qkt_ctx_free(&ctx);
    EXPECT(qkt_set_fatal_handler(prev, NULL) == hook, "set_fatal_handler returns the previous hook");
}

static void test_errors(void) {
    char err[2048];
    EXPECT(run_child(bad_matmul, err, sizeof err), "matmul mismatch did not stop");
    EXPECT(strstr(err, "(3, 4)") && strstr(err, "(5, 6)") && strstr(err, "matmul"), "message: %s", err);
    EXPECT(run_child(bad_add, err, sizeof err), "add mismatch did not stop");
    EXPECT(strstr(err, "(2, 3, 4)") && strstr(err, "(3)"), "message: %s", err);
    EXPECT(run_child(arena_limit, err, sizeof err), "arena over its limit did not stop");
    EXPECT(strstr(err, "1000") && strstr(err, "1280"), "arena message should give limit and need: %s", err);
    EXPECT(strstr(err, "usage error") == NULL, "an arena limit is not a usage error: %s", err);
    run_child(bad_matmul, err, sizeof err);
    EXPECT(strstr(err, "usage error at ") && !strstr(err, "internal error"), "API misuse is a usage error: %s", err);
    test_fatal_hook();
}

/* A small step: linear, layernorm, attention-like softmax, cross-entropy. */
static qkt_tensor *step(qkt_ctx *ctx, qkt_tensor *w, qkt_tensor *x) {
    static const int32_t tg[8] = {0, 1, 2, 3, -1, 1, 2, 0};
    qkt_tensor *h = qkt_matmul(ctx, x, w, false, true);
    h = qkt_layernorm(ctx, h, NULL, NULL, 1e-5);
    h = qkt_gelu(ctx, h);
    qkt_tensor *s = qkt_softmax(ctx, qkt_matmul(ctx, h, h, false, true), 0.5, QKT_MASK_CAUSAL, NULL);
    h = qkt_matmul(ctx, s, h, false, false);
    return qkt_cross_entropy(ctx, h, tg, NULL);
}

static void test_arena_steps(void) {
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *w = qkt_params_add(&p, "w", 2, (int[]){4, 6}, QKT_PARAM_DECAY);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    for (int i = 0; i < 24; i++) w->data[i] = (qkt_real)qkt_rng_normal(&r);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 256, 1); /* tiny first block: the first step must grow */
    size_t mallocs_after_first = 0;
    int cap_after_first = 0;
    for (int s = 0; s < 5; s++) {
        qkt_ctx_reset(&ctx);
        qkt_tensor *x = qkt_tensor_2d(&ctx, 8, 6);
        for (int i = 0; i < 48; i++) x->data[i] = (qkt_real)(0.1 * (i % 7) - 0.3);
        qkt_tensor *loss = step(&ctx, w, x);
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, loss, NULL);
        for (int i = 0; i < 24; i++) w->data[i] -= (qkt_real)0.1 * w->grad[i];
        if (s == 0) {
            EXPECT(qkt_ctx_mem(&ctx).n_mallocs > 1, "the first step should have grown the arena");
        } else if (s == 1) {
            mallocs_after_first = qkt_ctx_mem(&ctx).n_mallocs, cap_after_first = ctx.cap_nodes;
        } else {
            EXPECT(qkt_ctx_mem(&ctx).n_mallocs == mallocs_after_first, "step %d allocated (%zu -> %zu blocks)", s,
                   mallocs_after_first, qkt_ctx_mem(&ctx).n_mallocs);
            EXPECT(ctx.cap_nodes == cap_after_first, "tape grew at step %d", s);
        }
    }
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
}

static void test_tape(void) {
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *x = qkt_params_add(&p, "x", 1, (int[]){3}, 0);
    qkt_params_finalize(&p);
    x->data[0] = 1, x->data[1] = -2, x->data[2] = 3;
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    /* used twice: d/dx sum(x * x + x) = 2x + 1 */
    qkt_tensor *y = qkt_sum(&ctx, qkt_add(&ctx, qkt_mul(&ctx, x, x), x));
    qkt_backward(&ctx, y, NULL);
    for (int i = 0; i < 3; i++) EXPECT_NEAR(x->grad[i], 2 * x->data[i] + 1, 1e-6);
    /* grads accumulate across backward calls until zeroed */
    qkt_ctx_reset(&ctx);
    y = qkt_sum(&ctx, x);
    qkt_backward(&ctx, y, NULL);
    EXPECT_NEAR(x->grad[0], 2 * 1 + 1 + 1, 1e-6);
    /* no-grad records nothing */
    qkt_ctx_reset(&ctx);
    int prev = qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    EXPECT(prev == QKT_MODE_TRAIN && ctx.no_grad && !ctx.training, "a new context trains (got mode %d)", prev);
    y = qkt_sum(&ctx, qkt_mul(&ctx, x, x));
    EXPECT(ctx.n_nodes == 0 && !y->requires_grad, "no_grad recorded %d nodes", ctx.n_nodes);
    EXPECT_NEAR(y->data[0], 14, 1e-6);
    EXPECT(qkt_ctx_set_mode(&ctx, QKT_MODE_GRAD) == QKT_MODE_EVAL && !ctx.no_grad && !ctx.training, "mode GRAD");
    qkt_ctx_set_mode(&ctx, prev);
    EXPECT(!ctx.no_grad && ctx.training, "mode not restored");
    /* reshape shares data */
    qkt_ctx_reset(&ctx);
    qkt_tensor *r = qkt_reshape(&ctx, x, 2, (int[]){1, 3});
    EXPECT(r->data == x->data && r->shape[0] == 1 && r->shape[1] == 3, "reshape is not a view");
    /* Grads of intermediate tensors go back to the pool once their op's backward ran
     * (and are reused), unless keep_grads; leaves keep theirs. */
    for (int keep = 0; keep < 2; keep++) {
        qkt_ctx_reset(&ctx);
        qkt_params_zero_grad(&p);
        ctx.keep_grads = keep;
        qkt_tensor *leaf = qkt_tensor_zeros(&ctx, 1, (int[]){3});
        leaf->requires_grad = true;
        qkt_tensor *h = qkt_mul(&ctx, x, leaf), *h2 = qkt_add(&ctx, h, x);
        y = qkt_sum(&ctx, qkt_mul(&ctx, h2, h2));
        qkt_backward(&ctx, y, NULL);
        EXPECT(keep ? h->grad && h2->grad : !h->grad && !h2->grad, "keep_grads=%d: intermediate grads %p %p", keep,
               (void *)h->grad, (void *)h2->grad);
        EXPECT(leaf->grad && x->grad, "a leaf lost its grad");
        /* d/dx sum((x*0 + x)^2) = 2x; d/dleaf = 2 x * x */
        for (int i = 0; i < 3; i++) EXPECT_NEAR(x->grad[i], 2 * x->data[i], 1e-5);
        for (int i = 0; i < 3; i++) EXPECT_NEAR(leaf->grad[i], 2 * x->data[i] * x->data[i], 1e-5);
        EXPECT(keep || qkt_ctx_mem(&ctx).grad_live == 64, "%zu grad bytes live after backward (the leaf's 64 expected)", qkt_ctx_mem(&ctx).grad_live);
    }
    ctx.keep_grads = false;
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
}

static bool all_finite(const qkt_tensor *t) {
    for (int64_t i = 0; i < t->size; i++)
        if (!isfinite(t->data[i])) return false;
    return true;
}

static void test_numerics(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *x = qkt_params_add(&p, "x", 2, (int[]){2, 4}, 0);
    qkt_params_finalize(&p);
    const qkt_real big[8] = {1e4, -1e4, 0, 9999, -1e4, -1e4, -1e4, -9990};
    memcpy(x->data, big, sizeof big);
    qkt_tensor *s = qkt_softmax(&ctx, x, 1.0, QKT_MASK_NONE, NULL);
    EXPECT(all_finite(s), "softmax of +-1e4 is not finite");
    EXPECT_NEAR(s->data[0] + s->data[1] + s->data[2] + s->data[3], 1, 1e-6);
    EXPECT_NEAR(s->data[7], 1 / (1 + 3 * exp(-10.0)), 1e-6);
    qkt_tensor *ls = qkt_log_softmax(&ctx, x);
    EXPECT(all_finite(ls), "log_softmax of +-1e4 is not finite");
    EXPECT_NEAR(ls->data[0], -log1p(exp(-1.0)), 2e-3); /* 1e4 against 9999; float ulp at 1e4 is 1e-3 */
    const int32_t tg[2] = {1, 7 - 4};
    qkt_tensor *ce = qkt_cross_entropy(&ctx, x, tg, NULL);
    EXPECT(isfinite(ce->data[0]), "cross-entropy at 1e4 is not finite");
    /* row 0: lse ~ 1e4 + log(1 + e^-1), target -1e4 -> 2e4 + 0.3133; row 1: target is the max -> ~0 */
    EXPECT_NEAR(ce->data[0], (2e4 + log1p(exp(-1.0)) + 0) / 2, 2e-2);
    qkt_backward(&ctx, ce, NULL);
    for (int i = 0; i < 8; i++) EXPECT(isfinite(x->grad[i]), "cross-entropy grad %d not finite", i);

    /* -inf mask: no NaN, exact zeros; a fully masked row is all zeros with zero grad */
    qkt_ctx_reset(&ctx);
    qkt_params_zero_grad(&p);
    qkt_tensor *m = qkt_tensor_2d(&ctx, 2, 4);
    const qkt_real mk[8] = {0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    memcpy(m->data, mk, sizeof mk);
    s = qkt_softmax(&ctx, x, 1.0, QKT_MASK_ADDITIVE, m);
    EXPECT(all_finite(s), "masked softmax produced NaN/Inf");
    EXPECT(s->data[1] == 0 && s->data[3] == 0, "masked entries must be exactly 0");
    for (int j = 4; j < 8; j++) EXPECT(s->data[j] == 0, "fully masked row must be zeros");
    qkt_real seed[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    qkt_backward(&ctx, s, seed);
    EXPECT(x->grad[1] == 0 && x->grad[3] == 0, "masked entries must get exactly 0 gradient");
    for (int j = 4; j < 8; j++) EXPECT(x->grad[j] == 0, "fully masked row must pass no gradient");
    for (int j = 0; j < 8; j++) EXPECT(isfinite(x->grad[j]), "masked softmax grad not finite");
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
}

static void test_dropout_rng(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 42);
    qkt_tensor *x = qkt_tensor_1d(&ctx, 20000);
    for (int i = 0; i < 20000; i++) x->data[i] = 1;
    ctx.training = false;
    EXPECT(qkt_dropout(&ctx, x, 0.5) == x, "dropout in eval must be the identity");
    ctx.training = true;
    qkt_tensor *y = qkt_dropout(&ctx, x, 0.25);
    int zeros = 0;
    for (int i = 0; i < 20000; i++) {
        zeros += y->data[i] == 0;
        if (y->data[i] != 0) EXPECT_NEAR(y->data[i], 1 / 0.75, 1e-6);
    }
    EXPECT(abs(zeros - 5000) < 300, "dropout zeroed %d of 20000 at p = 0.25", zeros);
    qkt_ctx_free(&ctx);

    qkt_rng a, b;
    qkt_rng_seed(&a, 7);
    qkt_rng_seed(&b, 7);
    bool same = true;
    for (int i = 0; i < 100; i++) same &= qkt_rng_u64(&a) == qkt_rng_u64(&b);
    EXPECT(same, "same seed, different streams");
    qkt_rng_seed(&b, 8);
    EXPECT(qkt_rng_u64(&a) != qkt_rng_u64(&b), "different seeds, same stream");
    double m = 0, v = 0;
    int counts[7] = {0};
    for (int i = 0; i < 200000; i++) {
        double z = qkt_rng_normal(&a);
        m += z, v += z * z;
        counts[qkt_rng_below(&a, 7)]++;
    }
    m /= 200000, v = v / 200000 - m * m;
    EXPECT(fabs(m) < 0.01 && fabs(v - 1) < 0.02, "normal draws: mean %g var %g", m, v);
    for (int k = 0; k < 7; k++) EXPECT(abs(counts[k] - 200000 / 7) < 600, "below(7): bin %d has %d", k, counts[k]);
}

static void test_gemm(void) {
    /* The wrapper against plain loops, all transpose combinations, odd sizes. */
    enum { M = 5, N = 3, K = 7 };
    qkt_real A[M * K], B[K * N], C[M * N];
    qkt_rng r;
    qkt_rng_seed(&r, 9);
    for (int i = 0; i < M * K; i++) A[i] = (qkt_real)qkt_rng_normal(&r);
    for (int i = 0; i < K * N; i++) B[i] = (qkt_real)qkt_rng_normal(&r);
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = t & 2;
        for (int i = 0; i < M * N; i++) C[i] = 1;
        qkt_gemm(ta, tb, M, N, K, 2, A, ta ? M : K, B, tb ? K : N, 0.5, C, N);
        double worst = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
                double e = fabs(C[i * N + j] - (2 * acc + 0.5));
                worst = e > worst ? e : worst;
            }
        EXPECT(worst < 1e-4, "gemm ta=%d tb=%d off by %g", ta, tb, worst);
    }
}

int main(void) {
    test_errors();
    test_arena_steps();
    test_tape();
    test_numerics();
    test_dropout_rng();
    test_gemm();
    return qkt_test_finish();
}
