/* safetensors reader and writer: round trip, the exact byte layout of a tiny
 * file, every malformed header we know of, atomic replacement under failures,
 * and interop with numpy. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#include "qkt_safetensors.h"
#include "qkt_io.h"
#include "qkt_test.h"

/* The whole file (NULL if it cannot be read). */
static uint8_t *slurp(const char *path, size_t *n) { return (uint8_t *)qkt_read_file(path, n, NULL); }

static void spit(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

/* Files in dir whose name contains ".tmp." (left-over temp files). */
static int count_tmp(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* ---------------------------------------------------------------- round trip */
static void test_round_trip(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/rt.safetensors", dir);
    float a[6] = {1.5f, -2.25f, 3e-38f, 1e30f, -0.0f, 7};
    double b[4] = {0.1, -1e300, 5e-324, 42};
    int32_t c[4] = {INT32_MIN, -1, 0, INT32_MAX};
    int64_t s = INT64_MIN + 3;
    uint64_t r[4] = {UINT64_MAX, 0, 1ull << 63, 12345};
    qkt_st_write w[] = {
        {"a.weight", QKT_ST_F32, 2, {2, 3}, a}, {"b", QKT_ST_F64, 1, {4}, b},   {"c", QKT_ST_I32, 2, {2, 2}, c},
        {"scalar", QKT_ST_I64, 0, {0}, &s},     {"rng.s", QKT_ST_U64, 1, {4}, r}, {"empty", QKT_ST_F32, 2, {0, 3}, NULL},
    };
    qkt_st_meta meta[] = {{"n_layer", "4"}, {"quote\"and\\back", "line\nbreak\ttab"}, {"unicode", "θ ≈ 1/√d_k 🙂"}};
    qkt_err err = {{0}};
    EXPECT(qkt_safetensors_write(path, w, 6, meta, 3, &err) == 0, "%s", err.msg);
    qkt_safetensors st;
    EXPECT(qkt_safetensors_read(path, &st, &err) == 0, "%s", err.msg);
    EXPECT(st.n == 6 && st.n_meta == 3, "n %d meta %d", st.n, st.n_meta);
    EXPECT(st.header_len % 8 == 0, "header length %llu not a multiple of 8", (unsigned long long)st.header_len);
    for (int i = 0; i < 3; i++) {
        const char *v = qkt_safetensors_meta(&st, meta[i].key);
        EXPECT(v && !strcmp(v, meta[i].value), "metadata %s = %s", meta[i].key, v ? v : "(null)");
    }
    EXPECT(qkt_safetensors_meta(&st, "absent") == NULL, "absent key found");
    const qkt_st_tensor *t = qkt_safetensors_find(&st, "a.weight");
    EXPECT(t && t->dtype == QKT_ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6, "a");
    if (t) EXPECT(!memcmp(t->data, a, sizeof a), "a bytes differ");
    qkt_real ra[6], rb[4];
    EXPECT(t && qkt_st_tensor_to_real(t, ra, 6, path, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 6; i++) EXPECT(ra[i] == (qkt_real)a[i], "a[%d]", i);
    t = qkt_safetensors_find(&st, "b");
    EXPECT(t && qkt_st_tensor_to_real(t, rb, 4, path, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) EXPECT(rb[i] == (qkt_real)b[i], "b[%d]", i);
    int32_t rc[4];
    t = qkt_safetensors_find(&st, "c");
    EXPECT(t && qkt_st_tensor_to_i32(t, rc, 4, path, &err) == 0 && !memcmp(rc, c, sizeof c), "c: %s", err.msg);
    EXPECT(t && qkt_st_tensor_to_real(t, ra, 4, path, &err) == -1 && strstr(err.msg, "expected F32 or F64"), "%s", err.msg);
    t = qkt_safetensors_find(&st, "scalar");
    int64_t rs = 0;
    EXPECT(t && t->ndim == 0 && t->numel == 1 && qkt_st_tensor_to_i64(t, &rs, 1, path, &err) == 0 && rs == s, "scalar");
    EXPECT(t && qkt_st_tensor_to_i32(t, rc, 1, path, &err) == -1 && strstr(err.msg, "does not fit I32"), "%s", err.msg);
    EXPECT(t && qkt_st_tensor_to_u64(t, r, 1, path, &err) == -1 && strstr(err.msg, "does not fit U64"), "%s", err.msg);
    uint64_t rr[4];
    t = qkt_safetensors_find(&st, "rng.s");
    EXPECT(t && qkt_st_tensor_to_u64(t, rr, 4, path, &err) == 0 && !memcmp(rr, r, sizeof r), "rng: %s", err.msg);
    EXPECT(t && qkt_st_tensor_to_i64(t, &rs, 4, path, &err) == -1 && strstr(err.msg, "does not fit I64"), "%s", err.msg);
    EXPECT(t && qkt_st_tensor_to_u64(t, rr, 3, path, &err) == -1 && strstr(err.msg, "has 4 values, expected 3"), "%s",
           err.msg);
    t = qkt_safetensors_find(&st, "empty");
    EXPECT(t && t->numel == 0 && t->begin == t->end, "empty");
    EXPECT(qkt_safetensors_find(&st, "nope") == NULL, "found nope");
    qkt_safetensors_free(&st);
    EXPECT(count_tmp(dir) == 0, "temp files left in %s", dir);
}

/* ---------------------------------------------------------------- byte layout */
static void test_layout(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.safetensors", dir);
    float x[2] = {1.0f, -2.0f};
    qkt_st_write w = {"x", QKT_ST_F32, 1, {2}, x};
    qkt_st_meta m = {"k", "v"};
    qkt_err err = {{0}};
    EXPECT(qkt_safetensors_write(path, &w, 1, &m, 1, &err) == 0, "%s", err.msg);
    size_t n = 0;
    uint8_t *b = slurp(path, &n);
    const char *json = "{\"__metadata__\":{\"k\":\"v\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t jl = strlen(json), hl = (jl + 7) / 8 * 8; /* 77 bytes of JSON, padded to 80 */
    EXPECT(hl == 80, "expected JSON length %zu", jl);
    EXPECT(n == 8 + hl + 8, "file is %zu bytes", n);
    const uint8_t len8[8] = {80, 0, 0, 0, 0, 0, 0, 0};
    EXPECT(b && !memcmp(b, len8, 8), "header length bytes");
    EXPECT(b && !memcmp(b + 8, json, jl), "JSON: %.*s", (int)hl, b ? (char *)b + 8 : "");
    for (size_t i = jl; b && i < hl; i++) EXPECT(b[8 + i] == ' ', "padding byte %zu is 0x%02x", i, b[8 + i]);
    const uint8_t data[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* 1.0f, -2.0f little-endian */
    EXPECT(b && !memcmp(b + 8 + hl, data, 8), "data bytes");
    free(b);
}

/* ---------------------------------------------------------------- malformed */
/* A file of: header length `hl` (or strlen(json) if hl < 0), the JSON, `dlen` data bytes. */
static size_t mk(uint8_t *out, long long hl, const char *json, size_t dlen) {
    size_t jl = strlen(json);
    uint64_t h = hl < 0 ? jl : (uint64_t)hl;
    for (int k = 0; k < 8; k++) out[k] = (uint8_t)(h >> (8 * k));
    memcpy(out + 8, json, jl);
    memset(out + 8 + jl, 0x5a, dlen);
    return 8 + jl + dlen;
}

typedef struct {
    long long hl;
    const char *json;
    size_t dlen;
    const char *expect; /* substring of the message */
} bad_case;

#define E(dt, sh, off) "{\"dtype\":\"" dt "\",\"shape\":" sh ",\"data_offsets\":" off "}"
static const bad_case bad[] = {
    {1ll << 40, "{}", 0, "is absurd"},
    {1000, "{}", 0, "runs past the end of the file"},
    {0, "", 0, "too small for a JSON object"},
    {-1, "{\"a\xff\":" E("F32", "[1]", "[0,4]") "}", 4, "not valid UTF-8"},
    {-1, "{\"\xc0\xaf\":1}", 0, "not valid UTF-8"},          /* overlong '/' */
    {-1, "{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"},      /* a surrogate */
    {-1, "{\"a\":", 0, "not valid JSON"},
    {-1, "{'a':1}", 0, "not valid JSON"},
    {-1, "[1,2]", 0, "is an array, not a JSON object"},
    {-1, "{} {}", 0, "bytes after the JSON value"},
    {-1, "{\"a\":[1]}", 0, "tensor 'a' is an array, not an object"},
    {-1, "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "has no 'dtype'"},
    {-1, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "has no 'shape'"},
    {-1, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "has no 'data_offsets'"},
    {-1, "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "field 'dtype' twice"},
    {-1, "{\"a\":" E("F33", "[1]", "[0,4]") "}", 4, "unknown dtype 'F33'"},
    {-1, "{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype is a number, not a string"},
    {-1, "{\"a\":" E("F32", "4", "[0,16]") "}", 16, "shape is a number, not an array"},
    {-1, "{\"a\":" E("F32", "[2,-2]", "[0,16]") "}", 16, "shape[1] is not a non-negative integer"},
    {-1, "{\"a\":" E("F32", "[2.5]", "[0,10]") "}", 10, "shape[0] is not a non-negative integer"},
    {-1, "{\"a\":" E("F32", "[\"2\"]", "[0,8]") "}", 8, "shape[0] is not a non-negative integer"},
    {-1, "{\"a\":" E("F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]") "}", 4, "rank 9"},
    {-1, "{\"a\":" E("F32", "[4294967296,4294967296]", "[0,4]") "}", 4, "is too large"},
    {-1, "{\"a\":" E("F32", "[1]", "[0,4,8]") "}", 8, "data_offsets is not an array of 2"},
    {-1, "{\"a\":" E("F32", "[1]", "[0,-4]") "}", 4, "data_offsets is not an array of 2"},
    {-1, "{\"a\":" E("F32", "[4,8]", "[0,64]") "}", 64, "offsets [0, 64) do not match shape (4, 8) of F32 (128 bytes)"},
    {-1, "{\"a\":" E("F32", "[1]", "[8,4]") "}", 8, "have begin > end"},
    {-1, "{\"a\":" E("F32", "[2]", "[0,8]") "}", 4, "run past the end of the data (4 bytes)"},
    {-1, "{\"a\":" E("F32", "[2]", "[0,8]") ",\"b\":" E("F32", "[2]", "[4,12]") "}", 12, "overlaps tensor 'a'"},
    {-1, "{\"a\":" E("F32", "[1]", "[4,8]") "}", 8, "data bytes [0, 4) belong to no tensor"},
    {-1, "{\"a\":" E("F32", "[1]", "[0,4]") "}", 6, "data bytes [4, 6) after the last tensor"},
    {-1, "{\"a\":" E("F32", "[1]", "[0,4]") ",\"a\":" E("F32", "[1]", "[4,8]") "}", 8, "duplicate tensor name 'a'"},
    {-1, "{\"__metadata__\":[\"x\"]}", 0, "__metadata__ is an array, not an object"},
    {-1, "{\"__metadata__\":{\"n_layer\":4}}", 0, "metadata 'n_layer' is a number, not a string"},
    {-1, "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicate metadata key 'k'"},
    {-1, "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ appears twice"},
    {-1, "{\"bad\\nname\":[]}", 0, "tensor 'bad?name' is an array"}, /* control bytes never reach the message */
};

static void test_malformed(const char *dir) {
    uint8_t buf[4096];
    qkt_err err;
    qkt_safetensors st;
    /* an empty but valid file parses; every row of `bad` fails */
    size_t n = mk(buf, -1, "{}", 0);
    EXPECT(qkt_safetensors_parse(buf, n, "ok.safetensors", &st, &err) == 0 && st.n == 0, "{}: %s", err.msg);
    qkt_safetensors_free(&st);
    for (size_t n0 = 0; n0 < 8; n0 += 5) {
        err.msg[0] = 0;
        EXPECT(qkt_safetensors_parse(buf, n0, "short.safetensors", &st, &err) == -1 &&
                   strstr(err.msg, "short.safetensors: file is") && strstr(err.msg, "too short"),
               "%zu bytes: %s", n0, err.msg);
    }
    int cases = 2;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++, cases++) {
        n = mk(buf, bad[i].hl, bad[i].json, bad[i].dlen);
        memset(&err, 0, sizeof err);
        memset(&st, 0x7e, sizeof st);
        int rc = qkt_safetensors_parse(buf, n, "bad.safetensors", &st, &err);
        EXPECT(rc == -1 && !strncmp(err.msg, "bad.safetensors: ", 17) && strstr(err.msg, bad[i].expect),
               "case %zu (%s): rc %d, message '%s', expected '%s'", i, bad[i].json, rc, err.msg, bad[i].expect);
        EXPECT(st.n == 0 && st.t == NULL && st.meta == NULL, "case %zu: st not cleared", i);
        EXPECT(!strchr(err.msg, '\n'), "case %zu: message has a newline", i);
    }
    printf("%d malformed cases\n", cases);
    /* the same through the file reader: truncation of a valid file at every length */
    char path[512];
    snprintf(path, sizeof path, "%s/trunc.safetensors", dir);
    float v[3] = {1, 2, 3};
    qkt_st_write w = {"v", QKT_ST_F32, 1, {3}, v};
    EXPECT(qkt_safetensors_write(path, &w, 1, NULL, 0, &err) == 0, "%s", err.msg);
    size_t full = 0;
    uint8_t *b = slurp(path, &full);
    int failures = 0;
    for (size_t k = 0; k < full; k++) {
        spit(path, b, k);
        failures += qkt_safetensors_read(path, &st, &err) == -1 && strstr(err.msg, path) != NULL;
    }
    EXPECT(failures == (int)full, "%d of %zu truncations rejected", failures, full);
    free(b);
    EXPECT(qkt_safetensors_read(dir, &st, &err) == -1 && strstr(err.msg, "is a directory"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    EXPECT(qkt_safetensors_read(path, &st, &err) == -1 && strstr(err.msg, "absent.safetensors: cannot open: No such file"),
           "%s", err.msg);
}

/* ---------------------------------------------------------------- atomic writes */
static void test_atomic(const char *dir) {
    char path[512], other[600];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    float small[4] = {1, 2, 3, 4};
    qkt_st_write w1 = {"w", QKT_ST_F32, 1, {4}, small};
    qkt_err err = {{0}};
    EXPECT(qkt_safetensors_write(path, &w1, 1, NULL, 0, &err) == 0, "%s", err.msg);
    size_t n1 = 0;
    uint8_t *v1 = slurp(path, &n1);
    enum { BIG = 1 << 16 };
    float *big = calloc(BIG, sizeof *big);
    qkt_st_write w2 = {"w", QKT_ST_F32, 1, {BIG}, big};

    /* a write that fails half-way: the file size limit makes write() fail with EFBIG */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    EXPECT(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit: %s", strerror(errno));
    int rc = qkt_safetensors_write(path, &w2, 1, NULL, 0, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    EXPECT(rc == -1 && strstr(err.msg, path) && strstr(err.msg, "write failed: File too large"), "%s", err.msg);
    size_t n = 0;
    uint8_t *now = slurp(path, &n);
    EXPECT(n == n1 && !memcmp(now, v1, n1), "previous file changed by a failed write");
    free(now);
    EXPECT(count_tmp(dir) == 0, "temp file left behind after a failed write");

    /* the target is a directory: refused, directory untouched */
    snprintf(other, sizeof other, "%s/adir", dir);
    mkdir(other, 0755);
    EXPECT(qkt_safetensors_write(other, &w1, 1, NULL, 0, &err) == -1 && strstr(err.msg, "adir: exists and is not a regular file"),
           "%s", err.msg);
    struct stat sb;
    EXPECT(stat(other, &sb) == 0 && S_ISDIR(sb.st_mode), "directory replaced");
    /* a directory that does not exist */
    snprintf(other, sizeof other, "%s/no/such/dir/x.safetensors", dir);
    EXPECT(qkt_safetensors_write(other, &w1, 1, NULL, 0, &err) == -1 && strstr(err.msg, "no/such/dir/x.safetensors") &&
               strstr(err.msg, "No such file or directory"),
           "%s", err.msg);
    /* a directory nobody may create files in (as root only pseudo-filesystems refuse) */
    EXPECT(qkt_safetensors_write("/proc/qkt-test.safetensors", &w1, 1, NULL, 0, &err) == -1 &&
               strstr(err.msg, "/proc/qkt-test.safetensors: cannot create a temporary file"),
           "%s", err.msg);
    if (geteuid() != 0) {
        snprintf(other, sizeof other, "%s/ro", dir);
        mkdir(other, 0500);
        snprintf(other, sizeof other, "%s/ro/x.safetensors", dir);
        EXPECT(qkt_safetensors_write(other, &w1, 1, NULL, 0, &err) == -1 && strstr(err.msg, "Permission denied"), "%s",
               err.msg);
    } else {
        printf("note: running as root, the chmod-0500 directory case is covered by /proc instead\n");
    }
    /* /dev/full: refused as a target (a rename would replace the device node)... */
    EXPECT(qkt_safetensors_write("/dev/full", &w1, 1, NULL, 0, &err) == -1 && strstr(err.msg, "not a regular file"), "%s",
           err.msg);
    EXPECT(stat("/dev/full", &sb) != 0 || S_ISCHR(sb.st_mode), "/dev/full replaced!");
    /* ...and as a descriptor it gives the disk-full error */
    int fd = open("/dev/full", O_WRONLY);
    if (fd >= 0) {
        EXPECT(qkt_safetensors_write_fd(fd, "/dev/full", &w2, 1, NULL, 0, &err) == -1 &&
                   strstr(err.msg, "/dev/full: write failed: No space left on device"),
               "%s", err.msg);
        close(fd);
    } else {
        printf("note: no /dev/full here, ENOSPC case skipped\n");
    }
    /* a successful overwrite replaces the contents, leaves no temp file */
    EXPECT(qkt_safetensors_write(path, &w2, 1, NULL, 0, &err) == 0, "%s", err.msg);
    qkt_safetensors st;
    EXPECT(qkt_safetensors_read(path, &st, &err) == 0 && st.n == 1 && st.t[0].numel == BIG, "%s", err.msg);
    qkt_safetensors_free(&st);
    EXPECT(count_tmp(dir) == 0, "temp file left behind");
    /* invalid UTF-8 in metadata is a user error, nothing written */
    qkt_st_meta badm = {"k", "\xff"};
    EXPECT(qkt_safetensors_write(path, &w1, 1, &badm, 1, &err) == -1 && strstr(err.msg, "not valid UTF-8"), "%s", err.msg);
    free(v1);
    free(big);
}

/* ---------------------------------------------------------------- numpy */
static void test_numpy(const char *dir) {
    char out[4096], cmd[2048], path[512], py[512], back[512];
    if (access("/usr/bin/python3", X_OK) != 0 || qkt_test_run("/usr/bin/python3 -c 'import numpy'", out, sizeof out) != 0) {
        printf("SKIP numpy interop: /usr/bin/python3 with numpy not available\n");
        return;
    }
    snprintf(path, sizeof path, "%s/np.safetensors", dir);
    snprintf(back, sizeof back, "%s/from_np.safetensors", dir);
    snprintf(py, sizeof py, "%s/check.py", dir);
    float a[12];
    double b[3] = {0.1, -2.5, 1e-300};
    int32_t c[2] = {-7, 1 << 30};
    for (int i = 0; i < 12; i++) a[i] = (float)i * 0.5f - 1;
    qkt_st_write w[] = {{"a", QKT_ST_F32, 2, {3, 4}, a}, {"b", QKT_ST_F64, 1, {3}, b}, {"c", QKT_ST_I32, 1, {2}, c}};
    qkt_st_meta m = {"n_layer", "2"};
    qkt_err err;
    EXPECT(qkt_safetensors_write(path, w, 3, &m, 1, &err) == 0, "%s", err.msg);
    /* numpy reads ours with nothing but the format description, and writes one back
     * in the compact style of other writers (no padding, ", " separators) */
    const char *script =
        "import json, struct, sys, numpy as np\n"
        "raw = open(sys.argv[1], 'rb').read()\n"
        "n = struct.unpack('<Q', raw[:8])[0]\n"
        "assert (8 + n) % 8 == 0\n"
        "h = json.loads(raw[8:8+n]); data = raw[8+n:]\n"
        "dt = {'F32': '<f4', 'F64': '<f8', 'I32': '<i4', 'I64': '<i8'}\n"
        "t = {k: np.frombuffer(data[v['data_offsets'][0]:v['data_offsets'][1]], dt[v['dtype']]).reshape(v['shape'])\n"
        "     for k, v in h.items() if k != '__metadata__'}\n"
        "assert h['__metadata__'] == {'n_layer': '2'}\n"
        "assert t['a'].shape == (3, 4) and np.array_equal(t['a'], np.arange(12, dtype='<f4').reshape(3, 4) * 0.5 - 1)\n"
        "assert np.array_equal(t['b'], np.array([0.1, -2.5, 1e-300]))\n"
        "assert t['c'].tolist() == [-7, 1 << 30]\n"
        "x = np.linspace(-1, 1, 6).astype('<f8').reshape(2, 3); y = np.array([5, -6], '<i8')\n"
        "hdr = json.dumps({'__metadata__': {'from': 'numpy'}, 'y': {'dtype': 'I64', 'shape': [2], 'data_offsets': [0, 16]},\n"
        "                  'x': {'dtype': 'F64', 'shape': [2, 3], 'data_offsets': [16, 64]}}).encode()\n"
        "open(sys.argv[2], 'wb').write(struct.pack('<Q', len(hdr)) + hdr + y.tobytes() + x.tobytes())\n"
        "print('numpy ok', float(t['a'].sum()))\n";
    spit(py, script, strlen(script));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s", py, path, back);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "numpy ok 21.0"), "python: %s", out);
    qkt_safetensors st;
    EXPECT(qkt_safetensors_read(back, &st, &err) == 0, "%s", err.msg);
    if (st.n == 2) {
        const char *from = qkt_safetensors_meta(&st, "from");
        EXPECT(from && !strcmp(from, "numpy"), "metadata from numpy");
        qkt_real x[6];
        int64_t y[2];
        EXPECT(qkt_st_tensor_to_real(qkt_safetensors_find(&st, "x"), x, 6, back, &err) == 0, "%s", err.msg);
        for (int i = 0; i < 6; i++) EXPECT_NEAR(x[i], -1 + 0.4 * i, 1e-6);
        EXPECT(qkt_st_tensor_to_i64(qkt_safetensors_find(&st, "y"), y, 2, back, &err) == 0 && y[0] == 5 && y[1] == -6,
               "y");
    }
    qkt_safetensors_free(&st);
}

int main(void) {
    const char *dir = qkt_test_tmpdir("st");
    EXPECT(!strcmp(qkt_st_dtype_name(QKT_ST_BF16), "BF16") && qkt_st_dtype_size(QKT_ST_F64) == 8, "dtype table");
    test_round_trip(dir);
    test_layout(dir);
    test_malformed(dir);
    test_atomic(dir);
    test_numpy(dir);
    return qkt_test_finish();
}
