/* One attention capture array, zeroed once and reused over training steps (the natural
 * pattern): each step's forward points the entries at fresh buffers of that step, so the
 * captured probabilities are this step's and nothing writes into memory the step uses for
 * other tensors. Compared with a capture array zeroed before every step: the same losses,
 * the same parameter grads, the same probabilities. */
#include <stdlib.h>
#include <string.h>

#include "nn_fixtures.h"

#define STEPS 3

/* STEPS forward + backward steps with capture; reuse: the same array every step (else
 * zeroed before each). Writes each step's loss, grad sum of squares and probs[0][0 .. 63]. */
static void run(bool reuse, double *loss, double *g2, qkt_real probs[STEPS][64]) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    qkt_gpt g;
    make_gpt(&g, &c, 5);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 16, 1); /* small: the arena grows during the first step */
    int B = 2, T = 8;
    int32_t idx[16], tgt[16];
    for (int i = 0; i < 16; i++) idx[i] = (i * 7 + 3) % 11, tgt[i] = (i * 5 + 1) % 11;
    qkt_attn_capture cap[2];
    memset(cap, 0, sizeof cap);
    for (int s = 0; s < STEPS; s++) {
        qkt_ctx_reset(&ctx);
        if (!reuse) memset(cap, 0, sizeof cap);
        qkt_gpt_opts o = {.capture = cap, .capture_probs = true, .capture_logits = s % 2 == 1};
        idx[s] = (idx[s] + 1) % 11; /* each step its own data */
        qkt_tensor *l = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, &o);
        qkt_params_zero_grad(&g.params);
        qkt_backward(&ctx, l, NULL);
        loss[s] = l->data[0];
        g2[s] = 0;
        for (int64_t i = 0; i < g.params.size; i++) g2[s] += (double)g.params.grad[i] * g.params.grad[i];
        memcpy(probs[s], cap[0].probs, sizeof probs[s]);
        EXPECT(cap[0].probs_gen == ctx.gen, "step %d: the capture buffer is not of this step", s);
        for (int64_t i = 0; i < g.params.size; i++) g.params.data[i] -= (qkt_real)0.1 * g.params.grad[i];
    }
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

int main(void) {
    double la[STEPS], lb[STEPS], ga[STEPS], gb[STEPS];
    static qkt_real pa[STEPS][64], pb[STEPS][64];
    run(true, la, ga, pa);
    run(false, lb, gb, pb);
    for (int s = 0; s < STEPS; s++) {
        EXPECT(la[s] == lb[s], "step %d: loss %.9g with a reused capture, %.9g with a fresh one", s, la[s], lb[s]);
        EXPECT(ga[s] == gb[s], "step %d: |grad|^2 %.9g with a reused capture, %.9g with a fresh one", s, ga[s], gb[s]);
        EXPECT(!memcmp(pa[s], pb[s], sizeof pa[s]), "step %d: captured probabilities differ", s);
    }
    /* A caller's own buffer stays the caller's: filled every step, never replaced. */
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    qkt_gpt g;
    make_gpt(&g, &c, 5);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_real *mine = malloc(2 * 3 * 8 * 8 * sizeof *mine);
    qkt_attn_capture cap[2] = {{.probs = mine}, {0}};
    int32_t idx[16] = {0};
    for (int s = 0; s < 2; s++) {
        qkt_ctx_reset(&ctx);
        qkt_gpt_opts o = {.capture = cap, .capture_probs = true};
        qkt_gpt_forward(&ctx, &g, idx, NULL, 2, 8, NULL, &o);
        EXPECT(cap[0].probs == mine && cap[0].probs_gen == 0, "step %d: the caller's buffer was replaced", s);
        EXPECT(fabs(mine[0] - 1) < 1e-6, "step %d: query 0 sees only key 0: p = %g", s, (double)mine[0]);
    }
    free(mine);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    return qkt_test_finish();
}
