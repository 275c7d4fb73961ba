/* The internal kernels of autograd/kern_simd.h, as the process's kernel path (kern_table.h;
 * CTest runs this once per path with QKT_ISA) compiles them, and the gemm split: the
 * vectorised exp and tanh against libm, GELU's gradient against its stated float32
 * form bit for bit, the register-blocked tile product against a
 * naive loop (ragged sizes, transposed A, accumulate), column sums, qkt_gemm's
 * thread split giving the same result as one thread, and the row sums side by side
 * (the attention's, LayerNorm's) giving each row's bits, and the cross-entropy's row max. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern_simd.h"
#include "kern_table.h"
#include "ops_internal.h"
#include "qkt_test.h"

/* The path's exp and tanh (kern_table.h's exp_tanh: kern_simd.h's qkt__exp and qkt__tanh as the
 * path compiles them, vectorised) against libm. */
static void test_exp_tanh(const qkt__kern *kp) {
    int64_t n = (int64_t)((88.0 + 87.0) / 0.000731) + 1;
    qkt_real *x = malloc(sizeof(qkt_real) * (size_t)n), *e = malloc(sizeof(qkt_real) * (size_t)n), *t = malloc(sizeof(qkt_real) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (qkt_real)(-87 + 0.000731 * (double)i);
    kp->exp_tanh(x, e, t, n);
    double worst_exp = 0, worst_tanh = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = exp((double)x[i]), err = fabs(e[i] - want) / want;
        if (!(err <= worst_exp)) worst_exp = err;
        if (fabs(x[i]) < 20) {
            double te = fabs(t[i] - tanh((double)x[i]));
            if (!(te <= worst_tanh)) worst_tanh = te;
        }
    }
    printf("%s: exp: max relative error %.3g; tanh: max absolute error %.3g\n", kp->name, worst_exp, worst_tanh);
    EXPECT(worst_exp < 3e-7, "exp relative error %.3g", worst_exp);
    EXPECT(worst_tanh < 3e-7, "tanh absolute error %.3g", worst_tanh);
    qkt_real xs[] = {-INFINITY, -100, 0, 30, -30}, es[5], ts[5];
    kp->exp_tanh(xs, es, ts, 5);
    EXPECT(es[0] == 0, "exp(-inf) = %g", (double)es[0]);
#ifndef QKT_DOUBLE
    EXPECT(es[1] == 0, "exp(-100) = %g (the float kernel flushes below -87)", (double)es[1]);
#endif
    EXPECT(es[2] == 1, "exp(0) = %.9g", (double)es[2]);
    EXPECT(ts[3] == 1 && ts[4] == -1, "tanh does not saturate: %.9g %.9g", (double)ts[3], (double)ts[4]);
    free(x), free(e), free(t);
}

#ifndef QKT_DOUBLE
/* GELU's gradient u -> 0.5 (1 + t) + 0.5 v (1 - t^2) k (1 + 3 c v^2), t = tanh(k (v + c v^3)),
 * op by op as the float32 kernels round it: with FMA, (1 - t t), (v + (c v v) v) and
 * (1 + (3c v) v) fused and the last add an fma of the right-hand product's last factor; without,
 * no op fused (so this function is compiled without contraction). `swap`: the last add
 * fused on the left-hand product instead (the planted form). t comes from the path's tanh. */
/* gcc contracts a * b + c across statements; clang only within one, and not without FMA */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACT
#endif
NO_CONTRACT static float gelu_grad_form(const qkt__kern *kp, float v, bool fma_path, bool swap) {
    const float K = (float)0.7978845608028654, C = (float)0.044715;
    float u = fma_path ? K * fmaf(C * v * v, v, v) : K * (v + C * v * v * v), e, t;
    kp->exp_tanh(&u, &e, &t, 1);
    if (!fma_path) return 0.5f * (1 + t) + 0.5f * v * (1 - t * t) * K * (1 + 3 * C * v * v);
    float left = 0.5f * v * fmaf(-t, t, 1) * K, right = fmaf(3 * C * v, v, 1), half = 0.5f * (1 + t);
    return swap ? fmaf(1 + t, 0.5f, left * right) : fmaf(left, right, half);
}

/* The path's GELU gradient (gelu_backward with dy = 1, and the epilogue's saved factor) has
 * the bits of gelu_grad_form on 2^20 inputs over [-6, 6] and around 0; the planted form (the
 * other product fused) is caught on the FMA paths, where it differs in the last bit on a few
 * inputs in a thousand. */
static void test_gelu_grad_bits(const qkt__kern *kp) {
    bool fma_path = strcmp(kp->name, "baseline") != 0;
#ifndef __FMA__
    if (!strcmp(kp->name, "native")) fma_path = false;
#endif
    enum { N = 1 << 20 };
    float *x = malloc(sizeof(float) * N), *one = malloc(sizeof(float) * N), *dx = malloc(sizeof(float) * N);
    float *c = malloc(sizeof(float) * N), *g = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x[i] = i % 2 ? -6.0f + 12.0f * (float)i / N : ldexpf((float)i / N, -(i % 24)) * (i % 4 == 2 ? -1.0f : 1.0f);
        one[i] = 1, c[i] = x[i];
    }
    kp->gelu_backward(true, x, one, dx, N);
    kp->gelu_epilogue(c, g, 1024, N / 1024, N / 1024);
    long bad = 0, bad_epi = 0, caught = 0;
    for (int i = 0; i < N; i++) {
        float want = gelu_grad_form(kp, x[i], fma_path, false);
        bad += memcmp(&want, &dx[i], sizeof want) != 0;
        bad_epi += memcmp(&dx[i], &g[i], sizeof want) != 0;
        if (fma_path) {
            float planted = gelu_grad_form(kp, x[i], true, true);
            caught += memcmp(&planted, &dx[i], sizeof planted) != 0;
        }
    }
    printf("%s: GELU gradient, %d inputs: %ld differ from the stated form (%s), %ld between the backward and the "
           "epilogue; the planted form differs on %ld\n",
           kp->name, N, bad, fma_path ? "fused" : "unfused", bad_epi, caught);
    EXPECT(bad == 0, "%s: GELU gradient: %ld of %d inputs not the bits of the stated form", kp->name, bad, N);
    EXPECT(bad_epi == 0, "%s: the epilogue's GELU factor differs from gelu_backward's on %ld inputs", kp->name, bad_epi);
    if (fma_path) EXPECT(caught > 0, "%s: the planted GELU gradient form was not caught", kp->name);
    free(x), free(one), free(dx), free(c), free(g);
}
#endif

/* The path's tile product (qkt__mk_gemm) against a naive float64 loop. */
static void test_tile_product(const qkt__kern *kp) {
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    int sizes[][3] = {{1, 16, 1}, {7, 16, 5}, {8, 32, 64}, {33, 48, 17}, {32, 64, 32}, {19, 80, 3}};
    for (int s = 0; s < 6; s++) {
        int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
        for (int trans = 0; trans < 2; trans++)
            for (int acc = 0; acc < 2; acc++) {
                int lda = trans ? M + 3 : K + 2, ldb = N + 5, ldc = N + 1;
                qkt_real *A = malloc(sizeof(qkt_real) * (size_t)(trans ? K * lda : M * lda));
                qkt_real *B = malloc(sizeof(qkt_real) * (size_t)K * ldb), *C = malloc(sizeof(qkt_real) * (size_t)M * ldc);
                for (int i = 0; i < (trans ? K * lda : M * lda); i++) A[i] = (qkt_real)qkt_rng_normal(&r);
                for (int i = 0; i < K * ldb; i++) B[i] = (qkt_real)qkt_rng_normal(&r);
                for (int i = 0; i < M * ldc; i++) C[i] = (qkt_real)qkt_rng_normal(&r);
                double *want = malloc(sizeof(double) * (size_t)M * N);
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < N; n++) {
                        double v = acc ? C[m * ldc + n] : 0;
                        for (int k = 0; k < K; k++) v += (double)(trans ? A[k * lda + m] : A[m * lda + k]) * B[k * ldb + n];
                        want[m * N + n] = v;
                    }
                qkt_real keep = C[(M - 1) * ldc + N]; /* just past the last row's N columns */
                kp->tile_product(M, N, K, A, trans ? 1 : lda, trans ? lda : 1, B, ldb, C, ldc, acc);
                double worst = 0;
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < N; n++) {
                        double e = fabs(C[m * ldc + n] - want[m * N + n]) / (1 + fabs(want[m * N + n]));
                        if (!(e <= worst)) worst = e;
                    }
                EXPECT(worst < 1e-5, "tile product %dx%dx%d trans=%d acc=%d: error %.3g", M, N, K, trans, acc, worst);
                EXPECT(C[(M - 1) * ldc + N] == keep, "tile product wrote past column N");
                free(A), free(B), free(C), free(want);
            }
    }
}

/* qkt__colsum with Y, sub and mul against float64, and the same bits on 1 and 2 threads. */
static void test_colsum_width(int cols) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 22, 1);
    int rows = 200;
    qkt_real *X = qkt_arena_alloc(&ctx.arena, sizeof(qkt_real) * rows * cols), *Y = qkt_arena_alloc(&ctx.arena, sizeof(qkt_real) * rows * cols);
    qkt_real sub[200], mul[200], out[300], out2[300];
    qkt_rng r;
    qkt_rng_seed(&r, 9);
    for (int i = 0; i < rows * cols; i++) X[i] = (qkt_real)qkt_rng_normal(&r), Y[i] = (qkt_real)qkt_rng_normal(&r);
    for (int i = 0; i < rows; i++) sub[i] = (qkt_real)qkt_rng_normal(&r), mul[i] = (qkt_real)qkt_rng_uniform(&r);
    for (int threads = 1; threads <= 2; threads++) {
        qkt_set_threads(threads);
        for (int j = 0; j < cols; j++) out[j] = 1;
        qkt__colsum(&ctx, rows, cols, X, Y, sub, mul, -1, out);
        double worst = 0;
        for (int j = 0; j < cols; j++) {
            double want = 1;
            for (int i = 0; i < rows; i++) want -= (double)X[i * cols + j] * (Y[i * cols + j] - sub[i]) * mul[i];
            double e = fabs(out[j] - want);
            if (!(e <= worst)) worst = e;
        }
        EXPECT(worst < 1e-4, "colsum cols=%d threads=%d: error %.3g", cols, threads, worst);
        if (threads == 1) memcpy(out2, out, sizeof(qkt_real) * cols);
        else EXPECT(memcmp(out, out2, sizeof(qkt_real) * cols) == 0, "colsum cols=%d depends on the thread count", cols);
    }
    qkt_set_threads(0);
    qkt_ctx_free(&ctx);
}

/* qkt__colsum2 (LayerNorm's gain and bias gradients in one pass) against two qkt__colsum
 * calls, bit for bit, on 1 and 2 threads; rows not a multiple of the 64-row chunks, widths
 * on both sides of the register blocks' 128 columns and with a masked tail. */
static void test_colsum2_width(int cols) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 22, 1);
    int rows = 1000;
    size_t n = (size_t)rows * cols;
    qkt_real *X = qkt_arena_alloc(&ctx.arena, sizeof(qkt_real) * n), *Y = qkt_arena_alloc(&ctx.arena, sizeof(qkt_real) * n);
    qkt_real sub[1000], mul[1000], w1[300], b1[300], w2[300], b2[300];
    qkt_rng r;
    qkt_rng_seed(&r, 10);
    for (size_t i = 0; i < n; i++) X[i] = (qkt_real)(qkt_rng_normal(&r) * 1e3), Y[i] = (qkt_real)qkt_rng_normal(&r);
    for (int i = 0; i < rows; i++) sub[i] = (qkt_real)qkt_rng_normal(&r), mul[i] = (qkt_real)qkt_rng_uniform(&r);
    for (int threads = 1; threads <= 2; threads++) {
        qkt_set_threads(threads);
        for (int j = 0; j < cols; j++) w1[j] = w2[j] = (qkt_real)j, b1[j] = b2[j] = (qkt_real)-j;
        qkt__colsum(&ctx, rows, cols, X, Y, sub, mul, 1, w1);
        qkt__colsum(&ctx, rows, cols, X, NULL, NULL, NULL, 1, b1);
        qkt__colsum2(&ctx, rows, cols, X, Y, sub, mul, w2, b2);
        EXPECT(memcmp(w1, w2, sizeof(qkt_real) * cols) == 0, "colsum2 cols=%d threads=%d: the gain sums differ", cols, threads);
        EXPECT(memcmp(b1, b2, sizeof(qkt_real) * cols) == 0, "colsum2 cols=%d threads=%d: the bias sums differ", cols, threads);
    }
    qkt_set_threads(0);
    qkt_ctx_free(&ctx);
}

static void test_colsum(void) {
    int widths[] = {37, 300}; /* on AVX-512: the register blocks (up to 128 columns) and the row loop */
    for (int w = 0; w < 2; w++) test_colsum_width(widths[w]);
    int widths2[] = {32, 37, 128, 129, 300};
    for (int w = 0; w < 5; w++) test_colsum2_width(widths2[w]);
}

/* qkt_gemm splits large products over the threads, by rows (M >= N) or columns, without
 * changing a bit (kern_gemm.c: BLAS's blocks are fixed by the shape). */
static void test_gemm_split(void) {
    int shapes[][3] = {{700, 90, 130}, {60, 1500, 70}, {333, 334, 65}}; /* above QKT_GEMM_PAR_FLOPS */
    qkt_rng r;
    qkt_rng_seed(&r, 11);
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 4; t++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            bool ta = t & 1, tb = t & 2;
            qkt_real *A = malloc(sizeof(qkt_real) * (size_t)M * K), *B = malloc(sizeof(qkt_real) * (size_t)K * N);
            qkt_real *C1 = malloc(sizeof(qkt_real) * (size_t)M * N), *C2 = malloc(sizeof(qkt_real) * (size_t)M * N);
            for (int i = 0; i < M * K; i++) A[i] = (qkt_real)qkt_rng_normal(&r);
            for (int i = 0; i < K * N; i++) B[i] = (qkt_real)qkt_rng_normal(&r);
            for (int i = 0; i < M * N; i++) C1[i] = C2[i] = (qkt_real)qkt_rng_normal(&r);
            qkt_set_threads(1);
            qkt_gemm(ta, tb, M, N, K, 0.5, A, ta ? M : K, B, tb ? K : N, 0.25, C1, N);
            qkt_set_threads(2);
            qkt_gemm(ta, tb, M, N, K, 0.5, A, ta ? M : K, B, tb ? K : N, 0.25, C2, N);
            EXPECT(!memcmp(C1, C2, sizeof(qkt_real) * (size_t)M * N), "gemm %dx%dx%d ta=%d tb=%d: 2 threads change bits", M,
                   N, K, ta, tb);
            free(A), free(B), free(C1), free(C2);
        }
    qkt_set_threads(0);
}

/* qkt__lane_sums over many rows gives each row qkt__dot16's bits (the attention's row sums
 * run the rows' chains side by side and must not change a bit): rows of 16 to 256 terms
 * of mixed magnitude, where the order of the double adds shows. */
static void test_lane_sums(void) {
    enum { R = 32, N = 256 };
    static qkt_real a[R * N], b[N], lane[R * 16];
    double s[R];
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    for (int i = 0; i < R * N; i++) a[i] = (qkt_real)(qkt_rng_normal(&r) * exp(8 * qkt_rng_normal(&r)));
    for (int j = 0; j < N; j++) b[j] = (qkt_real)qkt_rng_normal(&r);
    for (int n = 16; n <= N; n *= 2)
        for (int with_b = 0; with_b < 2; with_b++) {
            for (int i = 0; i < R; i++) qkt__lanes16(a + (size_t)i * N, with_b ? b : NULL, n, lane + i * 16);
            qkt__lane_sums(lane, R, s);
            int differ = 0;
            for (int i = 0; i < R; i++) differ += s[i] != qkt__dot16(a + (size_t)i * N, with_b ? b : NULL, n);
            EXPECT(differ == 0, "lane sums, n=%d%s: %d of %d rows differ from qkt__dot16", n, with_b ? " with b" : "", differ, R);
        }
}

/* LayerNorm's row statistics: each row's mean and rstd do not depend on the rows beside it
 * (the AVX-512 path computes 16 rows' sums side by side) or the thread count, and are within
 * float rounding of a float64 reference. On the AVX-512 path (float32) they are also the bits
 * of the order kern_ops.h states: 16 double lanes (lane l: terms j = l mod 16 in order, the
 * terms past the last multiple of 16 into lane 0), the lanes added in order from 0. Rows of
 * mixed magnitude, and rows with +-1e30 in lanes 0 and 1, whose sum is exact only in lane order;
 * widths below, at and past multiples of 16. */
static double ln_lane_order(const qkt_real *x, int C, bool sq, double mu) {
    double lane[16] = {0}, s = 0;
    int j = 0;
    for (; j + 16 <= C; j += 16)
        for (int l = 0; l < 16; l++) {
            double d = (double)x[j + l] - mu;
            lane[l] = sq ? fma(d, d, lane[l]) : lane[l] + (double)x[j + l];
        }
    for (; j < C; j++) {
        double d = (double)x[j] - mu;
        lane[0] = sq ? fma(d, d, lane[0]) : lane[0] + (double)x[j];
    }
    for (int l = 0; l < 16; l++) s += lane[l];
    return s;
}

static void test_layernorm_rows(const qkt__kern *kp) {
    enum { R = 37, CMAX = 130 };
    static qkt_real x[R * CMAX], w[CMAX], b[CMAX], dy[R * CMAX], y[R * CMAX], y1[CMAX], dx[R * CMAX], dx1[CMAX];
    qkt_real mean[R], rstd[R], m1, r1;
    int widths[] = {5, 16, 32, 40, 128, 130};
    qkt_rng r;
    qkt_rng_seed(&r, 21);
#if !defined(QKT_DOUBLE)
    bool ordered = !strcmp(kp->name, "avx512");
#if defined(__AVX512F__)
    ordered |= !strcmp(kp->name, "native");
#endif
#else
    bool ordered = false;
#endif
    for (int wi = 0; wi < 6; wi++) {
        int C = widths[wi];
        for (int i = 0; i < R * C; i++)
            x[i] = (qkt_real)(3 + qkt_rng_normal(&r) * exp(6 * qkt_rng_normal(&r))), dy[i] = (qkt_real)qkt_rng_normal(&r);
        for (int j = 0; j < C; j++) w[j] = (qkt_real)qkt_rng_normal(&r), b[j] = (qkt_real)qkt_rng_normal(&r);
        for (int i = 0; i < R; i += 4) x[(size_t)i * C] = 1e30f, x[(size_t)i * C + 1] = -1e30f; /* cancels in lane order only */
        for (int threads = 1; threads <= 2; threads++) {
            qkt_set_threads(threads);
            kp->layernorm_forward(x, w, b, y, mean, rstd, R, C, 1e-5);
            kp->layernorm_backward(true, x, w, dy, mean, rstd, dx, R, C);
            int alone = 0, order = 0, far = 0;
            for (int i = 0; i < R; i++) {
                const qkt_real *xi = x + (size_t)i * C;
                kp->layernorm_forward(xi, w, b, y1, &m1, &r1, 1, C, 1e-5);
                kp->layernorm_backward(true, xi, w, dy + (size_t)i * C, &m1, &r1, dx1, 1, C);
                alone += m1 != mean[i] || r1 != rstd[i] || memcmp(y1, y + (size_t)i * C, sizeof(qkt_real) * C) ||
                         memcmp(dx1, dx + (size_t)i * C, sizeof(qkt_real) * C);
                double mu = ln_lane_order(xi, C, false, 0) / C, var = ln_lane_order(xi, C, true, mu) / C;
                order += mean[i] != (qkt_real)mu || rstd[i] != (qkt_real)(1.0 / sqrt(var + 1e-5));
                double m = 0, v = 0;
                for (int j = 0; j < C; j++) m += xi[j];
                m /= C;
                for (int j = 0; j < C; j++) v += (xi[j] - m) * (xi[j] - m);
                double rs = 1 / sqrt(v / C + 1e-5);
                far += i % 4 && (fabs(mean[i] - m) > 1e-6 * (fabs(m) + sqrt(v / C)) || fabs(rstd[i] - rs) > 1e-6 * rs);
            }
            EXPECT(alone == 0, "layernorm C=%d threads=%d: %d of %d rows differ from the row alone", C, threads, alone, R);
            EXPECT(far == 0, "layernorm C=%d threads=%d: %d of %d rows' mean or rstd off the float64 reference", C, threads,
                   far, R);
            if (ordered)
                EXPECT(order == 0, "layernorm C=%d threads=%d (%s): %d of %d rows' mean or rstd not in the stated order", C,
                       threads, kp->name, order, R);
        }
    }
    qkt_set_threads(0);
}

/* The cross-entropy's row max (kern_ops.h's row_max, 16 lanes from 32 logits up) through
 * the rows' log-sum-exp: lse = m + log sum e^{x - m} is the same for any m near the max,
 * but a max that missed the largest logit (150 among logits in [-3, 3]) leaves e^{x - m}
 * at its clamp, e^88, and lse near 88. Every width 1..100 and position of the largest;
 * a NaN first logit (the rule keeps it) gives NaN; zeros of either sign give log V. */
static void test_ce_row_max(const qkt__kern *kp) {
    enum { VMAX = 100 };
    qkt_real x[VMAX], lse[1];
    int32_t tgt[1] = {0};
    int bad = 0, nan_bad = 0, zero_bad = 0;
    for (int V = 1; V <= VMAX; V++)
        for (int p = 0; p < V; p++) {
            for (int j = 0; j < V; j++) x[j] = (qkt_real)(((j * 37 + V * 11) % 61) / 10.0 - 3.0);
            x[p] = 150;
            kp->cross_entropy_forward(x, tgt, lse, 1, V);
            double sum = 0; /* e^{x - 150}, in double: the true lse */
            for (int j = 0; j < V; j++) sum += exp((double)x[j] - 150);
            if (!(fabs(lse[0] - (150 + log(sum))) < 1e-4)) {
                if (bad++ < 3) printf("V %d, largest at %d: lse %.6g, want %.6g\n", V, p, (double)lse[0], 150 + log(sum));
            }
            if (V >= 2) { /* a NaN first: the rule's max is NaN, and so is lse */
                x[0] = NAN;
                kp->cross_entropy_forward(x, tgt, lse, 1, V);
                nan_bad += lse[0] == lse[0];
            }
        }
    for (int V = 1; V <= VMAX; V++) {
        qkt_real z[1];
        for (int j = 0; j < V; j++) x[j] = 0;
        kp->cross_entropy_forward(x, tgt, z, 1, V);
        for (int j = 0; j < V; j++) x[j] = (j * 7 + V) % 3 ? (qkt_real)-0.0 : 0; /* mixed signs */
        kp->cross_entropy_forward(x, tgt, lse, 1, V);
        zero_bad += memcmp(z, lse, sizeof z) != 0;
    }
    EXPECT(bad == 0, "%d rows' lse missed their largest logit", bad);
    EXPECT(nan_bad == 0, "%d rows with a NaN first logit have a number for lse", nan_bad);
    EXPECT(zero_bad == 0, "%d rows of signed zeros have other lse bits than rows of +0", zero_bad);
}

int main(void) {
    qkt_test_isa_or_skip();
    const qkt__kern *kp = qkt__kern_get(); /* the path QKT_ISA forces, else the widest the CPU runs */
    test_exp_tanh(kp);
#ifndef QKT_DOUBLE
    test_gelu_grad_bits(kp);
#endif
    test_tile_product(kp);
    test_colsum();
    test_gemm_split();
    test_lane_sums();
    test_layernorm_rows(kp);
    test_ce_row_max(kp);
    return qkt_test_finish();
}
