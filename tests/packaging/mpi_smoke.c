/* A program that uses MPI links libqkt_mpi (pkg-config qkt_mpi): after qkt_dist_use_mpi the
 * qkt_dist_ calls go over MPI; started plainly it is rank 0 of 1 without calling MPI_Init. */
#include <stdio.h>

#include "qkt.h"

int main(int argc, char **argv) {
    if (qkt_dist_compiled()) return fprintf(stderr, "MPI in use before qkt_dist_use_mpi\n"), 1;
    qkt_dist_use_mpi();
    qkt_err err;
    if (qkt_dist_init(&argc, &argv, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    if (!qkt_dist_compiled() || qkt_dist_size() != 1 || qkt_dist_rank() != 0) return fprintf(stderr, "not rank 0 of 1 with MPI\n"), 1;
    printf("MPI in use: %s, rank %d of %d\n", qkt_dist_library(), qkt_dist_rank(), qkt_dist_size());
    qkt_dist_finalize();
    return 0;
}
