/* Multi-head attention as one fused op (see qkt_attention in qkt_autograd.h), after
 * FlashAttention-2 (Dao 2023) on the CPU:
 *   forward:  per (b, h, query tile) a strip of scores against the keys the tile sees
 *             (under the causal mask, keys past the last row's limit are skipped), the
 *             bias and ALiBi terms added on the fly, an exact two-pass softmax and P V
 *             (strip_rows); the row max m and 1 / l (B, H, Tq each) are saved, and P itself
 *             where it is small (QKT_ATTN_KEEP_P_BYTES, ops_attention.h: short sequences);
 *   backward: per (b, h) and key tile, P read back or recomputed as exp(z - m) / l (the
 *             same floats).
 * q, k, v, y stay in the (B, T, H, d) layout; tiles are copied into small padded
 * buffers, and the tile products are the register-blocked kernels of kern_simd.h (the
 * threaded sgemm is never called from inside the parallel regions). Memory is linear
 * in Tq + Tk beyond a P of at most QKT_ATTN_KEEP_P_BYTES: m and 1/l plus per-thread
 * scratch of a few (T, d) slabs and one (BQ, Tk) and one (Tq, BK) strip; a bias is read
 * in place (the caller's (.., Tq, Tk) tensor), ALiBi computed from the slopes.
 * This file is the op (shapes, saved state, the split over threads, the capture path);
 * the per-head compute is in kern_attention.h, run through the kernel table (kern_table.h). */
#include "ops_attention.h"
#include "kern_simd.h"
#include "ops_internal.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Threads only when the op has work for them: B Tq Tk C (~ its flops) of at least 2^20,
 * some 10-20 us on one core. Below that a parallel region costs more than it saves
 * (and gradient checks call the op thousands of times on tiny shapes). */
static bool worth_threads(const qkt__attn *a) { return (double)a->B * a->Tq * a->Tk * a->C >= (double)(1 << 20); }

static int n_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static bool blocked(const qkt__attn *a, int b, int i, int j) {
    return (!a->full && j > i + a->off) || (a->key_pad && a->key_pad[(size_t)b * a->Tk + j]);
}

/* The slow path for callers that asked for P or the logits (B, H, Tq, Tk): each row's
 * logits recomputed (dot products in double) and normalised with that row's own max and
 * sum, so the captured P is exactly the softmax of the captured logits (rows sum to 1).
 * Not the kernel's saved m and 1/l: at huge logits (|z| ~ 1e8 after a diverging LR) the
 * float32 kernel's max and this recomputation differ by many units, and exp(z - m) with
 * the other's m gave "probabilities" of 1e20 (found as entropies of -7e25).
 * Per (b, h) the keys are copied once into a (d, Tk) double slab, so a row's dot
 * products run side by side over the keys; each still sums its d products in order from
 * 0. Each exp is taken once, and a logit of -inf (blocked) gives exactly 0 without it. */
/* Head (b, h) of the capture (its logits and probabilities). */
static void capture_head(const qkt__attn *a, const qkt_real *q, const qkt_real *k, qkt_attn_capture *cap, int b, int h) {
    int Tq = a->Tq, Tk = a->Tk, ld = a->ld, d = a->d, H = a->H;
    size_t qbase = (size_t)b * Tq * ld + (size_t)h * d, kbase = (size_t)b * Tk * ld + (size_t)h * d;
    size_t poff = ((size_t)b * H + h) * Tq * Tk;
    double *kt = qkt_malloc(((size_t)d + 2) * Tk * sizeof *kt), *dot = kt + (size_t)d * Tk, *zr = dot + Tk;
    for (int j = 0; j < Tk; j++)
        for (int c = 0; c < d; c++) kt[(size_t)c * Tk + j] = k[kbase + (size_t)j * ld + c];
    for (int i = 0; i < Tq; i++) {
        /* keys past the causal limit are blocked: no dot product for them */
        int jn = a->full ? Tk : i + a->off + 1 < 0 ? 0 : i + a->off + 1 < Tk ? i + a->off + 1 : Tk;
        const qkt_real *qi = q + qbase + (size_t)i * ld;
        for (int j = 0; j < jn; j++) dot[j] = 0;
        for (int c = 0; c < d; c++) {
            const double qc = qi[c], *kc = kt + (size_t)c * Tk;
#pragma omp simd
            for (int j = 0; j < jn; j++) dot[j] += qc * kc[j];
        }
        double mx = -INFINITY;
        for (int j = 0; j < Tk; j++) {
            qkt_real z = -INFINITY;
            if (!blocked(a, b, i, j)) {
                z = (qkt_real)(a->s[h] * dot[j]);
                if (a->bias) z += a->bias[(size_t)b * a->bias_bstride + ((size_t)h * Tq + i) * Tk + j];
                if (a->alibi) z -= a->alibi[h] * (qkt_real)abs(i + a->off - j);
            }
            zr[j] = z;
            if (z > mx) mx = z;
            if (cap->logits) cap->logits[poff + (size_t)i * Tk + j] = z;
        }
        if (!cap->probs) continue;
        qkt_real *pr = cap->probs + poff + (size_t)i * Tk;
        if (!(mx > -INFINITY)) { /* a row with every key blocked: zeros */
            for (int j = 0; j < Tk; j++) pr[j] = 0;
            continue;
        }
        double sum = 0;
        for (int j = 0; j < Tk; j++) {
            double e = zr[j] == -INFINITY ? 0 : exp(zr[j] - mx); /* exp(-inf - mx) is 0 */
            zr[j] = e;
            sum += e;
        }
        for (int j = 0; j < Tk; j++) pr[j] = (qkt_real)(zr[j] / sum);
    }
    free(kt);
}

static void capture(const qkt__attn *a, const qkt_real *q, const qkt_real *k, qkt_attn_capture *cap) {
    QKT_PAR_FOR_DYNAMIC(qkt_parallel_worth(worth_threads(a)), bh, (int64_t)a->B * a->H,
                        capture_head(a, q, k, cap, (int)(bh / a->H), (int)(bh % a->H)));
}

/* The bias's shape: (H, Tq, Tk), (1, H, Tq, Tk) or (B, H, Tq, Tk). */
static void check_bias(const qkt__attn *a, const qkt_tensor *bias) {
    const int *s = bias->shape;
    int n = bias->ndim;
    bool ok = (n == 3 || (n == 4 && (s[0] == 1 || s[0] == a->B))) && s[n - 3] == a->H && s[n - 2] == a->Tq && s[n - 1] == a->Tk;
    char sb[64];
    QKT_CHECK(ok, "attention: bias %s is not (H, Tq, Tk) = (%d, %d, %d), (1, H, Tq, Tk) or (B, H, Tq, Tk) with B = %d",
              qkt_shape_str(bias, sb, sizeof sb), a->H, a->Tq, a->Tk, a->B);
}

/* Chunk boundaries over the nqt query tiles, bounds[0 .. nch]: equal shares of the
 * cost, each tile's cost the keys it sees plus one tile's worth of fixed work (so
 * under the causal mask the late tiles, which see the most keys, get short chunks). */
static void chunk_bounds(const qkt__attn *a, int nqt, int nch, int *bounds) {
    double total = 0;
    for (int t = 0; t < nqt; t++) {
        int end = (t + 1) * BQ < a->Tq ? (t + 1) * BQ : a->Tq, keys = a->full ? a->Tk : end + a->off;
        total += (keys < 0 ? 0 : keys > a->Tk ? a->Tk : keys) + BQ;
    }
    double cum = 0;
    int c = 1;
    bounds[0] = 0;
    for (int t = 0; t < nqt && c < nch; t++) {
        int end = (t + 1) * BQ < a->Tq ? (t + 1) * BQ : a->Tq, keys = a->full ? a->Tk : end + a->off;
        cum += (keys < 0 ? 0 : keys > a->Tk ? a->Tk : keys) + BQ;
        while (c < nch && cum >= total * c / nch) bounds[c++] = t + 1;
    }
    while (c <= nch) bounds[c++] = nqt;
}

/* The op on q (B, Tq, C) and k, v (B, Tk, C) given as pointers with row stride ld (the
 * tensors are recorded by the callers below). */
/* Forward task t: chunk c of head bh's query tiles, from the last chunk down (under the
 * causal mask late query tiles see the most keys; the dynamic schedule takes them first). */
static void forward_task(const qkt__attn *a, const qkt__kern *kern, const qkt_real *qd, const qkt_real *kd,
                         const qkt_real *vd, qkt_real *yd, const int *bounds, int nch, int t, qkt_real *w) {
    int BH = a->B * a->H, c = nch - 1 - t / BH, bh = t % BH;
    if (bounds[c + 1] > bounds[c])
        kern->attn_forward_tiles(a, qd, kd, vd, bh / a->H, bh % a->H, bounds[c], bounds[c + 1], yd, w);
}

/* Backward task t: head t of each b in order (per_b = B, a bias shared by the batch), or
 * the one (b, h) = t. */
static void backward_task(const qkt__attn *a, const qkt__kern *kern, const qkt_real *qd, const qkt_real *kd,
                          const qkt_real *vd, const qkt_real *yd, const qkt_real *dy, qkt_real *dq, qkt_real *dk,
                          qkt_real *dv, bool store, int per_b, int t, double *dlog, qkt_real *w) {
    for (int u = 0; u < per_b; u++) {
        int bh = per_b > 1 ? u * a->H + t : t;
        dlog[bh] = kern->attn_backward_head(a, qd, kd, vd, yd, dy, dq, dk, dv, store, bh / a->H, bh % a->H, w);
    }
}

static qkt_tensor *attention(qkt_ctx *ctx, int B, int Tq, int Tk, const qkt_real *qd, const qkt_real *kd,
                             const qkt_real *vd, int ld, bool packed, int C, int n_head, const qkt_attn_opts *o,
                             qkt__attn **saved) {
    int H = n_head;
    QKT_CHECK(H > 0 && C % H == 0, "attention: %d channels do not split into %d heads", C, H);
    QKT_CHECK(Tq > 0 && Tk > 0, "attention: %d queries and %d keys (need at least one of each)", Tq, Tk);
    QKT_CHECK(!o->log_scale || o->log_scale->size == H, "attention: log_scale has %lld values for %d heads",
              (long long)(o->log_scale ? o->log_scale->size : 0), H);
    int d = C / H, dp = qkt__round_up(d, QKT_MK_PAD);
    qkt__attn *a = qkt_arena_alloc(&ctx->arena, sizeof *a);
    *a = (qkt__attn){.B = B, .Tq = Tq, .Tk = Tk, .C = C, .H = H, .d = d, .off = Tk - Tq, .ld = ld, .packed = packed,
                     .full = o->full};
    a->rmax = qkt_arena_alloc(&ctx->arena, (size_t)B * H * Tq * sizeof(qkt_real));
    a->rinv = qkt_arena_alloc(&ctx->arena, (size_t)B * H * Tq * sizeof(qkt_real));
    a->s = qkt_arena_alloc(&ctx->arena, (size_t)H * sizeof(qkt_real));
    for (int h = 0; h < H; h++) a->s[h] = (qkt_real)(o->scale * (o->log_scale ? exp(o->log_scale->data[h]) : 1.0));
    QKT_CHECK(o->dropout >= 0 && o->dropout < 1, "attention: dropout %g not in [0, 1)", o->dropout);
    if (o->dropout > 0 && ctx->training) {
        a->drop = true;
        a->drop_seed = qkt_rng_u64(&ctx->rng);
        a->drop_thr = (uint32_t)fmin(o->dropout * 4294967296.0, 4294967295.0);
        a->keep_scale = (qkt_real)(1.0 / (1.0 - o->dropout));
    }
    if (o->key_pad) {
        a->key_pad = qkt_arena_alloc(&ctx->arena, (size_t)B * Tk);
        memcpy(a->key_pad, o->key_pad, (size_t)B * Tk);
    }
    if (o->bias) {
        check_bias(a, o->bias);
        a->bias = o->bias->data;
        a->bias_bstride = o->bias->ndim == 4 && o->bias->shape[0] == B && B > 1 ? (size_t)H * Tq * Tk : 0;
    }
    if (o->alibi) {
        a->alibi = qkt_arena_alloc(&ctx->arena, (size_t)H * sizeof(qkt_real));
        memcpy(a->alibi, o->alibi, (size_t)H * sizeof(qkt_real));
        for (int h = 0; h < H; h++) QKT_CHECK(isfinite(a->alibi[h]), "attention: ALiBi slope %d is %g", h, (double)a->alibi[h]);
    }
    int Tkp = qkt__round_up(Tk, BK);
    size_t pbytes = (size_t)B * H * Tq * Tkp * sizeof(qkt_real);
    if (!ctx->no_grad && !a->drop && !o->recompute_p && pbytes <= QKT_ATTN_KEEP_P_BYTES) {
        a->P = qkt_arena_alloc(&ctx->arena, pbytes);
        a->ldp = (size_t)Tkp;
    }
    qkt_tensor *y = qkt__op_output(ctx, 3, (int[]){B, Tq, C});
    /* Tasks: (b, h, chunk of query tiles). One chunk per head when there are enough
     * heads to keep the threads busy (K, V copied once per head); otherwise each head
     * is cut into chunks of equal cost (chunk_bounds). Without a team (one thread, or
     * inside the replicas' region) the tasks run in a plain loop on the calling thread. */
    bool par = qkt_parallel_worth(worth_threads(a));
    int nqt = (Tq + BQ - 1) / BQ, nth = par ? n_threads() : 1;
    int nch = B * H >= 4 * nth ? 1 : (4 * nth + B * H - 1) / (B * H);
    if (nch > nqt) nch = nqt;
    int ntask = B * H * nch, *bounds = qkt_arena_alloc(&ctx->arena, (size_t)(nch + 1) * sizeof *bounds);
    chunk_bounds(a, nqt, nch, bounds);
    size_t wsz = FWD_SCRATCH(Tkp, dp, d);
    qkt_real *scratch = qkt_arena_alloc(&ctx->arena, (size_t)nth * wsz * sizeof(qkt_real));
    qkt_real *yd = y->data;
    const qkt__kern *kern = qkt__kern_get();
    bool team = par && ntask > 1;
    QKT_PAR_FOR_DYNAMIC(team, t, ntask, forward_task(a, kern, qd, kd, vd, yd, bounds, nch, (int)t,
                                                     scratch + (size_t)qkt__team_slot(team) * wsz));
    if (o->capture && (o->capture->probs || o->capture->logits)) capture(a, qd, kd, o->capture);
    *saved = a;
    return y;
}

qkt_tensor *qkt_attention(qkt_ctx *ctx, qkt_tensor *q, qkt_tensor *k, qkt_tensor *v, int n_head, const qkt_attn_opts *o) {
    QKT_LIVE_OPT(ctx, "attention", 3, q, k, v, o ? o->log_scale : NULL, o ? o->bias : NULL);
    QKT_CHECK(o, "attention: the options are NULL (a zeroed qkt_attn_opts plus .scale is causal self-attention)");
    QKT_CHECK_SHAPES(q->ndim == 3 && k->ndim == 3, "attention (q, k)", q, k);
    QKT_CHECK_SHAPES(q->shape[0] == k->shape[0] && q->shape[2] == k->shape[2], "attention (q, k)", q, k);
    QKT_CHECK_SHAPES(v->ndim == 3 && v->shape[0] == k->shape[0] && v->shape[1] == k->shape[1] && v->shape[2] == k->shape[2],
                     "attention (k, v)", k, v);
    int C = q->shape[2];
    qkt__attn *a;
    qkt_tensor *y = attention(ctx, q->shape[0], q->shape[1], k->shape[1], q->data, k->data, v->data, C, false, C, n_head, o, &a);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_ATTENTION, y, 5, (qkt_tensor *[]){q, k, v, o->log_scale, o->bias});
    if (n) n->saved = a;
    qkt_op_done(ctx, QKT_OP_ATTENTION, y);
    return y;
}

qkt_tensor *qkt_attention_qkv(qkt_ctx *ctx, qkt_tensor *qkv, int n_head, const qkt_attn_opts *o) {
    QKT_LIVE_OPT(ctx, "attention", 1, qkv, o ? o->log_scale : NULL, o ? o->bias : NULL);
    QKT_CHECK(o, "attention: the options are NULL (a zeroed qkt_attn_opts plus .scale is causal self-attention)");
    QKT_CHECK(qkv->ndim == 3 && qkv->shape[2] % 3 == 0, "attention_qkv: qkv must be (B, T, 3C), got %d dims, last %d",
              qkv->ndim, qkv->shape[qkv->ndim - 1]);
    int C = qkv->shape[2] / 3, B = qkv->shape[0], T = qkv->shape[1];
    qkt__attn *a;
    qkt_tensor *y = attention(ctx, B, T, T, qkv->data, qkv->data + C, qkv->data + 2 * C, 3 * C, true, C, n_head, o, &a);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_ATTENTION, y, 3, (qkt_tensor *[]){qkv, o->log_scale, o->bias});
    if (n) n->saved = a;
    qkt_op_done(ctx, QKT_OP_ATTENTION, y);
    return y;
}

void qkt__attention_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt__attn *a = n->saved;
    int B = a->B, H = a->H, C = a->C, dp = qkt__round_up(a->d, QKT_MK_PAD);
    /* dQ, dK, dV come out of one pass, so every one is produced; the grads of inputs
     * that do not require them go to pool buffers nobody reads. */
    const qkt_real *qd, *kd, *vd;
    qkt_real *dq, *dk, *dv;
    qkt_tensor *ls, *bias;
    bool store = false; /* the packed grad is new: every element gets stored once, no zeroing */
    if (a->packed) {
        qkt_tensor *qkv = n->in[0];
        qkt_real *g = qkt__grad_out(ctx, qkv, &store);
        qd = qkv->data, kd = qd + C, vd = qd + 2 * C;
        dq = g, dk = g + C, dv = g + 2 * C;
        ls = n->in[1], bias = n->in[2];
    } else {
        qd = n->in[0]->data, kd = n->in[1]->data, vd = n->in[2]->data;
        dq = qkt_grad(ctx, n->in[0]), dk = qkt_grad(ctx, n->in[1]), dv = qkt_grad(ctx, n->in[2]);
        ls = n->in[3], bias = n->in[4];
    }
    a->dbias = qkt__needs_grad(bias) ? qkt_grad(ctx, bias) : NULL;
    a->dlog = qkt__needs_grad(ls);
    double *dlog = qkt_arena_alloc(&ctx->arena, (size_t)B * H * sizeof(double));
    /* A bias shared by the batch sums its grad over b: then a task is one head, all b in
     * order (the same sum on any thread count); otherwise one (b, h). */
    int per_b = a->dbias && a->bias_bstride == 0 ? B : 1, ntask = B * H / per_b;
    bool team = qkt_parallel_worth(ntask > 1 && worth_threads(a));
    size_t wsz = BWD_SCRATCH(a->Tq, a->Tk, dp, a->d);
    qkt_real *scratch = qkt_arena_alloc(&ctx->arena, (size_t)(team ? n_threads() : 1) * wsz * sizeof(qkt_real));
    const qkt_real *yd = n->out->data, *dy = n->out->grad;
    const qkt__kern *kern = qkt__kern_get();
    QKT_PAR_FOR_DYNAMIC(team, t, ntask,
                        backward_task(a, kern, qd, kd, vd, yd, dy, dq, dk, dv, store, per_b, (int)t, dlog,
                                      scratch + (size_t)qkt__team_slot(team) * wsz));
    a->dbias = NULL;
    if (qkt__needs_grad(ls)) {
        qkt_real *g = qkt_grad(ctx, ls);
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int b = 0; b < B; b++) acc += dlog[b * H + h];
            g[h] += (qkt_real)acc;
        }
    }
}

void qkt_alibi_slopes(int n_head, qkt_real *out) {
    QKT_CHECK(n_head > 0, "alibi slopes: %d heads", n_head);
    int n = 1;
    while (2 * n <= n_head) n *= 2;
    for (int h = 0; h < n_head; h++) /* 2^(-8 (h + 1) / n), then the odd ones of 2n heads */
        out[h] = (qkt_real)(h < n ? exp2(-8.0 * (h + 1) / n) : exp2(-8.0 * (2 * (h - n) + 1) / (2 * n)));
}
