/* safetensors writer: header built with cJSON's string escaping and exact
 * integer formatting, tensors laid out back to back, atomic replacement of the
 * target. API: qkt_safetensors.h. */
#include "qkt_safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1) + 256;
        b->s = realloc(b->s, b->cap);
        QKT_CHECK(b->s, "out of memory");
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
    QKT_CHECK(item, "out of memory");
    char *q = cJSON_PrintUnformatted(item);
    QKT_CHECK(q, "out of memory");
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

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        c += w, n -= (size_t)w;
    }
    return 0;
}

int qkt_safetensors_write_fd(int fd, const char *label, const qkt_st_write *t, int n, const qkt_st_meta *meta,
                             int n_meta, qkt_err *err) {
    strbuf hb = {0};
    if (build_header(label, t, n, meta, n_meta, &hb, err) != 0) {
        free(hb.s);
        return -1;
    }
    uint8_t len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)hb.len >> (8 * k));
    int rc = write_all(fd, len8, 8) || write_all(fd, hb.s, hb.len);
    for (int i = 0; i < n && !rc; i++) {
        uint64_t nb = tensor_bytes(&t[i]);
        QKT_CHECK(nb == 0 || t[i].data, "tensor %s: NULL data", t[i].name);
        rc = nb ? write_all(fd, t[i].data, (size_t)nb) : 0;
    }
    int e = errno;
    free(hb.s);
    if (rc) return qkt_err_set(err, "%s: write failed: %s", label, strerror(e));
    return 0;
}

/* Temp names are unique per process (pid) and per call (counter). */
static atomic_uint tmp_counter;

int qkt_safetensors_write(const char *path, const qkt_st_write *t, int n, const qkt_st_meta *meta, int n_meta,
                          qkt_err *err) {
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return qkt_err_set(err, "%s: exists and is not a regular file (%s); refusing to replace it", path,
                           S_ISDIR(sb.st_mode) ? "a directory" : "a device, fifo or socket");
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 64);
    QKT_CHECK(tmp, "out of memory");
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(tmp, plen + 64, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return qkt_err_set(err, "%s: cannot create a temporary file next to it: %s", path, strerror(e));
    }
    int rc = qkt_safetensors_write_fd(fd, path, t, n, meta, n_meta, err);
    if (!rc && fsync(fd) != 0) rc = qkt_err_set(err, "%s: fsync failed: %s", path, strerror(errno));
    if (close(fd) != 0 && !rc) rc = qkt_err_set(err, "%s: close failed: %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = qkt_err_set(err, "%s: cannot rename the temporary file into place: %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    /* Make the rename itself durable. Filesystems that cannot sync a directory
     * (EINVAL) are accepted; any other failure is reported although the new file
     * is already in place. */
    char *dir = strdup(path);
    QKT_CHECK(dir, "out of memory");
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP)
            rc = qkt_err_set(err, "%s: written, but syncing directory %s failed: %s", path, d, strerror(errno));
        close(dfd);
    }
    free(dir);
    return rc;
}
