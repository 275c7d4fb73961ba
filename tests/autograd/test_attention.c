/* The fused attention in the float32 build: forward against a naive float64 reference
 * (T = 45, 100, 130 and 300, ragged tiles, key padding with fully blocked rows; the full
 * mask, an additive bias of each shape with its gradient, ALiBi, and cross-attention
 * with Tq < Tk and Tq > Tk), backward against the reference's gradients, capture of
 * probs and logits, fully blocked rows giving exactly 0, results independent of the
 * thread count and of keeping P or recomputing it (bit for bit, y and every grad, also
 * with NaN and infinite logits), memory linear in T when P is recomputed and P kept
 * only up to its cap, and shapes that do not fit refused with a message naming them. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

typedef struct {
    int B, Tq, Tk, C, H;
    bool full;   /* no causal mask */
    int bias;    /* 0 none; 3: (H, Tq, Tk); 1: (1, H, Tq, Tk); 4: (B, H, Tq, Tk) */
    bool alibi;  /* the standard slopes */
    int pad;     /* 0 none; 1 a pattern (key 0 of batch 0 blocked, a run across the tile edge); 2 also every key of the last batch row */
} cfg;

/* What the reference reads: the cfg plus the values behind it. */
typedef struct {
    const cfg *g;
    double scale;
    const double *ls;       /* (H) log scales */
    const uint8_t *pad;     /* (B, Tk) or NULL */
    const qkt_real *bias;   /* (.., H, Tq, Tk) or NULL */
    size_t bstride;         /* 0 when shared by the batch */
    const qkt_real *slopes; /* (H) or NULL */
} ref_in;

static bool blocked(const ref_in *r, int b, int i, int j) {
    return (!r->g->full && j > i + r->g->Tk - r->g->Tq) || (r->pad && r->pad[b * r->g->Tk + j]);
}

/* Naive float64 attention: y, probs, logits and, for the seed dy, dq dk dv dls dbias
 * (dbias: the bias's shape; summed over b when shared). */
static void reference(const ref_in *r, const qkt_real *q, const qkt_real *k, const qkt_real *v, const qkt_real *dy, double *y,
                      double *P, double *Z, double *dq, double *dk, double *dv, double *dls, double *dbias) {
    const cfg *g = r->g;
    int B = g->B, Tq = g->Tq, Tk = g->Tk, C = g->C, H = g->H, d = C / H;
    size_t nq = (size_t)B * Tq * C, nk = (size_t)B * Tk * C;
    memset(y, 0, nq * sizeof *y), memset(dq, 0, nq * sizeof *dq), memset(dk, 0, nk * sizeof *dk);
    memset(dv, 0, nk * sizeof *dv), memset(dls, 0, (size_t)H * sizeof *dls);
    if (dbias) memset(dbias, 0, (r->bstride ? (size_t)B : 1) * H * Tq * Tk * sizeof *dbias);
    double *dz = malloc((size_t)Tk * sizeof *dz);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            double s = r->scale * exp(r->ls[h]);
            for (int i = 0; i < Tq; i++) {
                size_t row = (((size_t)b * H + h) * Tq + i) * Tk, brow = (size_t)b * r->bstride + ((size_t)h * Tq + i) * Tk;
                double *p = P + row, *z = Z + row, mx = -INFINITY, sum = 0;
                for (int j = 0; j < Tk; j++) {
                    double dot = 0;
                    for (int c = 0; c < d; c++) dot += (double)q[((size_t)b * Tq + i) * C + h * d + c] * k[((size_t)b * Tk + j) * C + h * d + c];
                    z[j] = blocked(r, b, i, j) ? -INFINITY : s * dot;
                    if (r->bias) z[j] += r->bias[brow + j];
                    if (r->slopes) z[j] -= r->slopes[h] * fabs((double)(i + Tk - Tq - j));
                    if (z[j] > mx) mx = z[j];
                }
                for (int j = 0; j < Tk; j++) sum += p[j] = mx == -INFINITY || z[j] == -INFINITY ? 0 : exp(z[j] - mx);
                for (int j = 0; j < Tk; j++) p[j] = sum > 0 ? p[j] / sum : 0;
                /* y_i = sum_j p_j v_j; dp_j = dy_i . v_j; dz_j = p_j (dp_j - sum p dp) */
                double pdp = 0;
                for (int j = 0; j < Tk; j++) {
                    double dp = 0;
                    for (int c = 0; c < d; c++) {
                        size_t iy = ((size_t)b * Tq + i) * C + h * d + c, iv = ((size_t)b * Tk + j) * C + h * d + c;
                        y[iy] += p[j] * v[iv];
                        dp += (double)dy[iy] * v[iv];
                        dv[iv] += p[j] * dy[iy];
                    }
                    dz[j] = dp;
                    pdp += p[j] * dp;
                }
                for (int j = 0; j < Tk; j++) {
                    double gz = p[j] * (dz[j] - pdp);
                    if (gz == 0) continue;
                    if (dbias) dbias[brow + j] += gz;
                    double dot = 0;
                    for (int c = 0; c < d; c++) {
                        size_t iq = ((size_t)b * Tq + i) * C + h * d + c, ik = ((size_t)b * Tk + j) * C + h * d + c;
                        dot += (double)q[iq] * k[ik];
                        dq[iq] += s * gz * k[ik];
                        dk[ik] += s * gz * q[iq];
                    }
                    dls[h] += gz * s * dot;
                }
            }
        }
    free(dz);
}

static double max_rel(const qkt_real *qkt_test_fatal_msg, const double *want, size_t n) {
    double scale = 1e-3, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(qkt_test_fatal_msg[i] - want[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void check_config(cfg g) {
    int B = g.B, Tq = g.Tq, Tk = g.Tk, C = g.C, H = g.H;
    size_t nq = (size_t)B * Tq * C, nk = (size_t)B * Tk * C, nn = (size_t)B * H * Tq * Tk;
    int bnd = g.bias == 3 ? 3 : 4, bB = g.bias == 4 ? B : 1;
    size_t nb = (size_t)bB * H * Tq * Tk;
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, Tq, C}, 0), *k = qkt_params_add(&p, "k", 3, (int[]){B, Tk, C}, 0);
    qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, Tk, C}, 0), *ls = qkt_params_add(&p, "ls", 1, (int[]){H}, 0);
    qkt_tensor *bias = NULL;
    if (g.bias) bias = qkt_params_add(&p, "bias", bnd, bnd == 3 ? (int[]){H, Tq, Tk} : (int[]){bB, H, Tq, Tk}, 0);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, (uint64_t)Tq * 31 + Tk * 7 + H + g.full * 1000 + g.bias * 100);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(1.5 * qkt_rng_normal(&r));
    double lsd[8];
    for (int h = 0; h < H; h++) lsd[h] = ls->data[h] = (qkt_real)(0.3 * qkt_rng_normal(&r));
    for (size_t i = 0; bias && i < nb; i++) if (i % 11 == 4) bias->data[i] = -INFINITY; /* blocked entries */
    uint8_t *mask = calloc((size_t)B * Tk, 1);
    for (int i = 0; i < B * Tk && g.pad; i++)
        mask[i] = i == 0 || i % 5 == 2 || (i % Tk >= 30 && i % Tk < 36) || (g.pad == 2 && i >= (B - 1) * Tk);
    qkt_real slopes[8];
    qkt_alibi_slopes(H, slopes);
    ref_in ri = {&g, 1.0 / sqrt(C / H), lsd, g.pad ? mask : NULL, bias ? bias->data : NULL,
                 g.bias == 4 ? (size_t)H * Tq * Tk : 0, g.alibi ? slopes : NULL};
    qkt_real *dy = malloc(nq * sizeof *dy);
    for (size_t i = 0; i < nq; i++) dy[i] = (qkt_real)qkt_rng_normal(&r);
    double *y = malloc(nq * sizeof *y), *P = malloc(nn * sizeof *P), *Z = malloc(nn * sizeof *Z);
    double *dq = malloc(nq * sizeof *dq), *dk = malloc(nk * sizeof *dk), *dv = malloc(nk * sizeof *dv), dls[8];
    double *db = bias ? malloc(nb * sizeof *db) : NULL;
    reference(&ri, q->data, k->data, v->data, dy, y, P, Z, dq, dk, dv, dls, db);
    /* rows with every key blocked: y and dq exactly 0 */
    bool *dead = calloc((size_t)B * H * Tq, sizeof *dead);
    size_t n_dead = 0;
    for (size_t row = 0; row < (size_t)B * H * Tq; row++) {
        bool all = true;
        for (int j = 0; j < Tk && all; j++) all = isinf(Z[row * Tk + j]);
        n_dead += dead[row] = all;
    }

    qkt_real *probs = malloc(nn * sizeof *probs), *logits = malloc(nn * sizeof *logits), *y1 = malloc(nq * sizeof *y1);
    qkt_real *g1 = malloc((size_t)p.size * sizeof *g1);
    /* runs: 1 thread, 2 threads, then 1 thread with P recomputed in the backward (not kept) */
    for (int run = 0; run < 3; run++) {
        int threads = run == 1 ? 2 : 1;
        qkt_set_threads(threads);
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 1 << 20, 1);
        qkt_attn_capture cap = {.probs = probs, .logits = logits};
        qkt_attn_opts o = {.scale = ri.scale, .log_scale = ls, .key_pad = ri.pad, .capture = &cap, .full = g.full,
                           .bias = bias, .alibi = ri.slopes, .recompute_p = run == 2};
        qkt_tensor *out = qkt_attention(&ctx, q, k, v, H, &o);
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, out, dy);
        char what[160];
        snprintf(what, sizeof what, "B=%d Tq=%d Tk=%d C=%d H=%d full=%d bias=%d alibi=%d pad=%d threads=%d%s", B, Tq, Tk, C,
                 H, g.full, g.bias, g.alibi, g.pad, threads, run == 2 ? " recompute_p" : "");
        EXPECT(max_rel(out->data, y, nq) < 1e-5, "%s: y off by %.3g", what, max_rel(out->data, y, nq));
        EXPECT(max_rel(probs, P, nn) < 1e-5, "%s: probs off by %.3g", what, max_rel(probs, P, nn));
        size_t bad = 0;
        for (size_t i = 0; i < nn; i++)
            bad += isinf(Z[i]) ? !(isinf(logits[i]) && logits[i] < 0) : fabs(logits[i] - Z[i]) > 1e-4 * (1 + fabs(Z[i]));
        EXPECT(bad == 0, "%s: %zu logits differ", what, bad);
        EXPECT(max_rel(q->grad, dq, nq) < 1e-4, "%s: dq off by %.3g", what, max_rel(q->grad, dq, nq));
        EXPECT(max_rel(k->grad, dk, nk) < 1e-4, "%s: dk off by %.3g", what, max_rel(k->grad, dk, nk));
        EXPECT(max_rel(v->grad, dv, nk) < 1e-4, "%s: dv off by %.3g", what, max_rel(v->grad, dv, nk));
        EXPECT(max_rel(ls->grad, dls, (size_t)H) < 1e-4, "%s: dlog_scale off by %.3g", what, max_rel(ls->grad, dls, (size_t)H));
        if (bias) EXPECT(max_rel(bias->grad, db, nb) < 1e-4, "%s: dbias off by %.3g", what, max_rel(bias->grad, db, nb));
        size_t nonzero = 0;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < Tq; i++) {
                    if (!dead[((size_t)b * H + h) * Tq + i]) continue;
                    size_t at = ((size_t)b * Tq + i) * C + (size_t)h * (C / H);
                    for (int c = 0; c < C / H; c++) nonzero += out->data[at + c] != 0 || q->grad[at + c] != 0;
                }
        EXPECT(nonzero == 0, "%s: %zu values of y or dq in fully blocked rows are not 0", what, nonzero);
        if (run == 0) {
            memcpy(y1, out->data, nq * sizeof *y1);
            memcpy(g1, p.grad, (size_t)p.size * sizeof *g1);
        } else {
            const char *by = run == 1 ? "the thread count" : "recompute_p";
            EXPECT(memcmp(y1, out->data, nq * sizeof *y1) == 0, "%s: y depends on %s", what, by);
            EXPECT(memcmp(g1, p.grad, (size_t)p.size * sizeof *g1) == 0, "%s: the grads depend on %s", what, by);
        }
        if (run >= 1) printf("%s: ok, %zu fully blocked rows\n", what, n_dead);
        if (Tq != Tk) {
            qkt_ctx_free(&ctx);
            continue;
        }
        /* The packed entry point on [q | k v] gives the same y and grads. */
        qkt_real *gq = malloc(nq * sizeof *gq), *gb = bias ? malloc(nb * sizeof *gb) : NULL;
        memcpy(gq, q->grad, nq * sizeof *gq);
        if (bias) memcpy(gb, bias->grad, nb * sizeof *gb), memset(bias->grad, 0, nb * sizeof *gb);
        qkt_tensor *qkv = qkt_tensor_new(&ctx, 3, (int[]){B, Tq, 3 * C});
        qkv->requires_grad = true;
        for (size_t r = 0; r < (size_t)B * Tq; r++) {
            memcpy(qkv->data + r * 3 * C, q->data + r * C, C * sizeof(qkt_real));
            memcpy(qkv->data + r * 3 * C + C, k->data + r * C, C * sizeof(qkt_real));
            memcpy(qkv->data + r * 3 * C + 2 * C, v->data + r * C, C * sizeof(qkt_real));
        }
        o.capture = NULL;
        qkt_tensor *out2 = qkt_attention_qkv(&ctx, qkv, H, &o);
        qkt_backward(&ctx, out2, dy);
        EXPECT(memcmp(out2->data, out->data, nq * sizeof(qkt_real)) == 0, "%s: packed qkv gives another y", what);
        size_t bad_g = 0;
        for (size_t r = 0; r < (size_t)B * Tq; r++)
            for (int c = 0; c < C; c++) {
                bad_g += qkv->grad[r * 3 * C + c] != gq[r * C + c];
                bad_g += fabs(qkv->grad[r * 3 * C + 2 * C + c] - dv[r * C + c]) > 1e-4 * (1 + fabs(dv[r * C + c]));
            }
        for (size_t i = 0; bias && i < nb; i++) bad_g += bias->grad[i] != gb[i];
        EXPECT(bad_g == 0, "%s: packed qkv grads differ in %zu places", what, bad_g);
        free(gq), free(gb);
        qkt_ctx_free(&ctx);
    }
    qkt_set_threads(0);
    free(probs), free(logits), free(y1), free(g1), free(mask), free(dy), free(y), free(P), free(Z), free(dq), free(dk), free(dv);
    free(db), free(dead);
    qkt_params_free(&p);
}

/* Arena and grad-pool bytes of one forward + backward, beyond the inputs and their
 * grads (so y, dy, m, 1/l, the kernels' scratch and a kept P). `variant`: 0 causal self-attention;
 * 1 full mask with ALiBi, T queries against 2T keys (the ALiBi term is computed on the
 * fly: nothing (Tq, Tk) either). */
static size_t attention_bytes(int T, int H, int variant, bool recompute_p) {
    int B = 1, C = 64, Tk = variant ? 2 * T : T;
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = qkt_tensor_zeros(&ctx, 3, (int[]){B, i ? Tk : T, C});
        x[i]->requires_grad = true;
        qkt_grad(&ctx, x[i]);
    }
    qkt_real slopes[16];
    qkt_alibi_slopes(H, slopes);
    size_t before = qkt_ctx_mem(&ctx).arena_used, grads_before = qkt_ctx_mem(&ctx).grad_live;
    qkt_attn_opts o = {.scale = 0.25, .full = variant == 1, .alibi = variant ? slopes : NULL, .recompute_p = recompute_p};
    qkt_tensor *y = qkt_attention(&ctx, x[0], x[1], x[2], H, &o);
    qkt_backward(&ctx, y, y->data);
    size_t used = qkt_ctx_mem(&ctx).arena_peak - before + qkt_ctx_mem(&ctx).grad_peak - grads_before;
    qkt_ctx_free(&ctx);
    return used;
}

/* Dropout on P: with one-hot values (v_j = e_j, d >= T) y_i is row i of P' itself, so
 * every visible weight must be 0 or P_ij / (1 - p) (P from the eval run), about p of
 * them 0; the backward agrees with the reference run on the masked weights (dq, dk, dv
 * of y = P' v against a float64 computation with the mask read off y); the same seed
 * gives the same mask on 1 and 2 threads, another seed another mask; in eval mode
 * nothing is dropped. (test_gc_ops checks the gradient in float64.) */
static void check_dropout(void) {
    const int B = 8, T = 40, H = 2, d = 48, C = H * d;
    const double pdrop = 0.25;
    size_t n = (size_t)B * T * C;
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, T, C}, 0), *k = qkt_params_add(&p, "k", 3, (int[]){B, T, C}, 0);
    qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, T, C}, 0);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    for (size_t i = 0; i < n; i++) q->data[i] = (qkt_real)qkt_rng_normal(&r), k->data[i] = (qkt_real)qkt_rng_normal(&r);
    for (size_t i = 0; i < n; i++) v->data[i] = (qkt_real)(i % d == (i / C) % T); /* v[b, j, h, c] = [c == j] */
    qkt_real *yeval = malloc(n * sizeof *yeval), *y1 = malloc(n * sizeof *y1), *other = malloc(n * sizeof *other);
    for (int run = 0; run < 4; run++) { /* eval, training on 1 thread, on 2 threads, another seed */
        qkt_set_threads(run == 2 ? 2 : 1);
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 1 << 20, run == 3 ? 2 : 1);
        ctx.training = run > 0;
        qkt_tensor *y = qkt_attention(&ctx, q, k, v, H, &(qkt_attn_opts){.scale = 0.5, .dropout = pdrop});
        memcpy(run == 0 ? yeval : run == 1 ? y1 : other, y->data, n * sizeof *y1);
        if (run == 2) EXPECT(memcmp(y1, y->data, n * sizeof *y1) == 0, "dropout mask depends on the thread count");
        if (run == 1) {
            /* backward against float64 with the mask read off y */
            qkt_real *dy = malloc(n * sizeof *dy);
            for (size_t i = 0; i < n; i++) dy[i] = (qkt_real)qkt_rng_normal(&r);
            qkt_params_zero_grad(&p);
            qkt_backward(&ctx, y, dy);
            double *dq = calloc(n, sizeof *dq), *dk = calloc(n, sizeof *dk), *dv = calloc(n, sizeof *dv);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < T; i++) {
                        size_t row = ((size_t)b * T + i) * C + (size_t)h * d;
                        double P[64], dP[64], D = 0;
                        for (int j = 0; j <= i; j++) {
                            double keep = y1[row + j] == 0 ? 0 : 1 / (1 - pdrop), pp = yeval[row + j];
                            double dpp = dy[row + j]; /* dP'_ij = dy_i . v_j = dy[i, j] */
                            P[j] = pp, dP[j] = dpp * keep, D += pp * dP[j];
                            for (int c = 0; c < d; c++) dv[((size_t)b * T + j) * C + (size_t)h * d + c] += pp * keep * dy[row + c];
                        }
                        for (int j = 0; j <= i; j++) {
                            double gz = P[j] * (dP[j] - D) * 0.5; /* times the scale */
                            for (int c = 0; c < d; c++) {
                                dq[row + c] += gz * k->data[((size_t)b * T + j) * C + (size_t)h * d + c];
                                dk[((size_t)b * T + j) * C + (size_t)h * d + c] += gz * q->data[row + c];
                            }
                        }
                    }
            EXPECT(max_rel(q->grad, dq, n) < 1e-4, "dropout: dq off by %.3g", max_rel(q->grad, dq, n));
            EXPECT(max_rel(k->grad, dk, n) < 1e-4, "dropout: dk off by %.3g", max_rel(k->grad, dk, n));
            EXPECT(max_rel(v->grad, dv, n) < 1e-4, "dropout: dv off by %.3g", max_rel(v->grad, dv, n));
            free(dy), free(dq), free(dk), free(dv);
        }
        qkt_ctx_free(&ctx);
    }
    size_t visible = 0, dropped = 0, bad = 0, differ = 0, not_one = 0;
    for (size_t row = 0; row < n; row += d) { /* eval: every row of P sums to 1, nothing dropped */
        double sum = 0;
        for (int j = 0; j < d; j++) sum += yeval[row + j];
        not_one += fabs(sum - 1) > 1e-5;
    }
    EXPECT(not_one == 0, "eval mode: %zu rows of P do not sum to 1", not_one);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++) {
                    size_t at = ((size_t)b * T + i) * C + (size_t)h * d + j;
                    double want = yeval[at] / (1 - pdrop);
                    visible++;
                    dropped += y1[at] == 0;
                    bad += y1[at] != 0 && fabs(y1[at] - want) > 1e-6 * (1 + want);
                    differ += (y1[at] == 0) != (other[at] == 0);
                }
    double frac = (double)dropped / (double)visible;
    printf("attention dropout %.2f: %zu of %zu weights dropped (%.3f); another seed differs at %zu\n", pdrop, dropped, visible,
           frac, differ);
    EXPECT(bad == 0, "%zu kept weights are not P / (1 - p)", bad);
    EXPECT(fabs(frac - pdrop) < 0.02, "dropped fraction %.4f, expected %.2f", frac, pdrop);
    EXPECT(differ > visible / 5, "another seed changed only %zu of %zu mask entries", differ, visible);
    free(yeval), free(y1), free(other);
    qkt_params_free(&p);
}

/* P kept by the forward or recomputed by the backward: the same y and grads bit for bit
 * also where rows hold NaN or infinite logits (a NaN in q, an infinite k, whose rows'
 * sums are NaN), with a bias and ALiBi on the full mask and causal. */
static void check_keep_p_nonfinite(void) {
    const int B = 2, T = 40, H = 2, C = 32;
    size_t n = (size_t)B * T * C;
    for (int full = 0; full < 2; full++) {
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, T, C}, 0), *k = qkt_params_add(&p, "k", 3, (int[]){B, T, C}, 0);
        qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, T, C}, 0);
        qkt_tensor *bias = qkt_params_add(&p, "bias", 3, (int[]){H, T, T}, 0);
        qkt_params_finalize(&p);
        qkt_rng r;
        qkt_rng_seed(&r, 11);
        for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)qkt_rng_normal(&r);
        q->data[(size_t)5 * C + 3] = NAN;                  /* batch 0, query 5, head 0 */
        k->data[((size_t)T + 3) * C + C / 2 + 1] = INFINITY; /* batch 1, key 3, head 1 */
        qkt_real slopes[2], *dy = malloc(n * sizeof *dy), *y0 = malloc(n * sizeof *y0), *g0 = malloc((size_t)p.size * sizeof *g0);
        qkt_alibi_slopes(H, slopes);
        for (size_t i = 0; i < n; i++) dy[i] = (qkt_real)qkt_rng_normal(&r);
        size_t nan_y = 0, nan_g = 0;
        for (int recompute = 0; recompute < 2; recompute++) {
            qkt_set_threads(1);
            qkt_ctx ctx;
            qkt_ctx_init(&ctx, 1 << 20, 1);
            qkt_attn_opts o = {.scale = 0.3, .full = full, .bias = bias, .alibi = slopes, .recompute_p = recompute};
            qkt_tensor *y = qkt_attention(&ctx, q, k, v, H, &o);
            qkt_params_zero_grad(&p);
            qkt_backward(&ctx, y, dy);
            if (!recompute) {
                memcpy(y0, y->data, n * sizeof *y0), memcpy(g0, p.grad, (size_t)p.size * sizeof *g0);
                for (size_t i = 0; i < n; i++) nan_y += isnan(y->data[i]);
                for (int64_t i = 0; i < p.size; i++) nan_g += isnan(p.grad[i]);
            } else {
                EXPECT(memcmp(y0, y->data, n * sizeof *y0) == 0, "full=%d non-finite logits: y depends on recompute_p", full);
                size_t differ = 0;
                for (int64_t i = 0; i < p.size; i++) differ += memcmp(g0 + i, p.grad + i, sizeof *g0) != 0;
                EXPECT(differ == 0, "full=%d non-finite logits: %zu grads depend on recompute_p", full, differ);
            }
            qkt_ctx_free(&ctx);
        }
        EXPECT(nan_y > 0 && nan_g > 0, "full=%d: the planted NaN and inf reached no output (%zu NaN in y, %zu in the grads)",
               full, nan_y, nan_g);
        printf("non-finite logits, full=%d: %zu NaN in y, %zu in the grads, the same with P kept and recomputed\n", full,
               nan_y, nan_g);
        free(dy), free(y0), free(g0);
        qkt_params_free(&p);
    }
    qkt_set_threads(0);
}

/* Each call must end in the fatal handler with a message containing `want`. */
static void expect_refused(qkt_ctx *ctx, const char *want, qkt_tensor *q, qkt_tensor *k, qkt_tensor *v, int H,
                           const qkt_attn_opts *o) {
    qkt_test_fatal_msg[0] = 0;
    if (setjmp(qkt_test_fatal_jb) == 0) {
        qkt_attention(ctx, q, k, v, H, o);
        EXPECT(0, "not refused (wanted '%s')", want);
    } else {
        EXPECT(strstr(qkt_test_fatal_msg, want) != NULL, "qkt_test_fatal_msg '%s', wanted '%s'", qkt_test_fatal_msg, want);
    }
}
static void check_misuse(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *q = qkt_tensor_zeros(&ctx, 3, (int[]){2, 5, 8}), *k = qkt_tensor_zeros(&ctx, 3, (int[]){2, 7, 8});
    qkt_tensor *k6 = qkt_tensor_zeros(&ctx, 3, (int[]){2, 7, 6}), *k3 = qkt_tensor_zeros(&ctx, 3, (int[]){3, 7, 8});
    qkt_tensor *v5 = qkt_tensor_zeros(&ctx, 3, (int[]){2, 5, 8});
    qkt_tensor *b_tt = qkt_tensor_zeros(&ctx, 3, (int[]){2, 7, 5}), *b_b = qkt_tensor_zeros(&ctx, 4, (int[]){3, 2, 5, 7});
    qkt_tensor *b2 = qkt_tensor_zeros(&ctx, 2, (int[]){5, 7});
    qkt_set_fatal_handler(qkt_test_fatal_hook, NULL);
    qkt_attn_opts o = {.scale = 1};
    expect_refused(&ctx, "attention (q, k)", q, k6, k6, 2, &o);
    expect_refused(&ctx, "attention (q, k)", q, k3, k3, 2, &o);
    expect_refused(&ctx, "attention (k, v)", q, k, v5, 2, &o);
    expect_refused(&ctx, "8 channels do not split into 3 heads", q, k, k, 3, &o);
    o.bias = b_tt; /* (H, Tk, Tq): transposed */
    expect_refused(&ctx, "attention: bias (2, 7, 5) is not (H, Tq, Tk) = (2, 5, 7)", q, k, k, 2, &o);
    o.bias = b_b; /* a batch of 3 for B = 2 */
    expect_refused(&ctx, "attention: bias (3, 2, 5, 7) is not", q, k, k, 2, &o);
    o.bias = b2;
    expect_refused(&ctx, "attention: bias (5, 7) is not", q, k, k, 2, &o);
    qkt_real bad_slopes[2] = {0.5f, NAN};
    o = (qkt_attn_opts){.scale = 1, .alibi = bad_slopes};
    expect_refused(&ctx, "attention: ALiBi slope 1 is nan", q, k, k, 2, &o);
    qkt_set_fatal_handler(NULL, NULL);
    qkt_ctx_free(&ctx);
}

int main(void) {
    qkt_test_isa_or_skip();
    check_misuse();
    check_dropout();
    check_keep_p_nonfinite();
    /* B, Tq, Tk, C, H, full, bias, alibi, pad */
    check_config((cfg){2, 45, 45, 24, 3, false, 0, false, 1});
    check_config((cfg){1, 100, 100, 64, 2, false, 0, false, 0});
    check_config((cfg){2, 33, 33, 6, 3, false, 0, false, 1});    /* d = 2 */
    check_config((cfg){2, 130, 130, 64, 4, false, 0, false, 1}); /* big enough for the threaded path (B T^2 C >= 2^20) */
    check_config((cfg){1, 300, 300, 16, 2, false, 0, false, 1}); /* strips wider than 256 keys (the softmax sum in blocks) */
    check_config((cfg){2, 45, 45, 24, 3, true, 4, true, 2});     /* full mask, per-batch bias, ALiBi, a fully padded batch row */
    check_config((cfg){2, 70, 130, 64, 4, true, 3, false, 1});   /* cross-attention, full, shared bias (grad summed over b), threaded */
    check_config((cfg){2, 40, 100, 32, 2, false, 1, true, 1});   /* causal Tq < Tk: query i at position i + 60 */
    check_config((cfg){2, 100, 40, 32, 2, false, 4, false, 1});  /* causal Tq > Tk: the first 60 rows see no key */
    check_config((cfg){1, 300, 33, 16, 2, true, 0, true, 0});    /* many queries, few keys, ALiBi both sides of the diagonal */
    check_config((cfg){2, 130, 130, 64, 4, false, 3, true, 1});  /* everything on the threaded causal path */
    check_config((cfg){3, 1, 70, 16, 2, false, 3, true, 1});     /* one query (decoding): sees every key */
    /* Memory with recompute_p: doubling T at most doubles the op's arena use (plus a
     * constant), and at T = 1024 (4 heads, 2 threads' scratch) it is under a quarter of
     * one (T, T) matrix per head; also under the full mask with ALiBi against 2T keys. By
     * default P (B H Tq Tk reals) is kept only up to 8 MiB: in float32 at T = 512 (4 MiB;
     * 8 MiB against 2T keys) it is, at T = 1024 (16 MiB) not, so the default's T = 1024 use
     * is the recomputing one's (float64: kept only for T = 512 against T keys). */
    for (int variant = 0; variant < 2; variant++) {
        size_t m512 = attention_bytes(512, 4, variant, true), m1024 = attention_bytes(1024, 4, variant, true);
        size_t k512 = attention_bytes(512, 4, variant, false), k1024 = attention_bytes(1024, 4, variant, false);
        size_t pbytes = (size_t)4 * 512 * (variant ? 1024 : 512) * sizeof(qkt_real); /* float64: twice */
        if (pbytes <= (size_t)8 << 20)
            EXPECT(k512 >= m512 + pbytes, "variant %d: P not kept at T=512: %zu bytes, %zu recomputing", variant, k512, m512);
        else
            EXPECT(k512 == m512, "variant %d: P of %zu bytes kept at T=512: %zu bytes, %zu recomputing", variant, pbytes, k512, m512);
        EXPECT(k1024 == m1024, "variant %d: T=1024 kept something: %zu bytes, %zu recomputing", variant, k1024, m1024);
        printf("attention arena bytes (%s): T=512 %zu, T=1024 %zu\n", variant ? "full, ALiBi, Tk = 2T" : "causal", m512, m1024);
        EXPECT(m1024 <= 2 * m512 + 65536, "variant %d: memory grows faster than T: %zu -> %zu", variant, m512, m1024);
        EXPECT(m1024 < (size_t)4 * 1024 * 1024 * sizeof(qkt_real) / 4, "variant %d: T=1024 used %zu bytes", variant, m1024);
    }
    return qkt_test_finish();
}
