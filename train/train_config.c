/* The training config: its defaults, the "auto" fields, and its validator, all from the
 * field table (train_fields.def: one set of defaults and bounds, shared with train.json
 * and the CLI). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_train_fields.h"
#include "qkt_trainer.h"

qkt_train_config qkt_train_config_default(void) {
    qkt_train_config c;
    memset(&c, 0, sizeof c);
    c.model = qkt_gpt_config_default(); /* the fields the table does not list keep GPT-2's */
    qkt_train_fields_default(&c);
    c.data = "mqar";
    return c;
}

void qkt_train_config_resolve(qkt_train_config *c) {
    if (c->min_lr < 0) c->min_lr = c->lr / 10;
    if (c->lr_decay_steps < 0) c->lr_decay_steps = c->steps;
    if (c->warmup_steps < 0) c->warmup_steps = c->lr_decay_steps / 10 < 100 ? c->lr_decay_steps / 10 : 100;
}

#define BAD(...) return qkt_err_set(err, __VA_ARGS__)

/* A field's name in messages: its `qkt train` flag, else its JSON key. */
static const char *label(const qkt_train_field *f, char *buf, size_t n) {
    if (!f->flag) return f->name;
    snprintf(buf, n, "--%s", f->flag);
    return buf;
}

/* Each field of the table against its bounds (in train.json's order), then the checks
 * between fields. */
int qkt_train_config_validate(const qkt_train_config *c, qkt_err *err) {
    const qkt_gpt_config *m = &c->model;
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        const void *p = qkt_train_field_ptr_tc(f, (qkt_train_config *)c);
        char l[64];
        if (p && qkt_train_field_check(p, f, label(f, l, sizeof l), err)) return -1;
    }
    if (m->n_embd % m->n_head) BAD("--n-embd %d is not divisible by --n-head %d", m->n_embd, m->n_head);
    if (m->pos == QKT_POS_ROPE && (m->n_embd / m->n_head) % 2) /* rope turns pairs of a head's dimensions */
        BAD("--pos rope needs an even d_k = --n-embd / --n-head, got %d / %d = %d", m->n_embd, m->n_head, m->n_embd / m->n_head);
    if ((int64_t)c->batch_size * m->block_size > QKT_TRAIN_MAX_BATCH_TOKENS)
        BAD("--batch-size %d: expected a positive integer with batch-size x block-size <= 2^28", c->batch_size);
    if (c->replicas > c->batch_size)
        BAD("--replicas %d: expected an integer in [1, %d] and at most --batch-size %d", c->replicas, QKT_DP_MAX, c->batch_size);
    if (!(c->min_lr <= c->lr)) BAD("--min-lr %g: expected a number in [0, --lr %g]", c->min_lr, c->lr);
    if (c->warmup_steps > c->steps)
        BAD("--warmup-steps %" PRId64 ": expected an integer in [0, --steps %" PRId64 "]", c->warmup_steps, c->steps);
    if (c->warmup_steps > c->lr_decay_steps)
        BAD("--warmup-steps %" PRId64 ": expected an integer in [0, --lr-decay-steps %" PRId64 "]", c->warmup_steps,
            c->lr_decay_steps);
    return 0;
}
