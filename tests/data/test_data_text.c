/* Character-level text: vocabulary, encode/decode round trip, split sizes, windows
 * inside their split, vocabulary export/import, and every file error. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_data.h"
#include "qkt_test.h"

uint64_t qkt__rng_below64(qkt_rng *r, uint64_t n); /* data/, internal */

static char *write_file(const char *dir, const char *name, const uint8_t *bytes, size_t n) {
    static char paths[8][512];
    static int k = 0;
    char *p = paths[k++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f)) {
        perror(p);
        exit(1);
    }
    return p;
}

/* The whole file (NULL if it cannot be read). */
static uint8_t *read_all(const char *path, size_t *n) { return (uint8_t *)qkt_test_read_file(path, n); }

static qkt_data *open_text(const char *spec, int T, uint64_t seed) {
    qkt_data *d = NULL;
    qkt_err err = {{0}};
    qkt_data_opts o = {.seq_len = T, .seed = seed};
    int rc = qkt_data_open(&d, spec, &o, &err);
    EXPECT(rc == 0, "open %s: %s", spec, err.msg);
    return rc ? NULL : d;
}

/* Round trip, vocabulary, and every window of B batches found inside its split. */
static void check_file(const char *path, const uint8_t *file, size_t len, int T, double val_frac, int expect_V) {
    char spec[600];
    if (val_frac > 0)
        snprintf(spec, sizeof spec, "text:%s,val_frac=%g", path, val_frac);
    else
        snprintf(spec, sizeof spec, "text:%s", path), val_frac = 0.1;
    qkt_data *d = open_text(spec, T, 5);
    if (!d) return;
    int V;
    const uint8_t *voc = qkt_data_vocab(d, &V);
    /* Vocabulary: the sorted unique bytes. */
    uint8_t seen[256] = {0};
    for (size_t i = 0; i < len; i++) seen[file[i]] = 1;
    int nv = 0, ok = 1;
    for (int c = 0; c < 256; c++)
        if (seen[c]) ok &= nv < V && voc[nv++] == c;
    EXPECT(ok && nv == V && qkt_data_vocab_size(d) == V, "%s: vocabulary of %d bytes, expected %d", path, V, nv);
    if (expect_V) EXPECT(V == expect_V, "%s: V %d, expected %d", path, V, expect_V);
    EXPECT(qkt_data_is_text(d) && !strcmp(qkt_data_name(d), "text"), "name %s", qkt_data_name(d));
    /* Round trip of the whole file. */
    int32_t *ids = malloc(len * sizeof *ids);
    uint8_t *back = malloc(len);
    qkt_err err;
    EXPECT(qkt_data_encode(d, file, len, ids, &err) == 0, "encode: %s", err.msg);
    qkt_data_decode(d, ids, len, back);
    EXPECT(!memcmp(back, file, len), "%s: decode(encode(file)) != file", path);
    /* Splits: val = the last floor(len * val_frac) bytes. */
    size_t n_val = (size_t)((double)len * val_frac);
    EXPECT(qkt_data_split_tokens(d, QKT_SPLIT_VAL) == (int64_t)n_val &&
               qkt_data_split_tokens(d, QKT_SPLIT_TRAIN) == (int64_t)(len - n_val),
           "%s: split %lld/%lld, expected %zu/%zu", path, (long long)qkt_data_split_tokens(d, QKT_SPLIT_TRAIN),
           (long long)qkt_data_split_tokens(d, QKT_SPLIT_VAL), len - n_val, n_val);
    /* Windows: x = window[0..T), y = window[1..T]; the decoded window must occur
     * inside its split (memmem over the split's bytes). */
    enum { B = 8 };
    int32_t *x = malloc(sizeof(int32_t) * B * T), *y = malloc(sizeof(int32_t) * B * T);
    uint8_t *m = malloc((size_t)B * T), *win = malloc((size_t)T + 1);
    int outside = 0, shifted = 0, unmasked = 0;
    for (int s = 0; s < 2; s++) {
        size_t lo = s ? len - n_val : 0, hi = s ? len : len - n_val;
        for (int it = 0; it < 20; it++) {
            qkt_data_batch(d, s, B, x, y, m);
            for (int b = 0; b < B; b++) {
                const int32_t *xb = x + b * T, *yb = y + b * T;
                for (int t = 0; t + 1 < T; t++) shifted += yb[t] != xb[t + 1];
                for (int t = 0; t < T; t++) unmasked += !m[b * T + t];
                qkt_data_decode(d, xb, (size_t)T, win);
                qkt_data_decode(d, yb + T - 1, 1, win + T);
                outside += memmem(file + lo, hi - lo, win, (size_t)T + 1) == NULL;
            }
        }
    }
    EXPECT(outside == 0 && shifted == 0 && unmasked == 0, "%s: %d windows outside their split, %d shifted, %d unmasked",
           path, outside, shifted, unmasked);
    free(x), free(y), free(m), free(win), free(ids), free(back);
    qkt_data_free(d);
}

static void test_temp_file(const char *dir) {
    /* 5000 bytes over a 7-byte alphabet including NUL, newline and 0xff. */
    enum { N = 5000 };
    static uint8_t buf[N];
    const uint8_t alpha[7] = {0x00, '\n', ' ', 'a', 'b', 'z', 0xff};
    qkt_rng r;
    qkt_rng_seed(&r, 42);
    for (int i = 0; i < N; i++) buf[i] = alpha[qkt_rng_below(&r, 7)];
    const char *p = write_file(dir, "t.txt", buf, N);
    check_file(p, buf, N, 16, 0, 7);
    check_file(p, buf, N, 32, 0.25, 7);
    /* A path with commas: options are peeled off the end only. */
    const char *pc = write_file(dir, "a,b.txt", buf, N);
    check_file(pc, buf, N, 8, 0, 7);
    check_file(pc, buf, N, 8, 0.5, 7);

    /* Determinism, seeds, reset, get/set rng; train and val windows differ. */
    char spec[600];
    snprintf(spec, sizeof spec, "text:%s", p);
    qkt_data *a = open_text(spec, 16, 1), *b = open_text(spec, 16, 1), *c = open_text(spec, 16, 2);
    if (!a || !b || !c) return;
    int32_t x1[64], y1[64], x2[64], y2[64];
    qkt_data_batch(a, QKT_SPLIT_TRAIN, 4, x1, y1, NULL), qkt_data_batch(b, QKT_SPLIT_TRAIN, 4, x2, y2, NULL);
    EXPECT(!memcmp(x1, x2, sizeof x1) && !memcmp(y1, y2, sizeof y1), "same seed, different text batch");
    qkt_data_batch(c, QKT_SPLIT_TRAIN, 4, x2, y2, NULL);
    EXPECT(memcmp(x1, x2, sizeof x1), "seeds 1 and 2 gave the same text batch");
    qkt_data_batch(a, QKT_SPLIT_VAL, 4, x1, y1, NULL);
    qkt_data_reset(a, QKT_SPLIT_VAL);
    qkt_data_batch(a, QKT_SPLIT_VAL, 4, x2, y2, NULL);
    EXPECT(!memcmp(x1, x2, sizeof x1), "reset(val) did not replay the text val batch");
    qkt_rng st;
    qkt_data_get_rng(a, QKT_SPLIT_TRAIN, &st);
    qkt_data_batch(a, QKT_SPLIT_TRAIN, 4, x1, y1, NULL);
    qkt_data_set_rng(c, QKT_SPLIT_TRAIN, &st);
    qkt_data_batch(c, QKT_SPLIT_TRAIN, 4, x2, y2, NULL);
    EXPECT(!memcmp(x1, x2, sizeof x1), "text set_rng(get_rng) did not resume");
    double l, acc, bl, ba;
    qkt_data_chance(a, &l, &acc);
    qkt_data_best(a, &bl, &ba);
    EXPECT_NEAR(l, log(7.0), 1e-12);
    EXPECT_NEAR(acc, 1 / 7.0, 1e-12);
    EXPECT(bl == -1 && ba == -1, "text best is unknown");
    EXPECT(strstr(qkt_data_spec(a), "val_frac=0.1") != NULL, "spec %s", qkt_data_spec(a));

    /* Vocabulary export -> an encoder/decoder without the file. */
    int V;
    const uint8_t *voc = qkt_data_vocab(a, &V);
    qkt_data *v = NULL;
    qkt_err err;
    EXPECT(qkt_data_from_vocab(&v, voc, V, &err) == 0, "from_vocab: %s", err.msg);
    if (v) {
        int32_t ia[N], ib[N];
        uint8_t back[N];
        EXPECT(qkt_data_encode(a, buf, N, ia, &err) == 0 && qkt_data_encode(v, buf, N, ib, &err) == 0, "encode");
        EXPECT(!memcmp(ia, ib, sizeof ia), "vocab-only encoder differs from the file's");
        qkt_data_decode(v, ib, N, back);
        EXPECT(!memcmp(back, buf, N), "vocab-only round trip");
        EXPECT(qkt_data_vocab_size(v) == 7 && qkt_data_is_text(v), "vocab-only size");
        const uint8_t bad[] = {'a', 'q', 'b'};
        EXPECT(qkt_data_encode(v, bad, 3, ia, &err) == -1 && strstr(err.msg, "0x71 ('q') at offset 1"),
               "encode of a byte outside the vocabulary: %s", err.msg);
        qkt_data_free(v);
    }
    const uint8_t unsorted[] = {'b', 'a'}, dup[] = {'a', 'a'};
    EXPECT(qkt_data_from_vocab(&v, unsorted, 2, &err) == -1 && v == NULL && strstr(err.msg, "sorted"), "%s", err.msg);
    EXPECT(qkt_data_from_vocab(&v, dup, 2, &err) == -1 && strstr(err.msg, "unique"), "%s", err.msg);
    EXPECT(qkt_data_from_vocab(&v, dup, 0, &err) == -1 && strstr(err.msg, "expected 1..256"), "%s", err.msg);
    /* Synthetic tasks have no byte encoding. */
    qkt_data *t = open_text("mqar", 0, 1);
    if (t) {
        int32_t id;
        EXPECT(qkt_data_encode(t, buf, 1, &id, &err) == -1 && strstr(err.msg, "not a text source"), "%s", err.msg);
        qkt_data_free(t);
    }
    qkt_data_free(a), qkt_data_free(b), qkt_data_free(c);
}

static void test_shakespeare(void) {
    /* ../shared/data from the repo root (a worktree sits one level deeper). */
    const char *src = getenv("QKT_SOURCE_DIR");
    const char *rel[2] = {"/../shared/data/tinyshakespeare.txt", "/../../shared/data/tinyshakespeare.txt"};
    char path[1024];
    size_t len = 0;
    uint8_t *file = NULL;
    for (int i = 0; i < 2 && !file; i++) {
        snprintf(path, sizeof path, "%s%s", src && *src ? src : "..", rel[i]);
        file = read_all(path, &len);
    }
    if (!file) {
        printf("skip: tinyshakespeare.txt not found under %s/../shared/data (round trip not run)\n", src ? src : "..");
        return;
    }
    printf("tinyshakespeare: %s, %zu bytes\n", path, len);
    check_file(path, file, len, 64, 0, 65);
    free(file);
}

static void expect_error(const char *spec, int T, const char *want) {
    qkt_data *d = (qkt_data *)&want;
    qkt_err err = {{0}};
    qkt_data_opts o = {.seq_len = T, .seed = 1};
    int rc = qkt_data_open(&d, spec, &o, &err);
    EXPECT(rc == -1 && d == NULL, "'%s' should fail", spec);
    EXPECT(strstr(err.msg, want) != NULL, "'%s': message '%s' lacks '%s'", spec, err.msg, want);
    EXPECT(!strchr(err.msg, '\n'), "'%s': message has a newline", spec);
    if (rc == 0) qkt_data_free(d);
}

static void test_errors(const char *dir) {
    char spec[700], want[600];
    snprintf(spec, sizeof spec, "text:%s/missing.txt", dir);
    snprintf(want, sizeof want, "'%s/missing.txt': no such file", dir);
    expect_error(spec, 0, want);
    const char *empty = write_file(dir, "empty.txt", (const uint8_t *)"", 0);
    snprintf(spec, sizeof spec, "text:%s", empty);
    snprintf(want, sizeof want, "'%s': is empty", empty);
    expect_error(spec, 0, want);
    snprintf(spec, sizeof spec, "text:%s", dir);
    snprintf(want, sizeof want, "'%s': is a directory", dir);
    expect_error(spec, 0, want);
    expect_error("text:/dev/null", 0, "'/dev/null': not a regular file");
    /* Too short: 400 bytes at T = 64 -> val 40 < 65; train fine. */
    static uint8_t buf[400];
    memset(buf, 'x', sizeof buf);
    const char *shortf = write_file(dir, "short.txt", buf, sizeof buf);
    snprintf(spec, sizeof spec, "text:%s", shortf);
    snprintf(want, sizeof want, "'%s': too short for seq_len 64", shortf);
    expect_error(spec, 0, want);
    expect_error(spec, 64, "val split (last 10%) of 40 bytes, each needs >= 65");
    /* Train too short: val_frac 0.9 leaves 40 train bytes. */
    snprintf(spec, sizeof spec, "text:%s,val_frac=0.9", shortf);
    expect_error(spec, 50, "train split of 40");
    /* T fits exactly: val 40 bytes holds one window of T+1 = 40. */
    snprintf(spec, sizeof spec, "text:%s", shortf);
    qkt_data *d = open_text(spec, 39, 1);
    if (d) {
        int32_t x[39], y[39];
        qkt_data_batch(d, QKT_SPLIT_VAL, 1, x, y, NULL);
        qkt_data_free(d);
    }
    /* A 1-byte file. */
    const char *one = write_file(dir, "one.txt", (const uint8_t *)"a", 1);
    snprintf(spec, sizeof spec, "text:%s", one);
    expect_error(spec, 0, "too short");
    /* Unreadable (root reads anything: skip then). */
    const char *locked = write_file(dir, "locked.txt", buf, sizeof buf);
    chmod(locked, 0);
    if (geteuid() != 0) {
        snprintf(spec, sizeof spec, "text:%s", locked);
        snprintf(want, sizeof want, "'%s': cannot open: Permission denied", locked);
        expect_error(spec, 0, want);
    } else {
        printf("skip: running as root, the unreadable-file case cannot be made\n");
    }
    chmod(locked, 0600);
    /* Options. */
    snprintf(spec, sizeof spec, "text:%s,val_frac=0", shortf);
    expect_error(spec, 8, "val_frac=0: expected a number in (0, 1)");
    snprintf(spec, sizeof spec, "text:%s,val_frac=1", shortf);
    expect_error(spec, 8, "val_frac=1: expected");
    snprintf(spec, sizeof spec, "text:%s,val_frac=abc", shortf);
    expect_error(spec, 8, "val_frac=abc: expected");
    snprintf(spec, sizeof spec, "text:%s,val_frac=", shortf);
    expect_error(spec, 8, "val_frac=: expected");
    snprintf(spec, sizeof spec, "text:%s,val_frac=0.1,val_frac=0.2", shortf);
    expect_error(spec, 8, "given twice");
    expect_error("text:,val_frac=0.1", 8, "missing file path");
}

/* A file that reports size 0 whatever it holds (procfs) is read to its end: it was
 * refused as empty. */
static void test_proc_file(void) {
    struct stat st;
    if (stat("/proc/cpuinfo", &st) != 0 || st.st_size != 0) {
        printf("skip: no /proc/cpuinfo reporting size 0 here (a file read to its end not tested)\n");
        return;
    }
    qkt_data *d = open_text("text:/proc/cpuinfo", 8, 1);
    size_t n = 0;
    const uint8_t *p = d ? qkt_data_text(d, &n) : NULL;
    EXPECT(p && n > 0 && p[n - 1] == '\n', "text:/proc/cpuinfo: %zu bytes", n);
    qkt_data_free(d);
}

/* A sysfs file, which reports 4096 bytes and holds fewer, is its bytes. */
static void test_sys_file(void) {
    const char *path = "/sys/devices/system/cpu/hotplug/states"; /* one line per hotplug state: ~1.5 KB */
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size != 4096) {
        printf("skip: no %s reporting 4096 bytes here (a file ending before its size not tested)\n", path);
        return;
    }
    char spec[128];
    snprintf(spec, sizeof spec, "text:%s", path);
    qkt_data *d = open_text(spec, 8, 1);
    size_t n = 0;
    const uint8_t *p = d ? qkt_data_text(d, &n) : NULL;
    EXPECT(p && n > 0 && n < 4096 && p[n - 1] == '\n', "%s: %zu bytes", spec, n);
    qkt_data_free(d);
}

/* Offsets in files over 4 GiB: the 64-bit draw covers [0, n) uniformly. */
static void test_below64(void) {
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    uint64_t n = 6000000000ull, hi = 0;
    int buckets[4] = {0};
    for (int i = 0; i < 40000; i++) {
        uint64_t v = qkt__rng_below64(&r, n);
        hi = v > hi ? v : hi;
        buckets[v * 4 / n]++;
        if (v >= n) EXPECT(0, "draw %llu >= n", (unsigned long long)v);
    }
    EXPECT(hi > (uint64_t)4 << 30, "never drew beyond 4 GiB (max %llu)", (unsigned long long)hi);
    for (int k = 0; k < 4; k++) EXPECT(abs(buckets[k] - 10000) < 500, "bucket %d: %d", k, buckets[k]);
}

int main(void) {
    const char *dir = qkt_test_tmpdir("data");
    test_temp_file(dir);
    test_shakespeare();
    test_errors(dir);
    test_proc_file();
    test_sys_file();
    test_below64();
    return qkt_test_finish();
}
