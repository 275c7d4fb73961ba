/* The attention capture, bit for bit against plain loops (each logit's d products summed
 * in double from 0, the row's own max and sum), and at huge logits (a diverging LR drives |q.k| to ~1e8): the
 * captured probabilities are a softmax of the captured logits, each in [0, 1], each
 * row summing to 1, the largest where the logit is largest; a fully blocked row is 0.
 * (The capture once normalised recomputed logits with the float32 kernel's row max,
 * which at this size differs from them by many units: "probabilities" of 1e20.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_autograd.h"
#include "qkt_test.h"

/* The capture's definition as plain loops, one logit at a time. */
static void reference(const qkt_real *q, const qkt_real *k, int B, int Tq, int Tk, int H, int d, double scale,
                      bool full, const uint8_t *pad, const qkt_real *bias, const qkt_real *alibi, qkt_real *probs,
                      qkt_real *logits) {
    int C = H * d, off = Tk - Tq;
    double *zr = malloc((size_t)Tk * sizeof *zr);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                size_t row = (((size_t)b * H + h) * Tq + i) * Tk;
                double mx = -INFINITY;
                for (int j = 0; j < Tk; j++) {
                    qkt_real z = -INFINITY;
                    if ((full || j <= i + off) && !(pad && pad[(size_t)b * Tk + j])) {
                        double dot = 0;
                        for (int c = 0; c < d; c++)
                            dot += (double)q[((size_t)b * Tq + i) * C + h * d + c] *
                                   k[((size_t)b * Tk + j) * C + h * d + c];
                        z = (qkt_real)((qkt_real)scale * dot);
                        if (bias) z += bias[((size_t)h * Tq + i) * Tk + j];
                        if (alibi) z -= alibi[h] * (qkt_real)abs(i + off - j);
                    }
                    zr[j] = z, logits[row + j] = z;
                    if (z > mx) mx = z;
                }
                double sum = 0;
                if (mx > -INFINITY)
                    for (int j = 0; j < Tk; j++) sum += exp(zr[j] - mx);
                for (int j = 0; j < Tk; j++) probs[row + j] = mx > -INFINITY ? (qkt_real)(exp(zr[j] - mx) / sum) : 0;
            }
    free(zr);
}

/* Values that differ in bits (a NaN equals a NaN). */
static int differ(const qkt_real *a, const qkt_real *b, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i]));
    return bad;
}

/* Causal and full, self- and cross-attention (a query block at the end of a longer key
 * sequence), head widths 8 and 16, with a padded key, a shared bias holding -inf
 * entries, ALiBi, and one NaN in q. */
static void check_reference(void) {
    enum { B = 2, H = 2, MAXT = 40, MAXD = 16 };
    static qkt_real probs[B * H * MAXT * MAXT], logits[B * H * MAXT * MAXT], rp[B * H * MAXT * MAXT],
        rl[B * H * MAXT * MAXT];
    const int shapes[][3] = {{33, 33, 16}, {7, 40, 8}, {24, 24, 8}};
    qkt_real slopes[H];
    qkt_alibi_slopes(H, slopes);
    int cases = 0;
    for (int si = 0; si < 3; si++)
        for (int variant = 0; variant < 4; variant++)
            for (int full = 0; full < 2; full++) {
                int Tq = shapes[si][0], Tk = shapes[si][1], d = shapes[si][2], C = H * d;
                qkt_ctx ctx;
                qkt_ctx_init(&ctx, 1 << 20, 1);
                qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
                qkt_rng r;
                qkt_rng_seed(&r, (uint64_t)(100 + cases));
                qkt_tensor *q = qkt_tensor_3d(&ctx, B, Tq, C), *k = qkt_tensor_3d(&ctx, B, Tk, C),
                           *v = qkt_tensor_3d(&ctx, B, Tk, C);
                for (int i = 0; i < B * Tq * C; i++) q->data[i] = (qkt_real)(2 * qkt_rng_normal(&r));
                for (int i = 0; i < B * Tk * C; i++)
                    k->data[i] = (qkt_real)(2 * qkt_rng_normal(&r)), v->data[i] = (qkt_real)qkt_rng_normal(&r);
                uint8_t pad[B * MAXT] = {0};
                qkt_attn_opts o = {.scale = 0.25, .full = full};
                qkt_tensor *bias = NULL;
                if (variant == 1) pad[Tk + 3] = 1, o.key_pad = pad; /* batch row 1, key 3 */
                if (variant == 2) {
                    bias = qkt_tensor_new(&ctx, 3, (int[]){H, Tq, Tk});
                    for (int i = 0; i < H * Tq * Tk; i++)
                        bias->data[i] = i % 11 == 0 ? -INFINITY : (qkt_real)qkt_rng_normal(&r);
                    o.bias = bias, o.alibi = slopes;
                }
                if (variant == 3) q->data[(size_t)(Tq / 2) * C + 1] = NAN; /* row Tq/2 of head 0, batch row 0 */
                qkt_attn_capture cap = {.probs = probs, .logits = logits};
                o.capture = &cap;
                qkt_attention(&ctx, q, k, v, H, &o);
                reference(q->data, k->data, B, Tq, Tk, H, d, 0.25, full, o.key_pad, bias ? bias->data : NULL, o.alibi,
                          rp, rl);
                size_t n = (size_t)B * H * Tq * Tk;
                int dp = differ(probs, rp, n), dl = differ(logits, rl, n);
                EXPECT(dp == 0 && dl == 0,
                       "Tq %d Tk %d d %d variant %d full %d: %d probabilities and %d logits differ in bits", Tq, Tk, d,
                       variant, full, dp, dl);
                qkt_ctx_free(&ctx);
                cases++;
            }
    printf("capture against plain loops: %d cases, bit for bit\n", cases);
}

int main(void) {
    check_reference();
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    enum { B = 2, T = 24, H = 2, C = 32 };
    qkt_rng r;
    qkt_rng_seed(&r, 7);
    qkt_tensor *q = qkt_tensor_3d(&ctx, B, T, C), *k = qkt_tensor_3d(&ctx, B, T, C), *v = qkt_tensor_3d(&ctx, B, T, C);
    for (int i = 0; i < B * T * C; i++) {
        q->data[i] = (qkt_real)(3e3 * qkt_rng_normal(&r));
        k->data[i] = (qkt_real)(3e3 * qkt_rng_normal(&r));
        v->data[i] = (qkt_real)qkt_rng_normal(&r);
    }
    static qkt_real probs[B * H * T * T], logits[B * H * T * T];
    uint8_t pad[B * T] = {0};
    pad[T] = 1; /* row b = 1, key 0 blocked: query 0 of that row sees no key */
    for (int full = 0; full < 2; full++) {
        qkt_attn_capture cap = {.probs = probs, .logits = logits};
        qkt_attn_opts o = {.scale = 1, .full = full, .key_pad = pad, .capture = &cap};
        qkt_attention(&ctx, q, k, v, H, &o);
        double worst_sum = 0, max_logit = 0;
        int bad_range = 0, bad_arg = 0;
        for (int row = 0; row < B * H * T; row++) {
            const qkt_real *p = probs + (size_t)row * T, *z = logits + (size_t)row * T;
            double s = 0;
            int ap = 0, az = 0;
            for (int j = 0; j < T; j++) {
                if (!(p[j] >= 0 && p[j] <= 1)) bad_range++;
                s += p[j];
                if (p[j] > p[ap]) ap = j;
                if (z[j] > z[az]) az = j;
                if (isfinite(z[j]) && fabs(z[j]) > max_logit) max_logit = fabs(z[j]);
            }
            int b = row / (H * T), i = row % T;
            bool none = b == 1 && i == 0 && !full;
            if (none) {
                EXPECT(s == 0, "full %d: the row with every key blocked sums to %g, expected 0", full, s);
                continue;
            }
            if (fabs(s - 1) > worst_sum) worst_sum = fabs(s - 1);
            if (ap != az) bad_arg++;
        }
        printf("full %d: |logits| up to %.3g; worst |row sum - 1| %.2e\n", full, max_logit, worst_sum);
        EXPECT(max_logit > 1e7, "the logits should be huge (%.3g)", max_logit);
        EXPECT(bad_range == 0, "full %d: %d captured probabilities outside [0, 1]", full, bad_range);
        EXPECT(worst_sum < 1e-5, "full %d: a captured row sums to 1 %+.3g", full, worst_sum);
        EXPECT(bad_arg == 0, "full %d: %d rows whose largest probability is not at the largest logit", full, bad_arg);
    }
    qkt_ctx_free(&ctx);
    return qkt_test_finish();
}
