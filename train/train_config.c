/* The training config: its defaults, the "auto" fields, and its validator (one set of
 * bounds, QKT_TRAIN_MAX_* in qkt_trainer.h, shared with train.json and the CLI). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "qkt_trainer.h"

qkt_train_config qkt_train_config_default(void) {
    qkt_train_config c;
    memset(&c, 0, sizeof c);
    c.model = qkt_gpt_config_default(); /* dropout 0, bias, sqrt_dk, attn_temp 1, qk_init_mult 1, ln_eps 1e-5 */
    c.model.n_layer = 4;
    c.model.n_head = 4;
    c.model.n_embd = 128;
    c.model.block_size = 128;
    c.data = "mqar";
    c.batch_size = 32;
    c.replicas = 1;
    c.steps = 2000;
    c.lr = 1e-3;
    c.min_lr = QKT_TRAIN_AUTO;
    c.weight_decay = 0.1;
    c.grad_clip = 1.0;
    c.beta1 = 0.9;
    c.beta2 = 0.95;
    c.warmup_steps = QKT_TRAIN_AUTO;
    c.schedule = QKT_SCHED_COSINE;
    c.optim = QKT_OPTIM_ADAMW;
    c.seed = 1337;
    return c;
}

void qkt_train_config_resolve(qkt_train_config *c) {
    if (c->min_lr < 0) c->min_lr = c->lr / 10;
    if (c->warmup_steps < 0) c->warmup_steps = c->steps / 10 < 100 ? c->steps / 10 : 100;
}

#define BAD(...) return qkt_err_set(err, __VA_ARGS__)

/* Checks the model's sizes and the optimizer's numbers, in flag order. */
int qkt_train_config_validate(const qkt_train_config *c, qkt_err *err) {
    const qkt_gpt_config *m = &c->model;
    if (m->n_layer < 1 || m->n_layer > QKT_TRAIN_MAX_N_LAYER)
        BAD("--n-layer %d: expected an integer in [1, %d]", m->n_layer, QKT_TRAIN_MAX_N_LAYER);
    if (m->n_head < 1 || m->n_head > QKT_TRAIN_MAX_N_HEAD)
        BAD("--n-head %d: expected an integer in [1, %d]", m->n_head, QKT_TRAIN_MAX_N_HEAD);
    if (m->n_embd < 1 || m->n_embd > QKT_TRAIN_MAX_N_EMBD)
        BAD("--n-embd %d: expected an integer in [1, %d]", m->n_embd, QKT_TRAIN_MAX_N_EMBD);
    if (m->n_embd % m->n_head) BAD("--n-embd %d is not divisible by --n-head %d", m->n_embd, m->n_head);
    if (m->pos == QKT_POS_ROPE && (m->n_embd / m->n_head) % 2) /* rope turns pairs of a head's dimensions */
        BAD("--pos rope needs an even d_k = --n-embd / --n-head, got %d / %d = %d", m->n_embd, m->n_head, m->n_embd / m->n_head);
    if (m->block_size < 1 || m->block_size > QKT_TRAIN_MAX_BLOCK_SIZE)
        BAD("--block-size %d: expected an integer in [1, %d]", m->block_size, QKT_TRAIN_MAX_BLOCK_SIZE);
    if (c->batch_size < 1 || c->batch_size > QKT_TRAIN_MAX_BATCH_SIZE)
        BAD("--batch-size %d: expected an integer in [1, %d]", c->batch_size, QKT_TRAIN_MAX_BATCH_SIZE);
    if ((int64_t)c->batch_size * m->block_size > QKT_TRAIN_MAX_BATCH_TOKENS)
        BAD("--batch-size %d: expected a positive integer with batch-size x block-size <= 2^28", c->batch_size);
    if (c->replicas < 1 || c->replicas > QKT_DP_MAX || c->replicas > c->batch_size)
        BAD("--replicas %d: expected an integer in [1, %d] and at most --batch-size %d", c->replicas, QKT_DP_MAX, c->batch_size);
    if (!(m->ln_eps > 0 && m->ln_eps < 1)) BAD("ln_eps %g: expected a number in (0, 1)", m->ln_eps);
    if (c->steps < 1 || c->steps > QKT_TRAIN_MAX_STEPS)
        BAD("--steps %" PRId64 ": expected an integer in [1, %d]", c->steps, QKT_TRAIN_MAX_STEPS);
    if (!(c->lr > 0 && isfinite(c->lr))) BAD("--lr %g: expected a positive number", c->lr);
    if (!(c->min_lr >= 0 && c->min_lr <= c->lr)) BAD("--min-lr %g: expected a number in [0, --lr %g]", c->min_lr, c->lr);
    if (!(c->weight_decay >= 0 && isfinite(c->weight_decay))) BAD("--weight-decay %g: expected a number >= 0", c->weight_decay);
    if (!(c->beta1 >= 0 && c->beta1 < 1)) BAD("--beta1 %g: expected a number in [0, 1)", c->beta1);
    if (!(c->beta2 >= 0 && c->beta2 < 1)) BAD("--beta2 %g: expected a number in [0, 1)", c->beta2);
    if (c->warmup_steps < 0 || c->warmup_steps > c->steps)
        BAD("--warmup-steps %" PRId64 ": expected an integer in [0, --steps %" PRId64 "]", c->warmup_steps, c->steps);
    if (!(c->grad_clip >= 0 && isfinite(c->grad_clip))) BAD("--grad-clip %g: expected a number >= 0 (0 = off)", c->grad_clip);
    if (!qkt_attn_variant_get(m->attn_scale)) BAD("--attn-scale: unknown variant %d", (int)m->attn_scale);
    if (!(m->attn_temp > 0 && isfinite(m->attn_temp))) BAD("--attn-temp %g: expected a positive number", m->attn_temp);
    if (!(m->qk_init_mult >= 0 && isfinite(m->qk_init_mult))) BAD("--qk-init-mult %g: expected a number >= 0", m->qk_init_mult);
    if (!(m->dropout >= 0 && m->dropout < 1)) BAD("--dropout %g: expected a number in [0, 1)", m->dropout);
    if (c->schedule != QKT_SCHED_CONSTANT && c->schedule != QKT_SCHED_COSINE) BAD("--schedule: unknown kind %d", (int)c->schedule);
    if ((int)c->optim < QKT_OPTIM_SGD || c->optim > QKT_OPTIM_ADAMW) BAD("optim: unknown kind %d", (int)c->optim);
    return 0;
}
