/* The elementwise, LayerNorm, column-sum and cross-entropy kernels (formulas in kern_table.h),
 * with their OpenMP splits. Included once per kernel path by kern_<isa>.c; everything
 * here is static. The loops are the ones the op files had before the paths existed,
 * unchanged, so the baseline path computes the same bits as the old default build. */
#include "kern_simd.h"
#include "ops_internal.h"

/* Column chunk of the broadcast loops (elements). */
#define QKT_COL_CHUNK 4096

/* Work item t: (row, column chunk), so a same-shape op (one "row") still splits over
 * threads. The op is hoisted out of the loops so each inner loop vectorises. */
static inline void binary_forward_item(qkt_op op, const qkt_real *A, const qkt_real *B, qkt_real *Y, int64_t nb,
                                       int64_t ncc, int64_t t) {
    int64_t r = t / ncc, j0 = t % ncc * QKT_COL_CHUNK, j1 = j0 + QKT_COL_CHUNK < nb ? j0 + QKT_COL_CHUNK : nb;
    const qkt_real *Ar = A + r * nb;
    qkt_real *Yr = Y + r * nb;
    if (op == QKT_OP_ADD) {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] + B[j];
    } else if (op == QKT_OP_SUB) {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] - B[j];
    } else {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] * B[j];
    }
}
static void binary_forward(qkt_op op, const qkt_real *A, const qkt_real *B, qkt_real *Y, int64_t na, int64_t nb) {
    int64_t ncc = (nb + QKT_COL_CHUNK - 1) / QKT_COL_CHUNK, items = na / nb * ncc;
    QKT_PAR_FOR(qkt_parallel_worth(na > QKT_PAR_MIN), t, items, binary_forward_item(op, A, B, Y, nb, ncc, t));
}

static inline void binary_backward_a_item(qkt_op op, bool fresh, const qkt_real *dY, const qkt_real *Bd, qkt_real *dA,
                                          int64_t nb, int64_t ncc, int64_t t) {
    int64_t r = t / ncc, j0 = t % ncc * QKT_COL_CHUNK, j1 = j0 + QKT_COL_CHUNK < nb ? j0 + QKT_COL_CHUNK : nb;
    qkt_real *da = dA + r * nb;
    const qkt_real *dy = dY + r * nb;
    /* a fresh (unzeroed) buffer is stored to, never read */
    if (op == QKT_OP_MUL && fresh) {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) da[j] = dy[j] * Bd[j];
    } else if (op == QKT_OP_MUL) {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) da[j] += dy[j] * Bd[j];
    } else if (fresh) {
        memcpy(da + j0, dy + j0, (size_t)(j1 - j0) * sizeof *da);
    } else {
#pragma omp simd
        for (int64_t j = j0; j < j1; j++) da[j] += dy[j];
    }
}
static void binary_backward_a(qkt_op op, bool fresh, const qkt_real *dY, const qkt_real *Bd, qkt_real *dA, int64_t na,
                              int64_t nb) {
    int64_t ncc = (nb + QKT_COL_CHUNK - 1) / QKT_COL_CHUNK, items = na / nb * ncc;
    QKT_PAR_FOR(qkt_parallel_worth(na > QKT_PAR_MIN), t, items, binary_backward_a_item(op, fresh, dY, Bd, dA, nb, ncc, t));
}

/* ---------------------------------------------------------------- GELU (tanh form) */
#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_C 0.044715

/* t = tanh(k (x + c x^3)); y = 0.5 x (1 + t). Where the path has FMA, the fused forms are
 * written out (fmaf), so that the bits do not depend on the compiler's contraction, which
 * -O0 does not do. */
static inline qkt_real gelu_t(qkt_real v) {
#if defined(__FMA__) && !defined(QKT_DOUBLE)
    return qkt__tanh((qkt_real)GELU_K * fmaf((qkt_real)GELU_C * v * v, v, v));
#else
    return qkt__tanh((qkt_real)GELU_K * (v + (qkt_real)GELU_C * v * v * v));
#endif
}
static inline qkt_real gelu_of(qkt_real v, qkt_real t) { return (qkt_real)0.5 * v * (1 + t); }
/* dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2). Where the path has FMA, the
 * last add is an explicit fma of the right-hand product's last factor: which product
 * gcc's contraction (-ffp-contract=fast) fuses depends on how t was computed, and this
 * is the form the float32 kernels' published bits have. */
static inline qkt_real gelu_grad_of(qkt_real v, qkt_real t) {
#if defined(__FMA__) && !defined(QKT_DOUBLE)
    return fmaf((qkt_real)0.5 * v * fmaf(-t, t, 1) * (qkt_real)GELU_K, fmaf(3 * (qkt_real)GELU_C * v, v, 1),
                (qkt_real)0.5 * (1 + t));
#else
    return (qkt_real)0.5 * (1 + t) + (qkt_real)0.5 * v * (1 - t * t) * (qkt_real)GELU_K * (1 + 3 * (qkt_real)GELU_C * v * v);
#endif
}
static inline qkt_real gelu_grad(qkt_real v) { return gelu_grad_of(v, gelu_t(v)); }

static void gelu_forward(const qkt_real *X, qkt_real *Y, int64_t n) {
    QKT_PAR_FOR_SIMD(qkt_parallel_worth(n > QKT_PAR_MIN), i, n, Y[i] = gelu_of(X[i], gelu_t(X[i])));
}
/* gelu_forward's and gelu_grad's expressions on one tanh per element, one thread (a
 * product's epilogue: the block was just computed on this thread). */
static void gelu_epilogue(qkt_real *C, qkt_real *G, int rows, int cols, int ldc) {
    for (int r = 0; r < rows; r++) {
        qkt_real *c = C + (size_t)r * ldc, *g = G ? G + (size_t)r * ldc : NULL;
        if (!g) {
#pragma omp simd
            for (int j = 0; j < cols; j++) c[j] = gelu_of(c[j], gelu_t(c[j]));
            continue;
        }
#pragma omp simd
        for (int j = 0; j < cols; j++) {
            qkt_real v = c[j], t = gelu_t(v);
            g[j] = gelu_grad_of(v, t);
            c[j] = gelu_of(v, t);
        }
    }
}
static void gelu_backward(bool fresh, const qkt_real *X, const qkt_real *dY, qkt_real *dX, int64_t n) {
    bool team = qkt_parallel_worth(n > QKT_PAR_MIN);
    if (fresh) QKT_PAR_FOR_SIMD(team, i, n, dX[i] = gelu_grad(X[i]) * dY[i]); /* an unzeroed buffer: store, never read */
    else QKT_PAR_FOR_SIMD(team, i, n, dX[i] += gelu_grad(X[i]) * dY[i]);
}

/* ---------------------------------------------------------------- LayerNorm */
/* y = (x - mean) rstd w + b of one row, from its statistics (w, b may be NULL). */
static inline void ln_row_out(const qkt_real *xr, const qkt_real *W, const qkt_real *Bb, qkt_real mm, qkt_real rs,
                              qkt_real *yr, int C) {
    if (W && Bb) {
#pragma omp simd
        for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j] + Bb[j];
    } else if (W) {
#pragma omp simd
        for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j];
    } else {
#pragma omp simd
        for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs + (Bb ? Bb[j] : 0);
    }
}
/* dx (=|+=) rstd (g - a - h c) of one row, g = dy w, h = (x - m) rstd, a = mean(g), c = mean(g h). */
static inline void ln_row_dx(bool fresh, const qkt_real *xr, const qkt_real *W, const qkt_real *gr, qkt_real m,
                             qkt_real rs, qkt_real a, qkt_real c, qkt_real *dx, int C) {
    if (fresh) {
#pragma omp simd
        for (int j = 0; j < C; j++) dx[j] = rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
    } else {
#pragma omp simd
        for (int j = 0; j < C; j++) dx[j] += rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
    }
}

/* Per row, the double sums by `omp simd reduction`, one row at a time (every path; on
 * AVX-512 for widths over LN_BLOCK_C, whose 16-row blocks would not stay in L1). The
 * dispatch is layernorm_forward / layernorm_backward, after the AVX-512 blocks. */
static inline void ln_forward_row(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y, qkt_real *mean,
                                  qkt_real *rstd, int64_t r, int C, double eps) {
    const qkt_real *xr = X + r * C;
    double m = 0, v = 0;
#pragma omp simd reduction(+ : m)
    for (int j = 0; j < C; j++) m += xr[j];
    m /= C;
#pragma omp simd reduction(+ : v)
    for (int j = 0; j < C; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);
    v /= C;
    qkt_real rs = (qkt_real)(1.0 / sqrt(v + eps)), mm = (qkt_real)m;
    mean[r] = mm, rstd[r] = rs;
    ln_row_out(xr, W, Bb, mm, rs, Y + r * C, C);
}
static void layernorm_forward_rows(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y,
                                   qkt_real *mean, qkt_real *rstd, int64_t rows, int C, double eps) {
    QKT_PAR_FOR(qkt_parallel_worth(rows * C > QKT_PAR_MIN), r, rows, ln_forward_row(X, W, Bb, Y, mean, rstd, r, C, eps));
}

static inline void ln_backward_row(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                                   const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t r, int C) {
    const qkt_real *xr = X + r * C, *gr = dY + r * C;
    qkt_real m = mean[r], rs = rstd[r];
    double mg = 0, mgh = 0;
#pragma omp simd reduction(+ : mg, mgh)
    for (int j = 0; j < C; j++) {
        qkt_real g = gr[j] * (W ? W[j] : 1);
        mg += g;
        mgh += (double)g * ((xr[j] - m) * rs);
    }
    qkt_real a = (qkt_real)(mg / C), c = (qkt_real)(mgh / C);
    ln_row_dx(fresh, xr, W, gr, m, rs, a, c, dX + r * C, C);
}
static void layernorm_backward_rows(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                                    const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t rows, int C) {
    QKT_PAR_FOR(qkt_parallel_worth(rows * C > QKT_PAR_MIN), r, rows, ln_backward_row(fresh, X, W, dY, mean, rstd, dX, r, C));
}

#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
/* On AVX-512, 16 rows side by side. gcc 12 lowers each `omp simd reduction` of the
 * portable loops (#else) to 16 double lanes (lane l: the terms j = l mod 16 in order
 * of j; the terms past C's last multiple of 16 added to lane 0), then adds the lanes in
 * order from 0, one dependent chain of 16 adds: at C = 32 those chains, two a row, were
 * most of LayerNorm's time. Here the lanes are the same vector sums and the rows' final
 * chains run interleaved, so every bit is that of the portable loops (test_kernels checks
 * the order on this path). */
#define LN_ROWS 16
#define LN_BLOCK_C 256 /* widest rows taken in blocks (16 rows x 256 floats: 16 KiB) */

/* lane[0..16) = the 16 lane sums of (double)x[j] (sq: of ((double)x[j] - mu)^2, fused). */
static inline void ln_lanes(const float *x, int C, bool sq, double mu, double *lane) {
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd(), m = _mm512_set1_pd(mu);
    int j = 0;
    for (; j + 16 <= C; j += 16) {
        __m512 v = _mm512_loadu_ps(x + j);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v)), hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
        if (sq) {
            lo = _mm512_sub_pd(lo, m), hi = _mm512_sub_pd(hi, m);
            a0 = _mm512_fmadd_pd(lo, lo, a0), a1 = _mm512_fmadd_pd(hi, hi, a1);
        } else {
            a0 = _mm512_add_pd(a0, lo), a1 = _mm512_add_pd(a1, hi);
        }
    }
    _mm512_storeu_pd(lane, a0), _mm512_storeu_pd(lane + 8, a1);
    for (; j < C; j++) {
        double d = (double)x[j] - mu;
        lane[0] = sq ? fma(d, d, lane[0]) : lane[0] + (double)x[j];
    }
}

/* The backward's two sums of row r: lane g (of g_j = dy_j w_j in float) and lane h (of
 * g_j (x_j - m) rstd, the product in double, fused). */
static inline void ln_back_lanes(const float *x, const float *gy, const float *W, int C, float m, float rs, double *lg,
                                 double *lh) {
    __m512d g0 = _mm512_setzero_pd(), g1 = _mm512_setzero_pd(), h0 = _mm512_setzero_pd(), h1 = _mm512_setzero_pd();
    __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(rs);
    int j = 0;
    for (; j + 16 <= C; j += 16) {
        __m512 g = _mm512_loadu_ps(gy + j);
        if (W) g = _mm512_mul_ps(g, _mm512_loadu_ps(W + j));
        __m512 hat = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm), vr);
        __m512d glo = _mm512_cvtps_pd(_mm512_castps512_ps256(g)), ghi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(g, 1));
        __m512d hlo = _mm512_cvtps_pd(_mm512_castps512_ps256(hat)), hhi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(hat, 1));
        g0 = _mm512_add_pd(g0, glo), g1 = _mm512_add_pd(g1, ghi);
        h0 = _mm512_fmadd_pd(glo, hlo, h0), h1 = _mm512_fmadd_pd(ghi, hhi, h1);
    }
    _mm512_storeu_pd(lg, g0), _mm512_storeu_pd(lg + 8, g1);
    _mm512_storeu_pd(lh, h0), _mm512_storeu_pd(lh + 8, h1);
    for (; j < C; j++) {
        float g = gy[j] * (W ? W[j] : 1);
        lg[0] += g;
        lh[0] = fma((double)g, (double)((x[j] - m) * rs), lh[0]);
    }
}

static inline void ln_forward_block(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y,
                                    qkt_real *mean, qkt_real *rstd, int64_t rows, int C, double eps, int64_t blk) {
    int64_t r0 = blk * LN_ROWS;
    int n = rows - r0 < LN_ROWS ? (int)(rows - r0) : LN_ROWS;
    double lane[LN_ROWS * 16], mu[LN_ROWS], v[LN_ROWS];
    for (int r = 0; r < n; r++) ln_lanes(X + (r0 + r) * C, C, false, 0, lane + r * 16);
    qkt__lane_sums_pd(lane, n, mu);
    for (int r = 0; r < n; r++) mu[r] /= C;
    for (int r = 0; r < n; r++) ln_lanes(X + (r0 + r) * C, C, true, mu[r], lane + r * 16);
    qkt__lane_sums_pd(lane, n, v);
    for (int r = 0; r < n; r++) {
        const qkt_real *xr = X + (r0 + r) * C;
        qkt_real rs = (qkt_real)(1.0 / sqrt(v[r] / C + eps)), mm = (qkt_real)mu[r];
        mean[r0 + r] = mm, rstd[r0 + r] = rs;
        ln_row_out(xr, W, Bb, mm, rs, Y + (r0 + r) * C, C);
    }
}
static void layernorm_forward_blocks(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y,
                                     qkt_real *mean, qkt_real *rstd, int64_t rows, int C, double eps) {
    int64_t nblk = (rows + LN_ROWS - 1) / LN_ROWS;
    QKT_PAR_FOR(qkt_parallel_worth(rows * C > QKT_PAR_MIN), blk, nblk, ln_forward_block(X, W, Bb, Y, mean, rstd, rows, C, eps, blk));
}

static inline void ln_backward_block(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                                     const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t rows, int C,
                                     int64_t blk) {
    int64_t r0 = blk * LN_ROWS;
    int n = rows - r0 < LN_ROWS ? (int)(rows - r0) : LN_ROWS;
    double lg[LN_ROWS * 16], lh[LN_ROWS * 16], mg[LN_ROWS], mgh[LN_ROWS];
    for (int r = 0; r < n; r++)
        ln_back_lanes(X + (r0 + r) * C, dY + (r0 + r) * C, W, C, mean[r0 + r], rstd[r0 + r], lg + r * 16, lh + r * 16);
    qkt__lane_sums_pd(lg, n, mg);
    qkt__lane_sums_pd(lh, n, mgh);
    for (int r = 0; r < n; r++) {
        const qkt_real *xr = X + (r0 + r) * C, *gr = dY + (r0 + r) * C;
        qkt_real m = mean[r0 + r], rs = rstd[r0 + r];
        qkt_real a = (qkt_real)(mg[r] / C), c = (qkt_real)(mgh[r] / C);
        ln_row_dx(fresh, xr, W, gr, m, rs, a, c, dX + (r0 + r) * C, C);
    }
}
static void layernorm_backward_blocks(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                                      const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t rows, int C) {
    int64_t nblk = (rows + LN_ROWS - 1) / LN_ROWS;
    QKT_PAR_FOR(qkt_parallel_worth(rows * C > QKT_PAR_MIN), blk, nblk,
                ln_backward_block(fresh, X, W, dY, mean, rstd, dX, rows, C, blk));
}
#endif

static void layernorm_forward(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y, qkt_real *mean,
                              qkt_real *rstd, int64_t rows, int C, double eps) {
#ifdef LN_BLOCK_C
    if (C <= LN_BLOCK_C) {
        layernorm_forward_blocks(X, W, Bb, Y, mean, rstd, rows, C, eps);
        return;
    }
#endif
    layernorm_forward_rows(X, W, Bb, Y, mean, rstd, rows, C, eps);
}
static void layernorm_backward(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                               const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t rows, int C) {
#ifdef LN_BLOCK_C
    if (C <= LN_BLOCK_C) {
        layernorm_backward_blocks(fresh, X, W, dY, mean, rstd, dX, rows, C);
        return;
    }
#endif
    layernorm_backward_rows(fresh, X, W, dY, mean, rstd, dX, rows, C);
}

/* ---------------------------------------------------------------- column sums */
/* Rows [r0, r1) (one chunk) summed into p[j] = sum_r t(r, j), in order of r from 0, in
 * double: t = X (Y NULL) or X ((Y - sub) mul) in float (sub, mul NULL: 0, 1); with G,
 * t = u = G X, also stored to U. With Y, p2 (or NULL) gets X's own sums in the same pass:
 * the bits of a call with Y NULL. */
static void colsum_chunk_rows(int64_t r0, int64_t r1, int64_t cols, const qkt_real *X, const qkt_real *Y,
                              const qkt_real *sub, const qkt_real *mul, const qkt_real *G, qkt_real *U, double *p,
                              double *p2) {
    for (int64_t j = 0; j < cols; j++) p[j] = 0;
    for (int64_t j = 0; p2 && j < cols; j++) p2[j] = 0;
    for (int64_t r = r0; r < r1; r++) {
        const qkt_real *xr = X + r * cols;
        if (G) {
            const qkt_real *gr = G + r * cols;
            qkt_real *ur = U + r * cols;
#pragma omp simd
            for (int64_t j = 0; j < cols; j++) {
                qkt_real u = gr[j] * xr[j];
                ur[j] = u;
                p[j] += (double)u;
            }
        } else if (Y) {
            const qkt_real *yr = Y + r * cols;
            qkt_real s = sub ? sub[r] : 0, m = mul ? mul[r] : 1;
#pragma omp simd
            for (int64_t j = 0; j < cols; j++) p[j] += (double)(xr[j] * ((yr[j] - s) * m));
            if (p2) {
#pragma omp simd
                for (int64_t j = 0; j < cols; j++) p2[j] += (double)xr[j];
            }
        } else {
#pragma omp simd
            for (int64_t j = 0; j < cols; j++) p[j] += (double)xr[j];
        }
    }
}

#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
#define COLSUM_BLOCK_COLS 128 /* widest rows summed in register blocks: a chunk of 64 such rows
                                * (32 KiB) stays in L1 while its column blocks are read in turn */
/* Columns j0 .. j0 + 16 nv (nv <= 4; past cols masked off), their 2 nv double accumulators
 * in registers for the whole chunk (through p in memory, each row's adds waited on the
 * last row's stores), 2 nv more for p2. The same adds in the same order as the portable loop. */
static inline __attribute__((always_inline)) void colsum_cols(int nv, int64_t r0, int64_t r1, int64_t cols, int64_t j0,
                                                              const float *X, const float *Y, const float *sub,
                                                              const float *mul, const float *G, float *U, double *p,
                                                              double *p2) {
    __m512d acc[8], acc2[8];
    __mmask16 k[4];
#pragma GCC unroll 4
    for (int q = 0; q < nv; q++) {
        int64_t w = cols - j0 - 16 * q;
        k[q] = w >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << w) - 1);
        acc[2 * q] = acc[2 * q + 1] = acc2[2 * q] = acc2[2 * q + 1] = _mm512_setzero_pd();
    }
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = X + r * cols + j0;
        __m512 s = _mm512_set1_ps(sub ? sub[r] : 0), m = _mm512_set1_ps(mul ? mul[r] : 1);
#pragma GCC unroll 4
        for (int q = 0; q < nv; q++) {
            __m512 v = _mm512_maskz_loadu_ps(k[q], xr + 16 * q);
            if (G) {
                v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k[q], G + r * cols + j0 + 16 * q), v);
                _mm512_mask_storeu_ps(U + r * cols + j0 + 16 * q, k[q], v);
            } else if (Y) {
                __m512 y = _mm512_maskz_loadu_ps(k[q], Y + r * cols + j0 + 16 * q);
                if (p2) {
                    acc2[2 * q] = _mm512_add_pd(acc2[2 * q], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
                    acc2[2 * q + 1] = _mm512_add_pd(acc2[2 * q + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
                }
                v = _mm512_mul_ps(v, _mm512_mul_ps(_mm512_sub_ps(y, s), m));
            }
            acc[2 * q] = _mm512_add_pd(acc[2 * q], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            acc[2 * q + 1] = _mm512_add_pd(acc[2 * q + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < nv; q++) {
        double t[16];
        _mm512_storeu_pd(t, acc[2 * q]), _mm512_storeu_pd(t + 8, acc[2 * q + 1]);
        for (int64_t j = 0; j < 16 && j0 + 16 * q + j < cols; j++) p[j0 + 16 * q + j] = t[j];
        if (!p2) continue;
        _mm512_storeu_pd(t, acc2[2 * q]), _mm512_storeu_pd(t + 8, acc2[2 * q + 1]);
        for (int64_t j = 0; j < 16 && j0 + 16 * q + j < cols; j++) p2[j0 + 16 * q + j] = t[j];
    }
}
#endif

static void colsum_chunk(int64_t r0, int64_t r1, int64_t cols, const qkt_real *X, const qkt_real *Y,
                         const qkt_real *sub, const qkt_real *mul, const qkt_real *G, qkt_real *U, double *p, double *p2) {
#ifdef COLSUM_BLOCK_COLS
    if (cols <= COLSUM_BLOCK_COLS) { /* wider: a long row hides the chain of the row loop */
        for (int64_t j0 = 0; j0 < cols; j0 += 64) {
            int nv = (int)((cols - j0 + 15) / 16);
            if (nv >= 4) colsum_cols(4, r0, r1, cols, j0, X, Y, sub, mul, G, U, p, p2);
            else if (nv == 3) colsum_cols(3, r0, r1, cols, j0, X, Y, sub, mul, G, U, p, p2);
            else if (nv == 2) colsum_cols(2, r0, r1, cols, j0, X, Y, sub, mul, G, U, p, p2);
            else colsum_cols(1, r0, r1, cols, j0, X, Y, sub, mul, G, U, p, p2);
        }
        return;
    }
#endif
    colsum_chunk_rows(r0, r1, cols, X, Y, sub, mul, G, U, p, p2);
}

/* The chunks' sums part (nch x cols) in order into out[j] += sign sum. */
static void colsum_finish(int64_t nch, int64_t cols, double *part, qkt_real sign, qkt_real *out) {
    for (int64_t c = 1; c < nch; c++) {
        const double *p = part + c * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) part[j] += p[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) out[j] += sign * (qkt_real)part[j];
}

/* out[j] += sign sum_r t(r, j) (colsum_chunk's t): chunks of QKT_COLSUM_ROWS rows over the
 * threads, then the chunks' sums in order, so the bits do not depend on the thread count.
 * With Y and out2, also out2[j] += sign sum_r X[r, j] in the same pass (part2 as part). */
static void colsum_rows(int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                        const qkt_real *mul, const qkt_real *G, qkt_real *U, qkt_real sign, qkt_real *out, double *part,
                        qkt_real *out2, double *part2) {
    int64_t nch = (rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS;
    bool two = Y && out2;
    QKT_PAR_FOR(qkt_parallel_worth(rows * cols > QKT_PAR_MIN), c, nch,
                colsum_chunk(c * QKT_COLSUM_ROWS, (c + 1) * QKT_COLSUM_ROWS < rows ? (c + 1) * QKT_COLSUM_ROWS : rows, cols,
                             X, Y, sub, mul, G, U, part + c * cols, two ? part2 + c * cols : NULL));
    colsum_finish(nch, cols, part, sign, out);
    if (two) colsum_finish(nch, cols, part2, sign, out2);
}

static void colsum(int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                   const qkt_real *mul, qkt_real sign, qkt_real *out, double *part, qkt_real *out2, double *part2) {
    colsum_rows(rows, cols, X, Y, sub, mul, NULL, NULL, sign, out, part, out2, part2);
}

/* dU = G dH (elementwise) and out[j] += sum_r dU[r, j] in one pass: colsum's chunks and
 * order (Y NULL, sign 1), so the bits of binary_forward's product, then colsum of dU. */
static void mul_colsum(int64_t rows, int64_t cols, const qkt_real *G, const qkt_real *dH, qkt_real *dU, qkt_real *out,
                       double *part) {
    colsum_rows(rows, cols, dH, NULL, NULL, NULL, G, dU, 1, out, part, NULL, NULL);
}

/* ---------------------------------------------------------------- cross-entropy */
/* The largest of x[0 .. V), by the rule of the loop `m = x[j] > m ? x[j] : m` from m = x[0]:
 * a NaN x[0] is the result, a later NaN never is. That loop is one chain of compares
 * (gcc keeps a float max reduction scalar); here 16 lanes run it side by side, each from
 * x[0], and then the lanes. The largest of a set is one value, so the result is the
 * loop's, up to the sign of a zero, which the row's lse and exps do not see
 * (x - (+0) = x - (-0) but for x = -0, and e^{+0} = e^{-0} = 1). */
static inline qkt_real row_max(const qkt_real *x, int V) {
    qkt_real mx = x[0], lane[16];
    if (mx != mx || V < 32) {
        for (int j = 1; j < V; j++) mx = x[j] > mx ? x[j] : mx;
        return mx;
    }
#pragma omp simd
    for (int l = 0; l < 16; l++) lane[l] = mx;
    int j0 = 0;
    for (; j0 + 16 <= V; j0 += 16)
#pragma omp simd
        for (int l = 0; l < 16; l++) lane[l] = x[j0 + l] > lane[l] ? x[j0 + l] : lane[l];
    for (int j = j0; j < V; j++) mx = x[j] > mx ? x[j] : mx;
    for (int l = 0; l < 16; l++) mx = lane[l] > mx ? lane[l] : mx;
    return mx;
}
/* The rows' log-sum-exps in parallel, then their sum in row order: a reduction over the
 * threads would add partial sums in an order that depends on the thread count (other
 * last bits in float64, and sometimes in float32). */
static inline void ce_lse_row(const qkt_real *X, qkt_real *lse, int64_t r, int V) {
    const qkt_real *xr = X + r * V;
    qkt_real mx = row_max(xr, V);
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) sum += qkt__exp(xr[j] - mx);
    lse[r] = mx + (qkt_real)log(sum);
}
static double cross_entropy_forward(const qkt_real *X, const int32_t *targets, qkt_real *lse, int64_t rows, int V) {
    QKT_PAR_FOR(qkt_parallel_worth(rows * V > QKT_PAR_MIN), r, rows, ce_lse_row(X, lse, r, V));
    double total = 0;
    for (int64_t r = 0; r < rows; r++)
        if (targets[r] != QKT_IGNORE) total += (double)lse[r] - X[r * V + targets[r]];
    return total;
}

static inline void ce_grad_row(const qkt_real *X, const int32_t *targets, const qkt_real *lse, qkt_real g, qkt_real *dX,
                               int64_t r, int V) {
    int t = targets[r];
    if (t == QKT_IGNORE) return;
    const qkt_real *xr = X + r * V;
    qkt_real *dr = dX + r * V, ls = lse[r];
#pragma omp simd
    for (int j = 0; j < V; j++) dr[j] += g * qkt__exp(xr[j] - ls);
    dr[t] -= g;
}
static void cross_entropy_backward(const qkt_real *X, const int32_t *targets, const qkt_real *lse, qkt_real g,
                                   qkt_real *dX, int64_t rows, int V) {
    QKT_PAR_FOR(qkt_parallel_worth(rows * V > QKT_PAR_MIN), r, rows, ce_grad_row(X, targets, lse, g, dX, r, V));
}

/* ---------------------------------------------------------------- normal draws */
/* Box-Muller's values y_i = mean + std sqrt(-2 log u1_i) cos(2 pi u2_i) rounded to float, as
 * qkt_rng_normal and libm give them (qkt_rng_fill_normal, rt_rng.c), from a log and a cos of
 * our own in double that vectorise: log(x) = e ln2 + 2 atanh(f), f = (m - 1)/(m + 1) for
 * x = 2^e m, m in [1/sqrt2, sqrt2) (odd series to f^21: relative error ~2^-51); cos by
 * reduction to |r| <= pi/4 (pi/2 in two parts) and Taylor's sin or cos to r^17 (absolute
 * error ~2^-52). Against libm's (1 ulp), z = s c, s = sqrt(-2 log u1), then differs by at most
 * s 2^-47, so y by |std| s 2^-47 plus the roundings of std z and mean + t on either side (at
 * most (|t| + |y|) 2^-52). A float is kept only when y lies farther than 8 times both bounds
 * (delta) from the points where its float rounding changes (the midpoints to the floats
 * beside it): then libm's y rounds to the same float.
 * Else redo[i] = 1 and the caller computes it with libm (about one draw in 10^5). Float32 on
 * the AVX2 and AVX-512 paths only (qkt bench --ops, "qkt normal": 3.8 ns a draw on AVX-512, 22
 * on AVX2, 26 one at a time; the portable path's two-double vectors were slower than libm),
 * the others take every draw from libm (QKT__KERN_NORMAL NULL). */
#if (defined(__AVX2__) || defined(__AVX512F__)) && !defined(QKT_DOUBLE)
#define QKT__KERN_NORMAL normal_block
static void normal_block(const double *u1, const double *u2, int n, double mean, double std, qkt_real *out,
                         unsigned char *redo) {
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10; /* fdlibm's split */
    const double PIO2_1 = 1.57079632673412561417e+00, PIO2_1T = 6.07710050650619224932e-11;
    const double TWO_PI = 6.283185307179586; /* as qkt_rng_normal's argument */
    double astd = fabs(std);
#pragma omp simd
    for (int i = 0; i < n; i++) {
        /* log(u1), u1 in [2^-53, 1] */
        union {
            double d;
            uint64_t u;
        } v = {.d = u1[i]};
        int64_t e = (int64_t)((v.u >> 52) & 0x7ff) - 1023;
        v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* m in [1, 2) */
        double m = v.d;
        bool hi = m > 1.4142135623730951;
        m = hi ? m * 0.5 : m;
        double ed = (double)(e + (hi ? 1 : 0));
        double f = (m - 1.0) / (m + 1.0), f2 = f * f;
        double p = 1.0 / 21;
        p = p * f2 + 1.0 / 19;
        p = p * f2 + 1.0 / 17;
        p = p * f2 + 1.0 / 15;
        p = p * f2 + 1.0 / 13;
        p = p * f2 + 1.0 / 11;
        p = p * f2 + 1.0 / 9;
        p = p * f2 + 1.0 / 7;
        p = p * f2 + 1.0 / 5;
        p = p * f2 + 1.0 / 3;
        double lg = ed * LN2_HI + (ed * LN2_LO + 2.0 * (f + f * f2 * p));
        double s = sqrt(-2.0 * lg);
        /* cos(theta), theta in [0, 2 pi) */
        double th = TWO_PI * u2[i];
        double k = (th * 0.63661977236758134308 + 6755399441055744.0) - 6755399441055744.0; /* round to nearest */
        double r = (th - k * PIO2_1) - k * PIO2_1T, r2 = r * r;
        double c = 1.0 / 20922789888000; /* cos r: 1 - r^2/2! + ... + r^16/16! */
        c = c * r2 - 1.0 / 87178291200;
        c = c * r2 + 1.0 / 479001600;
        c = c * r2 - 1.0 / 3628800;
        c = c * r2 + 1.0 / 40320;
        c = c * r2 - 1.0 / 720;
        c = c * r2 + 1.0 / 24;
        c = c * r2 - 0.5;
        c = c * r2 + 1.0;
        double sn = 1.0 / 355687428096000; /* sin r: r - r^3/3! + ... + r^17/17! */
        sn = sn * r2 - 1.0 / 1307674368000;
        sn = sn * r2 + 1.0 / 6227020800;
        sn = sn * r2 - 1.0 / 39916800;
        sn = sn * r2 + 1.0 / 362880;
        sn = sn * r2 - 1.0 / 5040;
        sn = sn * r2 + 1.0 / 120;
        sn = sn * r2 - 1.0 / 6;
        sn = sn * r2 * r + r;
        int q = (int)k & 3; /* cos(q pi/2 + r): cos r, -sin r, -cos r, sin r */
        double cs = q == 0 ? c : q == 1 ? -sn : q == 2 ? -c : sn;
        double z = s * cs, t = std * z, y = mean + t;
        float fy = (float)y;
        union {
            float f;
            uint32_t u;
        } w = {.f = fy};
        uint32_t ex = (w.u >> 23) & 0xff, mant = w.u & 0x7fffffu;
        w.u &= 0x7f800000u; /* 2^e of fy: the floats beside fy are 2^(e-23) away, but 2^(e-24) below a power of two */
        double half = (double)w.f * (mant ? 0x1.0p-24 : 0x1.0p-25); /* from fy to the nearer midpoint */
        double delta = astd * s * 0x1.0p-44 + (fabs(t) + fabs(y)) * 0x1.0p-49;
        bool ok = ex > 1 && ex < 0xfe && fabs(y - (double)fy) + delta < half;
        out[i] = fy;
        redo[i] = !ok;
    }
}
#else
#define QKT__KERN_NORMAL NULL
#endif

/* ---------------------------------------------------------------- for the tests */
static void exp_tanh(const qkt_real *x, qkt_real *e, qkt_real *t, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) e[i] = qkt__exp(x[i]), t[i] = qkt__tanh(x[i]);
}
