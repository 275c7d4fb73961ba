/* libFuzzer harness for the safetensors reader: any bytes must either parse into
 * a consistent description (checked here, then written back and re-read to the
 * same tensors) or fail with one line starting with the label. Never a crash. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qkt_safetensors.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

/* Writes the parsed tensors back out (in memory) and parses the result again. */
static void round_trip(const qkt_safetensors *st) {
    qkt_st_write *w = calloc((size_t)st->n + 1, sizeof *w);
    for (int i = 0; i < st->n; i++) {
        const qkt_st_tensor *t = &st->t[i];
        w[i] = (qkt_st_write){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = t->data};
        memcpy(w[i].shape, t->shape, sizeof t->shape);
    }
    int fd = memfd_create("fuzz", 0);
    MUST(fd >= 0);
    qkt_err err;
    MUST(qkt_safetensors_write_fd(fd, "mem", w, st->n, st->meta, st->n_meta, &err) == 0);
    off_t n = lseek(fd, 0, SEEK_CUR);
    uint8_t *buf = malloc((size_t)n + 1);
    MUST(pread(fd, buf, (size_t)n, 0) == n);
    close(fd);
    qkt_safetensors back;
    MUST(qkt_safetensors_parse(buf, (size_t)n, "mem", &back, &err) == 0);
    MUST(back.n == st->n && back.n_meta == st->n_meta && back.header_len % 8 == 0);
    for (int i = 0; i < st->n; i++) {
        const qkt_st_tensor *a = &st->t[i], *b = &back.t[i];
        MUST(!strcmp(a->name, b->name) && a->dtype == b->dtype && a->ndim == b->ndim && a->numel == b->numel);
        MUST(!memcmp(a->shape, b->shape, sizeof a->shape));
        MUST(a->end - a->begin == b->end - b->begin && !memcmp(a->data, b->data, a->end - a->begin));
    }
    for (int i = 0; i < st->n_meta; i++) {
        const char *v = qkt_safetensors_meta(&back, st->meta[i].key);
        MUST(v && !strcmp(v, st->meta[i].value));
    }
    qkt_safetensors_free(&back);
    free(buf);
    free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qkt_safetensors st;
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_safetensors_parse(data, size, "fuzz", &st, &err) != 0) {
        MUST(!strncmp(err.msg, "fuzz: ", 6) && strlen(err.msg) > 6 && !strchr(err.msg, '\n'));
        MUST(st.n == 0 && st.t == NULL);
        return 0;
    }
    size_t data_len = size - 8 - (size_t)st.header_len;
    for (int i = 0; i < st.n; i++) {
        const qkt_st_tensor *t = &st.t[i];
        MUST(t->begin <= t->end && t->end <= data_len);
        MUST((uint64_t)t->numel * qkt_st_dtype_size(t->dtype) == t->end - t->begin);
        MUST(t->data == data + 8 + st.header_len + t->begin);
        MUST(qkt_safetensors_find(&st, t->name) == t); /* names are unique */
        if (t->numel <= (1 << 16)) { /* every accessor on every tensor: succeed or say why */
            void *out = malloc((size_t)t->numel * 8 + 8);
            int ok = qkt_st_tensor_to_real(t, out, t->numel, "fuzz", &err) == 0;
            ok += qkt_st_tensor_to_i64(t, out, t->numel, "fuzz", &err) == 0;
            ok += qkt_st_tensor_to_i32(t, out, t->numel, "fuzz", &err) == 0;
            ok += qkt_st_tensor_to_u64(t, out, t->numel, "fuzz", &err) == 0;
            MUST(qkt_st_tensor_to_real(t, out, t->numel + 1, "fuzz", &err) == -1);
            (void)ok;
            free(out);
        }
    }
    for (int i = 0; i < st.n_meta; i++) MUST(qkt_safetensors_meta(&st, st.meta[i].key) != NULL);
    if (size < (1 << 16)) round_trip(&st);
    qkt_safetensors_free(&st);
    return 0;
}
