#include <stdio.h>

#include "qkt_autograd.h"
#include "qkt_cli.h"

int qkt_cmd_version(int argc, char **argv) {
    (void)argc, (void)argv;
    printf("qkt %s (scalar %s, threads %d%s)\n", QKT_VERSION, QKT_REAL_NAME, qkt_get_threads(),
#ifdef QKT_NO_BLAS
           ", reference gemm"
#else
           ", OpenBLAS"
#endif
    );
    return 0;
}
