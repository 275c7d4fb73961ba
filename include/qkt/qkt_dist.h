/* Several processes of one job: MPI (Open MPI, MPICH, ...) through libqkt_mpi, built when
 * qkt is built with MPI (-DQKT_MPI=ON, or found by CMake), else one process. libqkt itself
 * links no MPI: its calls below run one process until a program installs MPI with
 * qkt_dist_use_mpi (link libqkt_mpi: pkg-config qkt_mpi, or qkt::qkt_mpi). The only file
 * that talks to MPI is train/dist_mpi.c, the whole of libqkt_mpi; the rest of qkt (the
 * data-parallel trainer, the sweep) uses these few calls, the same API with one rank.
 *
 * Who is distributed: a program opts in with qkt_dist_init. In a process started by an
 * MPI launcher (mpirun, mpiexec, srun) it joins the job; started plainly it stays one
 * process, rank 0 of 1, and never touches MPI. Messages are bytes (MPI_BYTE): qkt adds
 * the numbers itself, in a fixed order, so results never depend on how MPI reduces.
 * A communication failure ends the job (MPI's default handler): loud, never silent. */
#ifndef QKT_DIST_H
#define QKT_DIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* In libqkt_mpi (not libqkt): the calls below go over MPI from now on. Call it first,
 * before qkt_dist_init (the qkt program does when built with MPI). */
void qkt_dist_use_mpi(void);
/* Is MPI in use (qkt_dist_use_mpi was called)? (qkt version says so.) */
bool qkt_dist_compiled(void);
/* The MPI library's version line ("Open MPI v4.1.4, ..."), or "none". */
const char *qkt_dist_library(void);
/* Joins the job when started by an MPI launcher (MPI_Init), else nothing. Call once,
 * before any other qkt_dist_ call. -1 with err when the launcher started several ranks
 * but MPI is not in use (they would each run alone and race on one directory). */
int qkt_dist_init(int *argc, char ***argv, qkt_err *err);
/* Leaves the job (MPI_Finalize); every rank calls it before exiting normally. */
void qkt_dist_finalize(void);
/* A rank is known to be gone (the sweep stopped hearing from it): qkt_dist_finalize then
 * ends the job with MPI_Abort(1) rather than wait for that rank for ever. */
void qkt_dist_set_broken(void);
/* Ends the job: in an MPI job every rank, with status code (MPI_Abort); in one process
 * through the fatal hook (QKT_FATAL_ABORT, "the job was ended (status <code>)"). */
QKT_NORETURN void qkt_dist_abort(int code);
int qkt_dist_rank(void); /* 0 .. size-1; 0 without a job */
int qkt_dist_size(void); /* 1 without a job */
int qkt_dist_local_size(void); /* ranks on this host (sharing its cores); 1 without a job */
/* The host this rank runs on (MPI_Get_processor_name, or gethostname). */
const char *qkt_dist_host(void);

/* Collectives: every rank calls them in the same order. */
void qkt_dist_barrier(void);
/* The job's one status: rank 0's rc if non-zero, else the lowest other rank's non-zero
 * rc, else 0 (rc itself with one rank). */
int qkt_dist_agree(int rc);
/* n bytes of root's buf to every rank's buf. */
void qkt_dist_bcast(void *buf, size_t n, int root);
/* n bytes from every rank into all[rank * n ..] on every rank. */
void qkt_dist_allgather(const void *mine, void *all, size_t n);
/* x (n values, on every rank) := x_0 + x_1 + ... + x_{size-1} with the additions in
 * rank order, element by element: ((x_0 + x_1) + x_2) + ..., exactly the order of
 * qkt_dp's replica sum, so N ranks give the bits of --replicas N. A pipelined chain
 * (rank r adds its x to the partial sum of ranks 0..r-1 and passes it on, in chunks),
 * then a broadcast from the last rank: every link carries the n values once each way. */
void qkt_dist_sum_ordered(qkt_real *x, int64_t n);

/* Point to point (the sweep's messages). tag >= 0. */
void qkt_dist_send(const void *buf, size_t n, int to, int tag);
void qkt_dist_recv(void *buf, size_t n, int from, int tag);
/* A message from `from` with `tag` waiting? (non-blocking) */
bool qkt_dist_probe(int from, int tag);

/* Time spent inside the calls above and the bytes this rank sent and received through
 * them (for the scaling bench), since qkt_dist_init. */
typedef struct qkt_dist_stats {
    double wait_s; /* in qkt_dist_barrier: waiting for the slowest rank */
    double comm_s; /* in the other collectives */
    double sum_s;  /* of which in qkt_dist_sum_ordered (chain and broadcast) */
    int64_t bytes_sent, bytes_recv;
    int64_t sums; /* calls of qkt_dist_sum_ordered */
} qkt_dist_stats;
void qkt_dist_get_stats(qkt_dist_stats *st);

/* Was this process started by an MPI launcher? Its rank count from the environment
 * (OMPI_COMM_WORLD_SIZE: Open MPI's mpirun; PMI_SIZE: MPICH/Hydra, Intel MPI, srun
 * --mpi=pmi2), -1 when started by one that does not say (PMIX_RANK only: srun
 * --mpi=pmix), 0 when not: known before, and without, MPI_Init. */
int qkt_dist_launcher_size(void);

#ifdef __cplusplus
}
#endif
#endif
