/* The attention capture at huge logits (a diverging LR drives |q.k| to ~1e8): the
 * captured probabilities are a softmax of the captured logits, each in [0, 1], each
 * row summing to 1, the largest where the logit is largest; a fully blocked row is 0.
 * (The capture once normalised recomputed logits with the float32 kernel's row max,
 * which at this size differs from them by many units: "probabilities" of 1e20.) */
#include <math.h>
#include <stdlib.h>

#include "qkt_autograd.h"
#include "qkt_test.h"

int main(void) {
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
