/* qkt version: the version (from CMake's project()), the build options, the kernel
 * path this CPU runs (or QKT_ISA forces: qkt_isa_name) and whether MPI is in
 * (mpirun -np N qkt train / ablate: docs/distributed.md). */
#include <stdio.h>

#include "qkt_autograd.h"
#include "qkt_version.h"
#include "cli.h"
#include "qkt_dist.h"
#include "flags.h"

int qkt_cmd_version(int argc, char **argv) {
    qkt_flag flags[1];
    int rc = qkt_flags_parse("version", "Prints the version and build options.", flags, 0, argc, argv, NULL, 0, NULL);
    if (rc) return rc == 1 ? 0 : 2;
    printf("qkt %s (scalar %s, threads %d%s, kernels %s, %s%s)\n", QKT_VERSION, QKT_REAL_NAME, qkt_get_threads(),
#ifdef QKT_NO_BLAS
           ", reference gemm",
#else
           ", OpenBLAS",
#endif
           qkt_isa_name(), qkt_dist_compiled() ? "MPI: " : "no MPI", qkt_dist_compiled() ? qkt_dist_library() : "");
    return 0;
}
