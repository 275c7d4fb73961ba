/* The commands that run in an MPI job (qkt train, qkt ablate: docs/distributed.md):
 * rank 0 speaks for the job; the other ranks print nothing of their own. */
#ifndef QKT_CLI_MPI_H
#define QKT_CLI_MPI_H

/* Ranks > 0: stderr to /dev/null until qkt_cli_unmute (outside the work itself, where
 * only a fatal error prints). Returns the fd to restore; -1 on rank 0 (nothing muted). */
int qkt_cli_mute(void);
void qkt_cli_unmute(int saved);

#endif
