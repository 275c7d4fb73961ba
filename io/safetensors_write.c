/* safetensors writer: header built with cJSON's string escaping and exact
 * integer formatting, tensors laid out back to back, atomic replacement of the
 * target. API: qkt_safetensors.h. */
#include "qkt_io.h"
#include "qkt_safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1) + 256;
        b->s = qkt_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

__attribute__((format(printf, 2, 3))) static void sb_printf(strbuf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    QKT_CHECK(n >= 0 && (size_t)n < sizeof tmp, "sb_printf overflow");
    sb_put(b, tmp, (size_t)n);
}

/* A JSON string literal with quotes and escapes (cJSON does the escaping). */
static void sb_json_string(strbuf *b, const char *s) {
    cJSON *item = cJSON_CreateString(s);
    char *q = cJSON_PrintUnformatted(item);
    sb_put(b, q, strlen(q));
    cJSON_free(q);
    cJSON_Delete(item);
}

static bool utf8_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p, len, cp, min;
        if (c < 0x80) {
            p++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
        else return false;
        for (unsigned k = 1; k < len; k++) {
            if ((p[k] & 0xC0) != 0x80) return false; /* also stops at the NUL */
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        p += len;
    }
    return true;
}

static uint64_t tensor_bytes(const qkt_st_write *t) {
    uint64_t n = qkt_st_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) {
        QKT_CHECK(t->shape[d] >= 0, "tensor %s: negative dim %lld", t->name, (long long)t->shape[d]);
        QKT_CHECK(!__builtin_mul_overflow(n, (uint64_t)t->shape[d], &n), "tensor %s: size overflows", t->name);
    }
    return n;
}

/* The padded header (length a multiple of 8, padded with spaces), or -1 when a
 * name or a metadata string is not valid UTF-8. */
static int build_header(const char *label, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta, strbuf *b,
                        qkt_err *err) {
    for (int i = 0; i < n; i++) {
        QKT_CHECK(t[i].name && strcmp(t[i].name, "__metadata__") != 0, "bad tensor name at %d", i);
        QKT_CHECK(t[i].ndim >= 0 && t[i].ndim <= QKT_ST_MAX_DIMS, "tensor %s: ndim %d", t[i].name, t[i].ndim);
        QKT_CHECK((unsigned)t[i].dtype < QKT_ST_DTYPE_COUNT, "tensor %s: bad dtype", t[i].name);
        for (int j = 0; j < i; j++) QKT_CHECK(strcmp(t[i].name, t[j].name) != 0, "tensor %s written twice", t[i].name);
        if (!utf8_ok(t[i].name)) return qkt_err_set(err, "%s: tensor name #%d is not valid UTF-8", label, i);
    }
    for (int i = 0; i < n_meta; i++) {
        for (int j = 0; j < i; j++) QKT_CHECK(strcmp(meta[i].key, meta[j].key) != 0, "metadata %s twice", meta[i].key);
        if (!utf8_ok(meta[i].key) || !utf8_ok(meta[i].value))
            return qkt_err_set(err, "%s: metadata entry #%d is not valid UTF-8", label, i);
    }
    sb_put(b, "{", 1);
    if (n_meta > 0) {
        sb_put(b, "\"__metadata__\":{", 16);
        for (int i = 0; i < n_meta; i++) {
            if (i) sb_put(b, ",", 1);
            sb_json_string(b, meta[i].key);
            sb_put(b, ":", 1);
            sb_json_string(b, meta[i].value);
        }
        sb_put(b, "}", 1);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        if (i || n_meta > 0) sb_put(b, ",", 1);
        sb_json_string(b, t[i].name);
        sb_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", qkt_st_dtype_name(t[i].dtype));
        for (int d = 0; d < t[i].ndim; d++) sb_printf(b, d ? ",%lld" : "%lld", (long long)t[i].shape[d]);
        uint64_t nb = tensor_bytes(&t[i]);
        sb_printf(b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + nb));
        off += nb;
    }
    sb_put(b, "}", 1);
    while (b->len % 8) sb_put(b, " ", 1);
    return 0;
}

/* The caller's metadata plus QKT_ST_CRC_PREFIX<name> = the CRC-32C of each tensor's
 * bytes (8 hex digits) and QKT_ST_CRC_HEADER = "00000000", a placeholder for the
 * header's own checksum. *all and *vals are allocated (free_checksums). */
static int with_checksums(const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta, qkt_st_meta **all,
                          char **vals) {
    size_t pl = strlen(QKT_ST_CRC_PREFIX);
    *all = qkt_calloc((size_t)(n_meta + n) + 2, sizeof **all);
    *vals = qkt_malloc((size_t)(n + 1) * 9 + 1);
    for (int i = 0; i < n_meta; i++) {
        QKT_CHECK(strncmp(meta[i].key, QKT_ST_CRC_PREFIX, pl) && strcmp(meta[i].key, QKT_ST_CRC_HEADER),
                  "metadata key %s is reserved for checksums", meta[i].key);
        (*all)[i] = meta[i];
    }
    for (int i = 0; i < n; i++) {
        uint64_t nb = tensor_bytes(&t[i]);
        QKT_CHECK(nb == 0 || t[i].data, "tensor %s: NULL data", t[i].name);
        snprintf(*vals + 9 * i, 9, "%08x", nb ? qkt_crc32c(0, t[i].data, (size_t)nb) : 0u);
        char *key = qkt_malloc(pl + strlen(t[i].name) + 1);
        memcpy(key, QKT_ST_CRC_PREFIX, pl);
        strcpy(key + pl, t[i].name);
        (*all)[n_meta + i] = (qkt_st_meta){key, *vals + 9 * i};
    }
    memcpy(*vals + 9 * n, "00000000", 9);
    (*all)[n_meta + n] = (qkt_st_meta){qkt_strdup(QKT_ST_CRC_HEADER), *vals + 9 * n};
    return n_meta + n + 1;
}

static void free_checksums(qkt_st_meta *all, char *vals, int from, int to) {
    for (int i = from; i < to; i++) free((char *)all[i].key);
    free(all), free(vals);
}

/* The bytes of a safetensors file to fd; with checksums (with_checksums) when asked. */
static int write_fd(int fd, const char *label, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                    bool checksums, qkt_err *err) {
    strbuf hb = {0};
    qkt_st_meta *all = (qkt_st_meta *)meta;
    char *vals = NULL;
    int n_all = checksums ? with_checksums(t, n, meta, n_meta, &all, &vals) : n_meta;
    int hrc = build_header(label, t, n, all, n_all, &hb, err);
    if (checksums) free_checksums(all, vals, n_meta, n_all);
    if (hrc != 0) {
        free(hb.s);
        return -1;
    }
    if (checksums) { /* the header's checksum, over the header with zeros in its place */
        const char *pat = "\"" QKT_ST_CRC_HEADER "\":\"";
        char *at = strstr(hb.s, pat);
        QKT_CHECK(at, "header checksum placeholder missing");
        char hex[9];
        snprintf(hex, sizeof hex, "%08x", qkt_crc32c(0, hb.s, hb.len));
        memcpy(at + strlen(pat), hex, 8);
    }
    uint8_t len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)hb.len >> (8 * k));
    int rc = qkt_write_all(fd, len8, 8) || qkt_write_all(fd, hb.s, hb.len);
    for (int i = 0; i < n && !rc; i++) {
        uint64_t nb = tensor_bytes(&t[i]);
        QKT_CHECK(nb == 0 || t[i].data, "tensor %s: NULL data", t[i].name);
        rc = nb ? qkt_write_all(fd, t[i].data, (size_t)nb) : 0;
    }
    int e = errno;
    free(hb.s);
    if (rc) return qkt_err_set(err, "%s: write failed: %s", label, strerror(e));
    return 0;
}

int qkt_safetensors_write_fd(int fd, const char *label, const qkt_st_write *t, int n, const qkt_st_meta *meta,
                             int n_meta, qkt_err *err) {
    return write_fd(fd, label, t, n, meta, n_meta, false, err);
}

typedef struct {
    const qkt_st_write *t;
    int n;
    const qkt_st_meta *meta;
    int n_meta;
    bool checksums;
} st_src;

static int fill_st(int fd, const char *label, void *user, qkt_err *err) {
    const st_src *s = user;
    return write_fd(fd, label, s->t, s->n, s->meta, s->n_meta, s->checksums, err);
}

/* Atomic: temp file, write, fsync, rename, directory fsync (qkt_write_atomic_fn). */
int qkt_safetensors_write(const char *path, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                          qkt_err *err) {
    st_src s = {t, n, meta, n_meta, false};
    return qkt_write_atomic_fn(path, fill_st, &s, err);
}

int qkt_safetensors_write_checked(const char *path, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                                  qkt_err *err) {
    st_src s = {t, n, meta, n_meta, true};
    return qkt_write_atomic_fn(path, fill_st, &s, err);
}
