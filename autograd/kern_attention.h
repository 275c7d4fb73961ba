/* The fused attention's kernels (see ops_attention.c for the algorithm): one head's
 * query tiles forward, one head backward, and their copies and dropout hash. Included
 * once per kernel path by kern_<isa>.c (kern_table.h); everything here is static. */
#include "ops_attention.h"
#include "kern_simd.h"
#include "ops_internal.h"

/* Dropout mask of P[b,h,i,j] from a counter-based hash (murmur3's 32-bit finaliser):
 * row_key mixes the seed, (b, h) and i once per row; key j is kept when
 * mix(row_key + j * golden) >= drop_thr = p 2^32. Vectorises over j. */
static inline uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}
static uint32_t drop_row_key(const qkt__attn *a, int b, int h, int i) {
    uint32_t x = mix32((uint32_t)(a->drop_seed >> 32) + (uint32_t)(b * a->H + h) * 0x9E3779B9u);
    return mix32(x ^ (uint32_t)a->drop_seed ^ mix32((uint32_t)i + 0x7F4A7C15u));
}
#define DROP_GOLDEN 0x9E3779B9u

/* Key bias of keys c0 .. c0+n (n a multiple of BK): 0 for a visible key, -inf for
 * padding (key_pad) and for slots past Tk. The causal limit is applied per row. */
static void key_bias(const qkt__attn *a, int b, int c0, int n, qkt_real *kb) {
    for (int j = 0; j < n; j++)
        kb[j] = (c0 + j < a->Tk && !(a->key_pad && a->key_pad[(size_t)b * a->Tk + c0 + j])) ? 0 : -INFINITY;
}

/* z[j] += bias[i, c0 + j], then -= m_h |i + off - (c0 + j)| (ALiBi), for j < n: query
 * row i of head (b, h), keys c0 .. c0+n (all < Tk). The forward (on a strip) and the
 * backward (on a key tile) both go through here, so both see the same z bits. */
static inline void add_bias(const qkt__attn *a, int b, int h, int i, int c0, int n, qkt_real *z) {
    if (a->bias) {
        const qkt_real *br = a->bias + (size_t)b * a->bias_bstride + ((size_t)h * a->Tq + i) * a->Tk + c0;
#pragma omp simd
        for (int j = 0; j < n; j++) z[j] += br[j];
    }
    if (a->alibi) {
        qkt_real m = a->alibi[h];
        int p = i + a->off - c0; /* query position relative to key c0 */
#pragma omp simd
        for (int j = 0; j < n; j++) z[j] -= m * (qkt_real)(p - j >= 0 ? p - j : j - p);
    }
}

/* (n, d) rows of a head (row stride C) -> dst (n, ld), columns d..ld zeroed; times f.
 * (`omp simd` because gcc's -O2 cost model leaves runtime-length loops scalar.) */
static void copy_rows(const qkt_real *src, int n, int d, int C, qkt_real f, qkt_real *dst, int ld) {
    for (int r = 0; r < n; r++) {
        const qkt_real *s = src + (size_t)r * C;
        qkt_real *t = dst + (size_t)r * ld;
#pragma omp simd
        for (int c = 0; c < d; c++) t[c] = f * s[c];
        for (int c = d; c < ld; c++) t[c] = 0;
    }
}
/* (n, d) rows of a head -> dst (d, ld) transposed, key slots n..ld zeroed. In blocks
 * of 16 keys, so each write is one contiguous 16-wide run and the 16 source rows stay
 * in L1. Callers keep ld off powers of two (see kt_ld): a 1 KiB stride maps every row
 * of a tile to the same few cache sets. */
static void copy_transposed(const qkt_real *src, int n, int d, int C, qkt_real *dst, int ld) {
    int j0 = 0;
#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
    /* 16 keys x 16 columns at a time through registers (the loop below gathered each
     * 16-key run with scalar loads) */
    for (; j0 + 16 <= n; j0 += 16)
        for (int c0 = 0; c0 < d; c0 += 16) {
            int w = d - c0 < 16 ? d - c0 : 16;
            __mmask16 k = (__mmask16)((1u << w) - 1);
            __m512 r[16];
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++) r[j] = _mm512_maskz_loadu_ps(k, src + (size_t)(j0 + j) * C + c0);
            qkt__transpose16_ps(r);
#pragma GCC unroll 16
            for (int c = 0; c < 16; c++)
                if (c < w) _mm512_storeu_ps(dst + (size_t)(c0 + c) * ld + j0, r[c]);
        }
#endif
    for (; j0 + 16 <= n; j0 += 16)
        for (int c = 0; c < d; c++) {
            qkt_real *t = dst + (size_t)c * ld + j0;
            const qkt_real *s = src + (size_t)j0 * C + c;
#pragma omp simd
            for (int j = 0; j < 16; j++) t[j] = s[(size_t)j * C];
        }
    for (int c = 0; c < d; c++) {
        qkt_real *t = dst + (size_t)c * ld;
        for (int j = j0; j < n; j++) t[j] = src[(size_t)j * C + c];
        for (int j = n; j < ld; j++) t[j] = 0;
    }
}
/* Query rows r0 .. r0+nq of a head, all their visible keys at once (a strip of
 * nq x nc scores, nc = keys up to the causal limit of the last row, or all Tk under the
 * full mask, rounded up to BK; slots past it are -inf), plus the bias and ALiBi terms: S = (s Q) K^T in one product, then per row the exact max m, P = e^{z - m}
 * summed into l, P scaled by 1/l, and O = P V in one product (a convex combination of
 * V rows: it cannot overflow where the output does not). Two passes rather than
 * FlashAttention's online softmax over key tiles (rescaling l and O per tile), whose
 * per-tile row bookkeeping costs as much as the tile products at d = 16-64 (measured:
 * docs/performance.md, "Fused causal attention"); the strip's scratch, BQ x T floats
 * per thread, is still linear in T. m and inv = 1/l (the float P was scaled by; 0 for a
 * blocked or NaN row) are saved for the backward
 * (not lse = m + log l, whose float32 rounding at |lse| ~ 100 would already be a 1e-5
 * relative error in P). */
static void strip_rows(const qkt__attn *a, int b, int h, const qkt_real *Q, const qkt_real *KT, int ldk,
                       const qkt_real *V, int ldv, const qkt_real *kb, int r0, int nq, int dp, qkt_real *S, int lds,
                       qkt_real *O, int ldo, qkt_real *m, qkt_real *inv) {
    int Tk = a->Tk, last = a->full ? Tk : r0 + nq + a->off; /* the strip's rows see keys < last */
    if (last > Tk) last = Tk;
    int nc = last > 0 ? qkt__round_up(last, BK) : BK;
    bool add = a->bias || a->alibi;
    if (lds == 0) lds = nc;
    qkt__mk_gemm(nq, nc, a->d, Q, dp, 1, KT, ldk, S, lds, false);  /* S = s Q K^T (nq, nc) */
    bool dead[BQ]; /* rows without a finite max: P set below, no sum */
    for (int r = 0; r < nq; r++) {
        qkt_real *z = S + (size_t)r * lds;
        int jn = a->full ? nc : r0 + r + a->off + 1; /* causal: keys j <= i + off (none when <= 0) */
#pragma omp simd
        for (int j = 0; j < nc; j++) z[j] = j < jn ? z[j] + kb[j] : -INFINITY;
        if (add && jn > 0) add_bias(a, b, h, r0 + r, 0, jn < Tk ? jn : Tk, z);
        qkt_real mx = -INFINITY;
        for (int j0 = 0; j0 < nc; j0 += BK) {
            qkt_real t = qkt__max32(z + j0);
            mx = t > mx ? t : mx;
        }
        m[r] = mx;
        dead[r] = mx == -INFINITY;
        if (dead[r]) { /* every key blocked: P row 0; or every visible logit NaN (no max) */
            bool nan = false;
            for (int j = 0; j < jn && j < nc; j++) nan |= z[j] != z[j];
            for (int j = 0; j < nc; j++) z[j] = nan ? NAN : 0; /* NaN in, NaN out, not a silent 0 */
            if (nan) m[r] = NAN;
            continue;
        }
        /* e^{z - m}; the 16-key vectors past the row's causal limit hold only -inf,
         * whose exp is exactly 0: stored without it (on the diagonal tile, a quarter of
         * the strip) */
        int je = jn >= nc ? nc : qkt__round_up(jn, 16);
#pragma omp simd
        for (int j = 0; j < je; j++) z[j] = qkt__exp(z[j] - mx);
#pragma omp simd
        for (int j = je; j < nc; j++) z[j] = 0;
    }
    /* l = the row sums: float lanes over at most 256 keys (16 terms each), then double,
     * qkt__dot16's order, the rows' double chains side by side (one row's alone was
     * half the forward's time at T 32, d 16) */
    qkt_real lane[BQ * 16];
    double part[BQ], l[BQ];
    for (int r = 0; r < nq; r++) l[r] = 0;
    for (int j0 = 0; j0 < nc; j0 += 256) {
        for (int r = 0; r < nq; r++) qkt__lanes16(S + (size_t)r * lds + j0, NULL, nc - j0 < 256 ? nc - j0 : 256, lane + r * 16);
        qkt__lane_sums(lane, nq, part);
        for (int r = 0; r < nq; r++) l[r] += part[r];
    }
    for (int r = 0; r < nq; r++) {
        qkt_real *z = S + (size_t)r * lds;
        if (dead[r]) {
            inv[r] = 0;
            continue;
        }
        qkt_real pinv = (qkt_real)(1 / l[r]);
        inv[r] = l[r] > 0 ? pinv : 0; /* 0 for a NaN row, as for a fully blocked one */
        if (a->drop) { /* P' = P mask / (1 - p); m and l stay those of P */
            uint32_t key = drop_row_key(a, b, h, r0 + r), thr = a->drop_thr;
            qkt_real ks = a->keep_scale; /* (z pinv) ks: rounded as the backward's P' */
#pragma omp simd
            for (int j = 0; j < nc; j++) z[j] = mix32(key + (uint32_t)j * DROP_GOLDEN) >= thr ? z[j] * pinv * ks : 0;
            continue;
        }
        qkt_real f = inv[r]; /* pinv, or 0 for a NaN row: P as the backward recomputes it */
#pragma omp simd
        for (int j = 0; j < nc; j++) z[j] *= f;
    }
    qkt__mk_gemm(nq, dp, nc, S, lds, 1, V, ldv, O, ldo, false); /* O = P V (V rows past T are 0) */
}

/* Query tiles [qt0, qt1) of one head: rows of y, m and 1/l. `w` is the thread's scratch
 * (FWD_SCRATCH, ops_attention.h); the keys the tiles see are copied once, K transposed. */
static void attn_forward_tiles(const qkt__attn *a, const qkt_real *q, const qkt_real *k, const qkt_real *v, int b, int h,
                      int qt0, int qt1, qkt_real *y, qkt_real *w) {
    int Tq = a->Tq, Tk = a->Tk, C = a->C, d = a->d, dp = qkt__round_up(d, QKT_MK_PAD), Tkp = qkt__round_up(Tk, BK);
    int rows_end = qt1 * BQ < Tq ? qt1 * BQ : Tq;
    int nkeys = a->full ? Tk : rows_end + a->off < Tk ? rows_end + a->off : Tk; /* keys the tiles see */
    if (nkeys < 0) nkeys = 0;
    int nkp = nkeys > 0 ? qkt__round_up(nkeys, BK) : BK;
    int ldk = kt_ld(nkp);
    qkt_real *KT = w, *V = KT + (size_t)d * kt_ld(Tkp), *kb = V + (size_t)Tkp * dp, *Q = kb + Tkp, *O = Q + BQ * dp;
    qkt_real *S = O + BQ * dp, m[BQ];
    int ld = a->ld;
    size_t qbase = (size_t)b * Tq * ld + (size_t)h * d, kbase = (size_t)b * Tk * ld + (size_t)h * d;
    size_t obase = (size_t)b * Tq * C + (size_t)h * d;
    copy_transposed(k + kbase, nkeys, d, ld, KT, ldk); /* K^T (d, nkp) */
    /* V read in place, and O written to y, when the head's width needs no zero columns
     * and the strips' keys no zero rows: the same floats as through the copies */
    bool inplace = d == dp && nkeys == nkp;
    const qkt_real *Vr = inplace ? v + kbase : V;
    int ldv = inplace ? ld : dp;
    if (!inplace) {
        copy_rows(v + kbase, nkeys, d, ld, 1, V, dp);
        memset(V + (size_t)nkeys * dp, 0, (size_t)(nkp - nkeys) * dp * sizeof *V);
    }
    key_bias(a, b, 0, nkp, kb);
    size_t row0 = ((size_t)b * a->H + h) * Tq;
    for (int r0 = qt0 * BQ; r0 < rows_end; r0 += BQ) {
        int nq = Tq - r0 < BQ ? Tq - r0 : BQ;
        copy_rows(q + qbase + (size_t)r0 * ld, nq, d, ld, a->s[h], Q, dp); /* Q pre-scaled by s_h */
        qkt_real inv[BQ], *Or = d == dp ? y + obase + (size_t)r0 * C : O;
        int ldo = d == dp ? C : dp;
        if (a->P) /* the strip is P's rows, kept for the backward */
            strip_rows(a, b, h, Q, KT, ldk, Vr, ldv, kb, r0, nq, dp, a->P + (row0 + r0) * a->ldp, a->ldp, Or, ldo, m, inv);
        else
            strip_rows(a, b, h, Q, KT, ldk, Vr, ldv, kb, r0, nq, dp, S, 0, Or, ldo, m, inv);
        for (int r = 0; r < nq; r++) {
            if (Or == O) /* already normalised; 0 for a fully blocked row */
                memcpy(y + obase + (size_t)(r0 + r) * C, O + (size_t)r * dp, (size_t)d * sizeof *y);
            a->rmax[row0 + r0 + r] = m[r];
            a->rinv[row0 + r0 + r] = inv[r];
        }
    }
}

/* D_i = dY_i . y_i in float64, rows i < Tq of row stride C: 8 double lanes over the d
 * columns in blocks of 8 (one chain was latency-bound), the leftover columns summed on
 * their own, then the lanes added to that in order. With AVX-512, 8 rows at once: their
 * lanes transposed, so the 8 final chains run as one of vector adds (the same sums). */
static void row_dots(const qkt_real *dy, const qkt_real *y, int C, int Tq, int d, qkt_real *D) {
    int i = 0, d8 = d / 8 * 8;
#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
    for (; i + 8 <= Tq; i += 8) {
        __m512d lane[8], t[8];
        double tail[8];
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            const qkt_real *a = dy + (size_t)(i + r) * C, *b = y + (size_t)(i + r) * C;
            __m512d acc = _mm512_setzero_pd();
            for (int c = 0; c < d8; c += 8)
                acc = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(a + c)), _mm512_cvtps_pd(_mm256_loadu_ps(b + c)), acc);
            lane[r] = acc;
            double tl = 0;
            for (int c = d8; c < d; c++) tl += (double)a[c] * b[c];
            tail[r] = tl;
        }
        qkt__transpose8_pd(lane, t);
        __m512d sum = _mm512_loadu_pd(tail);
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) sum = _mm512_add_pd(sum, t[l]);
        _mm256_storeu_ps(D + i, _mm512_cvtpd_ps(sum));
    }
#endif
    for (; i < Tq; i++) {
        const qkt_real *a = dy + (size_t)i * C, *b = y + (size_t)i * C;
        double lane[8] = {0}, acc = 0;
        for (int c = 0; c < d8; c += 8)
#pragma omp simd
            for (int l = 0; l < 8; l++) lane[l] += (double)a[c + l] * b[c + l];
        for (int c = d8; c < d; c++) acc += (double)a[c] * b[c];
        for (int l = 0; l < 8; l++) acc += lane[l];
        D[i] = (qkt_real)acc;
    }
}

#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
/* A key tile's dV_j = P^T dY and dK_j = dZ^T (s Q) where the head's padded width dp is not
 * a multiple of 32: as dV_j^T = dY^T P and dK_j^T = (s Q)^T dZ (dp x BK), whose 32-wide tile
 * products hold 16 accumulators where a dp-wide product of 16 columns holds 8; every
 * element is the same chain over the strip's M rows (a b = b a), so the same floats.
 * Transposed back in 16 x 16 blocks and stored or added to the nk keys' rows of dk and
 * dv (row stride ld), columns d .. dp (padding) left alone. tk, tv: dp x BK scratch. */
static void key_grads_transposed(const qkt_real *dY, ptrdiff_t ldY, const qkt_real *P, ptrdiff_t ldP, const qkt_real *Q,
                                 const qkt_real *G, int M, int nk, int d, int dp, qkt_real *dk, qkt_real *dv, int ld,
                                 bool store, qkt_real *tk, qkt_real *tv) {
    qkt__mk_gemm(dp, BK, M, dY, 1, ldY, P, ldP, tv, BK, false); /* dV_j^T = dY^T P */
    qkt__mk_gemm(dp, BK, M, Q, 1, dp, G, BK, tk, BK, false);    /* dK_j^T = (s Q)^T dZ */
    for (int j0 = 0; j0 < nk; j0 += 16)
        for (int c0 = 0; c0 < d; c0 += 16) {
            int w = d - c0 < 16 ? d - c0 : 16;
            __mmask16 m = (__mmask16)((1u << w) - 1);
            __m512 rk[16], rv[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                rk[i] = _mm512_loadu_ps(tk + (size_t)(c0 + i) * BK + j0);
                rv[i] = _mm512_loadu_ps(tv + (size_t)(c0 + i) * BK + j0);
            }
            qkt__transpose16_ps(rk);
            qkt__transpose16_ps(rv);
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++) {
                if (j0 + j >= nk) break;
                qkt_real *dkr = dk + (size_t)(j0 + j) * ld + c0, *dvr = dv + (size_t)(j0 + j) * ld + c0;
                /* dk's row stored before dv's is read: with k = v (one tensor) they are one row */
                _mm512_mask_storeu_ps(dkr, m, store ? rk[j] : _mm512_add_ps(_mm512_maskz_loadu_ps(m, dkr), rk[j]));
                _mm512_mask_storeu_ps(dvr, m, store ? rv[j] : _mm512_add_ps(_mm512_maskz_loadu_ps(m, dvr), rv[j]));
            }
        }
}
#endif

/* One head (b, h), all of it, so the thread owns dQ, dK, dV of that head. With
 * z = s_h q.k + bias + ALiBi + mask, P = exp(z - m) / l and D_i = sum_c dY_ic y_ic (= sum_j P_ij dP_ij):
 *   dV_j += sum_i P_ij dY_i;   dP_ij = dY_i . v_j;   dZ_ij = P_ij (dP_ij - D_i);   dbias_ij += dZ_ij;
 *   dQ_i += s_h sum_j dZ_ij k_j;   dK_j += s_h sum_i dZ_ij q_i = sum_i dZ_ij (s_h q_i);
 *   ds_h = sum_ij dZ_ij q_i.k_j, so dlog_scale[h] = s_h ds_h = sum_i q_i . dQ_i.
 * Blocked entries have P = 0, hence dZ = 0. Per key tile, all query rows that see it (from
 * the causal diagonal down, or all under the full mask) as one strip (Tq x BK scratch for
 * P and dZ): dK_j and dV_j are then one product each over the whole strip, not a sum of
 * 32-row products. The float32 details matter when a row is nearly one-hot (dZ is then a
 * small difference): z is recomputed from s q rounded exactly as in the forward, with the
 * bias added by the same add_bias (the same bits), P from the saved m and 1/l (see
 * attn_forward_tiles), and D_i in float64, so P here and the P behind y agree to rounding.
 * dlog_scale uses q . dQ once at the end (summing dZ z per tile loses that accuracy).
 * With dropout, y = P' V (P' = P mask / (1-p)): dV uses P', dP = dP' mask / (1-p), and
 * D_i = dY_i . y_i is still sum_j P_ij dP_ij.
 * `store`: the grads are a new, unzeroed buffer, so results are stored, not added (dbias
 * is always added to: a bias shared by the batch sums the heads (b, h) of every b, which
 * the op runs in order of b on one thread).
 * Returns dlog_scale[h]'s share from batch b (0 unless a->dlog).
 * One function of ~100 lines on purpose: the scratch layout, the per-tile strip and the
 * final dQ pass share a dozen pointers into one buffer and the float32 order of every sum
 * (the bits the gradient checks and the paths' comparisons pin); split, each piece would
 * take most of them as arguments and the order would no longer be visible in one place. */
static double attn_backward_head(const qkt__attn *a, const qkt_real *q, const qkt_real *k, const qkt_real *v,
                       const qkt_real *y, const qkt_real *dy, qkt_real *dq, qkt_real *dk, qkt_real *dv, bool store,
                       int b, int h, qkt_real *w) {
    int Tq = a->Tq, Tk = a->Tk, C = a->C, d = a->d, dp = qkt__round_up(d, QKT_MK_PAD), ld = a->ld, off = a->off;
    qkt_real *Q = w, *K = Q + (size_t)Tq * dp, *dY = K + (size_t)Tk * dp, *dQ = dY + (size_t)Tq * dp;
    qkt_real *KT = dQ + (size_t)Tq * dp, *VT = KT + d * BK, *dKj = VT + d * BK, *dVj = dKj + BK * dp;
    qkt_real *P = dVj + BK * dp, *G = P + (size_t)Tq * BK, *D = G + (size_t)Tq * BK, *kb = D + Tq;
    size_t qbase = (size_t)b * Tq * ld + (size_t)h * d, kbase = (size_t)b * Tk * ld + (size_t)h * d;
    size_t obase = (size_t)b * Tq * C + (size_t)h * d, row0 = ((size_t)b * a->H + h) * Tq;
    const qkt_real *rm = a->rmax + row0, *ri = a->rinv + row0, s = a->s[h];
    qkt_real *db = a->dbias ? a->dbias + (size_t)b * a->bias_bstride + (size_t)h * Tq * Tk : NULL; /* (Tq, Tk) */
    bool add = a->bias || a->alibi;
    copy_rows(q + qbase, Tq, d, ld, s, Q, dp); /* s q, rounded as in the forward: the same z bits */
    /* K and dY as the tile products read them: in place when d is a multiple of the tiles'
     * width (the same floats as a copy, whose 1 x is exact), else copied with zero padding */
    bool inplace = d == dp;
    const qkt_real *Kr = inplace ? k + kbase : K, *dYr = inplace ? dy + obase : dY;
    ptrdiff_t ldK = inplace ? ld : dp, ldY = inplace ? C : dp;
    if (!inplace) {
        copy_rows(k + kbase, Tk, d, ld, 1, K, dp);
        copy_rows(dy + obase, Tq, d, C, 1, dY, dp);
    }
    memset(dQ, 0, (size_t)Tq * dp * sizeof *dQ);
    row_dots(dy + obase, y + obase, C, Tq, d, D);
    for (int c0 = 0; c0 < Tk; c0 += BK) {
        int nk = Tk - c0 < BK ? Tk - c0 : BK;
        /* the strip: rows rs .. Tq, rs the first query row that sees key c0 (the last
         * query, at position Tk - 1, sees every key, so the strip is never empty) */
        int rs = a->full || c0 - off < 0 ? 0 : c0 - off, M = Tq - rs;
        copy_transposed(v + kbase + (size_t)c0 * ld, nk, d, ld, VT, BK);
        qkt_real *Qi = Q + (size_t)rs * dp, *Pt = P;
        ptrdiff_t ldP = BK;
        const qkt_real *dYi = dYr + (size_t)rs * ldY;
        if (a->P) { /* P as the forward left it (the same floats as recomputed below) */
            Pt = a->P + (row0 + rs) * a->ldp + c0, ldP = a->ldp;
        } else {
            copy_transposed(k + kbase + (size_t)c0 * ld, nk, d, ld, KT, BK);
            key_bias(a, b, c0, BK, kb);
            qkt__mk_gemm(M, BK, d, Qi, dp, 1, KT, BK, P, BK, false); /* z = s q.k (M, BK) */
        }
        qkt__mk_gemm(M, BK, d, dYi, ldY, 1, VT, BK, G, BK, false); /* dP = dY V^T */
        int jn_rs = a->full ? BK : rs + off - c0 + 1; /* row rs sees keys c0 + j, j < jn_rs (causal: c0 + j <= i + off) */
        for (int r = 0; r < M; r++) {
            int i = rs + r, jn = a->full ? BK : jn_rs + r;
            qkt_real *p = Pt + (size_t)r * ldP, *g = G + (size_t)r * BK, mi = rm[i], li = ri[i], Di = D[i];
            if (a->P) {
#pragma omp simd
                for (int j = 0; j < BK; j++) g[j] = p[j] * (g[j] - Di); /* dZ */
                continue;
            }
            if (mi == -INFINITY) jn = 0, mi = 0; /* fully blocked row: no P */
            if (add && jn > 0) add_bias(a, b, h, i, c0, jn < nk ? jn : nk, p);
            if (a->drop) { /* y = P' V with P' = P mask / (1-p): dV from P', dP = dP' mask / (1-p) */
                uint32_t key = drop_row_key(a, b, h, i) + (uint32_t)c0 * DROP_GOLDEN, thr = a->drop_thr;
                qkt_real ks = a->keep_scale;
#pragma omp simd
                for (int j = 0; j < BK; j++) {
                    qkt_real pj = qkt__exp((j < jn ? p[j] + kb[j] : -INFINITY) - mi) * li;
                    qkt_real keep = mix32(key + (uint32_t)j * DROP_GOLDEN) >= thr ? ks : 0;
                    p[j] = pj * keep;
                    g[j] = pj * (g[j] * keep - Di);
                }
            } else {
#pragma omp simd
                for (int j = 0; j < BK; j++) {
                    qkt_real pj = qkt__exp((j < jn ? p[j] + kb[j] : -INFINITY) - mi) * li; /* kb: 0 or -inf */
                    p[j] = pj;
                    g[j] = pj * (g[j] - Di); /* dZ */
                }
            }
        }
        for (int r = 0; db && r < M; r++) {
            qkt_real *dbr = db + (size_t)(rs + r) * Tk + c0;
            const qkt_real *g = G + (size_t)r * BK;
#pragma omp simd
            for (int j = 0; j < nk; j++) dbr[j] += g[j];
        }
        qkt__mk_gemm(M, dp, nk, G, BK, 1, Kr + (size_t)c0 * ldK, ldK, dQ + (size_t)rs * dp, dp, true); /* dQ / s += dZ K_j */
#if defined(__AVX512F__) && !defined(QKT_DOUBLE)
        if (dp % 32) { /* a head width of 16 (+ 32 k): dV_j and dK_j transposed, 32 keys wide */
            key_grads_transposed(dYi, ldY, Pt, ldP, Qi, G, M, nk, d, dp, dk + kbase + (size_t)c0 * ld,
                                 dv + kbase + (size_t)c0 * ld, ld, store, dKj, dVj);
            continue;
        }
#endif
        qkt__mk_gemm(nk, dp, M, Pt, 1, ldP, dYi, ldY, dVj, dp, false);                        /* dV_j = P^T dY */
        qkt__mk_gemm(nk, dp, M, G, 1, BK, Qi, dp, dKj, dp, false);                            /* dK_j = dZ^T (s Q) */
        for (int j = 0; j < nk; j++) {
            qkt_real *dkr = dk + kbase + (size_t)(c0 + j) * ld, *dvr = dv + kbase + (size_t)(c0 + j) * ld;
            const qkt_real *gk = dKj + (size_t)j * dp, *gv = dVj + (size_t)j * dp;
            if (store) {
                memcpy(dkr, gk, (size_t)d * sizeof *dkr);
                memcpy(dvr, gv, (size_t)d * sizeof *dvr);
                continue;
            }
#pragma omp simd
            for (int c = 0; c < d; c++) dkr[c] += gk[c];
#pragma omp simd
            for (int c = 0; c < d; c++) dvr[c] += gv[c];
        }
    }
    for (int i = 0; i < Tq; i++) {
        qkt_real *dqr = dq + qbase + (size_t)i * ld;
        const qkt_real *gq = dQ + (size_t)i * dp;
        if (store) {
#pragma omp simd
            for (int c = 0; c < d; c++) dqr[c] = s * gq[c];
        } else {
#pragma omp simd
            for (int c = 0; c < d; c++) dqr[c] += s * gq[c];
        }
    }
    /* sum_i q_i . dQ_i = sum_i (s q_i) . (dQ_i / s), only when the log-scale wants it:
     * qkt__dot16 per row (columns d..dp of Q are 0), the rows' lane sums side by side */
    double dlog = 0;
    for (int i0 = 0; a->dlog && i0 < Tq; i0 += BQ) {
        int n = Tq - i0 < BQ ? Tq - i0 : BQ;
        qkt_real lane[BQ * 16];
        double part[BQ];
        for (int r = 0; r < n; r++) qkt__lanes16(Q + (size_t)(i0 + r) * dp, dQ + (size_t)(i0 + r) * dp, dp, lane + r * 16);
        qkt__lane_sums(lane, n, part);
        for (int r = 0; r < n; r++) dlog += part[r];
    }
    return dlog;
}
