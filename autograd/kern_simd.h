/* Small register-blocked kernels for code running inside OpenMP regions (the fused
 * attention, the generic ops), where qkt_gemm, which splits its work over the same
 * team, must not be called (one layer owns the cores at a time), and a vectorisable
 * exp. Private to autograd.
 *
 * Written for gcc's auto-vectoriser: the inner loops have compile-time trip counts
 * (`#pragma omp simd`) and the row loop is fully unrolled (`#pragma GCC unroll`), so
 * the R x W accumulator block is scalar-replaced into vector registers. Without the
 * unroll gcc keeps the block in memory (a load and a store per FMA). W = 32 floats is
 * two AVX-512 registers; R = 8 rows gives 16 accumulators (of 32 registers) and 16
 * independent FMA chains per 2 loads and 8 broadcasts (docs/performance.md, "What was
 * changed, and why", 3). */
#ifndef QKT_KERNELS_H
#define QKT_KERNELS_H
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qkt_autograd.h"

/* Tile product with a fixed width W:
 *   C[m][n] (+)= sum_{k<K} A[m*sam + k*sak] * B[k*ldb + n],   m < M, n < W;
 * without accumulate, each C[m][n]'s sum starts at init[n] (init NULL: at 0).
 * A is read by scalars (any strides, so A or A^T); B and C rows by W-wide vectors. */
#define QKT__MK_DEFINE(NAME, R, W)                                                                     \
    static inline void NAME(int M, int K, const qkt_real *restrict A, ptrdiff_t sam, ptrdiff_t sak,   \
                            const qkt_real *restrict B, ptrdiff_t ldb, qkt_real *restrict C, ptrdiff_t ldc, \
                            bool accumulate, const qkt_real *restrict init) {                          \
        int m = 0;                                                                                     \
        for (; m + (R) <= M; m += (R)) {                                                               \
            qkt_real c[R][W];                                                                          \
            if (accumulate) { /* hoisted: a select per element does not vectorise */                  \
                _Pragma("GCC unroll 8") for (int i = 0; i < (R); i++) {                                \
                    const qkt_real *ci = C + (m + i) * ldc;                                            \
                    _Pragma("omp simd") for (int n = 0; n < (W); n++) c[i][n] = ci[n];                \
                }                                                                                      \
            } else if (init) { /* every row starts from the same vector (a bias) */                 \
                _Pragma("GCC unroll 8") for (int i = 0; i < (R); i++)                                  \
                    _Pragma("omp simd") for (int n = 0; n < (W); n++) c[i][n] = init[n];              \
            } else {                                                                                   \
                _Pragma("GCC unroll 8") for (int i = 0; i < (R); i++)                                  \
                    _Pragma("omp simd") for (int n = 0; n < (W); n++) c[i][n] = 0;                    \
            }                                                                                          \
            for (int k = 0; k < K; k++) {                                                              \
                const qkt_real *b = B + k * ldb;                                                       \
                _Pragma("GCC unroll 8") for (int i = 0; i < (R); i++) {                                \
                    qkt_real a = A[(m + i) * sam + k * sak];                                           \
                    _Pragma("omp simd") for (int n = 0; n < (W); n++) c[i][n] += a * b[n];            \
                }                                                                                      \
            }                                                                                          \
            _Pragma("GCC unroll 8") for (int i = 0; i < (R); i++) {                                    \
                qkt_real *ci = C + (m + i) * ldc;                                                      \
                _Pragma("omp simd") for (int n = 0; n < (W); n++) ci[n] = c[i][n];                    \
            }                                                                                          \
        }                                                                                              \
        for (; m < M; m++) { /* leftover rows, one at a time */                                       \
            qkt_real c[W];                                                                             \
            qkt_real *cm = C + m * ldc;                                                                \
            if (accumulate) {                                                                          \
                _Pragma("omp simd") for (int n = 0; n < (W); n++) c[n] = cm[n];                       \
            } else if (init) {                                                                         \
                _Pragma("omp simd") for (int n = 0; n < (W); n++) c[n] = init[n];                     \
            } else {                                                                                   \
                _Pragma("omp simd") for (int n = 0; n < (W); n++) c[n] = 0;                           \
            }                                                                                          \
            for (int k = 0; k < K; k++) {                                                              \
                qkt_real a = A[m * sam + k * sak];                                                     \
                const qkt_real *b = B + k * ldb;                                                       \
                _Pragma("omp simd") for (int n = 0; n < (W); n++) c[n] += a * b[n];                   \
            }                                                                                          \
            _Pragma("omp simd") for (int n = 0; n < (W); n++) cm[n] = c[n];                           \
        }                                                                                              \
    }

/* The block shape depends on the vector registers the kernel path (kern_table.h) compiles for:
 * 8 x 32 for AVX-512's 32 registers of 16 floats; with 16 registers (AVX2: 8 floats,
 * SSE2: 4) an 8 x 32 block needs 32 or 64 of them and spills, so 6 rows by two vectors
 * (12 accumulators). Every C element is the same k-ordered chain of a * b additions
 * whatever the block, so the shape changes the speed, not the bits. */
#if defined(__AVX512F__) || !defined(__x86_64__)
QKT__MK_DEFINE(qkt__mk_r8w32, 8, 32)
QKT__MK_DEFINE(qkt__mk_r8w16, 8, 16)
#elif defined(__AVX2__)
QKT__MK_DEFINE(qkt__mk_r6w16, 6, 16)
#else
QKT__MK_DEFINE(qkt__mk_r6w8, 6, 8)
#endif

/* The same product for any width N that is a multiple of 16 (callers pad their tiles):
 * 32-wide column blocks and a 16-wide block for the remainder (AVX-512), or 16-wide
 * (AVX2) or 8-wide blocks. */
#define QKT_MK_PAD 16
static inline void qkt__mk_gemm_init(int M, int N, int K, const qkt_real *A, ptrdiff_t sam, ptrdiff_t sak,
                                     const qkt_real *B, ptrdiff_t ldb, qkt_real *C, ptrdiff_t ldc, bool accumulate,
                                     const qkt_real *init) {
    int n = 0;
#if defined(__AVX512F__) || !defined(__x86_64__)
    for (; n + 32 <= N; n += 32) qkt__mk_r8w32(M, K, A, sam, sak, B + n, ldb, C + n, ldc, accumulate, init ? init + n : NULL);
    if (n < N) qkt__mk_r8w16(M, K, A, sam, sak, B + n, ldb, C + n, ldc, accumulate, init ? init + n : NULL);
#elif defined(__AVX2__)
    for (; n < N; n += 16) qkt__mk_r6w16(M, K, A, sam, sak, B + n, ldb, C + n, ldc, accumulate, init ? init + n : NULL);
#else
    for (; n < N; n += 8) qkt__mk_r6w8(M, K, A, sam, sak, B + n, ldb, C + n, ldc, accumulate, init ? init + n : NULL);
#endif
}
static inline void qkt__mk_gemm(int M, int N, int K, const qkt_real *A, ptrdiff_t sam, ptrdiff_t sak,
                                const qkt_real *B, ptrdiff_t ldb, qkt_real *C, ptrdiff_t ldc, bool accumulate) {
    qkt__mk_gemm_init(M, N, K, A, sam, sak, B, ldb, C, ldc, accumulate, NULL);
}

static inline int qkt__round_up(int x, int m) { return (x + m - 1) / m * m; }

/* exp(x) for x <= 88, exactly 0 for x < -87 (so exp(-inf) = 0), in a form the
 * vectoriser accepts: exp(x) = 2^n e^r, n = round(x log2 e), r = x - n ln2 (ln2 in two
 * parts, Cody-Waite), e^r by a degree-7 polynomial (Cephes' coefficients); 2^n is added
 * to the exponent bits. Max relative error ~1e-7 (1 ulp) on [-87, 88]. The float64
 * build uses libm's exp. */
static inline qkt_real qkt__exp(qkt_real x) {
#ifdef QKT_DOUBLE
    return exp(x);
#else
    float xc = x > -87.0f ? (x < 88.0f ? x : 88.0f) : -87.0f; /* NaN -> -87: never converted to int below */
    float nf = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - nf * 0.693145751953125f;
    r = r - nf * 1.428606765330187045e-06f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union {
        float f;
        int32_t i;
    } u = {.f = p};
    u.i += (int32_t)nf * (1 << 23);
    /* NaN in, NaN out. The low value is chosen before the select: written as one nested
     * conditional, gcc 12 copied the caller's arithmetic into each arm, so qkt__tanh's
     * vector loop had two divisions (one for the NaN arm). */
    float low = x == x ? 0.0f : x;
    return x >= -87.0f ? u.f : low;
#endif
}

/* tanh(u) = 1 - 2 / (e^{2u} + 1) through qkt__exp: absolute error ~1e-7 (GELU needs
 * absolute, not relative, accuracy near 0), saturates to +-1. libm's tanh in the
 * float64 build. */
static inline qkt_real qkt__tanh(qkt_real u) {
#ifdef QKT_DOUBLE
    return tanh(u);
#else
    return 1.0f - 2.0f / (qkt__exp(2.0f * u) + 1.0f);
#endif
}

/* The 16 running lanes of qkt__dot16: lane[l] = sum over j0 (in order, from 0) of
 * a[j0 + l] b[j0 + l] (b NULL: of a[j0 + l]), n a multiple of 16. */
static inline void qkt__lanes16(const qkt_real *a, const qkt_real *b, int n, qkt_real *lane) {
#pragma omp simd
    for (int l = 0; l < 16; l++) lane[l] = 0;
    for (int j0 = 0; j0 < n; j0 += 16) {
        if (b) {
#pragma omp simd
            for (int l = 0; l < 16; l++) lane[l] += a[j0 + l] * b[j0 + l];
        } else {
#pragma omp simd
            for (int l = 0; l < 16; l++) lane[l] += a[j0 + l];
        }
    }
}

/* sum_j a_j b_j (b NULL: sum_j a_j) for n a multiple of 16: 16 running lanes in
 * qkt_real (one vector; each lane sums n/16 terms), the lanes added in double. (gcc 12
 * does not vectorise an `omp simd` double reduction over float data.) The lanes' sum is
 * 16 dependent double adds: where many rows need one, qkt__lanes16 per row and
 * qkt__lane_sums over the rows run their chains side by side, with the same bits. */
static inline double qkt__dot16(const qkt_real *a, const qkt_real *b, int n) {
    qkt_real lane[16];
    qkt__lanes16(a, b, n, lane);
    double s = 0;
    for (int l = 0; l < 16; l++) s += lane[l];
    return s;
}

#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
#include <immintrin.h>
/* r[j][i] = r[i][j] for a 16 x 16 block of floats in registers: three rounds of
 * interleaving (32-bit, 64-bit, then 128-bit lanes). */
static inline __attribute__((always_inline)) void qkt__transpose16_ps(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) { /* per 128-bit lane: pairs (row i, row i+1) of 2 columns */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 4) { /* r[i + c]: column 4 l + c of rows i .. i+3, in lane l */
        __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) { /* lanes l of r[c], r[4+c], r[8+c], r[12+c] make row 4 l + c */
        __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
        __m512 v2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44), v3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
        r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[8 + c] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}

/* t[l][r] = a[r][l]: an 8 x 8 transpose of doubles (pairs, then blocks of 2, then of 4). */
static inline __attribute__((always_inline)) void qkt__transpose8_pd(const __m512d a[8], __m512d t[8]) {
    __m512d u[8], v[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i += 2) { /* u[i]: rows i, i+1 of the even lanes; u[i+1]: of the odd */
        u[i] = _mm512_unpacklo_pd(a[i], a[i + 1]);
        u[i + 1] = _mm512_unpackhi_pd(a[i], a[i + 1]);
    }
    const __m512i lo2 = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), hi2 = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
#pragma GCC unroll 8
    for (int i = 0; i < 8; i += 4) /* v[i + c]: rows i .. i+3 of lanes c, c+2 (low half) and c+4, c+6 (high) */
#pragma GCC unroll 8
        for (int c = 0; c < 2; c++) {
            v[i + c] = _mm512_permutex2var_pd(u[i + c], lo2, u[i + 2 + c]);
            v[i + 2 + c] = _mm512_permutex2var_pd(u[i + c], hi2, u[i + 2 + c]);
        }
    const __m512i lo4 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), hi4 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
#pragma GCC unroll 8
    for (int c = 0; c < 4; c++) {
        t[c] = _mm512_permutex2var_pd(v[c], lo4, v[4 + c]);
        t[c + 4] = _mm512_permutex2var_pd(v[c], hi4, v[4 + c]);
    }
}

/* The row sums below for 8 rows (a row past n: zeros), lane l of row r at a[r] (l < 8) or
 * b[r] (l >= 8): the lanes transposed, so the 8 rows' chains are one chain of vector adds. */
static inline __attribute__((always_inline)) __m512d qkt__lane_chains8(const __m512d a[8], const __m512d b[8]) {
    __m512d t[8], acc = _mm512_setzero_pd();
    qkt__transpose8_pd(a, t);
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++) acc = _mm512_add_pd(acc, t[l]);
    qkt__transpose8_pd(b, t);
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++) acc = _mm512_add_pd(acc, t[l]);
    return acc;
}
static inline void qkt__lane_store8(__m512d acc, int n, double *s) {
    double out[8];
    _mm512_storeu_pd(out, acc);
    for (int r = 0; r < 8 && r < n; r++) s[r] = out[r];
}
#endif

/* s[r] = the double sum, in lane order from 0, of the 16 lanes lane[16 r .. 16 r + 16),
 * for r < n: qkt__dot16's final sum of n rows, the rows' dependent chains interleaved
 * (on AVX-512: 8 rows' as one vector chain; a chain through s[] in memory was slower). */
static inline __attribute__((always_inline)) void qkt__lane_sums(const qkt_real *lane, int n, double *s) {
#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
    for (int g = 0; g < n; g += 8) {
        __m512d a[8], b[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            __m512 v = g + r < n ? _mm512_loadu_ps(lane + (size_t)(g + r) * 16) : _mm512_setzero_ps();
            a[r] = _mm512_cvtps_pd(_mm512_castps512_ps256(v)), b[r] = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
        }
        qkt__lane_store8(qkt__lane_chains8(a, b), n - g, s + g);
    }
#else
    for (int r = 0; r < n; r++) s[r] = 0;
    for (int l = 0; l < 16; l++)
        for (int r = 0; r < n; r++) s[r] += lane[(size_t)r * 16 + l];
#endif
}
#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
/* qkt__lane_sums of double lanes (lane[16 r .. 16 r + 16): row r's). */
static inline __attribute__((always_inline)) void qkt__lane_sums_pd(const double *lane, int n, double *s) {
    for (int g = 0; g < n; g += 8) {
        __m512d a[8], b[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            bool in = g + r < n;
            a[r] = in ? _mm512_loadu_pd(lane + (size_t)(g + r) * 16) : _mm512_setzero_pd();
            b[r] = in ? _mm512_loadu_pd(lane + (size_t)(g + r) * 16 + 8) : _mm512_setzero_pd();
        }
        qkt__lane_store8(qkt__lane_chains8(a, b), n - g, s + g);
    }
}
#endif

/* max of 32 values as a vectorised tree. (gcc 12 lowers `omp simd reduction` through a
 * per-lane array reduced by a scalar loop: ~40 extra instructions a row.) */
static inline qkt_real qkt__max32(const qkt_real *z) {
    qkt_real t[16];
#pragma omp simd
    for (int l = 0; l < 16; l++) t[l] = z[l] > z[l + 16] ? z[l] : z[l + 16];
#pragma GCC unroll 4
    for (int w = 8; w > 0; w /= 2)
#pragma omp simd
        for (int l = 0; l < w; l++) t[l] = t[l] > t[l + w] ? t[l] : t[l + w];
    return t[0];
}

#endif
