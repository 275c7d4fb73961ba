/* qkt_gpt_eval on a bare model: loss equals the forward's cross-entropy, accuracy is the
 * argmax rate over counted positions, the attention statistics are those of the captured
 * maps, the context's mode is restored, and a batch with every target ignored gives NaN. */
#include <string.h>

#include "qkt_test.h"
#include "qkt_trainer.h"

int main(void) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 13, c.block_size = 8, c.n_layer = 2, c.n_head = 2, c.n_embd = 16, c.dropout = 0.5;
    qkt_gpt g;
    qkt_err err = {{0}};
    if (qkt_gpt_init(&g, &c, &err)) return fprintf(stderr, "qkt_gpt_init: %s\n", err.msg), 1;
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    qkt_gpt_init_weights(&g, &r);
    enum { B = 3, T = 8 };
    int32_t idx[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)qkt_rng_below(&r, 13), tgt[i] = i % 4 == 1 ? QKT_IGNORE : (int32_t)qkt_rng_below(&r, 13);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_attn_stats heads[2 * 2];
    qkt_eval ev = {.heads = heads};
    qkt_gpt_eval(&ctx, &g, idx, tgt, B, T, &ev);
    EXPECT(ctx.training && !ctx.no_grad, "the mode was not restored");
    EXPECT(ev.counted == B * T - B * T / 4, "counted %lld", (long long)ev.counted);

    /* The same by hand: an eval-mode forward, argmax per row, stats of the captured maps. */
    qkt_ctx_reset(&ctx);
    int prev = qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    qkt_attn_capture cap[2];
    memset(cap, 0, sizeof cap);
    qkt_gpt_opts o = {.capture = cap, .capture_probs = true, .capture_logits = true};
    qkt_tensor *logits;
    qkt_tensor *l = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, &logits, &o);
    qkt_ctx_set_mode(&ctx, prev);
    int correct = 0, n = 0;
    for (int i = 0; i < B * T; i++) {
        if (tgt[i] == QKT_IGNORE) continue;
        int best = 0;
        for (int v = 1; v < 13; v++)
            if (logits->data[(int64_t)i * 13 + v] > logits->data[(int64_t)i * 13 + best]) best = v;
        correct += best == tgt[i], n++;
    }
    EXPECT(ev.loss == (double)l->data[0], "loss %.9g, the forward's %.9g", ev.loss, (double)l->data[0]);
    EXPECT(fabs(ev.acc - (double)correct / n) < 1e-12, "accuracy %g, by hand %d / %d", ev.acc, correct, n);
    qkt_attn_stats want[2 * 2];
    for (int layer = 0; layer < 2; layer++) qkt_attn_stats_compute(cap[layer].probs, cap[layer].logits, B, 2, T, want + layer * 2);
    EXPECT(!memcmp(want, heads, sizeof want), "attention statistics differ from those of the captured maps");
    EXPECT(heads[3].entropy > 0 && heads[3].max_weight > 0 && heads[3].max_weight <= 1, "layer 1 head 1: entropy %g, max %g",
           heads[3].entropy, heads[3].max_weight);

    /* Every target ignored: nothing counted, NaN (not 0, which reads as a perfect loss). */
    for (int i = 0; i < B * T; i++) tgt[i] = QKT_IGNORE;
    qkt_eval none = {0};
    qkt_gpt_eval(&ctx, &g, idx, tgt, B, T, &none);
    EXPECT(none.counted == 0 && isnan(none.loss) && isnan(none.acc), "no target: loss %g, acc %g", none.loss, none.acc);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    return qkt_test_finish();
}
