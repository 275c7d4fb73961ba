/* What both builds share (with MPI: dist_mpi.c; without: dist_local.c): how a process
 * knows it was started by an MPI launcher, before any MPI call. */
#include <stdlib.h>

#include "qkt_dist.h"

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
