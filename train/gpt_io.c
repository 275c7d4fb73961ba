/* GPT checkpoints: config <-> safetensors metadata, save, checked load. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"

void qkt_gpt_meta_fill(qkt_gpt_meta *m, const qkt_gpt_config *c) {
    m->n = 0;
#define PUT(key, ...)                                                            \
    do {                                                                         \
        snprintf(m->val[m->n], sizeof m->val[m->n], __VA_ARGS__);                \
        m->kv[m->n] = (qkt_st_meta){key, m->val[m->n]};                          \
        m->n++;                                                                  \
    } while (0)
    PUT("vocab_size", "%d", c->vocab_size);
    PUT("block_size", "%d", c->block_size);
    PUT("n_layer", "%d", c->n_layer);
    PUT("n_head", "%d", c->n_head);
    PUT("n_embd", "%d", c->n_embd);
    PUT("attn_scale", "%s", qkt_attn_scale_name(c->attn_scale));
    PUT("attn_temp", "%.17g", c->attn_temp);
    PUT("bias", "%s", c->bias ? "true" : "false");
    PUT("ln_eps", "%.17g", c->ln_eps);
    PUT("dropout", "%.17g", c->dropout);
    PUT("qk_init_mult", "%.17g", c->qk_init_mult);
    PUT("norm", "%s", qkt_norm_name(c->norm));
    PUT("mlp", "%s", qkt_mlp_name(c->mlp));
    PUT("pos", "%s", qkt_pos_name(c->pos));
    if (c->pos == QKT_POS_ROPE) PUT("rope_base", "%.17g", c->rope_base > 0 ? c->rope_base : 10000.0);
#undef PUT
}

int qkt_gpt_save(const char *path, const qkt_gpt *g, const qkt_st_meta *meta, int n_meta, const qkt_st_write *extra,
                 int n_extra, qkt_err *err) {
    /* what qkt_gpt_restore would refuse is not written: a diverged model stays unsaved */
    for (int i = 0; i < g->params.n; i++)
        for (int64_t j = 0; j < g->params.t[i]->size; j++)
            if (!isfinite(g->params.t[i]->data[j]))
                return qkt_err_set(err, "%s: parameter '%s' holds a non-finite value at index %lld (a diverged model): not written",
                                   path, g->params.t[i]->name, (long long)j);
    qkt_gpt_meta m;
    qkt_gpt_meta_fill(&m, &g->cfg);
    qkt_st_meta *all = qkt_calloc((size_t)(m.n + n_meta), sizeof *all);
    memcpy(all, m.kv, (size_t)m.n * sizeof *all);
    for (int i = 0; i < n_meta; i++) {
        for (int k = 0; k < m.n; k++)
            QKT_CHECK(strcmp(meta[i].key, m.kv[k].key), "metadata key %s is reserved for the model config", meta[i].key);
        all[m.n + i] = meta[i];
    }
    int rc = qkt_checkpoint_save(path, &g->params, all, m.n + n_meta, extra, n_extra, err);
    free(all);
    return rc;
}

int qkt_gpt_save_tokens_of(const char *path, const qkt_gpt *g, const qkt_checkpoint *from, qkt_err *err) {
    const qkt_st_tensor *tv = qkt_safetensors_find(&from->st, "train.vocab");
    const char *data = qkt_checkpoint_meta(from, "data");
    qkt_st_write ex = {0};
    if (tv) {
        ex = (qkt_st_write){.name = "train.vocab", .dtype = tv->dtype, .ndim = tv->ndim, .data = tv->data};
        for (int d = 0; d < tv->ndim; d++) ex.shape[d] = tv->shape[d];
    }
    qkt_st_meta m = {"data", data};
    return qkt_gpt_save(path, g, &m, data ? 1 : 0, &ex, tv ? 1 : 0, err);
}

/* ---------------------------------------------------------------- reading the config */
static int meta_real(const qkt_checkpoint *ck, const char *key, double dflt, bool required, double *out, qkt_err *err) {
    const char *v = qkt_checkpoint_meta(ck, key);
    if (!v) {
        if (required) return qkt_err_set(err, "checkpoint %s has no metadata '%s' (not a qkt GPT checkpoint?)", ck->path, key);
        *out = dflt;
        return 0;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        return qkt_err_set(err, "checkpoint %s: metadata %s='%.64s' is not a number", ck->path, key, v);
    *out = x;
    return 0;
}

static int meta_int(const qkt_checkpoint *ck, const char *key, int *out, qkt_err *err) {
    long long v;
    if (qkt_checkpoint_meta_int(ck, key, &v, err)) return -1;
    if (v < -2147483647LL || v > 2147483647LL)
        return qkt_err_set(err, "checkpoint %s: metadata %s=%lld is out of range", ck->path, key, v);
    *out = (int)v;
    return 0;
}

static int meta_bool(const qkt_checkpoint *ck, const char *key, bool dflt, bool *out, qkt_err *err) {
    const char *v = qkt_checkpoint_meta(ck, key);
    if (!v) *out = dflt;
    else if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1")) *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "0")) *out = false;
    else return qkt_err_set(err, "checkpoint %s: metadata %s='%.64s' is not true or false", ck->path, key, v);
    return 0;
}

/* norm, mlp, pos: optional (checkpoints from before the options are layernorm, gelu, learned) */
static int meta_enums(const qkt_checkpoint *ck, qkt_gpt_config *c, qkt_err *err) {
    const char *v;
    qkt_err e2;
    if ((v = qkt_checkpoint_meta(ck, "norm")) && qkt_norm_parse(v, &c->norm, &e2)) return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
    if ((v = qkt_checkpoint_meta(ck, "mlp")) && qkt_mlp_parse(v, &c->mlp, &e2)) return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
    if ((v = qkt_checkpoint_meta(ck, "pos")) && qkt_pos_parse(v, &c->pos, &e2)) return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
    return 0;
}

int qkt_gpt_config_from_checkpoint(const qkt_checkpoint *ck, qkt_gpt_config *cfg, qkt_err *err) {
    qkt_gpt_config c = qkt_gpt_config_default();
    if (meta_int(ck, "vocab_size", &c.vocab_size, err) || meta_int(ck, "block_size", &c.block_size, err) ||
        meta_int(ck, "n_layer", &c.n_layer, err) || meta_int(ck, "n_head", &c.n_head, err) ||
        meta_int(ck, "n_embd", &c.n_embd, err))
        return -1;
    const char *s = qkt_checkpoint_meta(ck, "attn_scale");
    if (!s) return qkt_err_set(err, "checkpoint %s has no metadata 'attn_scale' (not a qkt GPT checkpoint?)", ck->path);
    qkt_err e2;
    if (qkt_attn_scale_parse(s, &c.attn_scale, &e2))
        return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
    if (meta_real(ck, "attn_temp", 1, true, &c.attn_temp, err) || meta_bool(ck, "bias", true, &c.bias, err) ||
        meta_real(ck, "ln_eps", 1e-5, false, &c.ln_eps, err) || meta_real(ck, "dropout", 0, false, &c.dropout, err) ||
        meta_real(ck, "qk_init_mult", 1, false, &c.qk_init_mult, err) || meta_real(ck, "rope_base", 0, false, &c.rope_base, err) ||
        meta_enums(ck, &c, err))
        return -1;
    if (qkt_gpt_config_validate(&c, &e2)) return qkt_err_set(err, "checkpoint %s: bad config: %s", ck->path, e2.msg);
    /* The tensors that fix the sizes must agree with the metadata before the model is
     * allocated: metadata that lies (or was edited) would otherwise ask for any amount. */
    char last[64];
    snprintf(last, sizeof last, QKT_GPT_BLOCK ".ln_1.weight", c.n_layer - 1);
    const struct {
        const char *name;
        int ndim;
        int64_t d0, d1;
    } want[] = {{QKT_GPT_WTE, 2, c.vocab_size, c.n_embd},
                {QKT_GPT_WPE, 2, c.block_size, c.n_embd},
                {last, 1, c.n_embd, 0}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        if (i == 1 && c.pos != QKT_POS_LEARNED) continue; /* no wpe */
        const qkt_st_tensor *t = qkt_safetensors_find(&ck->st, want[i].name);
        if (!t) return qkt_err_set(err, "checkpoint %s has no tensor '%s' that its config (n_layer=%d) needs", ck->path, want[i].name, c.n_layer);
        if (t->ndim != want[i].ndim || t->shape[0] != want[i].d0 || (want[i].ndim == 2 && t->shape[1] != want[i].d1))
            return qkt_err_set(err, "checkpoint %s: tensor '%s' does not have the shape its config gives (vocab_size=%d, block_size=%d, n_embd=%d)",
                               ck->path, want[i].name, c.vocab_size, c.block_size, c.n_embd);
    }
    *cfg = c;
    return 0;
}

int qkt_gpt_check_checkpoint(const qkt_checkpoint *ck, const qkt_gpt *g, qkt_err *err) {
    const qkt_gpt_config *c = &g->cfg;
    if (qkt_checkpoint_expect_int(ck, "vocab_size", c->vocab_size, err) ||
        qkt_checkpoint_expect_int(ck, "block_size", c->block_size, err) ||
        qkt_checkpoint_expect_int(ck, "n_layer", c->n_layer, err) || qkt_checkpoint_expect_int(ck, "n_head", c->n_head, err) ||
        qkt_checkpoint_expect_int(ck, "n_embd", c->n_embd, err) ||
        qkt_checkpoint_expect_str(ck, "attn_scale", qkt_attn_scale_name(c->attn_scale), err) ||
        qkt_checkpoint_expect_real(ck, "attn_temp", c->attn_temp, err))
        return -1;
    if (qkt_checkpoint_meta(ck, "bias")) {
        bool b;
        if (meta_bool(ck, "bias", true, &b, err)) return -1;
        if (b != c->bias)
            return qkt_err_set(err, "checkpoint %s was saved for bias=%s, this model has %s", ck->path, b ? "true" : "false",
                               c->bias ? "true" : "false");
    }
    if (qkt_checkpoint_meta(ck, "ln_eps") && qkt_checkpoint_expect_real(ck, "ln_eps", c->ln_eps, err)) return -1;
    /* the options: a checkpoint without the key was saved by a model of the default */
    const struct {
        const char *key, *have, *dflt;
    } opt[] = {{"norm", qkt_norm_name(c->norm), qkt_norm_name(QKT_NORM_LAYERNORM)},
               {"mlp", qkt_mlp_name(c->mlp), qkt_mlp_name(QKT_MLP_GELU)},
               {"pos", qkt_pos_name(c->pos), qkt_pos_name(QKT_POS_LEARNED)}};
    for (size_t i = 0; i < sizeof opt / sizeof *opt; i++) {
        const char *v = qkt_checkpoint_meta(ck, opt[i].key);
        if (strcmp(v ? v : opt[i].dflt, opt[i].have))
            return qkt_err_set(err, "checkpoint %s was saved for %s=%s, this model has %s", ck->path, opt[i].key, v ? v : opt[i].dflt,
                               opt[i].have);
    }
    if (c->pos == QKT_POS_ROPE && qkt_checkpoint_meta(ck, "rope_base") &&
        qkt_checkpoint_expect_real(ck, "rope_base", c->rope_base > 0 ? c->rope_base : 10000.0, err))
        return -1;
    return 0;
}

int qkt_gpt_restore(const qkt_checkpoint *ck, qkt_gpt *g, const qkt_ckpt_slot *slots, int n_slots, qkt_err *err) {
    if (qkt_gpt_check_checkpoint(ck, g, err)) return -1;
    return qkt_checkpoint_restore(ck, &g->params, slots, n_slots, 0, err);
}

int qkt_gpt_load(const char *path, qkt_gpt *g, const qkt_ckpt_slot *slots, int n_slots, qkt_err *err) {
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(path, &ck, err)) return -1;
    int rc = qkt_gpt_restore(&ck, g, slots, n_slots, err);
    qkt_checkpoint_close(&ck);
    return rc;
}

int qkt_gpt_open(const char *path, qkt_gpt *g, qkt_err *err) {
    memset(g, 0, sizeof *g);
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(path, &ck, err)) return -1;
    qkt_gpt_config c;
    int rc = qkt_gpt_config_from_checkpoint(&ck, &c, err);
    if (!rc) rc = qkt_gpt_init(g, &c, err);
    if (!rc) {
        rc = qkt_checkpoint_restore(&ck, &g->params, NULL, 0, 0, err);
        if (rc) qkt_gpt_free(g);
    }
    qkt_checkpoint_close(&ck);
    return rc;
}
