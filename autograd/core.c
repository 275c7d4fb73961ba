/* Errors, threads and the project RNG. */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include "qkt_autograd.h"

#include <math.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef QKT_DOUBLE
const int qkt_abi_float64__link_with_libqkt64 = 64;
#else
const int qkt_abi_float32__link_with_libqkt = 32;
#endif

static void default_fatal(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)kind, (void)user;
    qkt_logf(QKT_LOG_ERROR, "qkt: %s", msg);
}

static pthread_mutex_t fatal_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static qkt_fatal_fn fatal_fn = default_fatal;
static void *fatal_user;

qkt_fatal_fn qkt_set_fatal_handler(qkt_fatal_fn fn, void *user) {
    qkt_fatal_fn prev = fatal_fn;
    fatal_fn = fn ? fn : default_fatal;
    fatal_user = user;
    return prev;
}

static QKT_NORETURN void fatal_v(qkt_fatal_kind kind, const char *prefix, const char *fmt, va_list ap, const char *suffix) {
    char msg[1024];
    int k = snprintf(msg, sizeof msg, "%s", prefix);
    if (k < 0 || k >= (int)sizeof msg) k = 0;
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    k = (int)strlen(msg);
    snprintf(msg + k, sizeof msg - (size_t)k, "%s", suffix);
    for (k = (int)strlen(msg); k > 0 && msg[k - 1] == '\n'; k--) msg[k - 1] = 0;
    /* Replicas run on several threads: one report, one end of the process. The lock
     * is never released (the hook does not return to qkt); it is recursive, so a thread
     * whose hook left by longjmp can fail again, while other threads wait here. */
    pthread_mutex_lock(&fatal_lock);
    fatal_fn(kind, msg, fatal_user);
    abort();
}

QKT_NORETURN void qkt_fatalf(qkt_fatal_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fatal_v(kind, "", fmt, ap, "");
}

QKT_NORETURN void qkt_fatal(const char *file, int line, const char *cond, const char *fmt, ...) {
    char prefix[512], suffix[512];
    snprintf(prefix, sizeof prefix, "usage error at %s:%d: ", file, line);
    snprintf(suffix, sizeof suffix, " (check failed: %s)", cond);
    va_list ap;
    va_start(ap, fmt);
    fatal_v(QKT_FATAL_USAGE, prefix, fmt, ap, suffix);
}

/* ---------------------------------------------------------------- allocation */
static QKT_NORETURN void nomem(size_t n, const char *file, int line) {
    qkt_fatalf(QKT_FATAL_NOMEM, "out of memory: %zu bytes requested at %s:%d", n, file, line);
}

void *qkt__malloc(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) nomem(n, file, line);
    return p;
}

void *qkt__calloc(size_t n, size_t size, const char *file, int line) {
    if (size && n > SIZE_MAX / size) nomem(SIZE_MAX, file, line);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) nomem(n * size, file, line);
    return p;
}

void *qkt__realloc(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) nomem(n, file, line);
    return q;
}

char *qkt__strdup(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = qkt__malloc(n, file, line);
    memcpy(p, s, n);
    return p;
}

void *qkt__aligned_alloc(size_t align, size_t n, const char *file, int line) {
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : align) != 0) nomem(n, file, line);
    return p;
}

int qkt_err_set(qkt_err *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof err->msg) memcpy(err->msg + sizeof err->msg - 4, "...", 4); /* cut, and it says so */
        /* one line whatever it quotes (a spec, a JSON string, a file name): control
         * characters such as newlines become '?' */
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    }
    return -1;
}

/* ---------------------------------------------------------------- threads */
#ifndef QKT_NO_BLAS
void openblas_set_num_threads(int n); /* from libopenblas; declared here to avoid its header */
#endif
static int g_threads = 0; /* process-wide thread setting, like OpenMP's own ICV */

void qkt_set_threads(int n) {
#ifdef _OPENMP
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
#else
    if (n <= 0) n = 1;
#endif
#ifndef QKT_NO_BLAS
    openblas_set_num_threads(1); /* qkt_gemm splits products over the OpenMP threads (gemm.c) */
#endif
    g_threads = n;
}

/* A short OpenMP spin beats both libgomp's long default spin and passive waiting on a
 * shared machine (measured: docs/performance.md, "Thread settings"), so unless the user
 * set OMP_WAIT_POLICY or GOMP_SPINCOUNT, qkt sets GOMP_SPINCOUNT=1000. It also sets
 * OPENBLAS_NUM_THREADS=1 unless set: qkt never uses OpenBLAS's threads (gemm.c), and
 * without it OpenBLAS starts a worker per core when it loads, which spins on an idle core
 * for a while. Both are read when the libraries load, so qkt_thread_env_reexec sets them
 * and re-executes the program once. */
void qkt_thread_env_reexec(char **argv) {
    bool policy = !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"), blas = !getenv("OPENBLAS_NUM_THREADS");
    if (!policy && !blas) return;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1); /* the binary's real path: keeps its name in ps */
    if (n <= 0 || (size_t)n >= sizeof self - 1) return;
    self[n] = 0;
    if (policy && setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
    if (blas && setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    execv(self, argv); /* returns only on failure: then run as we are */
}

/* The first context (or qkt_get_threads) applies the process's thread settings, so a
 * program linking the library runs like the qkt program without doing anything:
 * QKT_THREADS=n (0 = all cores) sets the team; OpenBLAS is kept to one thread either way
 * (qkt splits large products over its own OpenMP threads; OpenBLAS's pool, started when it
 * loads, would compete with them for the cores). A bad QKT_THREADS is ignored here with a
 * warning (the CLI refuses it). qkt_set_threads later overrides it. */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
int qkt_threads_env(int *n, qkt_err *err) {
    const char *e = getenv("QKT_THREADS");
    if (!e || !*e) return 0;
    char *end;
    long v = strtol(e, &end, 10);
    if (*end || v < 0 || v > QKT_MAX_THREADS)
        return qkt_err_set(err, "QKT_THREADS '%s': expected an integer in [0, %d]", e, QKT_MAX_THREADS);
    *n = (int)v;
    return 1;
}

static void threads_from_env(void) {
    int n;
    qkt_err err;
    int rc = qkt_threads_env(&n, &err);
    if (rc == 1) {
        if (g_threads == 0) qkt_set_threads(n);
        return;
    }
    if (rc < 0) qkt_logf(QKT_LOG_WARN, "qkt: %s; ignored", err.msg);
#ifndef QKT_NO_BLAS
    openblas_set_num_threads(1);
#endif
}
void qkt__threads_init(void) { pthread_once(&threads_once, threads_from_env); }

int qkt_get_threads(void) {
    qkt__threads_init();
    if (g_threads > 0) return g_threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ---------------------------------------------------------------- RNG */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void qkt_rng_seed(qkt_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t qkt_rng_u64(qkt_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t qkt_rng_below(qkt_rng *r, uint32_t n) {
    QKT_CHECK(n > 0, "qkt_rng_below(0)");
    /* Lemire's multiply-shift with rejection: unbiased. */
    uint64_t m = (uint64_t)(uint32_t)(qkt_rng_u64(r) >> 32) * n;
    uint32_t lo = (uint32_t)m;
    if (lo < n) {
        uint32_t t = (uint32_t)(-n) % n;
        while (lo < t) {
            m = (uint64_t)(uint32_t)(qkt_rng_u64(r) >> 32) * n;
            lo = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double qkt_rng_uniform(qkt_rng *r) { return (double)(qkt_rng_u64(r) >> 11) * 0x1.0p-53; }

double qkt_rng_normal(qkt_rng *r) {
    /* Box-Muller; u1 in (0, 1] so log never sees 0. */
    double u1 = 1.0 - qkt_rng_uniform(r);
    double u2 = qkt_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void qkt_rng_seed_stream(qkt_rng *r, uint64_t seed, qkt_rng_stream stream) { qkt_rng_seed(r, seed ^ (uint64_t)stream); }

void qkt_rng_split(qkt_rng *r, uint64_t stream, qkt_rng *out) {
    uint64_t x = qkt_rng_u64(r) ^ (stream * 0xD1B54A32D192ED03ull);
    for (int i = 0; i < 4; i++) out->s[i] = splitmix64(&x);
}
