/* The kernel paths: the hot loops of the ops, compiled once per instruction set and
 * picked once per process. Private to autograd.
 *
 * Why: the default build is portable x86-64 (-O2, no -march), so gcc gives its loops
 * SSE2 (4 floats, no FMA), and the hand-written kernels (kern_simd.h) were 3x slower there
 * than in a -march=native build. The loops that dominate a step (GELU, LayerNorm, the
 * bias and residual sums, cross-entropy, the fused attention's tiles) live in
 * kern_ops.h and kern_attention.h; kern_baseline.c, kern_avx2.c and kern_avx512.c each
 * compile them for one instruction set (with `#pragma GCC target`, so every library
 * built from the folder, the float64 test copy included, gets all three) and fill one
 * table qkt__kern. The first op (or qkt_isa_select) picks the table once (kern_select.c): the
 * widest the CPU runs, or the one the environment variable QKT_ISA names; the choice
 * never changes afterwards. A -DQKT_NATIVE=ON build compiles the kernels once, with
 * -march=native, as the only path ("native").
 *
 * The avx2 and avx512 files also say -fno-trapping-math: qkt__exp's clamp makes gcc
 * compute 2^n (a float-to-int conversion, which may raise FE_INVALID) under a condition,
 * and with trapping math it then leaves the loops around exp (GELU, cross-entropy,
 * attention) scalar unless AVX-512 masking can hide the condition (GELU was 26 % of the
 * tiny step on avx2 without it). It changes no value, only which FP exception flags a
 * loop may raise; qkt reads none.
 *
 * Results: baseline's loops are the old default build's, bit for bit. avx2 and avx512 fuse
 * a*b+c into FMAs and sum `omp simd` reductions in 8 or 16 lanes, so their float
 * rounding differs from baseline's (and from each other's) in the last bits. Each path
 * is deterministic, and its results do not depend on the thread count (the row and
 * chunk splits are the same as before). */
#ifndef QKT_KERN_H
#define QKT_KERN_H
#include "qkt_autograd.h"

/* Several paths: gcc or clang on x86-64, not a -march=native build. (clang reads gcc's
 * `#pragma GCC target` only from version 19 on; before that its avx2/avx512 files would
 * compile as baseline, so clang builds have the one path.) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(QKT_NATIVE)
#define QKT_KERN_DISPATCH 1
#else
#define QKT_KERN_DISPATCH 0
#endif

typedef struct qkt__attn qkt__attn; /* ops_attention.h */

/* A product's epilogue: fn(block of C, aux at the block's offset in an array laid out like
 * C, rows, cols, ldc) runs once on every block of C after its last k term, on the thread
 * that computed the block (kern_gemm.c), while the block is still in cache. */
typedef struct qkt__gemm_epi {
    void (*fn)(qkt_real *c, qkt_real *aux, int rows, int cols, int ldc);
    qkt_real *aux;
} qkt__gemm_epi;

typedef struct qkt__kern {
    const char *name; /* "baseline", "avx2", "avx512" or "native" */
    /* y = a op b, op one of QKT_OP_ADD/SUB/MUL, b (nb values) repeated over a's na / nb rows */
    void (*binary_forward)(qkt_op op, const qkt_real *a, const qkt_real *b, qkt_real *y, int64_t na, int64_t nb);
    /* da (=|+=) dy (ADD, SUB) or dy * b (MUL), b repeated over the rows; store: da is new, not read */
    void (*binary_backward_a)(qkt_op op, bool store, const qkt_real *dy, const qkt_real *b, qkt_real *da, int64_t na,
                              int64_t nb);
    /* y = 0.5 x (1 + tanh(k (x + c x^3))), k = sqrt(2/pi), c = 0.044715 */
    void (*gelu_forward)(const qkt_real *x, qkt_real *y, int64_t n);
    /* dx (=|+=) gelu'(x) dy */
    void (*gelu_backward)(bool store, const qkt_real *x, const qkt_real *dy, qkt_real *dx, int64_t n);
    /* A product's epilogue (qkt__gemm_epi.fn), one thread: u = c; c = gelu(u); g = gelu'(u)
     * unless g is NULL, each the bits of gelu_forward and gelu_backward's factor */
    void (*gelu_epilogue)(qkt_real *c, qkt_real *g, int rows, int cols, int ldc);
    /* per row of C: mean, rstd = 1/sqrt(var + eps), y = (x - mean) rstd w + b (w, b may be NULL) */
    void (*layernorm_forward)(const qkt_real *x, const qkt_real *w, const qkt_real *b, qkt_real *y, qkt_real *mean,
                              qkt_real *rstd, int64_t rows, int C, double eps);
    /* h = (x - mean) rstd, g = dy w:  dx (=|+=) rstd (g - mean(g) - h mean(g h)) */
    void (*layernorm_backward)(bool store, const qkt_real *x, const qkt_real *w, const qkt_real *dy, const qkt_real *mean,
                               const qkt_real *rstd, qkt_real *dx, int64_t rows, int C);
    /* out[j] += sign sum_r X[r, j] f(r, j) (ops_internal.h's qkt__colsum); part: ceil(rows / 64) x cols doubles;
     * with Y and out2 (else NULL), also out2[j] += sign sum_r X[r, j] in the same pass (part2 as part) */
    void (*colsum)(int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                   const qkt_real *mul, qkt_real sign, qkt_real *out, double *part, qkt_real *out2, double *part2);
    /* du = g dh elementwise and out[j] += sum_r du[r, j]: colsum's bits of du (part as colsum's) */
    void (*mul_colsum)(int64_t rows, int64_t cols, const qkt_real *g, const qkt_real *dh, qkt_real *du, qkt_real *out,
                       double *part);
    /* lse[r] = log sum_j exp(x_rj); returns sum over counted rows of lse[r] - x_r[t_r] */
    double (*cross_entropy_forward)(const qkt_real *x, const int32_t *targets, qkt_real *lse, int64_t rows, int V);
    /* dx_rj += g (exp(x_rj - lse_r) - [j == t_r]) over counted rows */
    void (*cross_entropy_backward)(const qkt_real *x, const int32_t *targets, const qkt_real *lse, qkt_real g,
                                   qkt_real *dx, int64_t rows, int V);
    /* attention forward: query tiles [qt0, qt1) of head (b, h) -> y, row max, 1/l (scratch w) */
    void (*attn_forward_tiles)(const qkt__attn *a, const qkt_real *q, const qkt_real *k, const qkt_real *v, int b, int h,
                               int qt0, int qt1, qkt_real *y, qkt_real *w);
    /* attention backward of head (b, h) -> dq, dk, dv; returns its share of dlog_scale[h] */
    double (*attn_backward_head)(const qkt__attn *a, const qkt_real *q, const qkt_real *k, const qkt_real *v,
                                 const qkt_real *y, const qkt_real *dy, qkt_real *dq, qkt_real *dk, qkt_real *dv,
                                 bool store, int b, int h, qkt_real *w);
    /* Box-Muller's floats mean + std sqrt(-2 log u1) cos(2 pi u2) where they are libm's for
     * certain, redo[i] = 1 where not (qkt_rng_fill_normal); NULL on the paths that take
     * every draw from libm */
    void (*normal_block)(const double *u1, const double *u2, int n, double mean, double std, qkt_real *out,
                         unsigned char *redo);
    /* For the tests (tests/autograd/test_kernels.c), the inline helpers of kern_simd.h as this
     * path compiles them: e = qkt__exp(x), t = qkt__tanh(x) elementwise (vectorised), and
     * the attention's tile product qkt__mk_gemm. */
    void (*exp_tanh)(const qkt_real *x, qkt_real *e, qkt_real *t, int64_t n);
    void (*tile_product)(int M, int N, int K, const qkt_real *A, ptrdiff_t sam, ptrdiff_t sak, const qkt_real *B,
                         ptrdiff_t ldb, qkt_real *C, ptrdiff_t ldc, bool accumulate);
    /* C = op(A) op(B), or C += when accumulate, or (bias not NULL, not accumulate) each
     * row of C = bias + op(A) op(B) with the sums starting at bias, on the calling thread
     * (kern_gemm_avx512.h); NULL on the paths whose products BLAS computes (kern_gemm.c).
     * scratch: gemm_scratch floats (64-byte aligned) for its packing, or NULL: allocated
     * and freed by the call. */
    void (*gemm)(bool ta, bool tb, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                 bool accumulate, const qkt_real *bias, qkt_real *C, int ldc, const qkt__gemm_epi *epi, qkt_real *scratch);
    size_t gemm_scratch; /* floats of scratch one gemm call uses at most (0 without gemm) */
} qkt__kern;

/* The process's table: chosen on the first call, the same ever after. An unknown or
 * unsupported QKT_ISA is a usage error (QKT_FATAL_USAGE) here; qkt_isa_select reports it
 * as a status instead. */
const qkt__kern *qkt__kern_get(void);
/* The table of a path by name, if this build has it and this CPU runs it, else NULL
 * with a one-line reason (no state: for tests comparing the paths). */
const qkt__kern *qkt__kern_named(const char *name, qkt_err *err);

/* The tables (kern_<isa>.c). */
#if QKT_KERN_DISPATCH
extern const qkt__kern qkt__kern_baseline, qkt__kern_avx2, qkt__kern_avx512;
#else
extern const qkt__kern qkt__kern_single;
#endif

/* A table of the static kernels of kern_ops.h, kern_attention.h and kern_gemm_avx512.h, in the
 * file that includes them. */
#define QKT__KERN_TABLE(isa_name)                                                                                   \
    {                                                                                                               \
        .name = isa_name, .binary_forward = binary_forward, .binary_backward_a = binary_backward_a,                 \
        .gelu_forward = gelu_forward, .gelu_backward = gelu_backward, .gelu_epilogue = gelu_epilogue,               \
        .layernorm_forward = layernorm_forward,                                                                     \
        .layernorm_backward = layernorm_backward, .colsum = colsum, .mul_colsum = mul_colsum, .cross_entropy_forward = cross_entropy_forward, \
        .cross_entropy_backward = cross_entropy_backward, .attn_forward_tiles = attn_forward_tiles,                 \
        .attn_backward_head = attn_backward_head, .exp_tanh = exp_tanh, .normal_block = QKT__KERN_NORMAL, .tile_product = qkt__mk_gemm,               \
        .gemm = QKT__KERN_GEMM, .gemm_scratch = QKT__KERN_GEMM_SCRATCH,                                             \
    }

#endif
