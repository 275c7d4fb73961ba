/* Threads: the process's OpenMP team size (qkt_set_threads, QKT_THREADS), OpenBLAS kept to
 * one thread, and the re-exec that sets the libraries' load-time thread environment. */
#include "qkt_autograd.h"
#include "ops_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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
    openblas_set_num_threads(1); /* qkt_gemm splits products over the OpenMP threads (kern_gemm.c) */
#endif
    g_threads = n;
}

/* A short OpenMP spin beats both libgomp's long default spin and passive waiting on a
 * shared machine (docs/performance.md, "Thread settings"), so unless the user
 * set OMP_WAIT_POLICY or GOMP_SPINCOUNT, qkt sets GOMP_SPINCOUNT=1000. It also sets
 * OPENBLAS_NUM_THREADS=1 unless set: qkt never uses OpenBLAS's threads (kern_gemm.c), and
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

bool qkt_parallel_worth(bool big) {
#ifdef _OPENMP
    return big && omp_get_max_threads() > 1 && !omp_in_parallel();
#else
    (void)big;
    return false;
#endif
}

int qkt_get_threads(void) {
    qkt__threads_init();
    if (g_threads > 0) return g_threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
