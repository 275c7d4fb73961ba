/* Checkpoint surgery for the CLI tests (header-only: tests/support links autograd alone,
 * and only tests that link io include this). */
#ifndef QKT_TEST_CKPT_H
#define QKT_TEST_CKPT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_safetensors.h"
#include "qkt_test.h"

/* Changes a checkpoint held in memory: its tensors' bytes (in file order) and metadata. */
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
    qkt_st_meta *m = calloc((size_t)st.n_meta + 1, sizeof *m);
    size_t total = 0;
    for (int i = 0; i < st.n; i++) total += st.t[i].end - st.t[i].begin;
    uint8_t *data = malloc(total + 1), *p = data;
    for (int i = 0; i < st.n; i++) {
        const qkt_st_tensor *t = &st.t[i];
        memcpy(p, t->data, t->end - t->begin);
        w[i] = (qkt_st_write){t->name, t->dtype, t->ndim, {0}, p};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
        p += t->end - t->begin;
    }
    for (int i = 0; i < st.n_meta; i++) m[i] = st.meta[i];
    edit(&st, m, data, user);
    int rc = checked ? qkt_safetensors_write_checked(dst, w, st.n, m, st.n_meta, &err)
                     : qkt_safetensors_write(dst, w, st.n, m, st.n_meta, &err);
    EXPECT(rc == 0, "%s", err.msg);
    free(w), free(m), free(data);
    qkt_safetensors_free(&st);
}
#endif
