/* qkt_eval_begin / qkt_eval_end and QKT_SHAPE from C:
 *   - a GPT with dropout 0.5 gives bit-identical logits on every forward inside the scope
 *     (dropout off), records no tape, and outside it (training) two forwards differ;
 *   - the previous mode comes back after the scope, for each of the four modes, and nested
 *     scopes restore their own;
 *   - ending with a mode that is none, or scopes ended out of order, is a usage error;
 *   - QKT_SHAPE(...) passes (ndim, shape): 1 to 4 dims, each argument evaluated once; 5 dims
 *     are refused by the call. */
#include <setjmp.h>
#include <string.h>

#include "qkt_nn.h"
#include "qkt_test.h"

#define EXPECT_REFUSED(want, stmt, what)                                                      \
    do {                                                                                      \
        qkt_test_fatal_msg[0] = 0;                                                                           \
        if (setjmp(qkt_test_fatal_jb) == 0) {                                                                \
            stmt;                                                                             \
            EXPECT(0, "returned instead of refusing: %s", what);                              \
        } else {                                                                              \
            EXPECT(strstr(qkt_test_fatal_msg, (want)) != NULL, "qkt_test_fatal_msg '%s': %s", qkt_test_fatal_msg, what);                   \
        }                                                                                     \
    } while (0)

static int mode_of(const qkt_ctx *ctx) {
    return (ctx->no_grad ? 0 : QKT_MODE_GRAD) | (ctx->training ? QKT_MODE_DROPOUT : 0);
}

enum { V = 11, B = 2, T = 8 };
/* The logits of one forward, copied out (they die at the next reset). */
static void logits_of(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *tgt, qkt_real *out, int *n_nodes) {
    qkt_ctx_reset(ctx);
    qkt_tensor *logits;
    qkt_gpt_forward(ctx, g, idx, tgt, B, T, &logits, NULL);
    memcpy(out, logits->data, sizeof(qkt_real) * B * T * V);
    *n_nodes = ctx->n_nodes;
}

static int counter;
static int next(int v) {
    counter++;
    return v;
}

int main(void) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = V, c.block_size = T, c.n_layer = 1, c.n_head = 2, c.n_embd = 16, c.dropout = 0.5;
    qkt_gpt g;
    qkt_err err = {{0}};
    if (qkt_gpt_init(&g, &c, &err)) return fprintf(stderr, "qkt_gpt_init: %s\n", err.msg), 1;
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    qkt_gpt_init_weights(&g, &r);
    int32_t idx[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)qkt_rng_below(&r, V), tgt[i] = (int32_t)qkt_rng_below(&r, V);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    static qkt_real a[B * T * V], b[B * T * V], e1[B * T * V], e2[B * T * V];
    int na, nb, n1, n2;

    /* Training: dropout draws differ between forwards. */
    logits_of(&ctx, &g, idx, tgt, a, &na);
    logits_of(&ctx, &g, idx, tgt, b, &nb);
    EXPECT(memcmp(a, b, sizeof a) != 0, "two training forwards with dropout 0.5 gave the same logits");
    EXPECT(na > 0, "a training forward recorded no tape");

    /* Eval scope: no dropout (identical logits), no tape, then training again. */
    int saved = qkt_eval_begin(&ctx);
    EXPECT(saved == QKT_MODE_TRAIN, "qkt_eval_begin returned %d, the mode before was TRAIN", saved);
    logits_of(&ctx, &g, idx, tgt, e1, &n1);
    logits_of(&ctx, &g, idx, tgt, e2, &n2);
    qkt_eval_end(&ctx, saved);
    EXPECT(memcmp(e1, e2, sizeof e1) == 0, "two forwards inside the eval scope differ (dropout active?)");
    EXPECT(n1 == 0 && n2 == 0, "forwards in the eval scope recorded %d and %d nodes", n1, n2);
    EXPECT(mode_of(&ctx) == QKT_MODE_TRAIN, "after the scope the mode is %d, not TRAIN", mode_of(&ctx));
    logits_of(&ctx, &g, idx, tgt, a, &na);
    EXPECT(memcmp(a, e1, sizeof a) != 0 && na > 0, "after the scope dropout and the tape are not back");

    /* Every mode comes back; nested scopes restore their own. */
    for (int m = QKT_MODE_EVAL; m <= QKT_MODE_TRAIN; m++) {
        qkt_ctx_set_mode(&ctx, m);
        int outer = qkt_eval_begin(&ctx);
        EXPECT(mode_of(&ctx) == QKT_MODE_EVAL, "inside the scope mode %d", mode_of(&ctx));
        int inner = qkt_eval_begin(&ctx);
        EXPECT(inner == QKT_MODE_EVAL, "the inner scope saved %d, not EVAL", inner);
        qkt_eval_end(&ctx, inner);
        EXPECT(mode_of(&ctx) == QKT_MODE_EVAL, "after the inner scope mode %d, not EVAL", mode_of(&ctx));
        qkt_eval_end(&ctx, outer);
        EXPECT(outer == m && mode_of(&ctx) == m, "mode %d: saved %d, restored %d", m, outer, mode_of(&ctx));
    }

    /* Misuse is a usage error naming the call. */
    qkt_set_fatal_handler(qkt_test_fatal_hook, NULL);
    qkt_ctx_set_mode(&ctx, QKT_MODE_TRAIN);
    saved = qkt_eval_begin(&ctx);
    EXPECT_REFUSED("qkt_eval_end: saved mode 7", qkt_eval_end(&ctx, 7), "a saved mode that is none");
    qkt_ctx_set_mode(&ctx, QKT_MODE_TRAIN);
    EXPECT_REFUSED("qkt_eval_end: the context is not in eval mode", qkt_eval_end(&ctx, saved),
                   "the mode changed inside the scope");
    int outer = qkt_eval_begin(&ctx), inner = qkt_eval_begin(&ctx);
    qkt_eval_end(&ctx, outer);
    EXPECT_REFUSED("nested scopes ended out of order", qkt_eval_end(&ctx, inner), "scopes ended out of order");
    qkt_set_fatal_handler(NULL, NULL);

    /* QKT_SHAPE: (ndim, shape) for 1 to 4 dims, arguments evaluated once. */
    qkt_ctx_reset(&ctx);
    int Bv = 3, Tv = 5;
    qkt_tensor *t1 = qkt_tensor_zeros(&ctx, QKT_SHAPE(7));
    qkt_tensor *t4 = qkt_tensor_new(&ctx, QKT_SHAPE(2, Bv, Tv, 4));
    EXPECT(t1->ndim == 1 && t1->shape[0] == 7 && t1->size == 7, "QKT_SHAPE(7): ndim %d size %lld", t1->ndim,
           (long long)t1->size);
    EXPECT(t4->ndim == 4 && t4->shape[0] == 2 && t4->shape[1] == 3 && t4->shape[2] == 5 && t4->shape[3] == 4,
           "QKT_SHAPE(2, B, T, 4): ndim %d", t4->ndim);
    qkt_tensor *t2 = qkt_reshape(&ctx, t4, QKT_SHAPE(next(Bv * 2), Tv * 4));
    EXPECT(t2->ndim == 2 && t2->shape[0] == 6 && t2->shape[1] == 20, "reshape to QKT_SHAPE(6, 20): ndim %d", t2->ndim);
    EXPECT(counter == 1, "QKT_SHAPE evaluated an argument %d times", counter);
    qkt_set_fatal_handler(qkt_test_fatal_hook, NULL);
    EXPECT_REFUSED("tensor with 5 dims", qkt_tensor_new(&ctx, QKT_SHAPE(1, 2, 3, 4, 5)), "a shape of 5 dims");
    qkt_set_fatal_handler(NULL, NULL);

    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    return qkt_test_finish();
}
