/* GPT checkpoints: config <-> safetensors metadata (the field table's QKT_FIELD_META
 * rows, train_fields.def), save, checked load. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_train_fields.h"

/* The table's metadata fields in their metadata order (f->meta = 1, 2, ...); n of them. */
static int meta_fields(const qkt_train_field **out) {
    int n = 0;
    for (int k = 1;; k++) {
        const qkt_train_field *hit = NULL;
        for (int i = 0; i < qkt_train_field_count() && !hit; i++)
            if (qkt_train_field_at(i)->meta == k) hit = qkt_train_field_at(i);
        if (!hit) return n;
        out[n++] = hit;
    }
}

/* rope_base's value in the metadata: written for pos rope only, 0 as 10000. */
static bool rope_value(const qkt_gpt_config *c, double *v) {
    *v = c->rope_base > 0 ? c->rope_base : 10000.0;
    return c->pos == QKT_POS_ROPE;
}

void qkt_gpt_meta_fill(qkt_gpt_meta *m, const qkt_gpt_config *c) {
    const qkt_train_field *fs[QKT_GPT_META_N];
    int n = meta_fields(fs);
    QKT_CHECK(n < QKT_GPT_META_N, "%d metadata fields: QKT_GPT_META_N is %d", n, QKT_GPT_META_N);
    m->n = 0;
    for (int i = 0; i < n; i++) {
        const void *p = qkt_train_field_ptr_model(fs[i], (qkt_gpt_config *)c);
        double rope;
        if (fs[i]->where & QKT_FIELD_META_ROPE) {
            if (!rope_value(c, &rope)) continue;
            p = &rope;
        }
        qkt_train_field_format(p, fs[i], m->val[m->n], sizeof m->val[m->n]);
        m->kv[m->n] = (qkt_st_meta){fs[i]->name, m->val[m->n]};
        m->n++;
    }
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

/* One metadata field into c: a required one must be there, an optional one absent keeps
 * the default (files of other tools, and of qkt before the options, lack them). */
static int meta_field(const qkt_checkpoint *ck, const qkt_train_field *f, qkt_gpt_config *c, qkt_err *err) {
    void *p = qkt_train_field_ptr_model(f, c);
    bool req = f->where & QKT_FIELD_META_REQ;
    const char *v = qkt_checkpoint_meta(ck, f->name);
    qkt_err e2;
    switch (f->type) {
    case QKT_FIELD_INT: return req || v ? meta_int(ck, f->name, (int *)p, err) : 0;
    case QKT_FIELD_DOUBLE: return meta_real(ck, f->name, f->dflt, req, (double *)p, err);
    case QKT_FIELD_BOOL: return meta_bool(ck, f->name, f->dflt != 0, (bool *)p, err);
    case QKT_FIELD_ENUM:
        if (!v && req) return qkt_err_set(err, "checkpoint %s has no metadata '%s' (not a qkt GPT checkpoint?)", ck->path, f->name);
        if (v && f->en->parse(v, (int *)p, &e2)) return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
        return 0;
    default: return qkt_err_set(err, "checkpoint %s: metadata '%s' has no reader", ck->path, f->name);
    }
}

int qkt_gpt_config_from_checkpoint(const qkt_checkpoint *ck, qkt_gpt_config *cfg, qkt_err *err) {
    qkt_gpt_config c = qkt_gpt_config_default();
    const qkt_train_field *fs[QKT_GPT_META_N];
    int n = meta_fields(fs);
    for (int i = 0; i < n; i++)
        if (meta_field(ck, fs[i], &c, err)) return -1;
    qkt_err e2;
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

/* One QKT_FIELD_META_CHECK field: a required key must equal the model's; an optional
 * number or bool is compared when present, an optional enum against its default when
 * absent (a checkpoint without the key was saved by a model of the default). */
static int check_field(const qkt_checkpoint *ck, const qkt_train_field *f, const qkt_gpt_config *c, qkt_err *err) {
    const void *p = qkt_train_field_ptr_model(f, (qkt_gpt_config *)c);
    const char *v = qkt_checkpoint_meta(ck, f->name);
    bool req = f->where & QKT_FIELD_META_REQ;
    double rope;
    if (f->where & QKT_FIELD_META_ROPE) {
        if (!rope_value(c, &rope)) return 0;
        p = &rope;
    }
    if (!req && !v && f->type != QKT_FIELD_ENUM) return 0;
    switch (f->type) {
    case QKT_FIELD_INT: return qkt_checkpoint_expect_int(ck, f->name, *(const int *)p, err);
    case QKT_FIELD_DOUBLE: return qkt_checkpoint_expect_real(ck, f->name, *(const double *)p, err);
    case QKT_FIELD_BOOL: {
        bool b, have = *(const bool *)p;
        if (meta_bool(ck, f->name, true, &b, err)) return -1;
        if (b != have)
            return qkt_err_set(err, "checkpoint %s was saved for %s=%s, this model has %s", ck->path, f->name, b ? "true" : "false",
                               have ? "true" : "false");
        return 0;
    }
    case QKT_FIELD_ENUM: {
        const char *have = f->en->name(*(const int *)p);
        if (req) return qkt_checkpoint_expect_str(ck, f->name, have, err);
        const char *was = v ? v : f->en->name((int)f->dflt);
        if (strcmp(was, have)) return qkt_err_set(err, "checkpoint %s was saved for %s=%s, this model has %s", ck->path, f->name, was, have);
        return 0;
    }
    default: return 0;
    }
}

int qkt_gpt_check_checkpoint(const qkt_checkpoint *ck, const qkt_gpt *g, qkt_err *err) {
    const qkt_train_field *fs[QKT_GPT_META_N];
    int n = meta_fields(fs);
    for (int i = 0; i < n; i++)
        if ((fs[i]->where & QKT_FIELD_META_CHECK) && check_field(ck, fs[i], &g->cfg, err)) return -1;
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
