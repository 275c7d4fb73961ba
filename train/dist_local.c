/* qkt_dist.h without MPI (built with -DQKT_MPI=OFF, or no MPI found): one process,
 * rank 0 of 1. The collectives of one rank are what they are with MPI and one rank:
 * the broadcast and the sum leave the buffer as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qkt_dist.h"

bool qkt_dist_compiled(void) { return false; }
const char *qkt_dist_library(void) { return "none"; }

int qkt_dist_init(int *argc, char ***argv, qkt_err *err) {
    (void)argc, (void)argv;
    int n = qkt_dist_launcher_size();
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    if (!r) r = getenv("PMIX_RANK");
    if (n > 1 || (n < 0 && r && strcmp(r, "0")))
        return qkt_err_set(err, "started by an MPI launcher as one of several ranks, but this qkt was built without MPI: rebuild "
                                "with -DQKT_MPI=ON (apt-get install libopenmpi-dev openmpi-bin), or run it without mpirun");
    return 0;
}

void qkt_dist_finalize(void) {}
void qkt_dist_set_broken(void) {}
void qkt_dist_abort(int code) { qkt_fatalf(QKT_FATAL_ABORT, "the job was ended (status %d)", code); }
int qkt_dist_rank(void) { return 0; }
int qkt_dist_size(void) { return 1; }
int qkt_dist_local_size(void) { return 1; }

const char *qkt_dist_host(void) {
    static char host[256];
    if (!host[0] && gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
    return host;
}

void qkt_dist_barrier(void) {}
void qkt_dist_bcast(void *buf, size_t n, int root) {
    (void)buf, (void)n;
    QKT_CHECK(root == 0, "qkt_dist_bcast: root %d of 1 rank", root);
}
void qkt_dist_allgather(const void *mine, void *all, size_t n) {
    if (n) memmove(all, mine, n);
}
void qkt_dist_sum_ordered(qkt_real *x, int64_t n) { (void)x, (void)n; }

void qkt_dist_send(const void *buf, size_t n, int to, int tag) {
    (void)buf, (void)n, (void)tag;
    QKT_CHECK(0, "qkt_dist_send to rank %d: one rank only (qkt built without MPI)", to);
}
void qkt_dist_recv(void *buf, size_t n, int from, int tag) {
    (void)buf, (void)n, (void)tag;
    QKT_CHECK(0, "qkt_dist_recv from rank %d: one rank only (qkt built without MPI)", from);
}
bool qkt_dist_probe(int from, int tag) {
    (void)from, (void)tag;
    return false;
}

void qkt_dist_get_stats(qkt_dist_stats *st) { memset(st, 0, sizeof *st); }
