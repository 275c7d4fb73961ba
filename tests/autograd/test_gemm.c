/* qkt_gemm on the process's kernel path (CTest runs this once per path with QKT_ISA):
 * against a float64 product on ragged shapes around the blocking sizes of
 * kern_gemm_avx512.h (K 512, N 128 or with A^T 512, M 64), every transpose, beta 0 and 1; where the path has
 * the same bits whatever the thread count, and where it has its own gemm (AVX-512)
 * whatever the way the product is cut into blocks; a planted wrong product (one k term
 * missing) is caught. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern_table.h"
#include "ops_internal.h"
#include "rt_memory.h"
#include "qkt_test.h"

typedef struct {
    int M, N, K, lda, ldb, ldc;
    bool ta, tb;
    qkt_real *A, *B, *C0; /* inputs; C0: C before the product */
} gemm_case;

static void case_make(gemm_case *g, qkt_rng *r, int M, int N, int K, bool ta, bool tb) {
    *g = (gemm_case){.M = M, .N = N, .K = K, .ta = ta, .tb = tb};
    g->lda = (ta ? M : K) + 3, g->ldb = (tb ? K : N) + 5, g->ldc = N + 2; /* strides wider than the rows */
    size_t na = (size_t)(ta ? K : M) * g->lda, nb = (size_t)(tb ? N : K) * g->ldb, nc = (size_t)M * g->ldc;
    g->A = malloc(sizeof(qkt_real) * (na + 1)), g->B = malloc(sizeof(qkt_real) * (nb + 1));
    g->C0 = malloc(sizeof(qkt_real) * (nc + 1));
    for (size_t i = 0; i < na; i++) g->A[i] = (qkt_real)qkt_rng_normal(r);
    for (size_t i = 0; i < nb; i++) g->B[i] = (qkt_real)qkt_rng_normal(r);
    for (size_t i = 0; i < nc; i++) g->C0[i] = (qkt_real)qkt_rng_normal(r);
}

static void case_free(gemm_case *g) { free(g->A), free(g->B), free(g->C0); }

static qkt_real *fresh_c(const gemm_case *g) {
    size_t nc = (size_t)g->M * g->ldc;
    qkt_real *C = malloc(sizeof(qkt_real) * (nc + 1));
    memcpy(C, g->C0, sizeof(qkt_real) * nc);
    return C;
}

static double op_a(const gemm_case *g, int m, int k) { return g->ta ? g->A[(size_t)k * g->lda + m] : g->A[(size_t)m * g->lda + k]; }
static double op_b(const gemm_case *g, int k, int n) { return g->tb ? g->B[(size_t)n * g->ldb + k] : g->B[(size_t)k * g->ldb + n]; }

/* The worst error of C = alpha op(A) op(B) + beta C0 against float64, in units of the
 * float32 bound (K + 2) u (sum |a b| + |beta c0|) with u = 2^-24 (2 for slack): <= 1
 * passes. Also fails (returns +inf) when a column past N was written. */
static double case_error(const gemm_case *g, double alpha, double beta, const qkt_real *C) {
    double worst = 0;
    for (int m = 0; m < g->M; m++) {
        for (int n = 0; n < g->N; n++) {
            double c0 = g->C0[(size_t)m * g->ldc + n], want = beta == 0 ? 0 : beta * c0, mag = beta == 0 ? 0 : fabs(beta * c0);
            for (int k = 0; k < g->K; k++) {
                double p = alpha * op_a(g, m, k) * op_b(g, k, n);
                want += p, mag += fabs(p);
            }
            double bound = 2.0 * (g->K + 2) * 0x1p-24 * mag + 1e-30;
            double e = fabs(C[(size_t)m * g->ldc + n] - want) / bound;
            if (!(e <= worst)) worst = e; /* NaN counts as the worst */
        }
        for (int n = g->N; n < g->ldc; n++)
            if (memcmp(&C[(size_t)m * g->ldc + n], &g->C0[(size_t)m * g->ldc + n], sizeof(qkt_real))) return INFINITY;
    }
    return worst;
}

static const int dims[] = {1, 7, 8, 9, 16, 17, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300, 513};
enum { n_dims = sizeof dims / sizeof dims[0] };

/* qkt_gemm against float64 on random shapes from `dims` (and the GPT's), all transposes. */
static void test_accuracy(void) {
    qkt_rng r;
    qkt_rng_seed(&r, 17);
    double worst = 0;
    int n_cases = 0;
    for (int i = 0; i < 160; i++) {
        int M = dims[qkt_rng_u64(&r) % n_dims], N = dims[qkt_rng_u64(&r) % n_dims], K = dims[qkt_rng_u64(&r) % n_dims];
        if (i < 4) M = 1024, N = i < 2 ? 96 : 65, K = 32 + i; /* a cell's c_attn, a tiny head */
        gemm_case g;
        case_make(&g, &r, M, N, K, i & 1, i & 2);
        /* alpha 1, beta 0 or 1: every call qkt makes (the own gemm where the path has one);
         * alpha 0.5, beta 0.25: BLAS on every path */
        const double ab[][2] = {{1, 0}, {1, 1}, {0.5, 0.25}};
        for (int j = 0; j < 3; j++) {
            qkt_real *C = fresh_c(&g);
            qkt_gemm(g.ta, g.tb, M, N, K, (qkt_real)ab[j][0], g.A, g.lda, g.B, g.ldb, (qkt_real)ab[j][1], C, g.ldc);
            double e = case_error(&g, ab[j][0], ab[j][1], C);
            EXPECT(e <= 1, "gemm %dx%dx%d ta=%d tb=%d alpha %g beta %g: error %.3g x the float32 bound", M, N, K, g.ta,
                   g.tb, ab[j][0], ab[j][1], e);
            if (e > worst) worst = e;
            n_cases++;
            free(C);
        }
        case_free(&g);
    }
    printf("%s: %d products, worst error %.3g x the float32 bound\n", qkt__kern_get()->name, n_cases, worst);
}

/* beta 0 never reads C (NaN there stays out); K = 0 gives beta C; NaN in A reaches its row. */
static void test_edges(void) {
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    gemm_case g;
    case_make(&g, &r, 70, 40, 300, false, true);
    qkt_real *C = fresh_c(&g);
    for (int i = 0; i < g.M * g.ldc; i++) C[i] = NAN;
    qkt_gemm(false, true, g.M, g.N, g.K, 1, g.A, g.lda, g.B, g.ldb, 0, C, g.ldc);
    bool finite = true;
    for (int m = 0; m < g.M; m++)
        for (int n = 0; n < g.N; n++) finite &= isfinite(C[(size_t)m * g.ldc + n]);
    EXPECT(finite, "beta 0 read the NaN in C");
    memcpy(C, g.C0, sizeof(qkt_real) * (size_t)g.M * g.ldc);
    qkt_gemm(false, true, g.M, g.N, 0, 1, g.A, g.lda, g.B, g.ldb, 1, C, g.ldc);
    EXPECT(!memcmp(C, g.C0, sizeof(qkt_real) * (size_t)g.M * g.ldc), "K = 0, beta 1 changed C");
    qkt_gemm(false, true, g.M, g.N, 0, 1, g.A, g.lda, g.B, g.ldb, 0, C, g.ldc);
    EXPECT(C[0] == 0 && C[(size_t)(g.M - 1) * g.ldc + g.N - 1] == 0, "K = 0, beta 0 did not zero C");
    g.A[5 * g.lda + 299] = NAN;
    qkt_gemm(false, true, g.M, g.N, g.K, 1, g.A, g.lda, g.B, g.ldb, 0, C, g.ldc);
    EXPECT(isnan(C[5 * g.ldc]) && isnan(C[5 * g.ldc + g.N - 1]) && isfinite(C[4 * g.ldc]), "a NaN in row 5 of A did not reach row 5 of C alone");
    free(C);
    case_free(&g);
}

/* The same bits on 1, 2 and 3 threads on every path (BLAS's products are cut into blocks
 * fixed by the shape, kern_gemm.c), for alpha 1 / beta 1 (the own gemm where the path has one)
 * and alpha 0.5 / beta 0.25 (BLAS); where the path has its own gemm, also when the product
 * is cut into row, column or K blocks by hand (any cut, not the kernel's block sizes). */
static void test_bits(const qkt__kern *kp) {
    qkt_rng r;
    qkt_rng_seed(&r, 29);
    /* {600, 520, 700}: two K blocks (512 + 188); with A^T, a B block of 512 columns (A packed) and one of 8 */
    const int shapes[][3] = {{700, 90, 300}, {90, 700, 130}, {333, 334, 65}, {1024, 96, 32}, {60, 1500, 70}, {600, 520, 700}};
    int n_cut = 0;
    for (int s = 0; s < 6; s++)
        for (int t = 0; t < 4; t++)
            for (int ab = 0; ab < 2; ab++) {
                gemm_case g;
                int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                qkt_real alpha = ab ? 0.5f : 1, beta = ab ? 0.25f : 1;
                case_make(&g, &r, M, N, K, t & 1, t & 2);
                size_t bytes = sizeof(qkt_real) * (size_t)M * g.ldc;
                qkt_real *one = fresh_c(&g), *more = fresh_c(&g);
                qkt_set_threads(1);
                qkt_gemm(g.ta, g.tb, M, N, K, alpha, g.A, g.lda, g.B, g.ldb, beta, one, g.ldc);
                for (int nt = 2; nt <= 3; nt++) {
                    memcpy(more, g.C0, bytes);
                    qkt_set_threads(nt);
                    qkt_gemm(g.ta, g.tb, M, N, K, alpha, g.A, g.lda, g.B, g.ldb, beta, more, g.ldc);
                    EXPECT(!memcmp(one, more, bytes), "gemm %dx%dx%d ta=%d tb=%d alpha %g beta %g: %d threads change bits", M,
                           N, K, g.ta, g.tb, alpha, beta, nt);
                }
                if (kp->gemm && !ab) { /* rows [0, m1) in two K parts; rows [m1, M) in two column parts;
                                        * with one scratch buffer given to every part, full of NaN */
                    qkt_real *cut = fresh_c(&g), *scr = qkt_aligned_alloc(64, kp->gemm_scratch * sizeof *scr);
                    for (size_t i = 0; i < kp->gemm_scratch; i++) scr[i] = NAN;
                    int m1 = M / 3 + 1, n1 = N / 2 - 3, k1 = K / 2 + 5;
                    const qkt_real *A1 = g.ta ? g.A + m1 : g.A + (size_t)m1 * g.lda;
                    const qkt_real *Ak = g.ta ? g.A + (size_t)k1 * g.lda : g.A + k1, *Bk = g.tb ? g.B + k1 : g.B + (size_t)k1 * g.ldb;
                    const qkt_real *Bn = g.tb ? g.B + (size_t)n1 * g.ldb : g.B + n1;
                    kp->gemm(g.ta, g.tb, m1, N, k1, g.A, g.lda, g.B, g.ldb, true, NULL, cut, g.ldc, NULL, scr);
                    kp->gemm(g.ta, g.tb, m1, N, K - k1, Ak, g.lda, Bk, g.ldb, true, NULL, cut, g.ldc, NULL, scr);
                    kp->gemm(g.ta, g.tb, M - m1, n1, K, A1, g.lda, g.B, g.ldb, true, NULL, cut + (size_t)m1 * g.ldc, g.ldc, NULL, scr);
                    kp->gemm(g.ta, g.tb, M - m1, N - n1, K, A1, g.lda, Bn, g.ldb, true, NULL, cut + (size_t)m1 * g.ldc + n1, g.ldc,
                             NULL, scr);
                    EXPECT(!memcmp(one, cut, bytes), "gemm %dx%dx%d ta=%d tb=%d: cut into blocks, the bits change", M, N, K, g.ta, g.tb);
                    n_cut++;
                    free(cut), free(scr);
                }
                free(one), free(more);
                case_free(&g);
            }
    qkt_set_threads(0);
    printf("%s: 48 products bit-identical on 1, 2 and 3 threads; %d cut into blocks by hand (own gemm: %s)\n", kp->name,
           n_cut, kp->gemm ? "yes" : "no, BLAS");
}

/* The affine op's product, C = bias + A B^T with the sums starting at the bias
 * (qkt__gemm_bias), gives the bits of writing the bias into C and adding A B^T onto it
 * (beta 1), on 1 and 2 threads (split by rows, and by columns: N > M), ragged N too. Its
 * packing buffers are a context's scratch, kept from call to call (grown from 1 to 2 threads'). */
static void test_bias(void) {
    qkt_rng r;
    qkt_rng_seed(&r, 53);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    const int shapes[][3] = {{1024, 96, 32}, {300, 65, 257}, {60, 1500, 70}, {7, 17, 3}};
    for (int s = 0; s < 4; s++) {
        gemm_case g;
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        case_make(&g, &r, M, N, K, false, true);
        qkt_real *bias = malloc(sizeof(qkt_real) * (size_t)N);
        for (int n = 0; n < N; n++) bias[n] = (qkt_real)qkt_rng_normal(&r);
        size_t bytes = sizeof(qkt_real) * (size_t)M * g.ldc;
        qkt_real *want = fresh_c(&g), *got = fresh_c(&g);
        for (int t = 1; t <= 2; t++) {
            qkt_set_threads(t);
            memcpy(want, g.C0, bytes);
            for (int m = 0; m < M; m++) memcpy(want + (size_t)m * g.ldc, bias, sizeof(qkt_real) * (size_t)N);
            qkt_gemm(false, true, M, N, K, 1, g.A, g.lda, g.B, g.ldb, 1, want, g.ldc);
            memcpy(got, g.C0, bytes);
            qkt__gemm_bias(&ctx, M, N, K, g.A, g.lda, g.B, g.ldb, bias, got, g.ldc);
            EXPECT(!memcmp(want, got, bytes), "bias gemm %dx%dx%d on %d thread(s): not the bits of bias + beta 1", M, N, K, t);
        }
        free(bias), free(want), free(got);
        case_free(&g);
    }
    qkt_ctx_free(&ctx);
    qkt_set_threads(0);
}

/* A planted bug: the path's product with the last k term left out must fail the check. */
static void test_planted(const qkt__kern *kp) {
    qkt_rng r;
    qkt_rng_seed(&r, 41);
    gemm_case g;
    case_make(&g, &r, 65, 129, 257, false, true);
    qkt_real *C = fresh_c(&g);
    if (kp->gemm)
        kp->gemm(false, true, g.M, g.N, g.K - 1, g.A, g.lda, g.B, g.ldb, false, NULL, C, g.ldc, NULL, NULL);
    else
        qkt_gemm(false, true, g.M, g.N, g.K - 1, 1, g.A, g.lda, g.B, g.ldb, 0, C, g.ldc);
    double e = case_error(&g, 1, 0, C);
    printf("%s: planted product without its last k term: error %.3g x the bound (caught: %s)\n", kp->name, e, e > 1 ? "yes" : "NO");
    EXPECT(e > 1, "the check missed a product without its last k term (error %.3g x the bound)", e);
    free(C);
    case_free(&g);
}

/* Every aligned allocation of the process (qkt_aligned_alloc's posix_memalign, the own
 * gemm's packing buffers among them) counted while `counting`: this definition takes the
 * place of the C library's. */
static volatile int counting, n_aligned;
int posix_memalign(void **p, size_t align, size_t n) {
    if (counting) n_aligned++;
    void *q = aligned_alloc(align, (n + align - 1) / align * align);
    if (!q) return ENOMEM;
    *p = q;
    return 0;
}

/* The products' scratch of a context (qkt__arena_scratch): the same buffers for every call
 * that asks no more, more slots or larger ones made on demand (counted as mallocs), and a
 * context's second step of products allocating nothing at all (where the path has its own
 * gemm; a product that allocated its own packing buffers would be counted). */
static void test_scratch(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    size_t m0 = qkt_ctx_mem(&ctx).n_mallocs;
    void **s = qkt__arena_scratch(&ctx.arena, 1, 1000);
    void *a = s[0];
    EXPECT(a && ((uintptr_t)a & 63) == 0, "scratch slot 0 is not 64-byte aligned");
    EXPECT(qkt__arena_scratch(&ctx.arena, 1, 500)[0] == a, "a smaller request got another buffer");
    s = qkt__arena_scratch(&ctx.arena, 2, 1000);
    EXPECT(s[0] == a && s[1] && s[1] != a, "a second slot replaced the first or is missing");
    EXPECT(qkt_ctx_mem(&ctx).n_mallocs == m0 + 2, "two slots: %zu mallocs", qkt_ctx_mem(&ctx).n_mallocs - m0);
    s = qkt__arena_scratch(&ctx.arena, 2, 1 << 20);
    memset(s[0], 1, 1 << 20), memset(s[1], 2, 1 << 20); /* both are that large (ASan would tell) */
    qkt_ctx_reset(&ctx);
    EXPECT(qkt__arena_scratch(&ctx.arena, 1, 1 << 20)[0] == s[0], "a reset dropped the scratch");
    /* products through ops: after the first step, the second allocates nothing, on 2 threads */
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *w = qkt_params_add(&p, "w", 2, (int[]){256, 256}, 0);
    qkt_params_finalize(&p);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(i % 7) / 7;
    qkt_set_threads(2);
    size_t after = 0;
    for (int step = 0; step < 2; step++) {
        counting = step == 1, n_aligned = 0;
        qkt_ctx_reset(&ctx);
        qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){300, 256});
        for (int64_t i = 0; i < x->size; i++) x->data[i] = (qkt_real)(i % 5) / 5;
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, qkt_sum(&ctx, qkt_affine(&ctx, qkt_affine(&ctx, x, w, NULL), w, NULL)), NULL);
        if (step == 0) after = qkt_ctx_mem(&ctx).n_mallocs;
    }
    counting = 0;
    if (qkt__kern_get()->gemm) /* BLAS may allocate as it likes */
        EXPECT(n_aligned == 0, "the second step of products made %d aligned allocations", n_aligned);
    EXPECT(qkt_ctx_mem(&ctx).n_mallocs == after, "the second step of products allocated (%zu -> %zu)", after,
           qkt_ctx_mem(&ctx).n_mallocs);
    qkt_set_threads(0);
    qkt_params_free(&p);
    qkt_ctx_free(&ctx);
}

int main(void) {
    qkt_test_isa_or_skip();
    test_scratch();
    const qkt__kern *kp = qkt__kern_get();
    test_accuracy();
    test_edges();
    test_bits(kp);
    test_bias();
    test_planted(kp);
    return qkt_test_finish();
}
