/* One training run of a GPT on a data source: the loop shared by `qkt train` and the
 * cells of `qkt ablate`. Owns the model, data, optimizer, schedule and step context. */
#ifndef QKT_TRAINER_H
#define QKT_TRAINER_H
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h"
#include "qkt_data.h"
#include "qkt_metrics.h"
#include "qkt_nn.h"
#include "qkt_optim.h"
#include "qkt_safetensors.h"

typedef struct qkt_train_config {
    qkt_gpt_config model;       /* vocab_size is taken from the data source */
    const char *data;           /* data spec: mqar, text:PATH, ... */
    int batch_size;
    int replicas;               /* data-parallel batch shards per step (qkt_dp): 1 = the plain step;
                                   results depend on it, not on the thread count */
    int64_t steps;
    double lr, min_lr, weight_decay, grad_clip, beta1, beta2;
    int64_t warmup_steps;
    qkt_sched_kind schedule;
    qkt_optim_kind optim;
    uint64_t seed;              /* model init, data streams and dropout derive from it */
} qkt_train_config;

/* Defaults: a small model (2 layers, 4 heads, C 64, T 64), AdamW lr 1e-3, wd 0.1,
 * clip 1, warmup 20 then cosine to lr/10, batch 32, 500 steps, mqar, seed 1. */
qkt_train_config qkt_train_config_default(void);

typedef struct qkt_step_stats {
    double loss, lr, grad_norm;   /* pre-clip global norm */
    double grad_norm_wq, grad_norm_wk; /* over all layers' W_q / W_k row blocks of c_attn */
    bool finite;                  /* loss and grad norm finite (else no update was made) */
} qkt_step_stats;

typedef struct qkt_trainer {
    qkt_train_config cfg;
    qkt_gpt gpt;
    qkt_data *data;
    qkt_optim opt;
    qkt_schedule sched;
    qkt_ctx ctx;
    qkt_dp dp;          /* cfg.replicas replicas, ctx the first */
    int32_t *idx, *tgt; /* (B, T) */
    int64_t step;       /* steps done */
    int T;
} qkt_trainer;

/* Validates the config (one-line error naming the field), opens the data, builds and
 * initialises the model. */
int qkt_trainer_init(qkt_trainer *t, const qkt_train_config *c, qkt_err *err);
void qkt_trainer_free(qkt_trainer *t);
/* One step: batch, forward, backward, clip, update (skipped when not finite). */
void qkt_trainer_step(qkt_trainer *t, qkt_step_stats *st);

typedef struct qkt_eval {
    double loss, acc;            /* mean over batches (accuracy over answer positions) */
    qkt_attn_stats *heads;       /* optional out: n_layer * n_head stats on the first batch */
} qkt_eval;
/* Validation: the same n_batches every call (the val stream is reset). */
void qkt_trainer_eval(qkt_trainer *t, int n_batches, int batch_size, qkt_eval *ev);
/* Checkpoint of the full training state (qkt_gpt_save's file): parameters and config,
 * optim.m, optim.v, optim.step, rng.data_train, rng.data_val, rng.dropout (U64 x 4),
 * train.vocab (U8, text data only), metadata "step" and "data" (the canonical spec)
 * plus up to 8 caller pairs. Written atomically. */
int qkt_trainer_save(qkt_trainer *t, const char *path, const qkt_st_meta *meta, int n_meta, qkt_err *err);
/* Restore that state into a trainer built from the same config (qkt_trainer_init):
 * the model config, the data (spec, or the text vocabulary) and every tensor are
 * checked first; afterwards qkt_trainer_step continues exactly where the saved run
 * was. On -1 (one line naming the file and the problem) drop the trainer. */
int qkt_trainer_restore(qkt_trainer *t, const qkt_checkpoint *ck, qkt_err *err);

/* Attention maps of layer l for row 0 of the first validation batch: probs (H, T, T). */
void qkt_trainer_attention_map(qkt_trainer *t, qkt_real *probs_all_layers);

#endif
