/* Shared by the nn tests: a small GPT config and a model made from it with GPT-2 init. */
#ifndef QKT_NN_FIXTURES_H
#define QKT_NN_FIXTURES_H

#include <stdlib.h>

#include "qkt_nn.h"
#include "qkt_test.h"

/* V 11, block 8, 2 layers, 3 heads, C 12 (d_k 4), scale variant s. */
static inline qkt_gpt_config small_cfg(qkt_attn_scale s) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 11, c.block_size = 8, c.n_layer = 2, c.n_head = 3, c.n_embd = 12, c.attn_scale = s;
    return c;
}

/* qkt_gpt_init (a failure fails the test and exits) and qkt_gpt_init_weights from `seed`. */
static inline void make_gpt(qkt_gpt *g, const qkt_gpt_config *c, uint64_t seed) {
    qkt_err err = {{0}};
    int rc = qkt_gpt_init(g, c, &err);
    EXPECT(rc == 0, "qkt_gpt_init: %s", err.msg);
    if (rc) exit(1);
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    qkt_gpt_init_weights(g, &r);
}

#endif
