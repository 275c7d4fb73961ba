/* Messages: the one place the library's words leave it (the hook, qkt_autograd.h). */
#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#include "qkt_autograd.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The one write to stderr in the library: the hook a program has not replaced. */
static void default_log(qkt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == QKT_LOG_STATUS) return;
    fprintf(stderr, "%s\n", msg);
    fflush(stderr);
}

/* Recursive: a hook may log (or fail) in turn. */
static pthread_mutex_t log_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static qkt_log_fn log_fn = default_log;
static void *log_user;
static bool log_is_live;

qkt_log_fn qkt_set_log_handler(qkt_log_fn fn, void *user, bool live) {
    pthread_mutex_lock(&log_lock);
    qkt_log_fn prev = log_fn;
    log_fn = fn ? fn : default_log;
    log_user = fn ? user : NULL;
    log_is_live = fn && live;
    pthread_mutex_unlock(&log_lock);
    return prev;
}

bool qkt_log_live(void) {
    pthread_mutex_lock(&log_lock);
    bool live = log_is_live;
    pthread_mutex_unlock(&log_lock);
    return live;
}

void qkt_logf(qkt_log_level level, const char *fmt, ...) {
    char small[1024], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small) { /* a long list of cells: plain malloc, so a failure cuts the line rather than ending the run */
        char *big = malloc((size_t)n + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            msg = big;
        }
    }
    for (char *p = msg; *p; p++) /* one line, as the hook is promised */
        if (*p == '\n' || *p == '\r') *p = ' ';
    pthread_mutex_lock(&log_lock);
    log_fn(level, msg, log_user);
    pthread_mutex_unlock(&log_lock);
    if (msg != small) free(msg);
}
