/* Character-level text: the file is read into memory once (a mapping of it would
 * turn a file truncated during training into SIGBUS, and one edited in place into
 * other data mid-run), the vocabulary is its sorted unique bytes, train = the first 1 - val_frac of the bytes, val = the rest, and a
 * batch row is a window of T+1 bytes at a uniform offset inside one split. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_internal.h"

/* "PATH[,val_frac=F]": options are peeled off the end, so a path may hold commas. */
static int parse_text_spec(qkt_data *d, const char *rest, qkt_err *err) {
    size_t n = strlen(rest);
    d->val_frac = 0.1;
    int have_frac = 0;
    for (;;) {
        const char *comma = NULL;
        for (size_t i = n; i-- > 0;)
            if (rest[i] == ',') {
                comma = rest + i;
                break;
            }
        if (!comma) break;
        const char *opt = comma + 1;
        size_t olen = n - (size_t)(opt - rest);
        if (olen < 9 || strncmp(opt, "val_frac=", 9)) break; /* not an option: part of the path */
        char val[64];
        size_t vlen = olen - 9;
        if (vlen >= sizeof val) vlen = sizeof val - 1;
        memcpy(val, opt + 9, vlen), val[vlen] = 0;
        char *e;
        errno = 0;
        double f = strtod(val, &e);
        if (!val[0] || *e || errno || !(f > 0 && f < 1))
            return qkt_err_set(err, "text: val_frac=%s: expected a number in (0, 1)", val);
        if (have_frac) return qkt_err_set(err, "text: parameter 'val_frac' is given twice");
        d->val_frac = f, have_frac = 1;
        n = (size_t)(comma - rest);
    }
    if (n == 0) return qkt_err_set(err, "text: missing file path (expected text:PATH)");
    d->path = qkt_malloc(n + 1);
    memcpy(d->path, rest, n), d->path[n] = 0;
    return 0;
}

/* A file that reports size 0 (procfs, sysfs: whatever they hold) is read to its end, up
 * to this: such a file need not end. */
#define TEXT_UNSIZED_MAX ((size_t)1 << 30)

/* fd's bytes: `size` of them (the file's st_size) or fewer if it ends first (sysfs reports
 * 4096 for shorter files), or for size 0 all up to EOF, at most TEXT_UNSIZED_MAX. 0, or -1
 * with err naming path. */
static int read_text(int fd, const char *path, size_t size, uint8_t **out, size_t *len, qkt_err *err) {
    size_t cap = size ? size : 4096, got = 0;
    uint8_t *m = malloc(cap), *grown;
    while (m && !(got == cap && (size || cap >= TEXT_UNSIZED_MAX))) {
        if (got == cap) {
            if (!(grown = realloc(m, 2 * cap))) free(m);
            m = grown, cap *= 2;
            continue;
        }
        ssize_t r = read(fd, m + got, cap - got > (1u << 30) ? (1u << 30) : cap - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(m);
            return qkt_err_set(err, "text file '%s': read failed: %s", path, strerror(e));
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (!m) return qkt_err_set(err, "text file '%s': cannot allocate %zu bytes to read it", path, cap);
    uint8_t extra;
    if (!size && got == cap && read(fd, &extra, 1) > 0) {
        free(m);
        return qkt_err_set(err, "text file '%s': reports no size and holds more than %zu bytes", path, cap);
    }
    *out = m, *len = got;
    return 0;
}

int qkt__text_open(qkt_data *d, const char *rest, qkt_err *err) {
    if (parse_text_spec(d, rest, err)) return -1;
    const char *path = d->path;
    d->T = d->T_req ? d->T_req : QKT_DATA_DEFAULT_T;
    /* O_NONBLOCK: a FIFO must not block the open (it is refused below); no effect on regular files */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return qkt_err_set(err, "text file '%s': no such file", path);
        return qkt_err_set(err, "text file '%s': cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return qkt_err_set(err, "text file '%s': cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return qkt_err_set(err, "text file '%s': is a directory", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qkt_err_set(err, "text file '%s': not a regular file", path);
    }
    uint8_t *m = NULL;
    size_t len = 0;
    int rc = read_text(fd, path, (size_t)st.st_size, &m, &len, err);
    close(fd);
    if (rc) return -1;
    if (len == 0) {
        free(m);
        return qkt_err_set(err, "text file '%s': is empty", path);
    }
    d->map = m, d->len = len, d->has_file = 1;
    /* Split: val = the last floor(len * val_frac) bytes. Both must hold a window. */
    size_t n_val = (size_t)floor((double)len * d->val_frac);
    d->n_train = len - n_val;
    size_t need = (size_t)d->T + 1;
    if (d->n_train < need || n_val < need)
        return qkt_err_set(err,
                           "text file '%s': too short for seq_len %d: %zu bytes give a train split of %zu and a val "
                           "split (last %g%%) of %zu bytes, each needs >= %zu",
                           path, d->T, len, d->n_train, 100 * d->val_frac, n_val, need);
    /* Vocabulary: one pass over the bytes. */
    uint8_t seen[256] = {0};
    const uint8_t *p = d->map;
    for (size_t i = 0; i < len; i++) seen[p[i]] = 1;
    memset(d->enc, 0xff, sizeof d->enc);
    int V = 0;
    for (int c = 0; c < 256; c++)
        if (seen[c]) d->vocab_bytes[V] = (uint8_t)c, d->enc[c] = (int16_t)V++;
    d->vocab = d->answer_k = V;
    d->used = d->T;
    /* the shortest form that reads back as the same double: the canonical spec must
     * reopen to the same split (train.json keeps it for --resume) */
    char frac[32];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(frac, sizeof frac, "%.*g", prec, d->val_frac);
        if (strtod(frac, NULL) == d->val_frac) break;
    }
    size_t sl = strlen(path) + strlen(frac) + 32;
    d->spec = qkt_malloc(sl);
    snprintf(d->spec, sl, "text:%s,val_frac=%s", path, frac);
    return 0;
}

void qkt__text_close(qkt_data *d) {
    free((void *)d->map);
    d->map = NULL;
}

const uint8_t *qkt_data_text(const qkt_data *d, size_t *n) {
    if (n) *n = d->map ? d->len : 0;
    return d->map;
}

void qkt__text_batch(qkt_data *d, qkt_data_split split, int B, int32_t *idx, int32_t *targets, uint8_t *mask) {
    int T = d->T;
    size_t lo = split == QKT_SPLIT_TRAIN ? 0 : d->n_train;
    size_t hi = split == QKT_SPLIT_TRAIN ? d->n_train : d->len;
    size_t n_off = hi - lo - (size_t)T; /* offsets lo .. hi-T-1: window [off, off+T] inside the split */
    for (int b = 0; b < B; b++) {
        const uint8_t *w = d->map + lo + qkt__rng_below64(&d->rng[split], n_off);
        int32_t *x = idx + (size_t)b * T, *y = targets + (size_t)b * T;
        for (int t = 0; t < T; t++) x[t] = d->enc[w[t]], y[t] = d->enc[w[t + 1]];
        if (mask) memset(mask + (size_t)b * T, 1, (size_t)T);
    }
}

const uint8_t *qkt_data_vocab(const qkt_data *d, int *n) {
    if (d->task) {
        if (n) *n = 0;
        return NULL;
    }
    if (n) *n = d->vocab;
    return d->vocab_bytes;
}

int qkt_data_encode(const qkt_data *d, const uint8_t *bytes, size_t n, int32_t *ids, qkt_err *err) {
    if (d->task) return qkt_err_set(err, "%s is not a text source: it has no byte encoding", d->task->name);
    for (size_t i = 0; i < n; i++) {
        int t = d->enc[bytes[i]];
        if (t < 0) {
            uint8_t c = bytes[i];
            if (c >= 0x20 && c < 0x7f)
                return qkt_err_set(err, "byte 0x%02x ('%c') at offset %zu is not in the vocabulary (%d characters)", c, c,
                                   i, d->vocab);
            return qkt_err_set(err, "byte 0x%02x at offset %zu is not in the vocabulary (%d characters)", c, i, d->vocab);
        }
        ids[i] = t;
    }
    return 0;
}

void qkt_data_decode(const qkt_data *d, const int32_t *ids, size_t n, uint8_t *bytes) {
    QKT_CHECK(!d->task, "qkt_data_decode: %s is not a text source", d->task->name);
    for (size_t i = 0; i < n; i++) {
        QKT_CHECK(ids[i] >= 0 && ids[i] < d->vocab, "decode: token %d at %zu outside [0, %d)", ids[i], i, d->vocab);
        bytes[i] = d->vocab_bytes[ids[i]];
    }
}
