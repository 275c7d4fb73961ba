/* Checkpoints of a qkt_params store as safetensors: save, config checks on the
 * metadata, and an all-or-nothing restore. API: qkt_safetensors.h. */
#include "qkt_safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qkt_checkpoint_save(const char *path, const qkt_params *p, const qkt_st_meta *meta, int n_meta,
                        const qkt_st_write *extra, int n_extra, qkt_err *err) {
    QKT_CHECK(p->finalized, "qkt_checkpoint_save(%s) before qkt_params_finalize", path);
    QKT_CHECK(n_extra >= 0 && n_meta >= 0, "negative counts");
    qkt_st_write *w = qkt_calloc((size_t)(p->n + n_extra) + 1, sizeof *w);
    for (int i = 0; i < p->n; i++) {
        const qkt_tensor *t = p->t[i];
        w[i] = (qkt_st_write){.name = t->name, .dtype = QKT_ST_REAL, .ndim = t->ndim, .data = t->data};
        for (int d = 0; d < t->ndim; d++) w[i].shape[d] = t->shape[d];
    }
    for (int i = 0; i < n_extra; i++) {
        QKT_CHECK(!qkt_params_find(p, extra[i].name), "extra tensor %s has a parameter's name", extra[i].name);
        w[p->n + i] = extra[i];
    }
    int rc = qkt_safetensors_write_checked(path, w, p->n + n_extra, meta, n_meta, err);
    free(w);
    return rc;
}

int qkt_checkpoint_open(const char *path, qkt_checkpoint *ck, qkt_err *err) {
    memset(ck, 0, sizeof *ck);
    if (qkt_safetensors_read(path, &ck->st, err) != 0) return -1;
    ck->path = qkt_strdup(path);
    return 0;
}

void qkt_checkpoint_close(qkt_checkpoint *ck) {
    qkt_safetensors_free(&ck->st);
    free(ck->path);
    memset(ck, 0, sizeof *ck);
}

const char *qkt_checkpoint_meta(const qkt_checkpoint *ck, const char *key) { return qkt_safetensors_meta(&ck->st, key); }

static const char *need_meta(const qkt_checkpoint *ck, const char *key, qkt_err *err) {
    const char *v = qkt_checkpoint_meta(ck, key);
    if (!v) qkt_err_set(err, "checkpoint %s has no metadata '%s' (not saved by this kind of model?)", ck->path, key);
    return v;
}

static bool parse_ll(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

int qkt_checkpoint_meta_int(const qkt_checkpoint *ck, const char *key, long long *out, qkt_err *err) {
    const char *v = need_meta(ck, key, err);
    if (!v) return -1;
    if (!parse_ll(v, out))
        return qkt_err_set(err, "checkpoint %s: metadata %s='%.64s' is not an integer", ck->path, key, v);
    return 0;
}

int qkt_checkpoint_expect_str(const qkt_checkpoint *ck, const char *key, const char *have, qkt_err *err) {
    const char *v = need_meta(ck, key, err);
    if (!v) return -1;
    if (strcmp(v, have) != 0)
        return qkt_err_set(err, "checkpoint %s was saved for %s=%.64s, this model has %.64s", ck->path, key, v, have);
    return 0;
}

int qkt_checkpoint_expect_int(const qkt_checkpoint *ck, const char *key, long long have, qkt_err *err) {
    long long v;
    if (qkt_checkpoint_meta_int(ck, key, &v, err) != 0) return -1;
    if (v != have) return qkt_err_set(err, "checkpoint %s was saved for %s=%lld, this model has %lld", ck->path, key, v, have);
    return 0;
}

int qkt_checkpoint_expect_real(const qkt_checkpoint *ck, const char *key, double have, qkt_err *err) {
    const char *v = need_meta(ck, key, err);
    if (!v) return -1;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end) return qkt_err_set(err, "checkpoint %s: metadata %s='%.64s' is not a number", ck->path, key, v);
    if (x == have) return 0;
    char hb[32]; /* shortest of %.15g / %.17g that reads back exactly: 0.1, not 0.10000000000000001 */
    snprintf(hb, sizeof hb, "%.15g", have);
    if (strtod(hb, NULL) != have) snprintf(hb, sizeof hb, "%.17g", have);
    return qkt_err_set(err, "checkpoint %s was saved for %s=%.64s, this model has %s", ck->path, key, v, hb);
}

/* ---------------------------------------------------------------- restore */
static const char *shape64(int ndim, const int64_t *s, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < ndim && k < cap; d++) k += (size_t)snprintf(buf + k, cap - k, d ? ", %lld" : "%lld", (long long)s[d]);
    if (k < cap) snprintf(buf + k, cap - k, ndim == 1 ? ",)" : ")");
    return buf;
}

/* The file's tensor `name` exists with exactly the expected shape and a dtype
 * convertible to `to`; `what` is "parameter" or "tensor". */
static const qkt_st_tensor *check_one(const qkt_checkpoint *ck, const char *what, const char *name, int ndim,
                                      const int64_t *shape, qkt_st_dtype to, qkt_err *err) {
    char want[256], got[256]; /* 8 dims of up to 20 digits fit */
    const qkt_st_tensor *t = qkt_safetensors_find(&ck->st, name);
    if (!t) {
        qkt_err_set(err, "checkpoint %s has no %s '%s' %s (saved for another model?)", ck->path, what, name,
                    shape64(ndim, shape, want, sizeof want));
        return NULL;
    }
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        qkt_err_set(err, "checkpoint %s: %s '%s' has shape %s in the file, expected %s", ck->path, what, name,
                    shape64(t->ndim, t->shape, got, sizeof got), shape64(ndim, shape, want, sizeof want));
        return NULL;
    }
    bool is_float = t->dtype == QKT_ST_F32 || t->dtype == QKT_ST_F64;
    bool is_int = t->dtype == QKT_ST_BOOL || t->dtype == QKT_ST_U8 || t->dtype == QKT_ST_I8 || t->dtype == QKT_ST_I16 ||
                  t->dtype == QKT_ST_U16 || t->dtype == QKT_ST_I32 || t->dtype == QKT_ST_U32 || t->dtype == QKT_ST_I64 ||
                  t->dtype == QKT_ST_U64;
    if (to == QKT_ST_REAL ? !is_float : !is_int) {
        qkt_err_set(err, "checkpoint %s: %s '%s' has dtype %s, expected %s", ck->path, what, name,
                    qkt_st_dtype_name(t->dtype), to == QKT_ST_REAL ? "F32 or F64" : "an integer dtype");
        return NULL;
    }
    return t;
}

/* Index of the first NaN/Inf of a float tensor, or -1. */
static int64_t first_nonfinite(const qkt_st_tensor *t) {
    for (int64_t i = 0; i < t->numel; i++) {
        double x;
        if (t->dtype == QKT_ST_F32) {
            float f;
            memcpy(&f, t->data + 4 * i, 4);
            x = f;
        } else {
            memcpy(&x, t->data + 8 * i, 8);
        }
        if (!isfinite(x)) return i;
    }
    return -1;
}

/* A model (or optimizer state) with a NaN or Inf would only produce garbage. */
static int check_finite(const qkt_checkpoint *ck, const char *what, const qkt_st_tensor *t, qkt_err *err) {
    int64_t bad = first_nonfinite(t);
    if (bad < 0) return 0;
    return qkt_err_set(err, "checkpoint %s: %s '%s' holds a non-finite value at index %lld: a diverged model or a damaged file",
                       ck->path, what, t->name, (long long)bad);
}

static bool is_state_name(const char *name) {
    static const char *const prefixes[] = {"optim.", "rng.", "train."};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return true;
    return false;
}

int qkt_checkpoint_restore(const qkt_checkpoint *ck, qkt_params *p, const qkt_ckpt_slot *slots, int n_slots, int flags,
                           qkt_err *err) {
    QKT_CHECK(p->finalized, "qkt_checkpoint_restore(%s) before qkt_params_finalize", ck->path);
    const qkt_st_tensor **src = qkt_calloc((size_t)(p->n + n_slots) + 1, sizeof *src);
    void **ibuf = qkt_calloc((size_t)n_slots + 1, sizeof *ibuf); /* integer slots, converted before any copy */
    int rc = 0;

    /* 1. validate: parameters, slots, and tensors nobody asked for */
    for (int i = 0; i < p->n && !rc; i++) {
        const qkt_tensor *t = p->t[i];
        int64_t shape[QKT_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        src[i] = check_one(ck, "parameter", t->name, t->ndim, shape, QKT_ST_REAL, err);
        rc = src[i] ? check_finite(ck, "parameter", src[i], err) : -1;
    }
    for (int j = 0; j < n_slots && !rc; j++) {
        const qkt_ckpt_slot *s = &slots[j];
        QKT_CHECK(s->dtype == QKT_ST_REAL || s->dtype == QKT_ST_I32 || s->dtype == QKT_ST_I64 || s->dtype == QKT_ST_U64,
                  "slot %s: destination dtype must be QKT_ST_REAL, I32, I64 or U64", s->name);
        QKT_CHECK(!qkt_params_find(p, s->name), "slot %s has a parameter's name", s->name);
        QKT_CHECK(s->ndim >= 0 && s->ndim <= QKT_ST_MAX_DIMS, "slot %s: ndim %d", s->name, s->ndim);
        const qkt_st_tensor *t = check_one(ck, "tensor", s->name, s->ndim, s->shape, s->dtype, err);
        src[p->n + j] = t;
        if (!t) {
            rc = -1;
        } else if (s->dtype == QKT_ST_REAL) {
            rc = check_finite(ck, "tensor", t, err);
        } else {
            ibuf[j] = qkt_malloc((size_t)t->numel * qkt_st_dtype_size(s->dtype) + 1);
            rc = s->dtype == QKT_ST_I32   ? qkt_st_tensor_to_i32(t, ibuf[j], t->numel, ck->path, err)
                 : s->dtype == QKT_ST_I64 ? qkt_st_tensor_to_i64(t, ibuf[j], t->numel, ck->path, err)
                                          : qkt_st_tensor_to_u64(t, ibuf[j], t->numel, ck->path, err);
        }
    }
    for (int k = 0; k < ck->st.n && !rc && !(flags & QKT_CKPT_ALLOW_UNUSED); k++) {
        const char *name = ck->st.t[k].name;
        if (is_state_name(name) || qkt_params_find(p, name)) continue;
        bool asked = false;
        for (int j = 0; j < n_slots && !asked; j++) asked = !strcmp(slots[j].name, name);
        if (!asked)
            rc = qkt_err_set(err, "checkpoint %s has tensor '%.64s' that this model does not have (saved for another config?)",
                             ck->path, name);
    }

    /* 2. copy: nothing below can fail */
    if (!rc) {
        for (int i = 0; i < p->n; i++) qkt_st_tensor_to_real(src[i], p->t[i]->data, p->t[i]->size, ck->path, NULL);
        for (int j = 0; j < n_slots; j++) {
            const qkt_st_tensor *t = src[p->n + j];
            if (slots[j].dtype == QKT_ST_REAL)
                qkt_st_tensor_to_real(t, slots[j].data, t->numel, ck->path, NULL);
            else
                memcpy(slots[j].data, ibuf[j], (size_t)t->numel * qkt_st_dtype_size(slots[j].dtype));
        }
    }
    for (int j = 0; j < n_slots; j++) free(ibuf[j]);
    free(ibuf);
    free(src);
    return rc;
}

int qkt_checkpoint_load(const char *path, qkt_params *p, const qkt_ckpt_slot *slots, int n_slots, int flags,
                        qkt_err *err) {
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(path, &ck, err) != 0) return -1;
    int rc = qkt_checkpoint_restore(&ck, p, slots, n_slots, flags, err);
    qkt_checkpoint_close(&ck);
    return rc;
}
