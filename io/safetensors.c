/* safetensors reader: validate everything, then expose (the writer is safetensors_write.c).
 * Format and API: qkt_safetensors.h. */
#include "qkt_io.h"
#include "qkt_safetensors.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tensor bytes are copied straight between memory and file. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

static const struct {
    const char *name;
    size_t size;
} dtypes[QKT_ST_DTYPE_COUNT] = {
    [QKT_ST_BOOL] = {"BOOL", 1}, [QKT_ST_U8] = {"U8", 1},   [QKT_ST_I8] = {"I8", 1},
    [QKT_ST_F8_E5M2] = {"F8_E5M2", 1}, [QKT_ST_F8_E4M3] = {"F8_E4M3", 1},
    [QKT_ST_I16] = {"I16", 2},   [QKT_ST_U16] = {"U16", 2}, [QKT_ST_F16] = {"F16", 2},
    [QKT_ST_BF16] = {"BF16", 2}, [QKT_ST_I32] = {"I32", 4}, [QKT_ST_U32] = {"U32", 4},
    [QKT_ST_F32] = {"F32", 4},   [QKT_ST_I64] = {"I64", 8}, [QKT_ST_U64] = {"U64", 8},
    [QKT_ST_F64] = {"F64", 8},
};

const char *qkt_st_dtype_name(qkt_st_dtype d) {
    QKT_CHECK((unsigned)d < QKT_ST_DTYPE_COUNT, "bad dtype %d", (int)d);
    return dtypes[d].name;
}

size_t qkt_st_dtype_size(qkt_st_dtype d) {
    QKT_CHECK((unsigned)d < QKT_ST_DTYPE_COUNT, "bad dtype %d", (int)d);
    return dtypes[d].size;
}

/* ---------------------------------------------------------------- helpers */
/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
 * Returns the offset of the first bad byte, or n if all is well. */
static size_t utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

/* A name made safe for a one-line message: control bytes become '?', long names
 * are cut (at a character boundary) with "...". */
static const char *qname(const char *s, char *buf, size_t cap) {
    size_t i = 0, max = cap - 4;
    for (; s[i] && i < max; i++) buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    if (s[i]) {
        while (i > 0 && ((unsigned char)buf[i] & 0xC0) == 0x80) i--; /* don't split a character */
        memcpy(buf + i, "...", 4);
    } else {
        buf[i] = 0;
    }
    return buf;
}
#define QN(s) qname((s), (char[72]){0}, 72)

static const char *shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, ndim == 1 ? ",)" : ")");
    return buf;
}

/* A JSON number that is an exact non-negative integer below 2^53 (doubles are
 * exact there, and no file is that large). */
static bool json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!isfinite(d) || d < 0 || d != floor(d) || d >= 9007199254740992.0) return false;
    *out = (uint64_t)d;
    return true;
}

static const char *json_kind(const cJSON *v) {
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "something else";
}

/* ---------------------------------------------------------------- parsing */
/* qsort has no context argument, so the checks sort small records that carry
 * their key and range. */
typedef struct {
    const char *key;
    size_t a, b;
    int i;
} sort_item;

static int by_key(const void *x, const void *y) {
    return strcmp(((const sort_item *)x)->key, ((const sort_item *)y)->key);
}
static int by_range(const void *x, const void *y) {
    const sort_item *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return p->i - q->i;
}

/* Fills one tensor from its JSON entry; the data range is checked later. */
static int parse_entry(const cJSON *e, size_t data_len, const char *label, qkt_st_tensor *t, qkt_err *err) {
    const char *nm = QN(e->string);
    if (!cJSON_IsObject(e)) return qkt_err_set(err, "%s: tensor '%s' is %s, not an object", label, nm, json_kind(e));
    const cJSON *fd = NULL, *fs = NULL, *fo = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
        const cJSON **slot = !strcmp(f->string, "dtype")          ? &fd
                             : !strcmp(f->string, "shape")        ? &fs
                             : !strcmp(f->string, "data_offsets") ? &fo
                                                                  : NULL;
        if (!slot) continue; /* unknown fields are ignored, as upstream does */
        if (*slot) return qkt_err_set(err, "%s: tensor '%s' has field '%s' twice", label, nm, f->string);
        *slot = f;
    }
    if (!fd) return qkt_err_set(err, "%s: tensor '%s' has no 'dtype'", label, nm);
    if (!fs) return qkt_err_set(err, "%s: tensor '%s' has no 'shape'", label, nm);
    if (!fo) return qkt_err_set(err, "%s: tensor '%s' has no 'data_offsets'", label, nm);

    if (!cJSON_IsString(fd)) return qkt_err_set(err, "%s: tensor '%s': dtype is %s, not a string", label, nm, json_kind(fd));
    int dt = -1;
    for (int k = 0; k < QKT_ST_DTYPE_COUNT; k++)
        if (!strcmp(fd->valuestring, dtypes[k].name)) dt = k;
    if (dt < 0) return qkt_err_set(err, "%s: tensor '%s' has unknown dtype '%s'", label, nm, QN(fd->valuestring));
    t->dtype = (qkt_st_dtype)dt;

    if (!cJSON_IsArray(fs)) return qkt_err_set(err, "%s: tensor '%s': shape is %s, not an array", label, nm, json_kind(fs));
    int nd = cJSON_GetArraySize(fs);
    if (nd > QKT_ST_MAX_DIMS)
        return qkt_err_set(err, "%s: tensor '%s' has rank %d (at most %d supported)", label, nm, nd, QKT_ST_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1;
    bool overflow = false;
    int d = 0;
    for (const cJSON *v = fs->child; v; v = v->next, d++) {
        uint64_t dim;
        if (!json_uint(v, &dim))
            return qkt_err_set(err, "%s: tensor '%s': shape[%d] is not a non-negative integer", label, nm, d);
        t->shape[d] = (int64_t)dim;
        overflow |= __builtin_mul_overflow(numel, dim, &numel);
    }
    uint64_t nbytes = 0;
    overflow |= __builtin_mul_overflow(numel, (uint64_t)dtypes[dt].size, &nbytes);
    char sb[256];
    if (overflow || numel > INT64_MAX)
        return qkt_err_set(err, "%s: tensor '%s' shape %s is too large", label, nm, shape_str(nd, t->shape, sb, sizeof sb));
    t->numel = (int64_t)numel;

    uint64_t b, en;
    if (!cJSON_IsArray(fo) || cJSON_GetArraySize(fo) != 2 || !json_uint(fo->child, &b) || !json_uint(fo->child->next, &en))
        return qkt_err_set(err, "%s: tensor '%s': data_offsets is not an array of 2 non-negative integers", label, nm);
    if (b > en)
        return qkt_err_set(err, "%s: tensor '%s' offsets [%llu, %llu) have begin > end", label, nm,
                           (unsigned long long)b, (unsigned long long)en);
    if (en > data_len)
        return qkt_err_set(err, "%s: tensor '%s' offsets [%llu, %llu) run past the end of the data (%zu bytes): truncated?",
                           label, nm, (unsigned long long)b, (unsigned long long)en, data_len);
    if (en - b != nbytes)
        return qkt_err_set(err, "%s: tensor '%s' offsets [%llu, %llu) do not match shape %s of %s (%llu bytes)", label, nm,
                           (unsigned long long)b, (unsigned long long)en, shape_str(nd, t->shape, sb, sizeof sb),
                           dtypes[dt].name, (unsigned long long)nbytes);
    t->begin = (size_t)b, t->end = (size_t)en;
    return 0;
}

/* Metadata: an object of string -> string. */
static int parse_meta(const cJSON *m, const char *label, qkt_safetensors *st, qkt_err *err) {
    if (!cJSON_IsObject(m)) return qkt_err_set(err, "%s: __metadata__ is %s, not an object", label, json_kind(m));
    int n = cJSON_GetArraySize(m);
    st->meta = qkt_calloc((size_t)n + 1, sizeof *st->meta);
    for (const cJSON *v = m->child; v; v = v->next) {
        if (!cJSON_IsString(v))
            return qkt_err_set(err, "%s: metadata '%s' is %s, not a string", label, QN(v->string), json_kind(v));
        st->meta[st->n_meta].key = qkt_strdup(v->string);
        st->meta[st->n_meta].value = qkt_strdup(v->valuestring);
        st->n_meta++;
    }
    return 0;
}

/* Unique names, unique metadata keys, and non-empty byte ranges tiling
 * [0, data_len) exactly (no overlap, no unclaimed bytes), as the reference
 * implementation requires. Empty tensors only need to lie inside the data. */
static int check_layout(const qkt_safetensors *st, size_t data_len, const char *label, qkt_err *err) {
    int n = st->n > st->n_meta ? st->n : st->n_meta;
    sort_item *s = qkt_malloc(((size_t)n + 1) * sizeof *s);
    int rc = 0;
    for (int i = 0; i < st->n; i++) s[i] = (sort_item){st->t[i].name, st->t[i].begin, st->t[i].end, i};
    qsort(s, (size_t)st->n, sizeof *s, by_key);
    for (int i = 1; i < st->n && !rc; i++)
        if (!strcmp(s[i - 1].key, s[i].key)) rc = qkt_err_set(err, "%s: duplicate tensor name '%s'", label, QN(s[i].key));
    for (int i = 0; i < st->n_meta && !rc; i++) s[i] = (sort_item){st->meta[i].key, 0, 0, i};
    if (!rc) qsort(s, (size_t)st->n_meta, sizeof *s, by_key);
    for (int i = 1; i < st->n_meta && !rc; i++)
        if (!strcmp(s[i - 1].key, s[i].key)) rc = qkt_err_set(err, "%s: duplicate metadata key '%s'", label, QN(s[i].key));
    if (rc) {
        free(s);
        return rc;
    }
    int m = 0;
    for (int i = 0; i < st->n; i++)
        if (st->t[i].end > st->t[i].begin) s[m++] = (sort_item){st->t[i].name, st->t[i].begin, st->t[i].end, i};
    qsort(s, (size_t)m, sizeof *s, by_range);
    size_t cursor = 0;
    for (int i = 0; i < m && !rc; i++) {
        if (s[i].a < cursor)
            rc = qkt_err_set(err, "%s: tensor '%s' [%zu, %zu) overlaps tensor '%s' [%zu, %zu)", label, QN(s[i].key), s[i].a,
                             s[i].b, QN(s[i - 1].key), s[i - 1].a, s[i - 1].b);
        else if (s[i].a > cursor)
            rc = qkt_err_set(err, "%s: data bytes [%zu, %zu) belong to no tensor (before '%s')", label, cursor, s[i].a,
                             QN(s[i].key));
        cursor = s[i].b;
    }
    if (!rc && cursor != data_len)
        rc = qkt_err_set(err, "%s: data bytes [%zu, %zu) after the last tensor belong to no tensor", label, cursor, data_len);
    free(s);
    return rc;
}

/* The "crc32c:<name>" metadata: each names a tensor of the file and matches the CRC-32C
 * of its bytes, and once there is one, every tensor has one. They are then removed
 * from st->meta (the file format's business, not the caller's). */
/* The header's own checksum (QKT_ST_CRC_HEADER), over the raw header hc[0..hl) with
 * "00000000" in its place: found by its exact bytes, which the writer's compact JSON
 * has (quotes inside any JSON string are escaped, so nothing else matches). *found
 * says whether there is one. */
static int verify_header(const char *hc, size_t hl, const char *label, bool *found, qkt_err *err) {
    const char *pat = "\"" QKT_ST_CRC_HEADER "\":\"";
    size_t pn = strlen(pat);
    const char *at = strstr(hc, pat);
    *found = at != NULL;
    if (!at) return 0;
    if (strstr(at + 1, pat)) return qkt_err_set(err, "%s: header has two checksums: damaged?", label);
    const char *v = at + pn;
    char want[9] = {0};
    for (int k = 0; k < 8 && isxdigit((unsigned char)v[k]); k++) want[k] = v[k]; /* stops at the NUL: never past it */
    if (strlen(want) != 8 || v[8] != '"') return qkt_err_set(err, "%s: header checksum is not 8 hex digits: damaged?", label);
    char *copy = qkt_malloc(hl + 1);
    memcpy(copy, hc, hl + 1);
    memcpy(copy + (v - hc), "00000000", 8);
    uint32_t got = qkt_crc32c(0, copy, hl);
    free(copy);
    if (got != (uint32_t)strtoul(want, NULL, 16))
        return qkt_err_set(err, "%s: header fails its checksum (stored crc32c %s, its bytes give %08x): the file is damaged or "
                                "was edited", label, want, (unsigned)got);
    return 0;
}

static int verify_checksums(qkt_safetensors *st, bool header_crc, const char *label, qkt_err *err) {
    size_t pl = strlen(QKT_ST_CRC_PREFIX);
    int n_crc = 0;
    bool header_key = false;
    for (int i = 0; i < st->n_meta; i++) {
        const char *key = st->meta[i].key, *val = st->meta[i].value;
        if (!strcmp(key, QKT_ST_CRC_HEADER)) header_key = true;
        if (strncmp(key, QKT_ST_CRC_PREFIX, pl)) continue;
        n_crc++;
        const qkt_st_tensor *t = qkt_safetensors_find(st, key + pl);
        if (!t) return qkt_err_set(err, "%s: checksum '%s' names no tensor of the file: damaged?", label, QN(key));
        char *end;
        errno = 0;
        unsigned long want = strtoul(val, &end, 16);
        if (strlen(val) != 8 || *end || errno || !isxdigit((unsigned char)val[0]))
            return qkt_err_set(err, "%s: checksum of tensor '%s' is '%s', not 8 hex digits: damaged?", label, QN(t->name), QN(val));
        uint32_t got = qkt_crc32c(0, t->data, t->end - t->begin);
        if (got != (uint32_t)want)
            return qkt_err_set(err, "%s: tensor '%s' fails its checksum (stored crc32c %08lx, its bytes give %08x): the file is damaged",
                               label, QN(t->name), want, (unsigned)got);
    }
    if (header_key != header_crc) /* a key the raw search did not find: not the writer's JSON */
        return qkt_err_set(err, "%s: its header checksum cannot be verified: damaged or rewritten?", label);
    if (!n_crc && !header_key) return 0;
    if (n_crc != st->n || !header_key) /* names are unique and each key named a tensor: some tensor has none */
        return qkt_err_set(err, "%s: only %d of its %d tensors and %s header have a checksum: damaged or edited?", label, n_crc,
                           st->n, header_key ? "its" : "not its");
    int k = 0;
    for (int i = 0; i < st->n_meta; i++) {
        if (strncmp(st->meta[i].key, QKT_ST_CRC_PREFIX, pl) && strcmp(st->meta[i].key, QKT_ST_CRC_HEADER))
            st->meta[k++] = st->meta[i];
        else free((char *)st->meta[i].key), free((char *)st->meta[i].value);
    }
    st->n_meta = k;
    st->checksummed = true;
    return 0;
}

void qkt_safetensors_free(qkt_safetensors *st) {
    for (int i = 0; i < st->n; i++) free(st->t[i].name);
    for (int i = 0; i < st->n_meta; i++) {
        free((char *)st->meta[i].key);
        free((char *)st->meta[i].value);
    }
    free(st->t);
    free(st->meta);
    free(st->owned);
    memset(st, 0, sizeof *st);
}

int qkt_safetensors_parse(const uint8_t *buf, size_t n, const char *label, qkt_safetensors *st, qkt_err *err) {
    memset(st, 0, sizeof *st);
    if (n < 8) return qkt_err_set(err, "%s: file is %zu bytes, too short for the 8-byte header length", label, n);
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = (hl << 8) | buf[k];
    if (hl > QKT_ST_MAX_HEADER)
        return qkt_err_set(err, "%s: header length %llu is absurd (limit %u): not a safetensors file?", label,
                           (unsigned long long)hl, QKT_ST_MAX_HEADER);
    if (hl > n - 8)
        return qkt_err_set(err, "%s: header length %llu runs past the end of the file (%zu bytes): truncated?", label,
                           (unsigned long long)hl, n);
    if (hl < 2) return qkt_err_set(err, "%s: header length %llu is too small for a JSON object", label, (unsigned long long)hl);
    const char *h = (const char *)buf + 8;
    size_t bad = utf8_check(buf + 8, (size_t)hl);
    if (bad != hl) return qkt_err_set(err, "%s: header is not valid UTF-8 (byte %zu of the header)", label, bad);

    /* cJSON gets a NUL-terminated copy: whatever it does, it cannot read past it. */
    char *hc = qkt_malloc((size_t)hl + 1);
    memcpy(hc, h, (size_t)hl);
    hc[hl] = 0;
    bool header_crc;
    if (verify_header(hc, (size_t)hl, label, &header_crc, err)) {
        free(hc);
        return -1;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hc, (size_t)hl, &end, 0);
    if (!root) {
        size_t at = end && end >= hc && end <= hc + hl ? (size_t)(end - hc) : 0;
        free(hc);
        return qkt_err_set(err, "%s: header is not valid JSON (near byte %zu of the header)", label, at);
    }
    h = hc;
    int rc = 0;
    for (const char *p = end; p < h + hl && !rc; p++)
        if (!strchr(" \t\r\n", *p) || !*p)
            rc = qkt_err_set(err, "%s: header has bytes after the JSON value (byte %zu of the header)", label, (size_t)(p - h));
    if (!rc && !cJSON_IsObject(root)) rc = qkt_err_set(err, "%s: header is %s, not a JSON object", label, json_kind(root));

    size_t data_len = n - 8 - (size_t)hl;
    if (!rc) {
        st->t = qkt_calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *st->t);
    }
    bool seen_meta = false;
    for (const cJSON *e = rc ? NULL : root->child; e && !rc; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            rc = seen_meta ? qkt_err_set(err, "%s: __metadata__ appears twice", label) : parse_meta(e, label, st, err);
            seen_meta = true;
            continue;
        }
        qkt_st_tensor *t = &st->t[st->n];
        rc = parse_entry(e, data_len, label, t, err);
        if (rc) break;
        t->name = qkt_strdup(e->string);
        t->data = buf + 8 + hl + t->begin;
        st->n++;
    }
    cJSON_Delete(root);
    free(hc);
    if (!rc) rc = check_layout(st, data_len, label, err);
    if (!rc) rc = verify_checksums(st, header_crc, label, err);
    if (rc) {
        qkt_safetensors_free(st);
        return -1;
    }
    st->header_len = hl;
    return 0;
}

int qkt_safetensors_read(const char *path, qkt_safetensors *st, qkt_err *err) {
    memset(st, 0, sizeof *st);
    /* O_NONBLOCK: a FIFO must not block the open (it is refused below); no effect on regular files */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return qkt_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return qkt_err_set(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return qkt_err_set(err, "%s: %s, not a safetensors file", path,
                           S_ISDIR(sb.st_mode) ? "is a directory" : "is a device, fifo or socket");
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = qkt_malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return qkt_err_set(err, "%s: cannot allocate %zu bytes to read it", path, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            free(buf);
            close(fd);
            return r < 0 ? qkt_err_set(err, "%s: read failed: %s", path, strerror(e))
                         : qkt_err_set(err, "%s: file shrank while reading (%zu of %zu bytes)", path, got, n);
        }
        got += (size_t)r;
    }
    close(fd);
    if (qkt_safetensors_parse(buf, n, path, st, err) != 0) {
        free(buf);
        return -1;
    }
    st->owned = buf;
    return 0;
}

const qkt_st_tensor *qkt_safetensors_find(const qkt_safetensors *st, const char *name) {
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->t[i].name, name)) return &st->t[i];
    return NULL;
}

const char *qkt_safetensors_meta(const qkt_safetensors *st, const char *key) {
    for (int i = 0; i < st->n_meta; i++)
        if (!strcmp(st->meta[i].key, key)) return st->meta[i].value;
    return NULL;
}

/* ---------------------------------------------------------------- typed copies */
static int count_ok(const qkt_st_tensor *t, int64_t n, const char *label, qkt_err *err) {
    if (n == t->numel) return 0;
    return qkt_err_set(err, "%s: tensor '%s' has %lld values, expected %lld", label, QN(t->name), (long long)t->numel,
                       (long long)n);
}

int qkt_st_tensor_to_real(const qkt_st_tensor *t, qkt_real *out, int64_t n, const char *label, qkt_err *err) {
    if (count_ok(t, n, label, err)) return -1;
    if (t->dtype == QKT_ST_F32) {
        for (int64_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, t->data + 4 * i, 4);
            out[i] = (qkt_real)v;
        }
    } else if (t->dtype == QKT_ST_F64) {
        for (int64_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, t->data + 8 * i, 8);
            out[i] = (qkt_real)v;
        }
    } else {
        return qkt_err_set(err, "%s: tensor '%s' has dtype %s, expected F32 or F64", label, QN(t->name),
                           dtypes[t->dtype].name);
    }
    return 0;
}

/* Element i of an integer tensor as a sign flag and a magnitude-free pair:
 * signed dtypes fill *s (and return true), unsigned ones fill *u. */
static bool int_at(const qkt_st_tensor *t, int64_t i, int64_t *s, uint64_t *u) {
    const uint8_t *p = t->data + (size_t)i * dtypes[t->dtype].size;
    switch (t->dtype) {
    case QKT_ST_I8: { int8_t v; memcpy(&v, p, 1); *s = v; return true; }
    case QKT_ST_I16: { int16_t v; memcpy(&v, p, 2); *s = v; return true; }
    case QKT_ST_I32: { int32_t v; memcpy(&v, p, 4); *s = v; return true; }
    case QKT_ST_I64: { int64_t v; memcpy(&v, p, 8); *s = v; return true; }
    case QKT_ST_BOOL:
    case QKT_ST_U8: *u = p[0]; return false;
    case QKT_ST_U16: { uint16_t v; memcpy(&v, p, 2); *u = v; return false; }
    case QKT_ST_U32: { uint32_t v; memcpy(&v, p, 4); *u = v; return false; }
    default: { uint64_t v; memcpy(&v, p, 8); *u = v; return false; } /* U64 */
    }
}

static bool is_int_dtype(qkt_st_dtype d) {
    return d == QKT_ST_BOOL || d == QKT_ST_U8 || d == QKT_ST_I8 || d == QKT_ST_I16 || d == QKT_ST_U16 ||
           d == QKT_ST_I32 || d == QKT_ST_U32 || d == QKT_ST_I64 || d == QKT_ST_U64;
}

/* Converts into out (I32, I64 or U64 elements), checking every value's range. */
static int to_int(const qkt_st_tensor *t, void *out, qkt_st_dtype to, int64_t n, const char *label, qkt_err *err) {
    if (count_ok(t, n, label, err)) return -1;
    if (!is_int_dtype(t->dtype))
        return qkt_err_set(err, "%s: tensor '%s' has dtype %s, expected an integer dtype", label, QN(t->name),
                           dtypes[t->dtype].name);
    for (int64_t i = 0; i < n; i++) {
        int64_t s = 0;
        uint64_t u = 0;
        bool sgn = int_at(t, i, &s, &u);
        bool ok;
        if (to == QKT_ST_I32) {
            ok = sgn ? (s >= INT32_MIN && s <= INT32_MAX) : u <= INT32_MAX;
            if (ok) ((int32_t *)out)[i] = sgn ? (int32_t)s : (int32_t)u;
        } else if (to == QKT_ST_I64) {
            ok = sgn || u <= INT64_MAX;
            if (ok) ((int64_t *)out)[i] = sgn ? s : (int64_t)u;
        } else {
            ok = !sgn || s >= 0;
            if (ok) ((uint64_t *)out)[i] = sgn ? (uint64_t)s : u;
        }
        if (!ok)
            return qkt_err_set(err, "%s: tensor '%s' value %s%llu at index %lld does not fit %s", label, QN(t->name),
                               sgn && s < 0 ? "-" : "", sgn ? (unsigned long long)(s < 0 ? -(uint64_t)s : (uint64_t)s)
                                                             : (unsigned long long)u,
                               (long long)i, dtypes[to].name);
    }
    return 0;
}

int qkt_st_tensor_to_i64(const qkt_st_tensor *t, int64_t *out, int64_t n, const char *label, qkt_err *err) {
    return to_int(t, out, QKT_ST_I64, n, label, err);
}
int qkt_st_tensor_to_i32(const qkt_st_tensor *t, int32_t *out, int64_t n, const char *label, qkt_err *err) {
    return to_int(t, out, QKT_ST_I32, n, label, err);
}
int qkt_st_tensor_to_u64(const qkt_st_tensor *t, uint64_t *out, int64_t n, const char *label, qkt_err *err) {
    return to_int(t, out, QKT_ST_U64, n, label, err);
}
