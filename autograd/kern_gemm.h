/* qkt's own float32 matrix product, on the paths with AVX-512 (kern_avx512.c, or a
 * -DQKT_NATIVE=ON build for such a CPU). Included once per kernel path by kern_<isa>.c;
 * everything here is static. Elsewhere QKT__KERN_GEMM is NULL and gemm.c calls BLAS.
 *
 * Why: OpenBLAS picks its sgemm kernel by CPU model, and a model it does not know gets
 * an older kernel. Debian 12's OpenBLAS 0.3.21 runs its AVX2 (Haswell) kernel on AMD
 * Zen 5, whose cores do a full 512-bit FMA per pipe: ~104 GFLOP/s a core where the
 * tile product below (8 x 32 accumulators, kernels.h) does 170-215 on every shape a
 * GPT step uses (docs/performance.md). With AVX2 only, the same tile product reaches
 * 0.73-0.92 of OpenBLAS's kernel, so the other paths keep BLAS.
 *
 * Blocking (BLIS-like, measured on the study's and the bench's shapes): op(B) is
 * packed by blocks of KC x NC into rows of NC floats (zero padded to 16 columns), so a
 * 32-column strip of it is read with a fixed stride from L1/L2; A is read in place
 * (any strides: op(A) or its transpose), MC rows at a time against the packed block.
 *
 * Bits: every C element is the chain c = fma(a_k, b_k, c) over k in order, started at 0
 * (accumulate false) or at C's value (true). A later K block continues the chain from
 * the stored float, which is exact, so the blocking and qkt_gemm's row or column split
 * over threads change the speed, never the result. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#if !defined(QKT_DOUBLE) && defined(__AVX512F__)
#define QKT__KERN_GEMM own_gemm

enum { GEMM_KC = 256, GEMM_NC = 128, GEMM_MC = 64 };

/* Rows [0, kc) x columns [0, nc) of op(B) from (k0, n0) into P (kc rows of ncp floats,
 * columns nc .. ncp zero). */
static void gemm_pack_b(bool tb, const qkt_real *B, int ldb, int k0, int n0, int kc, int nc, int ncp, qkt_real *P) {
    if (!tb) {
        for (int k = 0; k < kc; k++) {
            qkt_real *row = P + (size_t)k * ncp;
            memcpy(row, B + (size_t)(k0 + k) * ldb + n0, (size_t)nc * sizeof *row);
            for (int n = nc; n < ncp; n++) row[n] = 0;
        }
        return;
    }
    /* op(B) = B^T: 16 x 16 blocks, so the 16 rows of B a block reads stay in L1 while
     * its 16 packed rows are written (a column at a time touches a line per element) */
    for (int j0 = 0; j0 < ncp; j0 += 16)
        for (int i0 = 0; i0 < kc; i0 += 16) {
            int ni = kc - i0 < 16 ? kc - i0 : 16;
            for (int i = 0; i < ni; i++) {
                qkt_real *row = P + (size_t)(i0 + i) * ncp + j0;
                const qkt_real *col = B + (size_t)(n0 + j0) * ldb + k0 + i0 + i;
                for (int j = 0; j < 16; j++) row[j] = j0 + j < nc ? col[(size_t)j * ldb] : 0;
            }
        }
}

/* C[mc x nc] (+)= A-block x P, P as gemm_pack_b left it. Columns past the last multiple
 * of 16 go through a 16-wide scratch tile, so nothing beyond column nc is written. */
static void gemm_block(int mc, int nc, int ncp, int kc, const qkt_real *A, ptrdiff_t sam, ptrdiff_t sak,
                       const qkt_real *P, bool acc, qkt_real *C, int ldc) {
    int nf = nc / 16 * 16, w = nc - nf;
    if (nf) qkt__mk_gemm(mc, nf, kc, A, sam, sak, P, ncp, C, ldc, acc);
    if (!w) return;
    qkt_real tile[GEMM_MC * 16];
    if (acc)
        for (int i = 0; i < mc; i++) memcpy(tile + i * 16, C + (size_t)i * ldc + nf, (size_t)w * sizeof *tile);
    qkt__mk_gemm(mc, 16, kc, A, sam, sak, P + nf, ncp, tile, 16, acc);
    for (int i = 0; i < mc; i++) memcpy(C + (size_t)i * ldc + nf, tile + i * 16, (size_t)w * sizeof *tile);
}

/* C = op(A) op(B), or C += op(A) op(B) when accumulate; one thread. */
static void own_gemm(bool ta, bool tb, int M, int N, int K, const qkt_real *A, int lda, const qkt_real *B, int ldb,
                     bool accumulate, qkt_real *C, int ldc) {
    if (K == 0) {
        if (!accumulate)
            for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    int kmax = K < GEMM_KC ? K : GEMM_KC, nmax = N < GEMM_NC ? qkt__round_up(N, 16) : GEMM_NC;
    qkt_real *P = qkt_aligned_alloc(64, (size_t)kmax * nmax * sizeof *P);
    ptrdiff_t sam = ta ? 1 : lda, sak = ta ? lda : 1;
    for (int n0 = 0; n0 < N; n0 += GEMM_NC) {
        int nc = N - n0 < GEMM_NC ? N - n0 : GEMM_NC, ncp = qkt__round_up(nc, 16);
        for (int k0 = 0; k0 < K; k0 += GEMM_KC) {
            int kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;
            gemm_pack_b(tb, B, ldb, k0, n0, kc, nc, ncp, P);
            bool acc = accumulate || k0 > 0;
            for (int m0 = 0; m0 < M; m0 += GEMM_MC) {
                int mc = M - m0 < GEMM_MC ? M - m0 : GEMM_MC;
                gemm_block(mc, nc, ncp, kc, A + m0 * sam + k0 * sak, sam, sak, P, acc, C + (size_t)m0 * ldc + n0, ldc);
            }
        }
    }
    free(P);
}
#else
#define QKT__KERN_GEMM NULL
#endif
