/* Shared by the op files only. */
#ifndef QKT_OPS_INTERNAL_H
#define QKT_OPS_INTERNAL_H
#include "qkt_autograd.h"
#include <math.h>
#include <stdbool.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define QKT_OP(ID, name) void qkt__##name##_backward(qkt_ctx *ctx, qkt_node *n);
#include "ops.def"
#undef QKT_OP

/* Parallelise an elementwise loop only when it is big enough to pay for the threads:
 * 2^15 floats take one core about what a parallel region costs (docs/performance.md,
 * "Thread settings"). */
#define QKT_PAR_MIN (1 << 15)

/* for (int64_t i = 0; i < n; i++) call;  as `#pragma omp parallel for` when team
 * (qkt_parallel_worth's answer), else a plain loop, which enters no OpenMP construct;
 * _DYNAMIC: schedule(dynamic, 1); _SIMD: `parallel for simd`, else `omp simd`. A call
 * that uses a per-thread scratch buffer picks it with qkt__team_slot(team). */
#define QKT__PAR_LOOP(team, par, i, n, call)                      \
    do {                                                          \
        if (team) {                                               \
            _Pragma(par) for (int64_t i = 0; i < (n); i++) call; \
        } else {                                                  \
            for (int64_t i = 0; i < (n); i++) call;               \
        }                                                         \
    } while (0)
#define QKT_PAR_FOR(team, i, n, call) QKT__PAR_LOOP(team, "omp parallel for", i, n, call)
#define QKT_PAR_FOR_DYNAMIC(team, i, n, call) QKT__PAR_LOOP(team, "omp parallel for schedule(dynamic, 1)", i, n, call)
#define QKT_PAR_FOR_SIMD(team, i, n, stmt)                                            \
    do {                                                                              \
        if (team) {                                                                   \
            _Pragma("omp parallel for simd") for (int64_t i = 0; i < (n); i++) stmt; \
        } else {                                                                      \
            _Pragma("omp simd") for (int64_t i = 0; i < (n); i++) stmt;              \
        }                                                                             \
    } while (0)
/* The calling thread's slot among the scratch buffers of a QKT_PAR_FOR loop: its number
 * in the team, 0 in the plain loop (which may run inside another team, as in a replica). */
static inline int qkt__team_slot(bool team) {
#ifdef _OPENMP
    return team ? omp_get_thread_num() : 0;
#else
    (void)team;
    return 0;
#endif
}

/* Shape check that prints both shapes. */
#define QKT_CHECK_SHAPES(cond, op, a, b)                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            char sa_[64], sb_[64];                                                             \
            qkt_fatal(__FILE__, __LINE__, #cond, "%s: shapes %s and %s do not fit", op,      \
                      qkt_shape_str(a, sa_, sizeof sa_), qkt_shape_str(b, sb_, sizeof sb_)); \
        }                                                                                      \
    } while (0)

/* Column sums of a (rows, cols) matrix, for bias and LayerNorm weight grads:
 *   out[j] += sign * sum_r X[r, j] * f(r, j),  f = 1 if Y is NULL,
 *                                              else (Y[r, j] - sub[r]) * mul[r] (sub, mul may be NULL: 0, 1).
 * Rows go in fixed chunks with float64 partial sums added in chunk order, so the
 * result does not depend on the thread count; rows are read contiguously. */
#define QKT_COLSUM_ROWS 64 /* rows per chunk: fixed, so results are thread-count independent */
/* qkt_gemm with alpha 1 (kern_gemm.c) for an op of ctx: the own gemm's packing buffers are
 * ctx's arena's scratch (qkt__arena_scratch), kept from product to product and step to step. */
void qkt__gemm(qkt_ctx *ctx, bool ta, bool tb, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
               qkt_real beta, qkt_real *C, int ldc);
/* C = bias (every row) + A B^T, A (M, K), B (N, K): qkt__gemm with the sums starting at the
 * bias (NULL: at 0); the affine op's forward. */
void qkt__gemm_bias(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                    const qkt_real *bias, qkt_real *C, int ldc);
/* The same, then C = gelu(C) and (G not NULL) G = gelu'(C's sums), laid out like C: each
 * block of C as its sums are complete (kern_table.h's gelu_epilogue); the bits of
 * qkt__gemm_bias, then gelu_forward and gelu_backward's factor. */
void qkt__gemm_bias_gelu(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                         const qkt_real *bias, qkt_real *C, qkt_real *G, int ldc);
/* The same, then C = R + C with R laid out like C (ldc), each block of C as its sums are
 * complete: the bits of qkt__gemm_bias, then qkt_add(R, C). */
void qkt__gemm_bias_add(qkt_ctx *ctx, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                        const qkt_real *bias, const qkt_real *R, qkt_real *C, int ldc);
void qkt__colsum(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                 const qkt_real *mul, qkt_real sign, qkt_real *out);
/* out[j] += sum_r X[r, j] ((Y[r, j] - sub[r]) mul[r]) and out2[j] += sum_r X[r, j] in one pass
 * over X and Y (LayerNorm's gain and bias gradients): the bits of two qkt__colsum calls. */
void qkt__colsum2(qkt_ctx *ctx, int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                  const qkt_real *mul, qkt_real *out, qkt_real *out2);

/* t's grad for an op that writes every element of it: when the buffer is new (*fresh),
 * it is NOT zeroed and the op must store (=) instead of accumulate (+=), which saves a
 * memset and a read per element. Parameters' grads are never fresh. */
qkt_real *qkt__grad_out(qkt_ctx *ctx, qkt_tensor *t, bool *fresh);
/* The buffer t's grad is in for this context, or NULL if it has none yet (no
 * allocation): a parameter's is in the buffer ctx redirects the store's grads to, if any. */
qkt_real *qkt__grad_buffer(const qkt_ctx *ctx, const qkt_tensor *t);
/* Grad pool (rt_gradpool.c): give t's grad back (t->grad = NULL; params untouched);
 * reset returns every buffer; free releases the memory. */
void qkt__grad_release(qkt_ctx *ctx, qkt_tensor *t);
void qkt__grad_pool_init(qkt_ctx *ctx);
void qkt__grad_pool_reset(qkt_ctx *ctx);
void qkt__grad_pool_free(qkt_ctx *ctx);

static inline bool qkt__needs_grad(const qkt_tensor *t) { return t && t->requires_grad; }

/* Rows/cols view of the last axis: rows = size / last dim. */
static inline int qkt__last(const qkt_tensor *t) { return t->ndim ? t->shape[t->ndim - 1] : 1; }

/* Applies QKT_THREADS and OpenBLAS's single thread once per process (rt_threads.c). */
void qkt__threads_init(void);

/* The input check every op runs first, before an output is allocated where a stale
 * input's data may lie (rt_tape.c): the context is initialised; each input is non-NULL
 * (but for optional ones), a finalised parameter or a tensor of this step, and not a
 * custom op's unrecorded output. It also names the op (and ctx->scope) in a usage error
 * until the op records its output. */
void qkt__check_ctx(const qkt_ctx *ctx, const char *call);
void qkt__check_live(const qkt_ctx *ctx, const char *op, const qkt_tensor *t, int k, bool optional);
void qkt__check_inputs(const qkt_ctx *ctx, const char *op, int n, const qkt_tensor *const *t, int n_required);
/* QKT_LIVE: every input required; QKT_LIVE_OPT: the first n_required, the rest may be NULL. */
#define QKT_LIVE_OPT(ctx, op, n_required, ...)                                                 \
    do {                                                                                       \
        const qkt_tensor *const live_[] = {__VA_ARGS__};                                       \
        qkt__check_inputs((ctx), (op), (int)(sizeof live_ / sizeof live_[0]), live_, (n_required)); \
    } while (0)
#define QKT_LIVE(ctx, op, ...) QKT_LIVE_OPT(ctx, op, 99, __VA_ARGS__)
/* The call a usage error names (rt_error.c): op NULL clears it; backward: in its backward. */
void qkt__call_set(const char *op, const char *scope, bool backward);
/* An op's output (not pending: built-in ops always record it). */
qkt_tensor *qkt__op_output(qkt_ctx *ctx, int ndim, const int *shape);
/* A zeroed tensor header of this step, apart from the arena's data (views use it). */
qkt_tensor *qkt__tensor_header(qkt_ctx *ctx);

#endif
