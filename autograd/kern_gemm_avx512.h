/* qkt's own float32 matrix product, on the paths with AVX-512 (kern_avx512.c, or a
 * -DQKT_NATIVE=ON build for such a CPU). Included once per kernel path by kern_<isa>.c;
 * everything here is static. Elsewhere QKT__KERN_GEMM is NULL and kern_gemm.c calls BLAS.
 *
 * Why: OpenBLAS picks its sgemm kernel by CPU model, and a model it does not know gets
 * an older kernel. Debian 12's OpenBLAS 0.3.21 runs its AVX2 (Haswell) kernel on AMD
 * Zen 5, whose cores do a full 512-bit FMA per pipe: ~104 GFLOP/s a core where the
 * tile product below (8 x 32 accumulators, kern_simd.h) does 160-200 on the shapes a
 * GPT step uses (`qkt bench --gemm-shapes`, with QKT_ISA=avx2 for OpenBLAS's). With AVX2 only, the same tile product reaches
 * 0.73-0.92 of OpenBLAS's kernel, so the other paths keep BLAS.
 *
 * Blocking (BLIS-like, measured on the study's and the bench's shapes): op(B) is cut
 * into blocks of KC x NC. B^T, and B whose rows are 4 KiB or more apart, are packed
 * into rows of NC floats (zero padded to 16 columns), so a 32-column strip is read with
 * a short fixed stride from L1/L2; B with closer rows is read in place. A is read in
 * place (any strides: op(A) or its transpose), MC rows at a time against the block.
 *
 * Bits: every C element is the chain c = fma(a_k, b_k, c) over k in order, started at 0
 * (accumulate false), at C's value (true) or at the bias. A later K block continues the
 * chain from the stored float, which is exact, so the blocking, the packing and
 * qkt_gemm's row or column split over threads change the speed, never the result. */
#include <stdlib.h>
#include <string.h>

#include "kern_simd.h"

#if !defined(QKT_DOUBLE) && defined(__AVX512F__)
#include <immintrin.h>

#define QKT__KERN_GEMM own_gemm

/* K blocks of 512: one pass over C for K up to 512 (the GPT's widths C and 4C at C = 128).
 * Against 256: +2-6 % on the medium config's products (K >= 384), the same where K < 256
 * (bench/gemm_blocks.sh, docs/performance.md "qkt's own gemm"). */
enum { GEMM_KC = 512, GEMM_NC = 128, GEMM_MC = 64 };
/* With op(A) = A^T (the weight gradients dW = dY^T X) and B read in place, the blocks
 * of B are up to GEMM_NC_TA columns wide, and an A block that serves at least
 * GEMM_PACK_A_MIN_NC of them is first transposed into rows of GEMM_KC floats. In place,
 * A^T gives each k step a short run of one row of A (GEMM_KC rows per block, lda apart),
 * where op(A) = A gives 8 rows read along k, which the prefetcher follows
 * (docs/performance.md, "qkt's own gemm"). Below ~256 columns the transposition costs
 * more than it saves. */
enum { GEMM_NC_TA = 512, GEMM_PACK_A_MIN_NC = 256 };
/* The packing buffers of one call at most: B's block (GEMM_KC rows of up to GEMM_NC floats;
 * in place, only its 16-wide tail) and A^T's block (GEMM_MC x GEMM_KC). */
enum { GEMM_SCRATCH_B = GEMM_KC * GEMM_NC, GEMM_SCRATCH = GEMM_SCRATCH_B + GEMM_MC * GEMM_KC };
#define QKT__KERN_GEMM_SCRATCH GEMM_SCRATCH

/* dst[j][i] = src[i][j] for a 16 x 16 block (qkt__transpose16_ps). */
static inline void gemm_transpose16(const float *src, size_t lds, float *dst, size_t ldd) {
    __m512 r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lds);
    qkt__transpose16_ps(r);
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * ldd, r[i]);
}

/* P (kc rows of ncp floats) = rows [k0, k0 + kc) x columns [n0, n0 + nc) of op(B), columns
 * nc .. ncp zero; with tb, op(B) = B^T is transposed in 16 x 16 blocks. */
static void gemm_pack_b(bool tb, const qkt_real *B, int ldb, int k0, int n0, int kc, int nc, int ncp, qkt_real *P) {
    if (!tb) {
        for (int k = 0; k < kc; k++) { /* a vector loop: gcc 12 may lower a memcpy here to a
                                           * `rep movsq`, which is slow for 512 bytes */
            qkt_real *row = P + (size_t)k * ncp;
            const qkt_real *src = B + (size_t)(k0 + k) * ldb + n0;
#pragma omp simd
            for (int n = 0; n < nc; n++) row[n] = src[n];
            for (int n = nc; n < ncp; n++) row[n] = 0;
        }
        return;
    }
    for (int j0 = 0; j0 < ncp; j0 += 16)
        for (int i0 = 0; i0 < kc; i0 += 16) {
            const qkt_real *src = B + (size_t)(n0 + j0) * ldb + k0 + i0;
            if (j0 + 16 <= nc && i0 + 16 <= kc) {
                gemm_transpose16(src, (size_t)ldb, P + (size_t)i0 * ncp + j0, (size_t)ncp);
                continue;
            }
            for (int i = 0; i < 16 && i0 + i < kc; i++) /* a ragged edge block */
                for (int j = 0; j < 16; j++) P[(size_t)(i0 + i) * ncp + j0 + j] = j0 + j < nc ? src[(size_t)j * ldb + i] : 0;
        }
}

/* C[mc x nc] (+)= A-block x op(B)-block. The first nf = nc rounded down to 16 columns
 * read B (ldb: in place, or packed); the rest a 16-wide zero-padded packed tail T (ldt)
 * into a scratch tile, so nothing beyond column nc is read or written. */
static void gemm_block(int mc, int nc, int kc, const qkt_real *A, ptrdiff_t sam, ptrdiff_t sak, const qkt_real *B,
                       ptrdiff_t ldb, const qkt_real *T, ptrdiff_t ldt, bool acc, const qkt_real *bias, qkt_real *C,
                       int ldc) {
    int nf = nc / 16 * 16, w = nc - nf;
    if (nf) qkt__mk_gemm_init(mc, nf, kc, A, sam, sak, B, ldb, C, ldc, acc, bias);
    if (!w) return;
    qkt_real tile[GEMM_MC * 16];
    if (acc)
        for (int i = 0; i < mc; i++) memcpy(tile + i * 16, C + (size_t)i * ldc + nf, (size_t)w * sizeof *tile);
    else if (bias)
        for (int i = 0; i < mc; i++) memcpy(tile + i * 16, bias + nf, (size_t)w * sizeof *tile);
    qkt__mk_gemm(mc, 16, kc, A, sam, sak, T, ldt, tile, 16, acc || bias);
    for (int i = 0; i < mc; i++) memcpy(C + (size_t)i * ldc + nf, tile + i * 16, (size_t)w * sizeof *tile);
}

/* C = op(A) op(B), or C += op(A) op(B) when accumulate, or (bias, not accumulate) C =
 * bias + op(A) op(B) with every sum starting at bias[n]; one thread. op(B) = B with rows
 * under 4 KiB apart is read in place except its last nc % 16 columns; B^T, and B with
 * longer rows, are packed block by block. op(A) = A is read in place; A^T in place or
 * packed (GEMM_PACK_A_MIN_NC). The packing copies floats, so the bits do not change. */
static void own_gemm(bool ta, bool tb, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                     bool accumulate, const qkt_real *bias, qkt_real *C, int ldc, const qkt__gemm_epi *epi,
                     qkt_real *scratch) {
    if (accumulate) bias = NULL;
    if (K == 0) {
        if (!accumulate)
            for (int i = 0; i < M; i++) {
                if (bias) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof *C);
                else memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
            }
        if (epi) epi->fn(C, epi->aux, M, N, ldc);
        return;
    }
    /* B in place when its rows are less than 4 KiB apart; further apart, the kc rows of a
     * 32-column strip fall into a few cache sets (2048 x 2048: 130 GFLOP/s in place, 195
     * packed), so B is packed like B^T */
    bool pack_all = !tb && (size_t)ldb * sizeof *B >= 4096;
    /* B's block width: wider for A^T with B in place (a packed B block 512 wide, 512 KiB,
     * was slower than 128 wide) */
    int nb = ta && !tb && !pack_all ? GEMM_NC_TA : GEMM_NC;
    int kmax = K < GEMM_KC ? K : GEMM_KC, nmax = N < nb ? qkt__round_up(N, 16) : nb;
    bool own = !scratch, want_pa = ta && nmax >= GEMM_PACK_A_MIN_NC; /* own: this call's buffers */
    qkt_real *P = own ? qkt_aligned_alloc(64, (size_t)kmax * (tb || pack_all ? nmax : 16) * sizeof *P) : scratch;
    ptrdiff_t sam = ta ? 1 : lda, sak = ta ? lda : 1;
    qkt_real *PA = !want_pa ? NULL : own ? qkt_aligned_alloc(64, (size_t)GEMM_MC * GEMM_KC * sizeof *PA) : scratch + GEMM_SCRATCH_B;
    for (int n0 = 0; n0 < N; n0 += nb) {
        int nc = N - n0 < nb ? N - n0 : nb, ncp = qkt__round_up(nc, 16), nf = nc / 16 * 16;
        bool pack_a = PA && nc >= GEMM_PACK_A_MIN_NC;
        for (int k0 = 0; k0 < K; k0 += GEMM_KC) {
            int kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;
            const qkt_real *Bk = P, *T = P + nf; /* packed: the tail is P's last 16 columns */
            ptrdiff_t ldbk = ncp, ldt = ncp;
            if (tb || pack_all) {
                gemm_pack_b(tb, B, ldb, k0, n0, kc, nc, ncp, P);
            } else { /* in place; the tail packed alone */
                Bk = B + (size_t)k0 * ldb + n0, ldbk = ldb, T = P, ldt = 16;
                if (nf < nc) gemm_pack_b(false, B, ldb, k0, n0 + nf, kc, nc - nf, 16, P);
            }
            bool acc = accumulate || k0 > 0;
            for (int m0 = 0; m0 < M; m0 += GEMM_MC) {
                int mc = M - m0 < GEMM_MC ? M - m0 : GEMM_MC;
                const qkt_real *Am = A + m0 * sam + k0 * sak;
                ptrdiff_t bsam = sam, bsak = sak;
                if (pack_a) { /* A^T into rows of GEMM_KC, as B^T is packed */
                    gemm_pack_b(true, Am, lda, 0, 0, mc, kc, GEMM_KC, PA);
                    Am = PA, bsam = GEMM_KC, bsak = 1;
                }
                qkt_real *Cm = C + (size_t)m0 * ldc + n0;
                gemm_block(mc, nc, kc, Am, bsam, bsak, Bk, ldbk, T, ldt, acc, bias && !acc ? bias + n0 : NULL, Cm, ldc);
                if (epi && k0 + kc == K) /* the block's sums are complete and in L1/L2 */
                    epi->fn(Cm, epi->aux ? epi->aux + (size_t)m0 * ldc + n0 : NULL, mc, nc, ldc);
            }
        }
    }
    if (own) free(PA), free(P);
}
#else
#define QKT__KERN_GEMM NULL
#define QKT__KERN_GEMM_SCRATCH 0
#endif
