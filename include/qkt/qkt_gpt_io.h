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
#include "qkt_optim.h"
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
 * state: names under "optim.", "rng.", "train."). Written atomically. A parameter holding
 * a NaN or Inf is an error naming it, nothing written (a load would refuse it). */
int qkt_gpt_save(const char *path, const qkt_gpt *g, const qkt_st_meta *meta, int n_meta, const qkt_st_write *extra,
                 int n_extra, qkt_err *err);

/* qkt_gpt_save of g with what the checkpoint `from` says about its tokens: the text
 * vocabulary (tensor "train.vocab") and the data spec (metadata "data"), when it has
 * them, so that a model derived from a trained one (qkt step --params-out) still
 * samples text. */
int qkt_gpt_save_tokens_of(const char *path, const qkt_gpt *g, const qkt_checkpoint *from, qkt_err *err);

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

/* ---------------------------------------------------------------- one step on a batch file (qkt step) */
/* A batch file: safetensors with 'idx' and 'targets', both (B, T), T <= c->block_size, of
 * any integer dtype (qkt_st_tensor_to_i32), idx in [0, vocab_size), targets in
 * [0, vocab_size) or -1 (ignored). *idx and *targets are malloc'd (free them); -1 with one
 * line naming the file, the tensor and the element. */
int qkt_gpt_batch_read(const char *path, const qkt_gpt_config *c, int32_t **idx, int32_t **targets, int *B, int *T,
                       qkt_err *err);
/* Zeroes g's grads, then the loss of g on (B, T) idx and targets (ctx's arena, its rng for
 * dropout) and its backward into the grads: d loss / d params, the loss the mean over the
 * *n_counted targets that are not -1 (none: loss 0 and zero grads). Returns the loss. */
qkt_real qkt_gpt_loss_grads(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *targets, int B, int T,
                            int *n_counted);
/* A gradient file: the scalar 'loss', then every parameter's grad under its name in
 * parameter order, with g's config and "n_counted" as metadata. Written atomically; a
 * non-finite loss or grad is refused (one line naming it) and nothing is written. */
int qkt_gpt_grads_write(const char *path, const qkt_gpt *g, qkt_real loss, int n_counted, qkt_err *err);
/* One optimizer step from fresh state on g's grads: clip the global grad norm to clip (0:
 * off), then one step of oc at lr (torch: clip_grad_norm_, then a new optimizer's step()).
 * Returns the pre-clip norm. */
double qkt_gpt_update_once(qkt_gpt *g, const qkt_optim_config *oc, double lr, double clip);

#ifdef __cplusplus
}
#endif
#endif
