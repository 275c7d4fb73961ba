/* qkt nn: the layers of a GPT-2 style Transformer and the model itself.
 *
 * Every layer is a small struct of parameter pointers (into one qkt_params store)
 * with an `_add` that registers its parameters under nanoGPT's names and a
 * `_forward` that records autograd ops. Weights use PyTorch's Linear layout
 * (out, in), so a qkt checkpoint loads into nanoGPT's GPT and back unchanged.
 *
 * A training step:
 *     qkt_gpt g;  qkt_gpt_init(&g, &cfg, &err);          // registers, finalizes params
 *     qkt_rng r;  qkt_rng_seed(&r, seed);  qkt_gpt_init_weights(&g, &r);
 *     qkt_ctx_reset(ctx);
 *     qkt_tensor *loss = qkt_gpt_forward(ctx, &g, idx, targets, B, T, NULL, NULL);
 *     qkt_params_zero_grad(&g.params);  qkt_backward(ctx, loss, NULL);
 */
#ifndef QKT_NN_H
#define QKT_NN_H

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- config */
/* How attention scales q.k before the softmax (s below; d_k = n_embd / n_head). The
 * built-ins are the first ids of the variant registry (below); a program registers its
 * own, and each "power:ALPHA" named gets an id of its own, after them. */
typedef enum qkt_attn_scale {
    QKT_ATTN_SQRT_DK = 0,     /* "sqrt_dk":      s = 1/sqrt(d_k) (the standard) */
    QKT_ATTN_NONE,            /* "none":         s = 1 */
    QKT_ATTN_DK,              /* "dk":           s = 1/d_k (muP) */
    QKT_ATTN_SQRT_DMODEL,     /* "sqrt_dmodel":  s = 1/sqrt(n_embd) (the common mistake) */
    QKT_ATTN_LEARNED,         /* "learned":      s_h = exp(log_scale[h]), init 1/sqrt(d_k) */
    QKT_ATTN_QK_LAYERNORM,    /* "qk_layernorm": LayerNorm(d_k) on q and k, then 1/sqrt(d_k) */
    QKT_ATTN_COSINE,          /* "cosine":       q_h, k_h L2-normalised, s_h = exp(min(tau[h], log 100)),
                               *                 tau learned, init log 10 (Swin Transformer v2) */
    QKT_ATTN_SIGMA_REPARAM,   /* "sigma_reparam": every Linear of every block W -> gamma / sigma(W) W,
                               *                 gamma init sigma(W_0) (Zhai et al. 2023), then 1/sqrt(d_k) */
    QKT_ATTN_SIGMA_QK,        /* "sigma_qk":     W_q, W_k alone -> gamma / sigma(W) W, gamma init 1,
                               *                 then 1/sqrt(d_k) */
    QKT_ATTN_SCALE_COUNT      /* the built-in variants; "power:ALPHA" (s = d_k^-ALPHA) and registered
                               * variants have ids from here on */
} qkt_attn_scale;
/* The variant's name ("sqrt_dk", "power:0.75", a registered name) for a known id, "?" otherwise. */
const char *qkt_attn_scale_name(qkt_attn_scale s);
/* Name -> id; returns -1 (and a one-line message listing the names) if unknown. A
 * family's name with an argument ("power:0.75") makes (or finds) that variant's id. */
int qkt_attn_scale_parse(const char *name, qkt_attn_scale *out, qkt_err *err);
/* The scale s a variant applies to q.k at init, without attn_temp, for width n_embd and
 * key width d_k: 1/sqrt(d_k), 1, 1/d_k, 1/sqrt(n_embd), d_k^-ALPHA; learned: exp(log_scale)
 * at init = 1/sqrt(d_k); qk_layernorm, sigma_reparam and sigma_qk: 1/sqrt(d_k) (after the
 * LayerNorm, the reparametrisation); cosine: its temperature at init, 10 (on unit q, k); a
 * registered variant: its `scale` hook times its `init_scale` hook. */
double qkt_attn_scale_at_init(qkt_attn_scale kind, int n_embd, int d_k);

/* How W_q and W_k (the q and k row blocks of c_attn) are initialised. */
typedef enum qkt_qk_init {
    QKT_QK_INIT_GPT2 = 0, /* "gpt2": N(0, (init_std qk_init_mult)^2), like every other weight */
    QKT_QK_INIT_UNIT,     /* "unit": N(0, (qk_init_mult / sqrt(n_embd))^2): q and k components of unit
                           * variance at every width (LayerNorm'd inputs), so std(q.k) = sqrt(d_k) */
    QKT_QK_INIT_COUNT
} qkt_qk_init;
/* "gpt2", "unit" for a valid enum, "?" otherwise. */
const char *qkt_qk_init_name(qkt_qk_init k);
/* Name -> enum; -1 (and a one-line message listing the names) if unknown. */
int qkt_qk_init_parse(const char *name, qkt_qk_init *out, qkt_err *err);

/* Model options (docs/nn.md); each zero value is GPT-2's, so a zeroed field and an old
 * checkpoint without the key mean the original model. */
typedef enum qkt_norm_kind {
    QKT_NORM_LAYERNORM = 0, /* "layernorm": (x - mean) rstd w + b */
    QKT_NORM_RMSNORM,       /* "rmsnorm":   x rstd_rms w (no mean, no bias) */
    QKT_NORM_COUNT
} qkt_norm_kind;
typedef enum qkt_mlp_kind {
    QKT_MLP_GELU = 0, /* "gelu":   c_proj(gelu(c_fc(x))), C -> 4C -> C */
    QKT_MLP_SWIGLU,   /* "swiglu": c_proj(silu(a) * b), [a | b] = c_fc(x), C -> 2 x F -> F -> C,
                       *           F = qkt_swiglu_hidden(C) */
    QKT_MLP_COUNT
} qkt_mlp_kind;
typedef enum qkt_pos_kind {
    QKT_POS_LEARNED = 0, /* "learned": wpe (block_size, C) added to the token embeddings */
    QKT_POS_ROPE,        /* "rope":    rotary embeddings on q and k per head (no wpe) */
    QKT_POS_ALIBI,       /* "alibi":   per-head linear bias -m_h (i - j) on the logits (no wpe) */
    QKT_POS_NONE,        /* "none":    no position information but the causal mask (no wpe) */
    QKT_POS_COUNT
} qkt_pos_kind;
/* Names <-> enums, as the scale variants' ("?" for a bad enum; -1 and a one-line message
 * listing the names for an unknown name). */
const char *qkt_norm_name(qkt_norm_kind k);
const char *qkt_mlp_name(qkt_mlp_kind k);
const char *qkt_pos_name(qkt_pos_kind k);
int qkt_norm_parse(const char *name, qkt_norm_kind *out, qkt_err *err);
int qkt_mlp_parse(const char *name, qkt_mlp_kind *out, qkt_err *err);
int qkt_pos_parse(const char *name, qkt_pos_kind *out, qkt_err *err);
/* SwiGLU's hidden width F: 2/3 of the GELU MLP's 4C (so the three matrices hold about as
 * many weights as GELU's two), rounded up to a multiple of 8: 8C/3 -> 2048 at C 768. */
int qkt_swiglu_hidden(int n_embd);

typedef struct qkt_gpt_config {
    int vocab_size, block_size, n_layer, n_head, n_embd;
    double dropout;            /* on embeddings and on attention / MLP outputs; 0 = off */
    bool bias;                 /* biases in Linear and LayerNorm (nanoGPT's `bias`) */
    qkt_attn_scale attn_scale;
    double attn_temp;          /* fixed multiplier on the logits on top of any variant (1) */
    double qk_init_mult;       /* multiplier on the W_q and W_k init std (1) */
    double init_std;           /* std of the weight init; 0 = GPT-2's 0.02 (c_proj: init_std/sqrt(2 n_layer)) */
    qkt_qk_init qk_init;       /* W_q, W_k init rule (QKT_QK_INIT_GPT2); init only, not saved in checkpoints */
    double ln_eps;             /* LayerNorm / RMSNorm epsilon (1e-5, as PyTorch) */
    qkt_norm_kind norm;        /* ln_1, ln_2, ln_f (QKT_NORM_LAYERNORM) */
    qkt_mlp_kind mlp;          /* QKT_MLP_GELU */
    qkt_pos_kind pos;          /* QKT_POS_LEARNED; rope needs an even d_k */
    double rope_base;          /* RoPE's theta (0 = 10000) */
#ifdef QKT_TEST_EXTRA_FIELD
    double test_extra;         /* a test build's dummy option (train/train_fields.def) */
#endif
} qkt_gpt_config;
/* nanoGPT's GPT-2 small shape: V 50304, block 1024, 12 layers, 12 heads, C 768, no
 * dropout, biases on, sqrt_dk, temp 1, qk_init_mult 1, eps 1e-5. */
qkt_gpt_config qkt_gpt_config_default(void);
/* 0 if usable; else -1 with one line naming the field (e.g. "n_embd 50 is not divisible
 * by n_head 3"). */
int qkt_gpt_config_validate(const qkt_gpt_config *c, qkt_err *err);

/* ---------------------------------------------------------------- layers */
/* y = x W^T + b. W: (out, in) (PyTorch layout), b: (out) or NULL. x: (..., in).
 * With sigma_gamma set (qkt_linear_sigma_add), W is used as W_hat = gamma / sigma(W) W. */
typedef struct qkt_linear {
    qkt_tensor *weight, *bias;
    qkt_tensor *sigma_gamma, *sigma_u; /* (1) and the buffer (in): sigmaReparam, or NULL */
} qkt_linear;
/* Registers `<prefix>.weight` (out, in) with QKT_PARAM_DECAY and, if bias, `<prefix>.bias`. */
void qkt_linear_add(qkt_linear *l, qkt_params *p, const char *prefix, int in, int out, bool bias);
qkt_tensor *qkt_linear_forward(qkt_ctx *ctx, const qkt_linear *l, qkt_tensor *x);
/* r + qkt_linear_forward(x) bit for bit, in one node (qkt_affine_add): r of the output's shape. */
qkt_tensor *qkt_linear_forward_add(qkt_ctx *ctx, const qkt_linear *l, qkt_tensor *x, qkt_tensor *r);

/* Spectral reparametrisation (Zhai et al. 2023, sigmaReparam). For nb row blocks of
 * `rows` rows of w (out, in):  W_hat_m = gamma_m / sigma_m W_m,  sigma_m = ||W_m u_m|| (>= 1e-12),
 * u (nb, in) a fixed input (no gradient through u or v = W u / sigma: d sigma / dW = v u^T);
 * rows past the blocks are copied. gamma (nb) gets dL/dgamma_m = sum(G_m * W_m) / sigma_m. */
#define QKT_SIGMA_MAX_BLOCKS 4
qkt_tensor *qkt_sigma_reparam(qkt_ctx *ctx, qkt_tensor *w, qkt_tensor *gamma, const qkt_tensor *u, int nb, int rows);
/* One power iteration on W (rows, cols) from the unit vector u (cols), in place (in double):
 * u <- normalise(W^T normalise(W u)); returns ||W u|| of the u it started from. A zero W u leaves u. */
double qkt_sigma_power_step(const qkt_real *W, int rows, int cols, qkt_real *u);
/* sigma = ||W u|| (>= 1e-12), as qkt_sigma_reparam computes it. */
double qkt_sigma_of(const qkt_real *W, int rows, int cols, const qkt_real *u);
/* u (cols) = a random unit vector from r, then `iters` power iterations on W, or (iters 0)
 * iterations until sigma's estimate moves by less than 1e-9 of itself (at most 2000). */
void qkt_sigma_init_u(const qkt_real *W, int rows, int cols, qkt_real *u, int iters, qkt_rng *r);
/* Makes l a sigmaReparam Linear: registers `<prefix>.sigma_u` (in), a QKT_PARAM_BUFFER, then
 * `<prefix>.sigma_gamma` (1), trained, not decayed (after l->weight: it reads its shape). */
void qkt_linear_sigma_add(qkt_linear *l, qkt_params *p, const char *prefix);
/* Init of l's tensor t (its sigma_u or sigma_gamma), l->weight already initialised: u to
 * convergence from a random unit vector drawn from r; gamma = sigma(W_0) from that u, so
 * W_hat = W at init (to float rounding). */
void qkt_linear_sigma_init(const qkt_linear *l, const qkt_tensor *t, qkt_rng *r);
/* One power iteration on l's u (nothing for a plain Linear). */
void qkt_linear_advance(const qkt_linear *l);
/* The weight the forward uses: l->weight, or W_hat (a recorded op) for a sigmaReparam Linear. */
qkt_tensor *qkt_linear_weight(qkt_ctx *ctx, const qkt_linear *l);

/* y[..., :] = W[idx[...], :]. W: (n, C). */
typedef struct qkt_embed {
    qkt_tensor *weight;
} qkt_embed;
void qkt_embed_add(qkt_embed *e, qkt_params *p, const char *name, int n, int C); /* name is the full weight name */
qkt_tensor *qkt_embed_forward(qkt_ctx *ctx, const qkt_embed *e, const int32_t *idx, int ndim, const int *shape);

/* y = (x - mean) / sqrt(var + eps) * w + b over the last axis (biased var). w: (C), b: (C) or NULL.
 * rms: RMSNorm instead, y = x / sqrt(mean(x^2) + eps) * w (no bias tensor). */
typedef struct qkt_ln {
    qkt_tensor *weight, *bias;
    double eps;
    bool rms;
} qkt_ln;
void qkt_ln_add(qkt_ln *ln, qkt_params *p, const char *prefix, int C, bool bias, double eps);
/* The model's norm: LayerNorm as qkt_ln_add, or RMSNorm (`<prefix>.weight` only). */
void qkt_norm_add(qkt_ln *ln, qkt_params *p, const char *prefix, int C, const qkt_gpt_config *c);
qkt_tensor *qkt_ln_forward(qkt_ctx *ctx, const qkt_ln *ln, qkt_tensor *x);

/* y = c_proj(gelu(c_fc(x))): C -> 4C -> C, GELU in GPT-2's tanh form.
 * swiglu: y = c_proj(silu(a) * b), [a | b] = c_fc(x) (2F, C), c_proj (C, F) (Shazeer 2020). */
typedef struct qkt_mlp {
    qkt_linear c_fc, c_proj;
    bool swiglu;
} qkt_mlp;
void qkt_mlp_add(qkt_mlp *m, qkt_params *p, const char *prefix, int C, bool bias);
void qkt_mlp_add_kind(qkt_mlp *m, qkt_params *p, const char *prefix, int C, bool bias, qkt_mlp_kind kind);
/* y = silu(a) * b = a sigmoid(a) b for x = [a | b] on the last axis (..., 2F) -> (..., F); fused. */
qkt_tensor *qkt_swiglu(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_mlp_forward(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x);
/* r + qkt_mlp_forward(x) bit for bit, r added in c_proj's product (qkt_linear_forward_add). */
qkt_tensor *qkt_mlp_forward_add(qkt_ctx *ctx, const qkt_mlp *m, qkt_tensor *x, qkt_tensor *r);

/* Causal multi-head self-attention, x (B, T, C) -> (B, T, C):
 *   q, k, v = split(c_attn(x));  [the variant's forward hook may change q, k (qk_layernorm,
 *   cosine) or the projection (sigma_qk), and give a per-head log multiplier]
 *   y = c_proj(softmax(s_h attn_temp q_h k_h^T + causal/pad mask) v_h, heads merged).
 * Registered (in this order): c_attn (3C, C) with rows q, k, v, heads contiguous in
 * each; c_proj (C, C); then the variant's own tensors (vp[]): learned: log_scale (H);
 * qk_layernorm: q_ln, k_ln (d_k); cosine: logit_scale (H); sigma_qk: sigma_gamma (2)
 * (gamma of W_q, W_k) and the buffer sigma_u (2, C) (their power-iteration vectors).
 * (sigma_reparam's tensors belong to the Linears; the model registers them, qkt_gpt.) */
#define QKT_ATTN_MAX_VP 8
typedef struct qkt_attn_variant qkt_attn_variant;
typedef struct qkt_attn {
    qkt_linear c_attn, c_proj;
    qkt_tensor *log_scale; /* (H), learned only */
    qkt_ln q_ln, k_ln;     /* (d_k), qk_layernorm only */
    int n_embd, n_head;
    qkt_attn_scale kind;
    double scale;          /* the fixed part of s: variant's s times attn_temp */
    double dropout;        /* on the attention weights (training only) */
    qkt_pos_kind pos;      /* rope: q, k rotated per head after the variant's forward */
    double rope_base;
    const qkt_attn_variant *variant; /* kind's registry entry */
    qkt_tensor *vp[QKT_ATTN_MAX_VP]; /* the variant's tensors, in registration order */
    int n_vp;
    char prefix[128];      /* "transformer.h.3.attn": names the variant's tensors */
} qkt_attn;
void qkt_attn_add(qkt_attn *a, qkt_params *p, const char *prefix, const qkt_gpt_config *c);

/* Per-call options of the attention and block forwards (NULL = all off). */
typedef struct qkt_attn_call {
    const uint8_t *key_pad;     /* (B, T), nonzero = key blocked; or NULL */
    qkt_attn_capture *capture;  /* filled when non-NULL (its probs / logits (B, H, T, T) set by the caller) */
    bool hold_state;            /* do not advance persistent state (sigma_reparam's, sigma_qk's u) in this forward */
} qkt_attn_call;
/* A training forward (ctx->training and recording) first advances the variant's
 * persistent state (its `advance` hook), unless call->hold_state. (The block forward
 * advances its sigmaReparam Linears the same way.) */
qkt_tensor *qkt_attn_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const qkt_attn_call *call);
/* r + qkt_attn_forward(x) bit for bit, r added in c_proj's product (qkt_linear_forward_add). */
qkt_tensor *qkt_attn_forward_add(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x, const qkt_attn_call *call, qkt_tensor *r);

/* ---------------------------------------------------------------- the variant registry */
/* A scale variant is a registry entry: the built-ins are registered this way too
 * (nn/variants.c), and a program adds its own with qkt_attn_variant_register before it
 * builds a model; the name then works everywhere a built-in's does (configs,
 * checkpoints, train.json, the study's variant lists). Every hook is optional.
 *
 * What a forward hook gets and fills: */
typedef struct qkt_attn_qk {
    qkt_tensor *x;          /* in: the layer input (B, T, C) (after ln_1) */
    qkt_tensor *packed;     /* out: (B, T, 3C) [q | k | v] read in place by the fused op; or NULL, then: */
    qkt_tensor *q, *k, *v;  /* out: (B, T, C) each */
    qkt_tensor *log_scale;  /* out: (H): head h's logits times exp(log_scale[h]) (gets its gradient); or NULL */
} qkt_attn_qk;
struct qkt_attn_variant {
    const char *name;    /* [a-z0-9_] and '.', '-'; no ':' or ','. A family is named without its ":ARG" */
    const char *summary; /* one line for help texts and errors: the formula (may be NULL) */
    bool family;         /* "name:ARG" (ARG a finite number) makes a variant with arg = ARG */
    double arg;          /* a family member's ARG */
    /* The fixed factor s of the logits (attn_temp multiplies it); NULL: 1/sqrt(d_k). */
    double (*scale)(const qkt_attn_variant *v, int n_embd, int d_k);
    /* For qkt_attn_scale_at_init: the factor the variant's parameters give at init (NULL: 1). */
    double (*init_scale)(const qkt_attn_variant *v, int n_embd, int d_k);
    /* Registers the layer's own tensors with qkt_attn_param (called after c_attn and c_proj). */
    void (*add)(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c);
    /* Fills tensor a->vp[i] at init (qkt_gpt_init_weights); rng is that tensor's own stream,
     * and every tensor registered before it already holds its init. NULL: zeros. */
    void (*init)(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *rng);
    /* Builds q, k, v from io->x (helpers: qkt_attn_project, qkt_attn_split) and may set
     * io->log_scale. NULL: io->packed = c_attn(x), the fused path. */
    void (*forward)(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io);
    /* Advances the layer's persistent state (QKT_PARAM_BUFFER tensors) by one step: called
     * before `forward` on a training forward, or by qkt_gpt_advance_state. Single-threaded. */
    void (*advance)(const qkt_attn *a);
    /* Zhai et al.'s sigmaReparam on every Linear of every block (attn.c_attn, attn.c_proj,
     * mlp.c_fc, mlp.c_proj; not the embeddings or the tied LM head): qkt_gpt_init makes each a
     * sigmaReparam Linear (qkt_linear_sigma_add), qkt_gpt_init_weights gives gamma = sigma(W_0). */
    bool sigma_linears;
    void *user;          /* free for the variant */
};
/* Copies v into the registry (name included; summary and user are kept as pointers) and
 * gives its id (a family: the id of nothing usable; its members get theirs when named).
 * -1 with a one-line message for a bad or taken name, or a full registry (256). Not
 * thread-safe against a concurrent model build: register first. */
int qkt_attn_variant_register(const qkt_attn_variant *v, qkt_attn_scale *id, qkt_err *err);
/* The entry of a variant id, or NULL if there is none. */
const qkt_attn_variant *qkt_attn_variant_get(qkt_attn_scale id);
/* Variant ids are 0 .. count - 1 (built-ins, registered variants, named family members). */
int qkt_attn_scale_count(void);
/* "sqrt_dk, none, ..., power:ALPHA, <registered>" into buf (help texts and errors); returns buf. */
const char *qkt_attn_scale_list(char *buf, size_t n);
/* For a variant's `add`: registers "<a->prefix>.<suffix>" in p and appends it to a->vp. */
qkt_tensor *qkt_attn_param(qkt_attn *a, qkt_params *p, const char *suffix, int ndim, const int *shape, int flags);
/* For a variant's `forward`: c_attn(x) (B, T, 3C), and [q | k | v] split into three (B, T, C). */
qkt_tensor *qkt_attn_project(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *x);
void qkt_attn_split(qkt_ctx *ctx, const qkt_attn *a, qkt_tensor *packed, qkt_attn_qk *io);

/* Pre-LN block: x = x + drop(attn(ln_1(x)));  x = x + drop(mlp(ln_2(x))). A training
 * forward first advances the u of its sigmaReparam Linears, unless call->hold_state. */
typedef struct qkt_block {
    qkt_ln ln_1, ln_2;
    qkt_attn attn;
    qkt_mlp mlp;
    double dropout;
    char scope[32]; /* "h.<i>", copied into tape nodes for error messages */
} qkt_block;
void qkt_block_add(qkt_block *b, qkt_params *p, const char *prefix, const qkt_gpt_config *c);
qkt_tensor *qkt_block_forward(qkt_ctx *ctx, const qkt_block *b, qkt_tensor *x, const qkt_attn_call *call);

/* ---------------------------------------------------------------- GPT */
/* Parameters, in registration (= checkpoint) order:
 *   transformer.wte.weight (V, C), transformer.wpe.weight (block_size, C),
 *   per layer i: transformer.h.i.ln_1.{weight,bias}, .attn.c_attn.{weight,bias},
 *     .attn.c_proj.{weight,bias}, [.attn.log_scale | .attn.q_ln.{weight,bias}, .attn.k_ln.{weight,bias}],
 *     .ln_2.{weight,bias}, .mlp.c_fc.{weight,bias}, .mlp.c_proj.{weight,bias},
 *   transformer.ln_f.{weight,bias}.
 * (No biases when cfg.bias is false.) The LM head is wte (tied), not a parameter.
 * A variant with sigma_linears (sigma_reparam) appends, after ln_f, for each layer i and
 * each of its Linears L in the order attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj:
 *   transformer.h.i.L.sigma_u (in) (a buffer), transformer.h.i.L.sigma_gamma (1),
 * so every other tensor keeps its index, and its init, of the sqrt_dk model.
 * QKT_PARAM_DECAY is set on exactly the 2-D weights (embeddings and Linear weights). */
#define QKT_GPT_WTE "transformer.wte.weight"
#define QKT_GPT_WPE "transformer.wpe.weight"
#define QKT_GPT_BLOCK "transformer.h.%d" /* block i's prefix (printf format) */
typedef struct qkt_gpt {
    qkt_gpt_config cfg;
    qkt_params params; /* the model's tensors first (n_model of them); a user's module may add more */
    int n_model;
    qkt_embed wte, wpe;  /* wpe.weight NULL unless pos is learned */
    qkt_block *h; /* n_layer */
    qkt_ln ln_f;
} qkt_gpt;

/* Validates cfg (-1 with a one-line message if invalid), registers and finalizes the
 * parameters (all zero: call qkt_gpt_init_weights next). */
int qkt_gpt_init(qkt_gpt *g, const qkt_gpt_config *cfg, qkt_err *err);
void qkt_gpt_free(qkt_gpt *g);

/* GPT-2 init. Every parameter tensor, in registration order, gets its own stream
 * qkt_rng_split(rng, i) (i = its index), and is filled in storage order, so one
 * tensor's values do not depend on the sizes of the others:
 *   Linear and embedding weights N(0, 0.02^2); attn.c_proj and mlp.c_proj weights
 *   N(0, (0.02/sqrt(2 n_layer))^2); the q and k row blocks of c_attn N(0, (0.02 qk_init_mult)^2)
 *   (qk_init "unit": N(0, (qk_init_mult/sqrt(n_embd))^2));
 *   (0.02 stands for cfg.init_std when that is set);
 *   biases 0; LayerNorm weights 1, biases 0; log_scale log(1/sqrt(d_k)).
 * A variant's own tensors get its `init` hook (learned: log_scale log(1/sqrt(d_k)); cosine:
 * logit_scale log 10; sigma_qk: gamma 1, u from 50 power iterations on the initialised
 * W from a random unit vector); a sigmaReparam Linear's (sigma_reparam): u from power
 * iterations to convergence, gamma = sigma(W_0) (qkt_linear_sigma_init), so the model
 * computes what the sqrt_dk model of the same seed does. Tensors added to the store
 * after the model's own (a user's module) are left to the user.
 * rng advances by one draw per parameter tensor. */
void qkt_gpt_init_weights(qkt_gpt *g, qkt_rng *rng);

/* Per-forward options (all off when the pointer is NULL or zeroed). */
typedef struct qkt_gpt_opts {
    const uint8_t *key_pad;     /* (B, T), nonzero = this key is padding; or NULL */
    /* Attention capture: NULL = none (no cost). Otherwise n_layer entries; each entry's
     * probs / logits (B, H, T, T) is filled when non-NULL (the caller's buffer), and when
     * NULL but the matching flag below is set, it is pointed at a fresh arena buffer
     * (valid until ctx reset; its *_gen stamp lets the next step's forward replace it, so
     * the same capture array, zeroed once, serves every step). */
    qkt_attn_capture *capture;
    bool capture_probs, capture_logits;
    bool hold_state;            /* a training forward does not advance persistent state (qkt_dp) */
} qkt_gpt_opts;
/* Advances every layer's persistent state once, as a training forward does first
 * (sigma_reparam, sigma_qk: one power iteration per u); qkt_dp calls it once before its replicas. */
void qkt_gpt_advance_state(qkt_gpt *g);

/* Forward on idx (B, T) tokens in [0, V), T <= block_size (checked: programmer error;
 * user-facing callers validate first). Returns the mean cross-entropy over the
 * positions whose target is not -1 (0 if none), or NULL if targets is NULL.
 * *logits_out (if non-NULL) receives the logits (B, T, V) = ln_f(x) wte^T. */
qkt_tensor *qkt_gpt_forward(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *targets, int B, int T,
                            qkt_tensor **logits_out, const qkt_gpt_opts *opts);
/* ---------------------------------------------------------------- data parallel */
/* A training step's forward and backward split over n replicas inside this process:
 * the batch's rows in n contiguous shards, each replica with its own context (arena,
 * tape, dropout stream) and, past the first, its own parameter-grad buffer. Replicas
 * run side by side on the OpenMP threads (min(threads, n) of them; the ops inside a
 * replica then run on its one thread), and their grads are summed into params.grad in
 * replica order. The batch loss is the mean over all counted targets, as one forward on
 * the whole batch: replica r's backward is seeded with n_r / n (its share of them).
 * Results depend on n (the order of sums), not on the thread count; n = 1 is the
 * plain step (forward, zero grads, backward) exactly. Replica r > 0 draws its dropout
 * from a stream split off ctx0's RNG each step, so ctx0's RNG state is the whole state
 * (checkpoints). Per-step memory: the activations are the same in total (each replica
 * holds its shard's), plus n - 1 grad buffers the size of the parameters. */
#define QKT_DP_MAX 64
typedef struct qkt_dp {
    int n;
    qkt_ctx **ctx;   /* n contexts: ctx[0] is the caller's */
    qkt_ctx *own;    /* ctx[1..n-1] */
    qkt_real *grad;  /* (n - 1) x params.size */
    int64_t size;
} qkt_dp;
/* n in [1, QKT_DP_MAX]; ctx0 (the caller's step context, kept) is replica 0's. */
void qkt_dp_init(qkt_dp *dp, qkt_ctx *ctx0, const qkt_params *p, int n);
void qkt_dp_free(qkt_dp *dp);
/* Zeroes g's grads, runs every shard's forward and backward, leaves the sum in
 * g->params.grad and returns the batch loss (0, and no backward, when no target is
 * counted). Needs B >= n. Replica 0's tensors live in ctx0 until its next reset. */
double qkt_dp_forward_backward(qkt_dp *dp, qkt_gpt *g, const int32_t *idx, const int32_t *tgt, int B, int T);

/* The final hidden states ln_f(x) (B, T, C), without the LM head (for generation and probes). */
qkt_tensor *qkt_gpt_hidden(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, int B, int T, const qkt_gpt_opts *opts);

/* Sampling. temperature <= 0 means greedy (argmax); top_k <= 0 or >= V means no top-k. */
typedef struct qkt_sample_opts {
    double temperature;
    int top_k;
    void (*on_token)(int32_t tok, void *user); /* called per new token, or NULL */
    void *user;
} qkt_sample_opts;
/* Autoregressive generation (batch 1): out (n_prompt + n_new) = prompt, then n_new tokens
 * drawn from softmax(logits_last / temperature) restricted to the top_k, context cropped to
 * the last block_size tokens. Runs in no_grad eval mode (restored after), resets ctx
 * before every token (so ctx must hold nothing the caller needs), draws from rng only.
 * Returns the number of new tokens: n_new, or fewer when the logits of the next position
 * hold a NaN or Inf (a diverged model: no token can be drawn from them). */
int qkt_gpt_generate(qkt_ctx *ctx, qkt_gpt *g, const int32_t *prompt, int n_prompt, int n_new,
                      const qkt_sample_opts *o, qkt_rng *rng, int32_t *out);
/* One draw from logits (V) as qkt_gpt_generate does (scratch: V reals). */
int32_t qkt_sample_logits(const qkt_real *logits, int V, const qkt_sample_opts *o, qkt_rng *rng, qkt_real *scratch);

#ifdef __cplusplus
}
#endif
#endif
