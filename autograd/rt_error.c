/* Errors and allocation: the fatal hook (qkt_fatal, QKT_CHECK), the one allocation
 * wrapper every qkt allocation goes through (qkt__malloc and friends, failing through the
 * hook with the size and the caller's file:line), qkt_err_set, and the float32/float64 link
 * guard. */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include "ops_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
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

/* The op a thread is in (set by the input check every op runs, and by qkt_backward for
 * each node), so that a usage error names the caller's call and the context's scope, not
 * only qkt's file:line. */
static __thread const char *call_op, *call_scope;
static __thread bool call_backward;

void qkt__call_set(const char *op, const char *scope, bool backward) {
    call_op = op, call_scope = scope, call_backward = backward;
}

QKT_NORETURN void qkt_fatal(const char *file, int line, const char *cond, const char *fmt, ...) {
    char prefix[512], suffix[512], call[256] = "";
    if (call_op)
        snprintf(call, sizeof call, " (%sop %s%s%s)", call_backward ? "backward of " : "", call_op,
                 call_scope ? ", scope " : "", call_scope ? call_scope : "");
    snprintf(prefix, sizeof prefix, "usage error at %s:%d%s: ", file, line, call);
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

/* The parameter store's blocks (values, grads) and the optimizer's moments. 64-byte
 * aligned, so that a vector pass over them (AdamW's) reads and writes whole cache lines:
 * calloc's memory is 16 bytes past a line, and 512-bit AdamW at 2^20 parameters ran 1.9
 * times faster aligned (docs/performance.md, "What was changed", 19). calloc, not memset:
 * pages a run never uses (grads while sampling, the moments of a run that takes no step)
 * stay untouched. The byte before the block holds its offset from calloc's pointer
 * (qkt_free64). Transparent huge pages (Linux's THP in "madvise" mode; else nothing) on
 * the 2 MiB-aligned inside of a block of 2 MiB or more, a hint only: a fresh model's first
 * touch then faults 2 MiB at a time, not 4 KiB. In a virtual machine, where each fault is
 * dear, the study's GPT-at-init cell at d_k 512 (25M parameters) made 56763 page faults
 * and took 1.40 CPU-s, and 8220-8729 and 1.16-1.23 with the hint (docs/performance.md,
 * "What was changed", 13). Not the step arena's blocks: marked too, the study's training
 * cells ran 1.4-1.6 times slower in two runs, cause not settled. The values are the same
 * either way. */
void *qkt__calloc64(size_t n, const char *file, int line) {
    if (n > SIZE_MAX - 64) nomem(n, file, line); /* n + 64 would wrap to a few bytes */
    unsigned char *raw = qkt__calloc(1, n + 64, file, line);
    unsigned char *blk = (unsigned char *)(((uintptr_t)raw + 64) & ~(uintptr_t)63); /* 1..64 bytes in */
    blk[-1] = (unsigned char)(blk - raw);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    enum { BIG_PAGE = 2 << 20 };
    uintptr_t a = ((uintptr_t)blk + BIG_PAGE - 1) & ~(uintptr_t)(BIG_PAGE - 1);
    uintptr_t b = ((uintptr_t)blk + n) & ~(uintptr_t)(BIG_PAGE - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* refused: 4 KiB pages, as without it */
#endif
    return blk;
}

void qkt_free64(void *p) {
    if (p) free((unsigned char *)p - ((unsigned char *)p)[-1]);
}

static qkt_names g_names = QKT_NAMES_FIELDS;
qkt_names qkt_set_names(qkt_names n) {
    qkt_names prev = g_names;
    g_names = n;
    return prev;
}
qkt_names qkt_get_names(void) { return g_names; }

int qkt__err_call(qkt_err *err, const char *call) {
    if (err && g_names == QKT_NAMES_FIELDS) {
        qkt_err tmp = *err;
        qkt_err_set(err, "%s: %s", call, tmp.msg);
    }
    return -1;
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
