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

/* A field's name in messages (qkt_train_field_label): "n_embd", or "--n-embd" for the CLI. */
#define L(name) label(name, lb, &nl)
/* The next of four buffers: a message names up to four fields (a function call, so the
 * buffers' turns are sequenced when several labels are arguments of one call). */
static const char *label(const char *name, char lb[4][64], int *nl) {
    return qkt_train_field_label(qkt_train_field_find(name), lb[(*nl)++ % 4], 64);
}
/* ... and bare, inside a phrase: "batch_size" or "batch-size". */
static const char *bare(const char *name) {
    const qkt_train_field *f = qkt_train_field_find(name);
    return qkt_get_names() == QKT_NAMES_FLAGS && f->flag ? f->flag : f->name;
}

/* Each field of the table against its bounds (in train.json's order), then the checks
 * between fields. */
int qkt__train_config_check(const qkt_train_config *c, qkt_err *err) {
    const qkt_gpt_config *m = &c->model;
    char lb[4][64];
    int nl = 0;
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        const void *p = qkt_train_field_ptr_tc(f, (qkt_train_config *)c);
        if (p && qkt_train_field_check(p, f, qkt_train_field_label(f, lb[0], 64), err)) return -1;
    }
    if (m->n_embd % m->n_head) BAD("%s %d is not divisible by %s %d", L("n_embd"), m->n_embd, L("n_head"), m->n_head);
    if (m->pos == QKT_POS_ROPE && (m->n_embd / m->n_head) % 2) /* rope turns pairs of a head's dimensions */
        BAD("%s rope needs an even d_k = %s / %s, got %d / %d = %d", L("pos"), L("n_embd"), L("n_head"), m->n_embd, m->n_head,
            m->n_embd / m->n_head);
    if ((int64_t)c->batch_size * m->block_size > QKT_TRAIN_MAX_BATCH_TOKENS)
        BAD("%s %d: expected a positive integer with %s x %s <= 2^28", L("batch_size"), c->batch_size, bare("batch_size"),
            bare("block_size"));
    if (c->replicas > c->batch_size)
        BAD("%s %d: expected an integer in [1, %d] and at most %s %d", L("replicas"), c->replicas, QKT_DP_MAX, L("batch_size"),
            c->batch_size);
    if (!(c->min_lr <= c->lr)) BAD("%s %g: expected a number in [0, %s %g]", L("min_lr"), c->min_lr, L("lr"), c->lr);
    if (c->warmup_steps > c->lr_decay_steps)
        BAD("%s %" PRId64 ": expected an integer in [0, %s %" PRId64 "]", L("warmup_steps"), c->warmup_steps, L("lr_decay_steps"),
            c->lr_decay_steps);
    return 0;
}

int qkt_train_config_validate(const qkt_train_config *c, qkt_err *err) {
    return qkt__train_config_check(c, err) ? qkt__err_call(err, "qkt_train_config_validate") : 0;
}
