/* The scale-variant registry and the built-in variants, which go through it like a
 * program's own: each is a table entry of hooks (fixed scale, tensors, init, forward).
 *
 * The registry is one fixed array: entries never move, so a `const qkt_attn_variant *`
 * stays valid for the process; registration (and naming a family member such as
 * "power:0.75") is serialised, and an entry is published (count incremented) only
 * once it is complete. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"

#define QKT_VARIANTS_MAX 256
#define QKT_VARIANT_NAME 64
#define COSINE_TAU_INIT 10.0 /* cosine: exp(tau) at init */
#define COSINE_TAU_MAX 100.0 /* cosine: exp(tau) at most (Swin v2's clamp at log(1/0.01)) */
#define SIGMA_INIT_ITERS 50  /* sigma_qk: power iterations that set u at init */

/* ---------------------------------------------------------------- built-in hooks */
static double s_sqrt_dk(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C; return 1.0 / sqrt((double)d); }
static double s_one(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C, (void)d; return 1.0; }
static double s_dk(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C; return 1.0 / d; }
static double s_sqrt_dmodel(const qkt_attn_variant *v, int C, int d) { (void)v, (void)d; return 1.0 / sqrt((double)C); }
static double s_power(const qkt_attn_variant *v, int C, int d) { (void)C; return pow((double)d, -v->arg); }

static void fill(qkt_tensor *t, double v) {
    for (int64_t i = 0; i < t->size; i++) t->data[i] = (qkt_real)v;
}

/* learned: log_scale (H), init log(1/sqrt(d_k)); the fixed factor is 1. */
static void learned_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    (void)c;
    a->log_scale = qkt_attn_param(a, p, "log_scale", 1, (int[]){a->n_head}, 0);
}
static void learned_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *r) {
    (void)i, (void)r;
    fill(t, log(1.0 / sqrt((double)(a->n_embd / a->n_head))));
}
static double learned_init_scale(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C; return 1.0 / sqrt((double)d); }
static void learned_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) {
    io->packed = qkt_attn_project(ctx, a, io->x);
    io->log_scale = a->log_scale;
}

/* qk_layernorm: LayerNorm over each head's d_k channels of q and k, one (d) weight and
 * bias shared by the heads. */
static void qkln_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    int d = a->n_embd / a->n_head, before = p->n;
    char name[160];
    snprintf(name, sizeof name, "%s.q_ln", a->prefix);
    qkt_ln_add(&a->q_ln, p, name, d, c->bias, c->ln_eps);
    snprintf(name, sizeof name, "%s.k_ln", a->prefix);
    qkt_ln_add(&a->k_ln, p, name, d, c->bias, c->ln_eps);
    for (int i = before; i < p->n; i++) a->vp[a->n_vp++] = p->t[i];
}
static void qkln_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *r) {
    (void)a, (void)i, (void)r;
    size_t n = strlen(t->name);
    fill(t, n > 7 && !strcmp(t->name + n - 7, ".weight") ? 1.0 : 0.0);
}
static qkt_tensor *per_head(qkt_ctx *ctx, qkt_tensor *x, int H) { /* (B, T, C) -> (B, T, H, d) view */
    return qkt_reshape(ctx, x, 4, (int[]){x->shape[0], x->shape[1], H, x->shape[2] / H});
}
static qkt_tensor *merged(qkt_ctx *ctx, qkt_tensor *x) { /* (B, T, H, d) -> (B, T, C) view */
    return qkt_reshape(ctx, x, 3, (int[]){x->shape[0], x->shape[1], x->shape[2] * x->shape[3]});
}
static void qkln_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) {
    qkt_attn_split(ctx, a, qkt_attn_project(ctx, a, io->x), io);
    io->q = merged(ctx, qkt_ln_forward(ctx, &a->q_ln, per_head(ctx, io->q, a->n_head)));
    io->k = merged(ctx, qkt_ln_forward(ctx, &a->k_ln, per_head(ctx, io->k, a->n_head)));
}

/* cosine (Swin Transformer v2, Liu et al. 2022): logits = cos(q_h, k_h) exp(min(tau_h,
 * log 100)), tau (H) learned, init log 10; the fixed factor is 1. The clamp passes no
 * gradient to a tau above log 100 (torch.clamp's). */
static void cosine_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    (void)c;
    qkt_attn_param(a, p, "logit_scale", 1, (int[]){a->n_head}, 0);
}
static void cosine_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *r) {
    (void)a, (void)i, (void)r;
    fill(t, log(COSINE_TAU_INIT));
}
static double cosine_init_scale(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C, (void)d; return COSINE_TAU_INIT; }

static void clamp_max_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!x->requires_grad) return;
    qkt_real *dx = qkt_grad(ctx, x);
    for (int64_t i = 0; i < x->size; i++)
        if (x->data[i] < (qkt_real)n->p.f[0]) dx[i] += n->out->grad[i];
}
/* y = min(x, hi); dy/dx = 1 where x < hi, else 0 */
static qkt_tensor *clamp_max(qkt_ctx *ctx, qkt_tensor *x, double hi) {
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    for (int64_t i = 0; i < x->size; i++) y->data[i] = x->data[i] < (qkt_real)hi ? x->data[i] : (qkt_real)hi;
    qkt_node *n = qkt_op_record_custom(ctx, "clamp_max", clamp_max_backward, y, 1, (qkt_tensor *[]){x});
    if (n) n->p.f[0] = hi;
    return y;
}
static void cosine_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) {
    qkt_attn_split(ctx, a, qkt_attn_project(ctx, a, io->x), io);
    io->q = merged(ctx, qkt_l2norm(ctx, per_head(ctx, io->q, a->n_head), 1e-12));
    io->k = merged(ctx, qkt_l2norm(ctx, per_head(ctx, io->k, a->n_head), 1e-12));
    io->log_scale = clamp_max(ctx, a->vp[0], log(COSINE_TAU_MAX));
}

/* sigma_qk: Zhai et al.'s W_hat = gamma / sigma(W) W on W = W_q and W = W_k alone (each
 * (C, C), the whole matrix across heads), W_v and every other Linear unchanged, then
 * 1/sqrt(d_k). sigma(W) = ||W u|| from the persistent right vector u, which a training
 * forward first advances by one power iteration (qkt_sigma_reparam has the gradient).
 * Tensors: sigma_gamma (2) = (gamma_q, gamma_k), trained, init 1; sigma_u (2, C), a
 * QKT_PARAM_BUFFER (saved in checkpoints, never trained). gamma 1 makes W_hat = W / sigma(W)
 * at init: with sigma(W) > 1 (qk_init unit: about 2) q and k start smaller than sqrt_dk's. */
static void sigma_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    (void)c;
    qkt_attn_param(a, p, "sigma_gamma", 1, (int[]){2}, 0);
    qkt_attn_param(a, p, "sigma_u", 2, (int[]){2, a->n_embd}, QKT_PARAM_BUFFER);
}
static void sigma_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *r) {
    int C = a->n_embd;
    if (i == 0) { /* gamma */
        fill(t, 1.0);
        return;
    }
    for (int m = 0; m < 2; m++) /* u: a random unit vector, then power iterations on the initialised W */
        qkt_sigma_init_u(a->c_attn.weight->data + (int64_t)m * C * C, C, C, t->data + (int64_t)m * C, SIGMA_INIT_ITERS, r);
}
static void sigma_advance(const qkt_attn *a) {
    int C = a->n_embd;
    for (int m = 0; m < 2; m++)
        qkt_sigma_power_step(a->c_attn.weight->data + (int64_t)m * C * C, C, C, a->vp[1]->data + (int64_t)m * C);
}
static void sigma_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) { /* W_hat (3C, C) = [c_q W_q; c_k W_k; W_v] */
    io->packed = qkt_affine(ctx, io->x, qkt_sigma_reparam(ctx, a->c_attn.weight, a->vp[0], a->vp[1], 2, a->n_embd), a->c_attn.bias);
}

/* ---------------------------------------------------------------- the registry */
typedef struct entry {
    qkt_attn_variant v;
    char name[QKT_VARIANT_NAME];
} entry;

static entry table[QKT_VARIANTS_MAX] = {
    [QKT_ATTN_SQRT_DK] = {.v = {.name = "sqrt_dk", .summary = "s = 1/sqrt(d_k)", .scale = s_sqrt_dk}},
    [QKT_ATTN_NONE] = {.v = {.name = "none", .summary = "s = 1", .scale = s_one}},
    [QKT_ATTN_DK] = {.v = {.name = "dk", .summary = "s = 1/d_k (muP)", .scale = s_dk}},
    [QKT_ATTN_SQRT_DMODEL] = {.v = {.name = "sqrt_dmodel", .summary = "s = 1/sqrt(n_embd)", .scale = s_sqrt_dmodel}},
    [QKT_ATTN_LEARNED] = {.v = {.name = "learned", .summary = "s_h = exp(log_scale[h]), init 1/sqrt(d_k)", .scale = s_one,
                                .init_scale = learned_init_scale, .add = learned_add, .init = learned_init,
                                .forward = learned_forward}},
    [QKT_ATTN_QK_LAYERNORM] = {.v = {.name = "qk_layernorm", .summary = "LayerNorm(d_k) on q and k, then 1/sqrt(d_k)",
                                     .scale = s_sqrt_dk, .add = qkln_add, .init = qkln_init, .forward = qkln_forward}},
    [QKT_ATTN_COSINE] = {.v = {.name = "cosine", .summary = "cos(q_h, k_h) exp(min(tau_h, log 100)), tau init log 10",
                               .scale = s_one, .init_scale = cosine_init_scale, .add = cosine_add, .init = cosine_init,
                               .forward = cosine_forward}},
    [QKT_ATTN_SIGMA_REPARAM] = {.v = {.name = "sigma_reparam",
                                      .summary = "every Linear W -> gamma/sigma(W) W, gamma init sigma(W_0) (Zhai et al.), then 1/sqrt(d_k)",
                                      .scale = s_sqrt_dk, .sigma_linears = true}},
    [QKT_ATTN_SIGMA_QK] = {.v = {.name = "sigma_qk",
                                 .summary = "W_q, W_k alone -> gamma/sigma(W) W, gamma init 1 (q, k start divided by sigma(W_0)), then 1/sqrt(d_k)",
                                 .scale = s_sqrt_dk, .add = sigma_add, .init = sigma_init, .forward = sigma_forward,
                                 .advance = sigma_advance}},
    /* the family "power" (its members are named power:ALPHA) */
    [QKT_ATTN_SCALE_COUNT] = {.v = {.name = "power", .summary = "s = d_k^-ALPHA", .family = true, .scale = s_power}},
};
static int n_table = QKT_ATTN_SCALE_COUNT + 1;

static bool is_family(int i) { return table[i].v.family; }

const qkt_attn_variant *qkt_attn_variant_get(qkt_attn_scale id) {
    int n;
#pragma omp atomic read
    n = n_table;
    return (int)id >= 0 && (int)id < n && !is_family((int)id) ? &table[id].v : NULL;
}

int qkt_attn_scale_count(void) {
    int n;
#pragma omp atomic read
    n = n_table;
    return n;
}

const char *qkt_attn_scale_name(qkt_attn_scale s) {
    const qkt_attn_variant *v = qkt_attn_variant_get(s);
    return v ? v->name : "?";
}

const char *qkt_attn_scale_list(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    int count = qkt_attn_scale_count();
    for (int i = 0; i < count && k < n; i++) {
        /* family members are listed by their family ("power:ALPHA") */
        if (strchr(table[i].v.name, ':')) continue;
        k += (size_t)snprintf(buf + k, n - k, "%s%s%s", k ? ", " : "", table[i].v.name, is_family(i) ? ":ALPHA" : "");
    }
    return buf;
}

static int check_name(const char *name, qkt_err *err) {
    if (!name || !*name) return qkt_err_set(err, "a scale variant needs a name");
    if (strlen(name) >= QKT_VARIANT_NAME - 24)
        return qkt_err_set(err, "scale variant name '%.64s' is too long (at most %d characters)", name, QKT_VARIANT_NAME - 25);
    for (const char *c = name; *c; c++)
        if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_' || *c == '.' || *c == '-'))
            return qkt_err_set(err, "scale variant name '%s': only a-z, 0-9, '_', '.', '-' are allowed", name);
    return 0;
}

static int find(const char *name) {
    int count = qkt_attn_scale_count();
    for (int i = 0; i < count; i++)
        if (!strcmp(table[i].v.name, name)) return i;
    return -1;
}

/* Appends under the lock: returns the id, or -1 (full). */
static int append(const qkt_attn_variant *v, const char *name) {
    int id = -1;
#pragma omp critical(qkt_variant_registry)
    {
        int have = find(name);
        if (have >= 0) {
            id = have;
        } else if (n_table < QKT_VARIANTS_MAX) {
            entry *e = &table[n_table];
            e->v = *v;
            snprintf(e->name, sizeof e->name, "%s", name);
            e->v.name = e->name;
            id = n_table;
#pragma omp atomic write
            n_table = id + 1;
        }
    }
    return id;
}

int qkt_attn_variant_register(const qkt_attn_variant *v, qkt_attn_scale *id, qkt_err *err) {
    if (check_name(v ? v->name : NULL, err)) return -1;
    if (find(v->name) >= 0) return qkt_err_set(err, "scale variant '%s' is already registered", v->name);
    int i = append(v, v->name);
    if (i < 0) return qkt_err_set(err, "the scale-variant registry is full (%d entries)", QKT_VARIANTS_MAX);
    if (strcmp(table[i].v.name, v->name) || table[i].v.scale != v->scale || table[i].v.forward != v->forward)
        return qkt_err_set(err, "scale variant '%s' is already registered", v->name); /* lost a race */
    if (id) *id = (qkt_attn_scale)i;
    return 0;
}

/* "0.75" for 0.75, the shortest %g that reads back as the same double */
static void arg_str(double x, char *buf, size_t n) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, x);
        if (strtod(buf, NULL) == x) return;
    }
}

int qkt_attn_scale_parse(const char *name, qkt_attn_scale *out, qkt_err *err) {
    char list[1024];
    if (!name) return qkt_err_set(err, "attn_scale (null) is not one of %s", qkt_attn_scale_list(list, sizeof list));
    const char *colon = strchr(name, ':');
    if (!colon) {
        int i = find(name);
        if (i >= 0 && !is_family(i)) return *out = (qkt_attn_scale)i, 0;
        if (i >= 0) return qkt_err_set(err, "attn_scale '%s' needs an argument: %s:ALPHA (%s)", name, name, table[i].v.summary);
        return qkt_err_set(err, "attn_scale '%s' is not one of %s (a program's own variant must be registered first: qkt_attn_variant_register)",
                           name, qkt_attn_scale_list(list, sizeof list));
    }
    char fam[QKT_VARIANT_NAME];
    size_t k = (size_t)(colon - name);
    if (k >= sizeof fam) return qkt_err_set(err, "attn_scale '%.80s' is not one of %s", name, qkt_attn_scale_list(list, sizeof list));
    memcpy(fam, name, k), fam[k] = 0;
    int f = find(fam);
    if (f < 0)
        return qkt_err_set(err, "attn_scale '%s': unknown name '%s' (names are case-sensitive; one of %s)", name, fam,
                           qkt_attn_scale_list(list, sizeof list));
    if (!is_family(f))
        return qkt_err_set(err, "attn_scale '%s': '%s' takes no argument (one of %s)", name, fam, qkt_attn_scale_list(list, sizeof list));
    char *end;
    errno = 0;
    double x = strtod(colon + 1, &end);
    if (errno || end == colon + 1 || *end || !isfinite(x) || (x != 0 && fabs(x) < DBL_MIN)) /* ERANGE: under- or overflow */
        return qkt_err_set(err, "attn_scale '%s': the argument after '%s:' must be a finite number: 0 or of magnitude %.4g .. %.4g", name,
                           fam, DBL_MIN, DBL_MAX);
    char a[32], full[QKT_VARIANT_NAME + 32];
    arg_str(x == 0 ? 0.0 : x, a, sizeof a); /* -0 reads as 0 */
    snprintf(full, sizeof full, "%s:%s", fam, a);
    qkt_attn_variant v = table[f].v;
    v.family = false, v.arg = x == 0 ? 0.0 : x;
    int id = append(&v, full);
    if (id < 0) return qkt_err_set(err, "the scale-variant registry is full (%d entries)", QKT_VARIANTS_MAX);
    *out = (qkt_attn_scale)id;
    return 0;
}
