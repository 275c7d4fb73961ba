/* Checkpoint surgery for the CLI tests (header-only: tests/support links autograd alone,
 * and only tests that link io include this). */
#ifndef QKT_TEST_CKPT_H
#define QKT_TEST_CKPT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_safetensors.h"
#include "qkt_test.h"

/* Changes a checkpoint held in memory: its tensors' bytes (in file order) and metadata.
 * It may leave a tensor out (st->t[i].name = NULL) and change the metadata's count
 * st->n_meta by up to QKT_TEST_CKPT_MORE_META entries (meta has room for them). */
#define QKT_TEST_CKPT_MORE_META 16
typedef void (*qkt_test_ckpt_edit)(qkt_safetensors *st, qkt_st_meta *meta, uint8_t *data, void *user);

/* The bytes of tensor `name` inside `data` (laid out as qkt_test_ckpt_rewrite passes them), or NULL. */
static inline uint8_t *qkt_test_ckpt_tensor(const qkt_safetensors *st, uint8_t *data, const char *name) {
    size_t off = 0;
    for (int i = 0; i < st->n; i++) {
        if (!strcmp(st->t[i].name, name)) return data + off;
        off += st->t[i].end - st->t[i].begin;
    }
    return NULL;
}

/* Reads checkpoint src, lets `edit` change a copy of its tensors and metadata, and writes
 * the result to dst: checksummed like qkt's own (checked), or without checksums as another
 * tool would write it. */
static inline void qkt_test_ckpt_rewrite(const char *src, const char *dst, bool checked, qkt_test_ckpt_edit edit, void *user) {
    qkt_safetensors st;
    qkt_err err;
    if (qkt_safetensors_read(src, &st, &err)) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    qkt_st_write *w = calloc((size_t)st.n, sizeof *w);
    qkt_st_meta *m = calloc((size_t)st.n_meta + QKT_TEST_CKPT_MORE_META, sizeof *m);
    char **names = calloc((size_t)st.n + 1, sizeof *names);
    const int n_meta = st.n_meta;
    size_t total = 0;
    for (int i = 0; i < st.n; i++) total += st.t[i].end - st.t[i].begin;
    uint8_t *data = malloc(total + 1), *p = data;
    for (int i = 0; i < st.n; i++) {
        const qkt_st_tensor *t = &st.t[i];
        memcpy(p, t->data, t->end - t->begin);
        w[i] = (qkt_st_write){t->name, t->dtype, t->ndim, {0}, p};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
        p += t->end - t->begin;
        names[i] = t->name;
    }
    for (int i = 0; i < st.n_meta; i++) m[i] = st.meta[i];
    edit(&st, m, data, user);
    int nw = 0;
    for (int i = 0; i < st.n; i++)
        if (st.t[i].name) w[nw++] = w[i];
    EXPECT(st.n_meta >= 0 && st.n_meta <= n_meta + QKT_TEST_CKPT_MORE_META, "the edit left %d metadata entries", st.n_meta);
    int rc = checked ? qkt_safetensors_write_checked(dst, w, nw, m, st.n_meta, &err) : qkt_safetensors_write(dst, w, nw, m, st.n_meta, &err);
    EXPECT(rc == 0, "%s", err.msg);
    for (int i = 0; i < st.n; i++) st.t[i].name = names[i]; /* st's own, to free */
    st.n_meta = n_meta;
    free(w), free(m), free(data), free(names);
    qkt_safetensors_free(&st);
}

/* What qkt_test_ckpt_rewrite_meta changes. */
typedef struct {
    const char *drop_tensor;
    const char *const *kv;
    int n_kv;
} qkt_test_ckpt_meta_edit;

static inline void qkt_test_ckpt_meta_edit_fn(qkt_safetensors *st, qkt_st_meta *meta, uint8_t *data, void *user) {
    const qkt_test_ckpt_meta_edit *e = (const qkt_test_ckpt_meta_edit *)user;
    (void)data;
    for (int i = 0; i < st->n; i++)
        if (e->drop_tensor && !strcmp(st->t[i].name, e->drop_tensor)) st->t[i].name = NULL;
    int nm = 0;
    for (int i = 0; i < st->n_meta; i++) { /* the keys kv replaces go; the rest stay in order */
        bool replaced = false;
        for (int k = 0; k < e->n_kv; k += 2) replaced |= !strcmp(e->kv[k], meta[i].key);
        if (!replaced) meta[nm++] = meta[i];
    }
    for (int k = 0; k < e->n_kv; k += 2)
        if (e->kv[k + 1]) meta[nm++] = (qkt_st_meta){e->kv[k], e->kv[k + 1]};
    st->n_meta = nm;
}

/* Copies checkpoint src to dst (without checksums) with metadata key=value overrides (kv:
 * n_kv strings, at most 2 QKT_TEST_CKPT_MORE_META; a NULL value drops the key) and
 * optionally without one tensor: a file whose config lies about its tensors. */
static inline void qkt_test_ckpt_rewrite_meta(const char *src, const char *dst, const char *drop_tensor, const char *const *kv, int n_kv) {
    qkt_test_ckpt_meta_edit e = {drop_tensor, kv, n_kv};
    qkt_test_ckpt_rewrite(src, dst, false, qkt_test_ckpt_meta_edit_fn, &e);
}
#endif
