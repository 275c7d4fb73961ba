/* GPT checkpoints: the model's parameters (nanoGPT names, PyTorch layouts) in a
 * safetensors file whose __metadata__ holds the config as strings:
 *   vocab_size, block_size, n_layer, n_head, n_embd, attn_scale, attn_temp
 * (the identity of the model), plus bias, ln_eps, dropout, qk_init_mult, norm, mlp, pos
 * and (pos rope) rope_base (defaults true, 1e-5, 0, 1, layernorm, gelu, learned, 10000
 * when absent, so files written by other tools, and by qkt before the options, need only
 * the first seven). attn_scale is the variant's name ("power:0.75", a registered one).
 * Loading into a model of another config fails with one line naming the field. */
#ifndef QKT_GPT_IO_H
#define QKT_GPT_IO_H

#include "qkt_nn.h"
#include "qkt_safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QKT_GPT_META_N 24 /* the config keys (QKT_FIELD_META rows of train_fields.def, 15) + room for more */
typedef struct qkt_gpt_meta {
    qkt_st_meta kv[QKT_GPT_META_N];
    int n;
    char val[QKT_GPT_META_N][80];
} qkt_gpt_meta;
/* The config as metadata pairs (m->kv[0 .. m->n)); reals printed with %.17g (exact). */
void qkt_gpt_meta_fill(qkt_gpt_meta *m, const qkt_gpt_config *c);

/* Parameters + config metadata + the caller's metadata and extra tensors (training
 * state: names under "optim.", "rng.", "train."). Written atomically. */
int qkt_gpt_save(const char *path, const qkt_gpt *g, const qkt_st_meta *meta, int n_meta, const qkt_st_write *extra,
                 int n_extra, qkt_err *err);

/* The config stored in an opened checkpoint (validated); -1 + one line if a key is
 * missing or malformed. */
int qkt_gpt_config_from_checkpoint(const qkt_checkpoint *ck, qkt_gpt_config *cfg, qkt_err *err);
/* 0 if the checkpoint was saved for g's config (the seven identity keys, and bias and
 * ln_eps when present); else -1: "checkpoint F was saved for n_layer=4, this model has 2". */
int qkt_gpt_check_checkpoint(const qkt_checkpoint *ck, const qkt_gpt *g, qkt_err *err);

/* Config check, then the all-or-nothing restore of g's parameters and the given slots. */
int qkt_gpt_restore(const qkt_checkpoint *ck, qkt_gpt *g, const qkt_ckpt_slot *slots, int n_slots, qkt_err *err);
/* open + restore + close. */
int qkt_gpt_load(const char *path, qkt_gpt *g, const qkt_ckpt_slot *slots, int n_slots, qkt_err *err);
/* Build a model from the checkpoint's config and load its weights (g is initialised
 * here; on -1 it is left freed). */
int qkt_gpt_open(const char *path, qkt_gpt *g, qkt_err *err);

#ifdef __cplusplus
}
#endif
#endif
