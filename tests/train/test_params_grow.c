/* Tensors added to a model's store after finalize (a user's module on top of the GPT):
 * the optimizer told with qkt_optim_sync keeps the old tensors' Adam moments and starts
 * the new ones fresh, an AdamW step then updates both, and a checkpoint round-trips
 * the grown store into a model that adds the same tensors (and is refused by one that
 * does not). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_optim.h"
#include "qkt_test.h"

enum { B = 2, T = 6, P = 4 };

static void make(qkt_gpt *g) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 13, c.block_size = 8, c.n_layer = 2, c.n_head = 2, c.n_embd = 8, c.attn_scale = QKT_ATTN_SIGMA_REPARAM;
    qkt_err err = {{0}};
    if (qkt_gpt_init(g, &c, &err)) {
        fprintf(stderr, "init: %s\n", err.msg);
        exit(1);
    }
    qkt_rng r;
    qkt_rng_seed(&r, 11);
    qkt_gpt_init_weights(g, &r);
}

/* The user's module: a probe (P, C) + bias (P) on the final hidden states, added after finalize. */
static void add_probe(qkt_gpt *g, qkt_tensor **w, qkt_tensor **b) {
    *w = qkt_params_add(&g->params, "user.probe.weight", 2, (int[]){P, g->cfg.n_embd}, QKT_PARAM_DECAY);
    *b = qkt_params_add(&g->params, "user.probe.bias", 1, (int[]){P}, 0);
    for (int64_t i = 0; i < (*w)->size; i++) (*w)->data[i] = (qkt_real)(0.1 * sin((double)i));
}

static const int32_t idx[B * T] = {1, 4, 7, 10, 0, 3, 3, 9, 2, 5, 12, 6};
static const int32_t tgt[B * T] = {4, 7, 10, 0, 3, 3, 9, 2, 5, 12, 6, 1};

/* loss = LM loss + mean(probe(hidden)^2) (or the LM loss alone when w is NULL), backward, one AdamW step */
static double step(qkt_ctx *ctx, qkt_gpt *g, qkt_optim *o, qkt_tensor *w, qkt_tensor *b) {
    qkt_ctx_reset(ctx);
    qkt_tensor *loss = qkt_gpt_forward(ctx, g, idx, tgt, B, T, NULL, NULL);
    if (w) {
        qkt_tensor *h = qkt_gpt_hidden(ctx, g, idx, B, T, NULL), *y = qkt_affine(ctx, h, w, b);
        loss = qkt_add(ctx, loss, qkt_mean(ctx, qkt_mul(ctx, y, y)));
    }
    qkt_params_zero_grad(&g->params);
    qkt_backward(ctx, loss, NULL);
    qkt_optim_step(o, 1e-2);
    return loss->data[0];
}

int main(void) {
    qkt_set_threads(1);
    const char *dir = qkt_test_tmpdir("params_grow");
    qkt_gpt g;
    make(&g);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    oc.weight_decay = 0.1;
    qkt_optim o;
    qkt_optim_init(&o, &g.params, &oc);
    step(&ctx, &g, &o, NULL, NULL); /* moments of the model's own tensors are now nonzero */
    int64_t n0 = g.params.size;
    qkt_real *m0 = malloc((size_t)n0 * sizeof *m0), *v0 = malloc((size_t)n0 * sizeof *v0);
    memcpy(m0, o.m, (size_t)n0 * sizeof *m0);
    memcpy(v0, o.v, (size_t)n0 * sizeof *v0);

    qkt_tensor *w, *b;
    add_probe(&g, &w, &b);
    EXPECT(g.params.size == n0 + P * 8 + P && g.params.generation == 2, "grown store: %lld values, generation %d",
           (long long)g.params.size, g.params.generation);
    qkt_optim_sync(&o);
    EXPECT(o.size == g.params.size, "optimizer size %lld, store %lld", (long long)o.size, (long long)g.params.size);
    EXPECT(!memcmp(o.m, m0, (size_t)n0 * sizeof *m0) && !memcmp(o.v, v0, (size_t)n0 * sizeof *v0), "old moments changed");
    for (int64_t i = n0; i < o.size; i++) EXPECT(o.m[i] == 0 && o.v[i] == 0, "new moments not zero at %lld", (long long)i);
    EXPECT(o.n_decay_tensors == 2 * 2 + 2 + 1 /* wte wpe, per layer c_attn c_proj c_fc c_proj, probe */ + 2 * 2,
           "decay tensors %d", o.n_decay_tensors);

    qkt_real *before = malloc((size_t)g.params.size * sizeof *before);
    memcpy(before, g.params.data, (size_t)g.params.size * sizeof *before);
    double loss = step(&ctx, &g, &o, w, b);
    EXPECT(isfinite(loss), "loss %g", loss);
    /* The probe's first update: its moments start at zero, but Adam's bias correction uses the
     * optimizer's one step count (t = 2 here), so where |g| >> eps the update is
     * lr (1 - b1)/(1 - b1^2) / sqrt((1 - b2)/(1 - b2^2)), plus the decay lr wd |p| (< 1e-4). */
    const double want = 1e-2 * (0.1 / (1 - 0.81)) / sqrt(0.001 / (1 - 0.999 * 0.999));
    int moved = 0;
    for (int64_t i = 0; i < w->size; i++) {
        double d = fabs((double)w->data[i] - before[w->data - g.params.data + i]), gr = fabs((double)w->grad[i]);
        if (gr > 1e-4) moved += fabs(d - want) < 2e-4;
    }
    EXPECT(moved > w->size / 2, "probe weights moved by %.5f in %d of %lld", want, moved, (long long)w->size);
    EXPECT(memcmp(before, g.params.data, (size_t)n0 * sizeof *before), "the model's own tensors did not move");

    /* checkpoint round trip of the grown store (sigma_reparam's buffer u included) */
    const char *f = qkt_test_path(dir, "grown.safetensors");
    qkt_err err = {{0}};
    EXPECT(qkt_gpt_save(f, &g, NULL, 0, NULL, 0, &err) == 0, "save: %s", err.msg);
    qkt_gpt h;
    make(&h);
    qkt_tensor *w2, *b2;
    add_probe(&h, &w2, &b2);
    EXPECT(qkt_gpt_load(f, &h, NULL, 0, &err) == 0, "load: %s", err.msg);
    EXPECT(h.params.size == g.params.size && !memcmp(h.params.data, g.params.data, (size_t)g.params.size * sizeof(qkt_real)),
           "grown store did not round-trip");
    qkt_gpt plain;
    make(&plain);
    EXPECT(qkt_gpt_load(f, &plain, NULL, 0, &err) == -1 && strstr(err.msg, "user.probe"), "a model without the probe: %s", err.msg);

    qkt_gpt_free(&plain);
    qkt_gpt_free(&h);
    free(before), free(m0), free(v0);
    qkt_optim_free(&o);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    return qkt_test_finish();
}
