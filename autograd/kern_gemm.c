/* The one gemm wrapper. On a kernel path with its own product (kern_table.h's `gemm`: the
 * AVX-512 paths, kern_gemm_avx512.h) float32 products with alpha 1 and beta 0 or 1 (every call
 * qkt makes) run there; the rest go to BLAS. QKT_NO_BLAS gives a plain-loop reference
 * build for what BLAS would do.
 *
 * Threads: qkt's OpenMP team is the only thread pool. OpenBLAS is kept at one
 * thread and a large product is split here into row (or column) blocks, one
 * single-threaded BLAS call per block on the OpenMP threads. With OpenBLAS's own
 * pthreads next to OpenMP's, the two pools spin-wait against each other on a
 * 2-core machine (docs/performance.md, "Thread settings"). Called
 * from inside a parallel region, a product runs on the calling thread alone. */
#include "kern_table.h"
#include "rt_memory.h"

#include <pthread.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifndef QKT_NO_BLAS
#include <cblas.h>
#endif

/* Below this many flops a product runs on one thread (waking the team costs ~10-20 us
 * with passive waiting; 2^23 flops is ~80 us on one core). */
#define QKT_GEMM_PAR_FLOPS (1 << 23)
/* Blocks have at least this many rows (columns): each block packs the shared operand
 * again, which costs about 1/QKT_GEMM_MIN_BLOCK of its compute. */
#define QKT_GEMM_MIN_BLOCK 96
/* Where BLAS computes a product, the blocks are fixed by its shape, never by the thread
 * count: OpenBLAS gives different last bits for an element depending on the block it is
 * computed in (measured, OpenBLAS 0.3.21: 2-10 % of the elements of 60..1500-sized
 * products differed between one call and two halves), so a block count that followed
 * the threads made results depend on them. Products of at least QKT_GEMM_PAR_FLOPS are
 * cut into up to this many blocks whatever the threads (one thread runs them in turn;
 * the extra packing cost ~3 % on `small`). The own gemm's bits do not depend on the
 * cut (kern_gemm_avx512.h), so its products take one block per thread. */
#define QKT_GEMM_BLAS_BLOCKS 8

/* The calling thread's number in the product's team (0 outside one). */
static int team_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

#ifndef QKT_NO_BLAS
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_thread(void) { openblas_set_num_threads(1); }
#endif

static void gemm_blas(bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda, const qkt_real *B,
                      int ldb, qkt_real beta, const qkt_real *bias, qkt_real *C, int ldc);

/* own: the kernel table whose gemm computes this product, or NULL for BLAS (gemm_run
 * decides). bias (with beta 0 only): every row of C starts as bias. epi (may be NULL):
 * the own gemm runs it per block as the block is done, BLAS on the whole C after.
 * scratch: the own gemm's packing buffers, or NULL (it allocates its own). */
static void gemm_serial(const qkt__kern *own, bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A,
                        int lda, const qkt_real *B, int ldb, qkt_real beta, const qkt_real *bias, qkt_real *C, int ldc,
                        const qkt__gemm_epi *epi, qkt_real *scratch) {
    if (own) {
        own->gemm(ta, tb, M, N, K, A, lda, B, ldb, beta == 1, bias, C, ldc, epi, scratch);
        return;
    }
    gemm_blas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
    if (epi) epi->fn(C, epi->aux, M, N, ldc);
}

static void gemm_blas(bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda, const qkt_real *B,
                      int ldb, qkt_real beta, const qkt_real *bias, qkt_real *C, int ldc) {
    if (bias) {
        for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof *C);
        beta = 1;
    }
#ifndef QKT_NO_BLAS
#ifdef QKT_DOUBLE
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
#else
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
#endif
#else
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                qkt_real a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                qkt_real b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += (double)a * b;
            }
            C[(size_t)i * ldc + j] = (qkt_real)(alpha * acc + (beta == 0 ? 0 : beta * C[(size_t)i * ldc + j]));
        }
#endif
}

/* A product cut into nb blocks of whole rows of C (by_rows) or whole columns, len of them. */
typedef struct {
    const qkt__kern *own;
    bool ta, tb;
    int M, N, K;
    qkt_real alpha;
    const qkt_real *A;
    int lda;
    const qkt_real *B;
    int ldb;
    qkt_real beta;
    const qkt_real *bias;
    qkt_real *C;
    int ldc;
    const qkt__gemm_epi *epi;
    bool by_rows;
    int len, nb;
} gemm_cut;

/* Block b of the cut, with the packing buffers sb (or NULL). */
static void gemm_cut_block(const gemm_cut *g, int b, qkt_real *sb) {
    /* Block b covers [lo, hi), boundaries on multiples of 16 (the kernels' widths). */
    int len = g->len, nb = g->nb;
    int lo = (int)((int64_t)len * b / nb) / 16 * 16, hi = b == nb - 1 ? len : (int)((int64_t)len * (b + 1) / nb) / 16 * 16;
    if (hi <= lo) return;
    size_t off = g->by_rows ? (size_t)lo * g->ldc : (size_t)lo; /* of the block in C (and in epi's aux) */
    const qkt__gemm_epi *epi = g->epi;
    qkt__gemm_epi e = {epi ? epi->fn : NULL, epi && epi->aux ? epi->aux + off : NULL}, *eb = epi ? &e : NULL;
    if (g->by_rows) {
        const qkt_real *Ab = g->ta ? g->A + lo : g->A + (size_t)lo * g->lda;
        gemm_serial(g->own, g->ta, g->tb, hi - lo, g->N, g->K, g->alpha, Ab, g->lda, g->B, g->ldb, g->beta, g->bias,
                    g->C + off, g->ldc, eb, sb);
    } else {
        const qkt_real *Bb = g->tb ? g->B + (size_t)lo * g->ldb : g->B + lo;
        gemm_serial(g->own, g->ta, g->tb, g->M, hi - lo, g->K, g->alpha, g->A, g->lda, Bb, g->ldb, g->beta,
                    g->bias ? g->bias + lo : NULL, g->C + off, g->ldc, eb, sb);
    }
}

/* ar (or NULL): the arena whose scratch (qkt__arena_scratch) holds the own gemm's packing
 * buffers, one per block's thread; without it each call allocates and frees its own. */
static void gemm_run(qkt_arena *ar, bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda,
                     const qkt_real *B, int ldb, qkt_real beta, const qkt_real *bias, qkt_real *C, int ldc,
                     const qkt__gemm_epi *epi) {
    if (M == 0 || N == 0) return;
    const qkt__kern *kn = qkt__kern_get();
#ifndef QKT_NO_BLAS
    pthread_once(&blas_once, blas_single_thread);
#endif
    bool big = 2.0 * M * N * K >= QKT_GEMM_PAR_FLOPS;
    /* the path's own gemm takes alpha 1 and beta 0 or 1 (every product qkt makes); BLAS the rest */
    const qkt__kern *own = kn->gemm && alpha == 1 && (beta == 0 || beta == 1) ? kn : NULL;
    int nt = qkt_parallel_worth(big) ? qkt_get_threads() : 1;
    /* Split the longer of M and N into blocks (whole rows of C, or whole columns). Every
     * block packs the other operand again: by rows that is B (K x N), by columns A (M x K),
     * so splitting the longer side copies the smaller one; the own gemm takes one block per
     * thread (more would pack more often: 3 % more CPU on `small`), BLAS the fixed blocks. */
    bool by_rows = M >= N;
    int len = by_rows ? M : N, nb = len / QKT_GEMM_MIN_BLOCK, cap = own ? nt : big ? QKT_GEMM_BLAS_BLOCKS : 1;
    if (nb > cap) nb = cap;
    if (nb < 2) {
        qkt_real *scratch = own && ar ? qkt__arena_scratch(ar, 1, own->gemm_scratch * sizeof(qkt_real))[0] : NULL;
        gemm_serial(own, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc, epi, scratch);
        return;
    }
    if (nt > nb) nt = nb;
    void **scratch = own && ar ? qkt__arena_scratch(ar, nt, own->gemm_scratch * sizeof(qkt_real)) : NULL;
    gemm_cut cut = {own, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc, epi, by_rows, len, nb};
    if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
        for (int b = 0; b < nb; b++) gemm_cut_block(&cut, b, scratch ? scratch[team_thread()] : NULL);
    } else { /* BLAS's fixed blocks on one thread: no OpenMP region (qkt_parallel_worth) */
        for (int b = 0; b < nb; b++) gemm_cut_block(&cut, b, scratch ? scratch[0] : NULL);
    }
}

void qkt_gemm(bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda, const qkt_real *B,
              int ldb, qkt_real beta, qkt_real *C, int ldc) {
    gemm_run(NULL, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, NULL, C, ldc, NULL);
}

void qkt__gemm(qkt_ctx *ctx, bool ta, bool tb, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
               qkt_real beta, qkt_real *C, int ldc) {
    gemm_run(&ctx->arena, ta, tb, M, N, K, 1, A, lda, B, ldb, beta, NULL, C, ldc, NULL);
}

void qkt__gemm_bias(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                    const qkt_real *bias, qkt_real *C, int ldc) {
    gemm_run(&ctx->arena, false, true, M, N, K, 1, A, lda, B, ldb, 0, bias, C, ldc, NULL);
}

/* The residual epilogue (qkt__gemm_bias_add): c = r + c, r laid out like C; the bits
 * of qkt_add(r, c) (the same float add, r the first operand). */
static void residual_epilogue(qkt_real *c, qkt_real *r, int rows, int cols, int ldc) {
    for (int i = 0; i < rows; i++) {
        qkt_real *ci = c + (size_t)i * ldc;
        const qkt_real *ri = r + (size_t)i * ldc;
#pragma omp simd
        for (int j = 0; j < cols; j++) ci[j] = ri[j] + ci[j];
    }
}

void qkt__gemm_bias_add(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                        const qkt_real *bias, const qkt_real *R, qkt_real *C, int ldc) {
    qkt__gemm_epi e = {residual_epilogue, (qkt_real *)R}; /* read only: the epilogue's aux is not const for GELU's g */
    gemm_run(&ctx->arena, false, true, M, N, K, 1, A, lda, B, ldb, 0, bias, C, ldc, &e);
}

void qkt__gemm_bias_gelu(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                         const qkt_real *bias, qkt_real *C, qkt_real *G, int ldc) {
    qkt__gemm_epi e = {qkt__kern_get()->gelu_epilogue, G};
    gemm_run(&ctx->arena, false, true, M, N, K, 1, A, lda, B, ldb, 0, bias, C, ldc, &e);
}
