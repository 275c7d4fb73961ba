/* A program that uses MPI links libqkt_mpi (pkg-config qkt_mpi, or find_package(qkt
 * COMPONENTS mpi) and qkt::qkt_mpi): after qkt_dist_use_mpi the qkt_dist_ calls go over
 * MPI. Started plainly it is rank 0 of 1; under mpirun -np N every rank adds its rank + 1
 * with the ordered sum and checks N (N + 1) / 2. */
#include <stdio.h>

#include "qkt.h"

int main(int argc, char **argv) {
    if (qkt_dist_compiled()) return fprintf(stderr, "MPI in use before qkt_dist_use_mpi\n"), 1;
    qkt_dist_use_mpi();
    qkt_err err;
    if (qkt_dist_init(&argc, &argv, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    int n = qkt_dist_size(), r = qkt_dist_rank(), want = qkt_dist_launcher_size() > 0 ? qkt_dist_launcher_size() : 1;
    if (!qkt_dist_compiled() || n != want) return fprintf(stderr, "rank %d of %d, expected %d ranks\n", r, n, want), 1;
    qkt_real x = (qkt_real)(r + 1);
    qkt_dist_sum_ordered(&x, 1);
    if (x != (qkt_real)(n * (n + 1) / 2)) return fprintf(stderr, "rank %d: ordered sum %g\n", r, (double)x), 1;
    if (r == 0) printf("MPI in use: %s, rank %d of %d, sum %g\n", qkt_dist_library(), r, n, (double)x);
    qkt_dist_finalize();
    return 0;
}
