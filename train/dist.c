/* qkt_dist.h's calls, dispatched to the transport in use (dist_backend.h: one process,
 * dist_local.c, or MPI's from libqkt_mpi, dist_mpi.c), and what every transport shares:
 * how a process knows it was started by an MPI launcher, before any MPI call. */
#include <stdlib.h>

#include "dist_backend.h"

static int env_int(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 1 || n > (1 << 24) ? 0 : (int)n;
}

int qkt_dist_launcher_size(void) {
    int n = env_int("OMPI_COMM_WORLD_SIZE");
    if (!n) n = env_int("PMI_SIZE");
    if (!n && (getenv("PMIX_RANK") || getenv("PMI_RANK"))) n = -1;
    return n;
}

int qkt_dist_agree(int rc) {
    const int n = qkt_dist_size();
    if (n < 2) return rc;
    int *all = qkt_malloc((size_t)n * sizeof *all);
    qkt_dist_allgather(&rc, all, sizeof rc);
    rc = 0;
    for (int r = 0; r < n && !rc; r++) rc = all[r];
    free(all);
    return rc;
}

/* The transport in use: one process unless a program installed MPI's (dist_backend.h). */
static const qkt__dist_backend *g_backend = &qkt__dist_local;

void qkt__dist_set_backend(const qkt__dist_backend *b) { g_backend = b ? b : &qkt__dist_local; }

bool qkt_dist_compiled(void) { return g_backend != &qkt__dist_local; }
const char *qkt_dist_library(void) { return g_backend->library(); }
int qkt_dist_init(int *argc, char ***argv, qkt_err *err) { return g_backend->init(argc, argv, err); }
void qkt_dist_finalize(void) { g_backend->finalize(); }
void qkt_dist_set_broken(void) { g_backend->set_broken(); }
void qkt_dist_abort(int code) {
    g_backend->abort(code); /* MPI_Abort ends every rank of a job; outside one it returns */
    qkt_fatalf(QKT_FATAL_ABORT, "the job was ended (status %d)", code);
}
int qkt_dist_rank(void) { return g_backend->rank(); }
int qkt_dist_size(void) { return g_backend->size(); }
int qkt_dist_local_size(void) { return g_backend->local_size(); }
const char *qkt_dist_host(void) { return g_backend->host(); }
void qkt_dist_barrier(void) { g_backend->barrier(); }
void qkt_dist_bcast(void *buf, size_t n, int root) { g_backend->bcast(buf, n, root); }
void qkt_dist_allgather(const void *mine, void *all, size_t n) { g_backend->allgather(mine, all, n); }
void qkt_dist_sum_ordered(qkt_real *x, int64_t n) { g_backend->sum_ordered(x, n); }
void qkt_dist_send(const void *buf, size_t n, int to, int tag) { g_backend->send(buf, n, to, tag); }
void qkt_dist_recv(void *buf, size_t n, int from, int tag) { g_backend->recv(buf, n, from, tag); }
bool qkt_dist_probe(int from, int tag) { return g_backend->probe(from, tag); }
void qkt_dist_get_stats(qkt_dist_stats *st) { g_backend->get_stats(st); }
