/* qkt_dist.h in one process, rank 0 of 1: libqkt's transport until a program installs
 * MPI's (qkt_dist_use_mpi, libqkt_mpi). The collectives of one rank are what they are
 * with MPI and one rank: the broadcast and the sum leave the buffer as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist_backend.h"

static const char *local_library(void) { return "none"; }

static int local_init(int *argc, char ***argv, qkt_err *err) {
    (void)argc, (void)argv;
    int n = qkt_dist_launcher_size();
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!r) r = getenv("PMIX_RANK");
    if (n > 1 || (n < 0 && r && strcmp(r, "0")))
        return qkt_err_set(err, "started by an MPI launcher as one of several ranks, but this qkt was built without MPI: rebuild "
                                "with -DQKT_MPI=ON (apt-get install libopenmpi-dev openmpi-bin), or run it without mpirun (a "
                                "program of your own: link libqkt_mpi and call qkt_dist_use_mpi first)");
    return 0;
}

static void local_nothing(void) {}
static void local_abort(int code) { (void)code; } /* qkt_dist_abort goes on to the fatal hook */
static int local_zero(void) { return 0; }
static int local_one(void) { return 1; }

static const char *local_host(void) {
    static char host[256];
    if (!host[0] && gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
    return host;
}

static void local_bcast(void *buf, size_t n, int root) {
    (void)buf, (void)n;
    QKT_CHECK(root == 0, "qkt_dist_bcast: root %d of 1 rank", root);
}
static void local_allgather(const void *mine, void *all, size_t n) {
    if (n) memmove(all, mine, n);
}
static void local_sum_ordered(qkt_real *x, int64_t n) { (void)x, (void)n; }

static void local_send(const void *buf, size_t n, int to, int tag) {
    (void)buf, (void)n, (void)tag;
    QKT_CHECK(0, "qkt_dist_send to rank %d: one rank only (qkt built without MPI)", to);
}
static void local_recv(void *buf, size_t n, int from, int tag) {
    (void)buf, (void)n, (void)tag;
    QKT_CHECK(0, "qkt_dist_recv from rank %d: one rank only (qkt built without MPI)", from);
}
static bool local_probe(int from, int tag) {
    (void)from, (void)tag;
    return false;
}

static void local_get_stats(qkt_dist_stats *st) { memset(st, 0, sizeof *st); }

const qkt__dist_backend qkt__dist_local = {
    .library = local_library,
    .init = local_init,
    .finalize = local_nothing,
    .set_broken = local_nothing,
    .abort = local_abort,
    .rank = local_zero,
    .size = local_one,
    .local_size = local_one,
    .host = local_host,
    .barrier = local_nothing,
    .bcast = local_bcast,
    .allgather = local_allgather,
    .sum_ordered = local_sum_ordered,
    .send = local_send,
    .recv = local_recv,
    .probe = local_probe,
    .get_stats = local_get_stats,
};
