/* The fused attention in the float32 build: forward against a naive float64
 * reference (T = 45, 100, 130 and 300, ragged tiles, key padding with a fully blocked row),
 * backward against the reference's gradients, capture of probs and logits, results
 * independent of the thread count, and memory linear in T (no (T, T) kept per head). */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

typedef struct {
    int B, T, C, H;
    double scale;
    const double *ls; /* (H) log scales */
    const uint8_t *pad;
} cfg;

static bool blocked(const cfg *g, int b, int i, int j) { return j > i || (g->pad && g->pad[b * g->T + j]); }

/* Naive float64 attention: y, probs, logits and, for the seed dy, dq dk dv dls. */
static void reference(const cfg *g, const qkt_real *q, const qkt_real *k, const qkt_real *v, const qkt_real *dy, double *y,
                      double *P, double *Z, double *dq, double *dk, double *dv, double *dls) {
    int B = g->B, T = g->T, C = g->C, H = g->H, d = C / H;
    size_t n = (size_t)B * T * C;
    memset(y, 0, n * sizeof *y), memset(dq, 0, n * sizeof *dq), memset(dk, 0, n * sizeof *dk);
    memset(dv, 0, n * sizeof *dv), memset(dls, 0, (size_t)H * sizeof *dls);
    double *dz = malloc((size_t)T * sizeof *dz);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            double s = g->scale * exp(g->ls[h]);
            for (int i = 0; i < T; i++) {
                double *p = P + (((size_t)b * H + h) * T + i) * T, *z = Z + (((size_t)b * H + h) * T + i) * T;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    double dot = 0;
                    for (int c = 0; c < d; c++) dot += (double)q[((size_t)b * T + i) * C + h * d + c] * k[((size_t)b * T + j) * C + h * d + c];
                    z[j] = blocked(g, b, i, j) ? -INFINITY : s * dot;
                    if (z[j] > mx) mx = z[j];
                }
                for (int j = 0; j < T; j++) sum += p[j] = mx == -INFINITY || z[j] == -INFINITY ? 0 : exp(z[j] - mx);
                for (int j = 0; j < T; j++) p[j] = sum > 0 ? p[j] / sum : 0;
                /* y_i = sum_j p_j v_j; dp_j = dy_i . v_j; dz_j = p_j (dp_j - sum p dp) */
                double pdp = 0;
                for (int j = 0; j < T; j++) {
                    double dp = 0;
                    for (int c = 0; c < d; c++) {
                        size_t iy = ((size_t)b * T + i) * C + h * d + c, iv = ((size_t)b * T + j) * C + h * d + c;
                        y[iy] += p[j] * v[iv];
                        dp += (double)dy[iy] * v[iv];
                        dv[iv] += p[j] * dy[iy];
                    }
                    dz[j] = dp;
                    pdp += p[j] * dp;
                }
                for (int j = 0; j < T; j++) {
                    double gz = p[j] * (dz[j] - pdp);
                    if (gz == 0) continue;
                    dls[h] += gz * z[j];
                    for (int c = 0; c < d; c++) {
                        size_t iq = ((size_t)b * T + i) * C + h * d + c, ik = ((size_t)b * T + j) * C + h * d + c;
                        dq[iq] += s * gz * k[ik];
                        dk[ik] += s * gz * q[iq];
                    }
                }
            }
        }
    free(dz);
}

static double max_rel(const qkt_real *got, const double *want, size_t n) {
    double scale = 1e-3, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / scale;
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void check_config(int B, int T, int C, int H, bool pad) {
    cfg g = {B, T, C, H, 1.0 / sqrt(C / H), NULL, NULL};
    size_t n = (size_t)B * T * C, nn = (size_t)B * H * T * T;
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, T, C}, 0), *k = qkt_params_add(&p, "k", 3, (int[]){B, T, C}, 0);
    qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, T, C}, 0), *ls = qkt_params_add(&p, "ls", 1, (int[]){H}, 0);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, (uint64_t)T * 31 + H);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(1.5 * qkt_rng_normal(&r));
    double lsd[8];
    for (int h = 0; h < H; h++) lsd[h] = ls->data[h] = (qkt_real)(0.3 * qkt_rng_normal(&r));
    g.ls = lsd;
    uint8_t *mask = calloc((size_t)B * T, 1);
    for (int i = 0; i < B * T && pad; i++) mask[i] = i % T == 0 || i % 5 == 2 || (i % T >= 30 && i % T < 36);
    g.pad = pad ? mask : NULL;
    qkt_real *dy = malloc(n * sizeof *dy);
    for (size_t i = 0; i < n; i++) dy[i] = (qkt_real)qkt_rng_normal(&r);
    double *y = malloc(n * sizeof *y), *P = malloc(nn * sizeof *P), *Z = malloc(nn * sizeof *Z);
    double *dq = malloc(n * sizeof *dq), *dk = malloc(n * sizeof *dk), *dv = malloc(n * sizeof *dv), dls[8];
    reference(&g, q->data, k->data, v->data, dy, y, P, Z, dq, dk, dv, dls);

    qkt_real *probs = malloc(nn * sizeof *probs), *logits = malloc(nn * sizeof *logits), *y1 = malloc(n * sizeof *y1);
    for (int threads = 1; threads <= 2; threads++) {
        qkt_set_threads(threads);
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 1 << 20, 1);
        qkt_attn_capture cap = {probs, logits};
        qkt_attn_opts o = {.scale = g.scale, .log_scale = ls, .key_pad = g.pad, .capture = &cap};
        qkt_tensor *out = qkt_attention(&ctx, q, k, v, H, &o);
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, out, dy);
        char what[96];
        snprintf(what, sizeof what, "B=%d T=%d C=%d H=%d pad=%d threads=%d", B, T, C, H, pad, threads);
        EXPECT(max_rel(out->data, y, n) < 1e-5, "%s: y off by %.3g", what, max_rel(out->data, y, n));
        EXPECT(max_rel(probs, P, nn) < 1e-5, "%s: probs off by %.3g", what, max_rel(probs, P, nn));
        size_t bad = 0;
        for (size_t i = 0; i < nn; i++)
            bad += isinf(Z[i]) ? !(isinf(logits[i]) && logits[i] < 0) : fabs(logits[i] - Z[i]) > 1e-4 * (1 + fabs(Z[i]));
        EXPECT(bad == 0, "%s: %zu logits differ", what, bad);
        EXPECT(max_rel(q->grad, dq, n) < 1e-4, "%s: dq off by %.3g", what, max_rel(q->grad, dq, n));
        EXPECT(max_rel(k->grad, dk, n) < 1e-4, "%s: dk off by %.3g", what, max_rel(k->grad, dk, n));
        EXPECT(max_rel(v->grad, dv, n) < 1e-4, "%s: dv off by %.3g", what, max_rel(v->grad, dv, n));
        EXPECT(max_rel(ls->grad, dls, (size_t)H) < 1e-4, "%s: dlog_scale off by %.3g", what, max_rel(ls->grad, dls, (size_t)H));
        if (threads == 1) memcpy(y1, out->data, n * sizeof *y1);
        else EXPECT(memcmp(y1, out->data, n * sizeof *y1) == 0, "%s: y depends on the thread count", what);
        /* The packed entry point on [q | k v] gives the same y and grads. */
        qkt_real *gq = malloc(n * sizeof *gq);
        memcpy(gq, q->grad, n * sizeof *gq);
        qkt_tensor *qkv = qkt_tensor_new(&ctx, 3, (int[]){B, T, 3 * C});
        qkv->requires_grad = true;
        for (size_t r = 0; r < (size_t)B * T; r++) {
            memcpy(qkv->data + r * 3 * C, q->data + r * C, C * sizeof(qkt_real));
            memcpy(qkv->data + r * 3 * C + C, k->data + r * C, C * sizeof(qkt_real));
            memcpy(qkv->data + r * 3 * C + 2 * C, v->data + r * C, C * sizeof(qkt_real));
        }
        o.capture = NULL;
        qkt_tensor *out2 = qkt_attention_qkv(&ctx, qkv, H, &o);
        qkt_backward(&ctx, out2, dy);
        EXPECT(memcmp(out2->data, out->data, n * sizeof(qkt_real)) == 0, "%s: packed qkv gives another y", what);
        size_t bad_g = 0;
        for (size_t r = 0; r < (size_t)B * T; r++)
            for (int c = 0; c < C; c++) {
                bad_g += qkv->grad[r * 3 * C + c] != gq[r * C + c];
                bad_g += fabs(qkv->grad[r * 3 * C + 2 * C + c] - dv[r * C + c]) > 1e-4 * (1 + fabs(dv[r * C + c]));
            }
        EXPECT(bad_g == 0, "%s: packed qkv grads differ in %zu places", what, bad_g);
        free(gq);
        qkt_ctx_free(&ctx);
    }
    qkt_set_threads(0);
    free(probs), free(logits), free(y1), free(mask), free(dy), free(y), free(P), free(Z), free(dq), free(dk), free(dv);
    qkt_params_free(&p);
}

/* Arena and grad-pool bytes of one forward + backward, beyond the inputs and their
 * grads (so y, dy, lse and the kernels' scratch). */
static size_t attention_bytes(int T, int H) {
    int B = 1, C = 64;
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = qkt_tensor_zeros(&ctx, 3, (int[]){B, T, C});
        x[i]->requires_grad = true;
        qkt_grad(&ctx, x[i]);
    }
    size_t before = ctx.arena.used_total, grads_before = ctx.grads.live;
    qkt_tensor *y = qkt_attention(&ctx, x[0], x[1], x[2], H, &(qkt_attn_opts){.scale = 0.25});
    qkt_backward(&ctx, y, y->data);
    size_t used = ctx.arena.peak - before + ctx.grads.peak - grads_before;
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

int main(void) {
    qkt_test_isa_or_skip();
    check_dropout();
    check_config(2, 45, 24, 3, true);
    check_config(1, 100, 64, 2, false);
    check_config(2, 33, 6, 3, true); /* d = 2 */
    check_config(2, 130, 64, 4, true); /* big enough for the threaded path (B T^2 C >= 2^20) */
    check_config(1, 300, 16, 2, true); /* strips wider than 256 keys (the softmax sum in blocks) */
    /* Memory: doubling T at most doubles the op's arena use (plus a constant), and at
     * T = 1024 (4 heads, 2 threads' scratch) it is under a quarter of one (T, T) matrix
     * per head. */
    size_t m512 = attention_bytes(512, 4), m1024 = attention_bytes(1024, 4);
    printf("attention arena bytes: T=512 %zu, T=1024 %zu\n", m512, m1024);
    EXPECT(m1024 <= 2 * m512 + 65536, "memory grows faster than T: %zu -> %zu", m512, m1024);
    EXPECT(m1024 < (size_t)4 * 1024 * 1024 * sizeof(qkt_real) / 4, "T=1024 used %zu bytes", m1024);
    return qkt_test_finish();
}
