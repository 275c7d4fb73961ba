/* qkt_trainer_grads: a step without its update. The stats and the grads are those of
 * qkt_trainer_step on the same batch, bit for bit; the parameters, the optimizer state
 * and the step count stay; the data stream advances as a step's does; and a step after
 * it makes the update a plain step would make from the next batch. */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"
#include "qkt_trainer.h"

static qkt_train_config config(void) {
    qkt_train_config c = qkt_train_config_default();
    c.model.n_layer = 2, c.model.n_head = 2, c.model.n_embd = 16, c.model.block_size = 16;
    c.batch_size = 4, c.steps = 10, c.seed = 5, c.grad_clip = 0.5; /* the clip scales the grads */
    c.data = "mqar";
    return c;
}

static bool same_stats(const qkt_step_stats *a, const qkt_step_stats *b) {
    return !memcmp(&a->loss, &b->loss, sizeof a->loss) && !memcmp(&a->grad_norm, &b->grad_norm, sizeof a->grad_norm) &&
           !memcmp(&a->grad_norm_wq, &b->grad_norm_wq, sizeof a->grad_norm_wq) &&
           !memcmp(&a->grad_norm_wk, &b->grad_norm_wk, sizeof a->grad_norm_wk) &&
           !memcmp(&a->lr, &b->lr, sizeof a->lr) && a->finite == b->finite;
}

static bool all_zero(const qkt_real *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (x[i] != 0) return false;
    return true;
}

int main(void) {
    qkt_err err = {{0}};
    qkt_train_config c = config();
    qkt_trainer g, s;
    EXPECT(qkt_trainer_init(&g, &c, &err) == 0, "init: %s", err.msg);
    EXPECT(qkt_trainer_init(&s, &c, &err) == 0, "init: %s", err.msg);
    const int64_t n = g.gpt.params.size;
    const size_t bytes = (size_t)n * sizeof(qkt_real);
    qkt_real *w0 = malloc(bytes), *gs = malloc(bytes);
    memcpy(w0, g.gpt.params.data, bytes);

    /* the same batch, the same stats and grads; no update */
    qkt_step_stats sg, ss;
    qkt_trainer_grads(&g, &sg);
    qkt_trainer_step(&s, &ss);
    EXPECT(same_stats(&sg, &ss), "stats: loss %.9g vs %.9g, norm %.9g vs %.9g", sg.loss, ss.loss, sg.grad_norm,
           ss.grad_norm);
    EXPECT(sg.finite && sg.grad_norm > c.grad_clip, "the clip should act: norm %g", sg.grad_norm);
    EXPECT(!memcmp(g.gpt.params.grad, s.gpt.params.grad, bytes), "the grads differ from the step's");
    EXPECT(!memcmp(g.gpt.params.data, w0, bytes), "the parameters changed");
    EXPECT(memcmp(s.gpt.params.data, w0, bytes) != 0, "the step should have changed the parameters");
    EXPECT(g.step == 0 && s.step == 1, "step counts %lld and %lld", (long long)g.step, (long long)s.step);
    EXPECT(g.opt.step == 0 && all_zero(g.opt.m, n) && all_zero(g.opt.v, n), "the optimizer state moved");
    EXPECT(!all_zero(s.opt.m, n), "the step's optimizer state should have moved");
    memcpy(gs, g.gpt.params.grad, bytes);

    /* the data stream moved on: the next grads are of the next batch, the one s's second
     * step draws */
    qkt_step_stats sg2, ss2;
    qkt_trainer_grads(&g, &sg2);
    EXPECT(memcmp(gs, g.gpt.params.grad, bytes) != 0, "the second call saw the same batch");
    qkt_trainer_step(&s, &ss2);
    EXPECT(!memcmp(g.idx, s.idx, (size_t)c.batch_size * c.model.block_size * sizeof *g.idx),
           "the second batches differ");

    /* a step after grads: the update a plain step makes from that batch */
    qkt_trainer_free(&g);
    qkt_trainer_free(&s);
    EXPECT(qkt_trainer_init(&g, &c, &err) == 0, "init: %s", err.msg);
    EXPECT(qkt_trainer_init(&s, &c, &err) == 0, "init: %s", err.msg);
    qkt_trainer_grads(&g, &sg);
    qkt_trainer_step(&g, &sg2);
    qkt_data_batch(s.data, QKT_SPLIT_TRAIN, c.batch_size, s.idx, s.tgt, NULL); /* the batch g's grads took */
    qkt_trainer_step(&s, &ss);
    EXPECT(same_stats(&sg2, &ss), "step after grads: loss %.9g vs %.9g", sg2.loss, ss.loss);
    EXPECT(!memcmp(g.gpt.params.data, s.gpt.params.data, bytes), "step after grads: other parameters");
    EXPECT(g.step == 1 && s.step == 1, "step counts %lld and %lld", (long long)g.step, (long long)s.step);

    qkt_trainer_free(&g);
    qkt_trainer_free(&s);
    free(w0);
    free(gs);
    return qkt_test_finish();
}
