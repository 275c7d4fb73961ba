/* What the fused attention op (ops_attention.c) hands its kernels (kern_attention.h):
 * the saved state of one call and the scratch sizes. Private to autograd. */
#ifndef QKT_ATTENTION_INTERNAL_H
#define QKT_ATTENTION_INTERNAL_H
#include "kern_table.h"

/* Tile sizes: BK keys is the vector width of the S and dP tiles (a multiple of 32). */
#define BQ 32
#define BK 32
_Static_assert(BK == 32, "the row max uses qkt__max32");

struct qkt__attn {
    int B, Tq, Tk, C, H, d; /* q, y (B, Tq, C); k, v (B, Tk, C) */
    int off;          /* Tk - Tq: query i sits at key position i + off (the causal limit, ALiBi's distance) */
    int ld;           /* row stride of q, k, v and their grads: C, or 3C for packed qkv */
    bool packed;      /* inputs are one (B, T, 3C) tensor [q | k | v] */
    bool full;        /* no causal mask */
    qkt_real *rmax;   /* (B, H, Tq) m_i = max_j z_ij; -inf for a fully blocked row */
    qkt_real *rinv;   /* (B, H, Tq) 1 / sum_j exp(z_ij - m_i); 0 for a fully blocked row */
    qkt_real *P;      /* (B, H, Tq, ldp) the forward's P, kept for the backward when it fits
                       * QKT_ATTN_KEEP_P_BYTES (and no dropout); else NULL and recomputed */
    size_t ldp;       /* Tk rounded up to BK */
    qkt_real *s;      /* (H) per-head scale used */
    uint8_t *key_pad; /* copy of the (B, Tk) mask, or NULL */
    const qkt_real *bias; /* the bias tensor's (.., H, Tq, Tk) data, or NULL */
    size_t bias_bstride;  /* its stride over b: 0 when shared by the batch, else H Tq Tk */
    qkt_real *dbias;      /* backward only: the bias's grad (+= dZ), or NULL */
    bool dlog;            /* backward only: the log-scale's grad is wanted (sum_i q_i . dQ_i) */
    qkt_real *alibi;      /* copy of the (H) ALiBi slopes, or NULL */
    bool drop;        /* dropout on P: keep (i, j) when its hash (below) >= drop_thr, scaled by keep_scale */
    uint32_t drop_thr;
    qkt_real keep_scale;
    uint64_t drop_seed;
};

/* The largest P (B H Tq Tk reals, Tk rounded up to BK) the forward keeps for the
 * backward, which then reads it instead of recomputing z = s q.k and exp(z - m) / l per
 * key tile (the same floats either way). Larger, the backward recomputes it and the op's
 * memory stays linear in T. */
#define QKT_ATTN_KEEP_P_BYTES ((size_t)8 << 20) /* qkt_attn_opts.recompute_p's doc says 8 MiB */

/* Leading dimension of a transposed K with n key slots: padded by 16 off a power of two. */
static inline int kt_ld(int n) { return n + 16; }

/* Scratch per thread, in reals: the forward's (K^T, V, key bias, Q, O and the strip;
 * Tkp = Tk rounded up to BK (at least BK), dp = d rounded up to QKT_MK_PAD) and the
 * backward's (s Q, K, dY, dQ slabs, the K, V tile, dK, dV of the tile, P and dZ strips, D). */
#define FWD_SCRATCH(Tkp, dp, d) ((size_t)(d) * kt_ld(Tkp) + (size_t)(Tkp) * (dp) + (Tkp) + (size_t)BQ * (dp) + (size_t)BQ * (dp) + (size_t)BQ * (Tkp))
#define BWD_SCRATCH(Tq, Tk, dp, d) ((size_t)(Tq) * (dp) * 3 + (size_t)(Tk) * (dp) + (size_t)(d) * BK * 2 + (size_t)BK * (dp) * 2 + 2 * (size_t)(Tq) * BK + (Tq) + BK)

#endif
