/* Model config: defaults, names, validation (the scale variants' names: variants.c). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qkt_nn.h"

static const char *const qk_init_names[QKT_QK_INIT_COUNT] = {[QKT_QK_INIT_GPT2] = "gpt2", [QKT_QK_INIT_UNIT] = "unit"};

const char *qkt_qk_init_name(qkt_qk_init k) { return (int)k >= 0 && k < QKT_QK_INIT_COUNT ? qk_init_names[k] : "?"; }

int qkt_qk_init_parse(const char *name, qkt_qk_init *out, qkt_err *err) {
    for (int i = 0; i < QKT_QK_INIT_COUNT; i++)
        if (name && !strcmp(name, qk_init_names[i])) {
            *out = (qkt_qk_init)i;
            return 0;
        }
    return qkt_err_set(err, "qk_init '%s' is not one of gpt2, unit", name ? name : "(null)");
}

/* ---------------------------------------------------------------- model options */
static const char *const norm_names[QKT_NORM_COUNT] = {[QKT_NORM_LAYERNORM] = "layernorm", [QKT_NORM_RMSNORM] = "rmsnorm"};
static const char *const mlp_names[QKT_MLP_COUNT] = {[QKT_MLP_GELU] = "gelu", [QKT_MLP_SWIGLU] = "swiglu"};
static const char *const pos_names[QKT_POS_COUNT] = {[QKT_POS_LEARNED] = "learned", [QKT_POS_ROPE] = "rope",
                                                     [QKT_POS_ALIBI] = "alibi", [QKT_POS_NONE] = "none"};

static int parse_name(const char *what, const char *const *names, int n, const char *name, int *out, qkt_err *err) {
    for (int i = 0; i < n; i++)
        if (name && !strcmp(name, names[i])) return *out = i, 0;
    char list[128] = "";
    for (int i = 0; i < n; i++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
    }
    return qkt_err_set(err, "%s '%s' is not one of %s", what, name ? name : "(null)", list);
}

const char *qkt_norm_name(qkt_norm_kind k) { return (int)k >= 0 && k < QKT_NORM_COUNT ? norm_names[k] : "?"; }
const char *qkt_mlp_name(qkt_mlp_kind k) { return (int)k >= 0 && k < QKT_MLP_COUNT ? mlp_names[k] : "?"; }
const char *qkt_pos_name(qkt_pos_kind k) { return (int)k >= 0 && k < QKT_POS_COUNT ? pos_names[k] : "?"; }
int qkt_norm_parse(const char *name, qkt_norm_kind *out, qkt_err *err) {
    int v;
    if (parse_name("norm", norm_names, QKT_NORM_COUNT, name, &v, err)) return -1;
    return *out = (qkt_norm_kind)v, 0;
}
int qkt_mlp_parse(const char *name, qkt_mlp_kind *out, qkt_err *err) {
    int v;
    if (parse_name("mlp", mlp_names, QKT_MLP_COUNT, name, &v, err)) return -1;
    return *out = (qkt_mlp_kind)v, 0;
}
int qkt_pos_parse(const char *name, qkt_pos_kind *out, qkt_err *err) {
    int v;
    if (parse_name("pos", pos_names, QKT_POS_COUNT, name, &v, err)) return -1;
    return *out = (qkt_pos_kind)v, 0;
}

int qkt_swiglu_hidden(int n_embd) {
    int64_t f = ((int64_t)8 * n_embd + 2) / 3; /* ceil(8C/3) */
    return (int)((f + 7) / 8 * 8);
}

qkt_gpt_config qkt_gpt_config_default(void) {
    return (qkt_gpt_config){
        .vocab_size = 50304, .block_size = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768,
        .dropout = 0.0, .bias = true, .attn_scale = QKT_ATTN_SQRT_DK, .attn_temp = 1.0,
        .qk_init_mult = 1.0, .ln_eps = 1e-5,
    };
}

int qkt_gpt_config_validate(const qkt_gpt_config *c, qkt_err *err) {
    const struct {
        const char *name;
        int v;
    } sizes[] = {{"vocab_size", c->vocab_size}, {"block_size", c->block_size}, {"n_layer", c->n_layer},
                 {"n_head", c->n_head},         {"n_embd", c->n_embd}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v <= 0) return qkt_err_set(err, "%s must be positive, got %d", sizes[i].name, sizes[i].v);
    /* The widest activation axis is 4 n_embd (MLP) and shapes are ints. */
    if (c->n_embd > INT_MAX / 4) return qkt_err_set(err, "n_embd %d is too large (at most %d)", c->n_embd, INT_MAX / 4);
    if ((int64_t)c->vocab_size * c->n_embd > INT64_MAX / 16 || (int64_t)c->block_size * c->block_size > INT_MAX)
        return qkt_err_set(err, "block_size %d or vocab_size %d is too large", c->block_size, c->vocab_size);
    if (c->n_embd % c->n_head)
        return qkt_err_set(err, "n_embd %d is not divisible by n_head %d", c->n_embd, c->n_head);
    if (!(c->dropout >= 0 && c->dropout < 1)) return qkt_err_set(err, "dropout must be in [0, 1), got %g", c->dropout);
    if (!qkt_attn_variant_get(c->attn_scale))
        return qkt_err_set(err, "attn_scale %d is not a known variant", (int)c->attn_scale);
    if (!(isfinite(c->attn_temp) && c->attn_temp > 0))
        return qkt_err_set(err, "attn_temp must be a positive number, got %g", c->attn_temp);
    if (!(isfinite(c->qk_init_mult) && c->qk_init_mult >= 0))
        return qkt_err_set(err, "qk_init_mult must be a number >= 0, got %g", c->qk_init_mult);
    if (!(isfinite(c->init_std) && c->init_std >= 0))
        return qkt_err_set(err, "init_std must be a number >= 0 (0 = 0.02), got %g", c->init_std);
    if ((int)c->qk_init < 0 || c->qk_init >= QKT_QK_INIT_COUNT) return qkt_err_set(err, "qk_init %d is not a known rule", (int)c->qk_init);
    if (!(isfinite(c->ln_eps) && c->ln_eps > 0)) return qkt_err_set(err, "ln_eps must be positive, got %g", c->ln_eps);
    if ((int)c->norm < 0 || c->norm >= QKT_NORM_COUNT) return qkt_err_set(err, "norm %d is not a known kind", (int)c->norm);
    if ((int)c->mlp < 0 || c->mlp >= QKT_MLP_COUNT) return qkt_err_set(err, "mlp %d is not a known kind", (int)c->mlp);
    if ((int)c->pos < 0 || c->pos >= QKT_POS_COUNT) return qkt_err_set(err, "pos %d is not a known kind", (int)c->pos);
    if (c->pos == QKT_POS_ROPE && (c->n_embd / c->n_head) % 2)
        return qkt_err_set(err, "pos rope needs an even d_k, got n_embd %d / n_head %d = %d", c->n_embd, c->n_head, c->n_embd / c->n_head);
    if (!(isfinite(c->rope_base) && (c->rope_base == 0 || c->rope_base > 1)))
        return qkt_err_set(err, "rope_base must be 0 (10000) or a number > 1, got %g", c->rope_base);
    return 0;
}
