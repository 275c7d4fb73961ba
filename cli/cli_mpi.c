/* Rank 0 speaks for an MPI job (cli_mpi.h). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "cli_mpi.h"
#include "qkt_dist.h"

int qkt_cli_mute(void) {
    if (qkt_dist_rank() == 0) return -1;
    fflush(stderr);
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    if (null >= 0) close(null);
    if (saved >= 0 && null < 0) close(saved), saved = -1;
    return saved;
}

void qkt_cli_unmute(int saved) {
    if (saved < 0) return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}
