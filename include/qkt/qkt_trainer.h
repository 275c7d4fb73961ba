/* One training run of a GPT on a data source, shared by `qkt train` (qkt_session) and
 * the cells of `qkt ablate`. Owns the model, data, optimizer, schedule and step context. */
#ifndef QKT_TRAINER_H
#define QKT_TRAINER_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h"
#include "qkt_data.h"
#include "qkt_metrics.h"
#include "qkt_nn.h"
#include "qkt_optim.h"
#include "qkt_safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds of a training config: qkt_train_config_validate checks them, and the CLI's
 * flags take their ranges from them. */
#define QKT_TRAIN_MAX_N_LAYER 1024
#define QKT_TRAIN_MAX_N_HEAD 4096
#define QKT_TRAIN_MAX_N_EMBD 65536
#define QKT_TRAIN_MAX_BLOCK_SIZE 46340        /* floor(sqrt(INT_MAX)): T x T attention maps have int sizes */
#define QKT_TRAIN_MAX_BATCH_SIZE (1 << 20)
#define QKT_TRAIN_MAX_BATCH_TOKENS (1 << 28)  /* batch_size x block_size: one step's (B, T) arrays */
#define QKT_TRAIN_MAX_STEPS 2147483647        /* INT_MAX: a step count fits an int flag */
/* min_lr, warmup_steps and lr_decay_steps below this: derived by qkt_train_config_resolve. */
#define QKT_TRAIN_AUTO (-1)

typedef struct qkt_train_config {
    qkt_gpt_config model;       /* vocab_size is taken from the data source (without one: as set) */
    const char *data;           /* data spec: mqar, text:PATH, ...; NULL: the caller's batches (below) */
    int batch_size;
    int replicas;               /* data-parallel batch shards per step (qkt_dp): 1 = the plain step;
                                   results depend on it, not on the thread count */
    int64_t steps;
    double lr, min_lr, weight_decay, grad_clip, beta1, beta2; /* min_lr < 0: lr / 10 */
    int64_t warmup_steps;       /* < 0: min(100, lr_decay_steps / 10) */
    int64_t lr_decay_steps;     /* the cosine reaches min_lr at step lr_decay_steps - 1; < 0: steps */
    qkt_sched_kind schedule;
    qkt_optim_kind optim;
    uint64_t seed;              /* model init, data streams and dropout derive from it */
} qkt_train_config;

/* The defaults (those of `qkt train`): 4 layers, 4 heads, C 128, T 128, no dropout;
 * AdamW lr 1e-3, betas 0.9/0.95, wd 0.1, clip 1, warmup min(100, steps/10) then cosine
 * to lr/10 over the run's steps (all three QKT_TRAIN_AUTO), batch 32, 2000 steps, data mqar,
 * seed 1337. */
qkt_train_config qkt_train_config_default(void);
/* Replaces the QKT_TRAIN_AUTO fields by their values (min_lr = lr / 10, lr_decay_steps =
 * steps, warmup_steps = min(100, lr_decay_steps / 10)); a config without them is unchanged. */
void qkt_train_config_resolve(qkt_train_config *c);
/* Every check of a resolved config a user can fail (the data is checked when opened),
 * one line naming the call and the struct fields (qkt_set_names):
 * "qkt_train_config_validate: n_embd 50 is not divisible by n_head 3". */
int qkt_train_config_validate(const qkt_train_config *c, qkt_err *err);

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
    const volatile sig_atomic_t *stop; /* optional: non-zero ends a validation early (qkt_eval.interrupted) */
    int rank, ranks;    /* qkt_trainer_distribute: this process runs shard `rank` of `ranks` (MPI);
                           ranks 0 (or 1): the whole batch here, over cfg.replicas replicas */
    uint32_t data_crc;  /* CRC-32C of the text data (data_crc_known) */
    bool data_crc_known;
} qkt_trainer;

/* Resolves the QKT_TRAIN_AUTO fields (t->cfg holds the result), validates the config,
 * opens the data, builds and initialises the model. Without a data source (cfg.data
 * NULL) the caller fills t->idx and t->tgt, (B, T = model.block_size) tokens in
 * [0, model.vocab_size) (targets also -1: ignored), before each qkt_trainer_step;
 * eval, attention maps and checkpoints need a data source. */
int qkt_trainer_init(qkt_trainer *t, const qkt_train_config *c, qkt_err *err);
void qkt_trainer_free(qkt_trainer *t);
/* Data-parallel over the ranks of an MPI job (qkt_dist.h; a no-op with one rank): each
 * step, rank r of N runs replica r's shard of the batch and the grads are summed in
 * replica order, so the ranks keep identical state and the result has the bits of
 * cfg.replicas = N in one process. cfg.replicas must equal N (else -1 naming both).
 * Every rank then calls qkt_trainer_step together (it communicates). */
int qkt_trainer_distribute(qkt_trainer *t, qkt_err *err);
/* Every rank takes root's training state: parameters, optimizer state and step, the
 * data and dropout streams (after root restored a checkpoint). Collective. */
void qkt_trainer_share_state(qkt_trainer *t, int root);
/* One step: batch (from the data source, if any), forward, backward, clip, update
 * (skipped when not finite). */
void qkt_trainer_step(qkt_trainer *t, qkt_step_stats *st);
/* A step's first part, without the update: the batch drawn as qkt_trainer_step draws
 * it, forward, backward and clip. The model's grads hold the clipped gradient; the
 * parameters, the optimizer state and t->step stay. st->lr is the rate the update would
 * use. Collective like qkt_trainer_step under qkt_trainer_distribute. */
void qkt_trainer_grads(qkt_trainer *t, qkt_step_stats *st);

typedef struct qkt_eval {
    double loss, acc;            /* mean over batches (accuracy over answer positions) */
    bool interrupted;            /* *t->stop was set: loss and acc are partial, don't use them */
    qkt_attn_stats *heads;       /* optional out: n_layer * n_head stats on the first batch */
    int64_t counted;             /* positions counted (targets != QKT_IGNORE) */
} qkt_eval;
/* One evaluation batch on a bare model (no trainer): ctx is reset, the forward runs in
 * QKT_MODE_EVAL (no tape, no dropout; the mode is restored after) on idx / targets (B, T),
 * and ev gets the mean cross-entropy `loss` and the accuracy `acc` (argmax == target) over
 * the `counted` positions whose target is not QKT_IGNORE (NaN when none), and, when
 * ev->heads is non-NULL, n_layer * n_head attention statistics (layer-major,
 * qkt_attn_stats_compute). qkt_trainer_eval runs it on each batch. */
void qkt_gpt_eval(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *targets, int B, int T, qkt_eval *ev);
/* Validation: the same n_batches every call (the val stream is reset). Stops between
 * batches when *t->stop is set (ev->interrupted). */
void qkt_trainer_eval(qkt_trainer *t, int n_batches, int batch_size, qkt_eval *ev);
/* The same over the first n_seqs validation sequences, in batches of at most batch_size
 * (the last one shorter when batch_size does not divide n_seqs): the sequences, and so the
 * result, do not depend on batch_size. qkt_trainer_eval(t, n, B, ev) is n B sequences. */
void qkt_trainer_eval_seqs(qkt_trainer *t, int64_t n_seqs, int batch_size, qkt_eval *ev);
/* The names a trainer's checkpoint gives its training state (besides the model's
 * parameters and config, qkt_gpt_io.h): every reader and writer uses these. */
#define QKT_CKPT_OPTIM_M "optim.m"                 /* tensors */
#define QKT_CKPT_OPTIM_V "optim.v"
#define QKT_CKPT_OPTIM_STEP "optim.step"
#define QKT_CKPT_RNG_DATA_TRAIN "rng.data_train"
#define QKT_CKPT_RNG_DATA_VAL "rng.data_val"
#define QKT_CKPT_RNG_DROPOUT "rng.dropout"
#define QKT_CKPT_VOCAB "train.vocab"
#define QKT_CKPT_META_STEP "step"                  /* metadata */
#define QKT_CKPT_META_DATA "data"
#define QKT_CKPT_META_DATA_BYTES "data_bytes"
#define QKT_CKPT_META_DATA_CRC32C "data_crc32c"

/* Checkpoint of the full training state (qkt_gpt_save's file): parameters and config,
 * optim.m, optim.v, optim.step, rng.data_train, rng.data_val, rng.dropout (U64 x 4),
 * train.vocab (U8, text data only), metadata "step" and "data" (the canonical spec),
 * for text "data_bytes" and "data_crc32c" (the size and CRC-32C of the file's bytes),
 * plus up to 8 caller pairs. Written atomically, every tensor checksummed. */
int qkt_trainer_save(qkt_trainer *t, const char *path, const qkt_st_meta *meta, int n_meta, qkt_err *err);
/* Restore that state into a trainer built from the same config (qkt_trainer_init):
 * the model config, the data (spec, or the text vocabulary, size and checksum), every
 * tensor (shape, finite values), the step against the optimizer's step and the RNG
 * states (an all-zero xoshiro state never leaves zero) are checked first; afterwards qkt_trainer_step continues exactly where the saved run
 * was. On -1 (one line naming the file and the problem) drop the trainer. */
int qkt_trainer_restore(qkt_trainer *t, const qkt_checkpoint *ck, qkt_err *err);

/* Attention maps of every layer for row 0 of the first validation batch:
 * probs_all_layers (L, H, T, T). */
void qkt_trainer_attention_map(qkt_trainer *t, qkt_real *probs_all_layers);

/* ---------------------------------------------------------------- sampling (qkt sample) */
/* A trained model opened for generation: the model and the reader of its tokens. */
typedef struct qkt_sampler {
    qkt_gpt gpt;
    qkt_data *tokens;  /* text: the checkpoint's vocabulary (QKT_CKPT_VOCAB); a synthetic task:
                          reopened from QKT_CKPT_META_DATA; NULL: plain token ids */
    bool text;         /* tokens are a text vocabulary: token i is one byte (qkt_data_decode) */
    bool checksummed;  /* the file's tensors were verified against its checksums */
} qkt_sampler;
/* Opens a checkpoint (qkt_trainer_save's, or any GPT checkpoint) for generation: its
 * config, weights and token reader. -1 with one line naming the file and the problem. */
int qkt_sampler_open(qkt_sampler *s, const char *path, qkt_err *err);
void qkt_sampler_free(qkt_sampler *s);
/* out (n_prompt + n_new) = prompt, then n_new tokens drawn as qkt_gpt_generate draws them,
 * from a context and an RNG seeded with seed (o->on_token sees each new token). Returns the
 * tokens made: fewer than n_new when the model's logits turned non-finite (a diverged model). */
int qkt_sampler_generate(qkt_sampler *s, const int32_t *prompt, int n_prompt, int n_new, const qkt_sample_opts *o,
                         uint64_t seed, int32_t *out);

/* ---------------------------------------------------------------- benchmarking (qkt bench) */
/* The training step qkt bench times: qkt_train_config_default() without a data source (each
 * step a fresh batch of uniform random tokens, every target counted), no dropout, AdamW at a
 * constant lr 1e-3 with weight decay 0.1 and betas 0.9/0.999 (qkt_optim_defaults), no
 * clipping; the caller sets the sizes (model.*, batch_size) and replicas. */
qkt_train_config qkt_bench_config_default(void);
/* Analytic FLOPs of one training step (B = batch_size, T = block_size, V, C, L of the model):
 *   6 B T (12 L C^2 + V C)  +  6 B L T^2 C
 * matmul weights (2 flops per weight and token forward, 4 backward, the tied head included)
 * and causal attention (q k^T and P v over the T^2/2 visible pairs, times three). */
double qkt_train_step_flops(const qkt_train_config *c);

typedef struct qkt_bench_stats {
    double step_s;      /* median wall time of a timed step */
    double cpu_s;       /* median CPU time of the process per timed step (all threads) */
    double flops;       /* qkt_train_step_flops of the config */
    double peak_rss_mb; /* the process's peak resident memory after the steps */
} qkt_bench_stats;
/* Builds a trainer of c (its data must be NULL), runs warmup untimed then steps timed
 * qkt_trainer_step calls, each on fresh random tokens drawn outside the timer from an RNG
 * seeded with c->seed. -1 with one line if the config is refused or a step's loss or grad
 * norm is not finite. */
int qkt_bench_steps(const qkt_train_config *c, int warmup, int steps, qkt_bench_stats *st, qkt_err *err);

/* One matrix product of a training step as qkt_affine makes it (y = x W^T, dX = dY W,
 * dW += dY^T x), for qkt_bench_gemm_rate. */
typedef struct qkt_bench_product {
    const char *layer;  /* c_attn, attn.c_proj, c_fc, mlp.c_proj, lm_head */
    const char *op;     /* forward, dx, dw */
    bool ta, tb;        /* qkt_gemm's transposes */
    int M, N, K;
    qkt_real beta;      /* 1: accumulates (a bias or dW), 0: overwrites */
    int per_step;       /* how often one replica's step makes it (layers that have it) */
} qkt_bench_product;
#define QKT_BENCH_PRODUCTS 15 /* 5 linear layers x (forward, dx, dw) */
/* The linear layers' products of one replica's step of c, on its shard of the batch
 * (batch_size / replicas rows of T); 2 M N K per_step replicas summed over them is the
 * 6 B T (12 L C^2 + V C) of qkt_train_step_flops (for replicas dividing the batch). */
void qkt_bench_step_products(const qkt_train_config *c, qkt_bench_product out[QKT_BENCH_PRODUCTS]);
/* GFLOP/s of one qkt_gemm shape on the thread team as set, on seeded random matrices: the
 * best of `timings` timings, each of one call, or (batch_s > 0) of enough calls for about
 * batch_s seconds. An n x n product with beta 0 is the sgemm peak MFU is measured against. */
double qkt_bench_gemm_rate(bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s);
/* The same per CPU second of the process (all its threads) instead of per wall second: on
 * one thread, the core's rate while it ran, however loaded the machine (the study's peak,
 * qkt_ablate_efficiency). */
double qkt_bench_gemm_rate_cpu(bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s);

#ifdef __cplusplus
}
#endif
#endif
