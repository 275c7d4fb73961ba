/* qkt optim: SGD (momentum, Nesterov), Adam and AdamW over a qkt_params store,
 * global gradient-norm clipping, and learning-rate schedules.
 *
 * One training step:
 *     qkt_ctx_reset(ctx); loss = forward(...); qkt_params_zero_grad(p);
 *     qkt_backward(ctx, loss, NULL);
 *     double norm = qkt_clip_grad_norm(p, grad_clip);   // pre-clip norm, for the log
 *     qkt_optim_step(&opt, qkt_schedule_lr(&sched, step));
 *
 * The update formulas follow torch.optim (1.13, the single-tensor path used on
 * CPU) operation by operation, so a PyTorch cross-check agrees to float rounding;
 * docs/optim.md writes them out. Weight decay touches only tensors flagged
 * QKT_PARAM_DECAY in the store: by qkt convention (nanoGPT's) every tensor with
 * ndim >= 2 (matrices and embeddings) decays, 1-D tensors (biases, LayerNorm
 * gains, learned scales) do not; the layer that adds a parameter sets the flag.
 * Tensors flagged QKT_PARAM_BUFFER (persistent non-trained state) are never updated.
 */
#ifndef QKT_OPTIM_H
#define QKT_OPTIM_H

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- optimizers */
typedef enum { QKT_OPTIM_SGD = 0, QKT_OPTIM_ADAM = 1, QKT_OPTIM_ADAMW = 2 } qkt_optim_kind;

typedef struct qkt_optim_config {
    qkt_optim_kind kind;
    double beta1, beta2, eps; /* Adam, AdamW */
    double momentum;          /* SGD: 0 = plain SGD (no state) */
    double dampening;         /* SGD: buf = momentum * buf + (1 - dampening) * g */
    bool nesterov;            /* SGD: needs momentum > 0 and dampening == 0 */
    /* AdamW: decoupled, p *= 1 - lr * wd.  Adam, SGD: L2, g += wd * p.
     * Either way only on tensors flagged QKT_PARAM_DECAY. */
    double weight_decay;
} qkt_optim_config;

/* PyTorch's defaults: SGD momentum 0; Adam betas (0.9, 0.999), eps 1e-8, wd 0;
 * AdamW the same with wd 0.01. */
qkt_optim_config qkt_optim_defaults(qkt_optim_kind kind);

/* A maximal run of consecutive tensors in the store that share the decay flag:
 * elements [off, off + n) of params->data / grad / m / v. */
typedef struct qkt_optim_run {
    int64_t off, n;
    bool decay;
} qkt_optim_run;

/* The optimizer state is flat and parallel to params->data: element i of m and v
 * belongs to params->data[i], so a checkpoint saves m and v as two tensors of
 * params->size values plus `step`, and a data-parallel run needs nothing new. */
typedef struct qkt_optim {
    qkt_optim_config cfg;
    qkt_params *params; /* not owned; finalized before qkt_optim_init */
    int64_t size;       /* == params->size */
    qkt_real *m;        /* (size) Adam exp_avg, SGD momentum buffer; NULL if unused */
    qkt_real *v;        /* (size) Adam exp_avg_sq; NULL if unused */
    int64_t step;       /* steps taken; Adam's bias correction uses t = step after ++ */
    qkt_optim_run *runs;
    int n_runs;
    int n_decay_tensors; /* tensors flagged QKT_PARAM_DECAY, and their element count */
    int64_t n_decay;
} qkt_optim;

/* Allocates zeroed state (m, v as the kind needs) and the decay runs. Config
 * values out of range (betas outside [0, 1), eps <= 0, ...) are programmer errors. */
void qkt_optim_init(qkt_optim *o, qkt_params *p, const qkt_optim_config *cfg);
/* One update of every parameter from params->grad with learning rate lr. No malloc. */
void qkt_optim_step(qkt_optim *o, double lr);
/* After tensors were added to the store past finalize (qkt_params_add): grows m and v
 * to the new size (the new tensors' state starts at zero, as a fresh optimizer's; the
 * old tensors keep theirs) and rebuilds the runs. No-op when nothing was added. Adam's bias
 * correction keeps using `step`, shared by all tensors (not restarted for the new ones). */
void qkt_optim_sync(qkt_optim *o);
/* Zero m, v and step (a fresh optimizer on the same store). */
void qkt_optim_reset(qkt_optim *o);
void qkt_optim_free(qkt_optim *o);

/* "sgd", "adam", "adamw" <-> kind. parse returns 0, or -1 with a one-line message. */
const char *qkt_optim_kind_name(qkt_optim_kind kind);
int qkt_optim_kind_parse(const char *s, qkt_optim_kind *out, qkt_err *err);

/* ---------------------------------------------------------------- gradient norms */
/* sqrt(sum_i g_i^2) over n values, accumulated in double. Deterministic: the same
 * n and values give the same bits whatever the thread count. For a row block of a
 * fused weight, pass a pointer into it: W_q of c_attn (3C, C) is g + 0, n = C*C. */
double qkt_grad_norm_range(const qkt_real *g, int64_t n);
/* Global L2 norm over the whole grad store. */
double qkt_grad_norm(const qkt_params *p);
/* As torch.nn.utils.clip_grad_norm_: norm = global L2 norm of the grads;
 * coef = max_norm / (norm + 1e-6); if coef < 1 every grad is multiplied by coef.
 * Returns the pre-clip norm. max_norm <= 0 only measures. A non-finite norm leaves
 * the grads untouched (the caller decides whether to skip the step). */
double qkt_clip_grad_norm(qkt_params *p, double max_norm);

/* ---------------------------------------------------------------- schedules */
typedef enum { QKT_SCHED_CONSTANT = 0, QKT_SCHED_COSINE = 1 } qkt_sched_kind;

typedef struct qkt_schedule {
    qkt_sched_kind kind;
    double lr;             /* peak learning rate */
    double min_lr;         /* cosine floor */
    int64_t warmup_steps;  /* W >= 0 */
    int64_t total_steps;   /* T: the floor is reached at step T-1 (the trainer: lr_decay_steps) */
} qkt_schedule;

/* Learning rate at 0-based step s:
 *   s < W:  lr * (s + 1) / (W + 1)                         (linear warmup, both kinds)
 *   constant, s >= W:  lr
 *   cosine, s >= W:    D = T - 1 - W (decay steps), p = min(1, (s - W) / D)
 *                      min_lr + 0.5 (1 + cos(pi p)) (lr - min_lr)
 *                      (D <= 0: p = 0 at s == W, 1 after)
 * so the peak is reached at s = W and step s = T - 1 (a run's last unless lr_decay_steps is
 * set) runs at min_lr. */
double qkt_schedule_lr(const qkt_schedule *s, int64_t step);

/* "constant", "cosine" <-> kind. parse returns 0, or -1 with a one-line message. */
const char *qkt_sched_kind_name(qkt_sched_kind kind);
int qkt_sched_kind_parse(const char *s, qkt_sched_kind *out, qkt_err *err);

#ifdef __cplusplus
}
#endif
#endif
