/* Private to experiments/: the state of a sweep in progress (sweep.c), which the MPI
 * part (sweep_mpi.c) shares. */
#ifndef QKT_SWEEP_INTERNAL_H
#define QKT_SWEEP_INTERNAL_H
#include <stdbool.h>
#include <sys/types.h>

#include "qkt_dist.h"
#include "qkt_io.h"
#include "qkt_sweep.h"

/* Per cell: its pid here (> 0 while running), the rank > 0 running it (rank 0 of an MPI
 * sweep: > 0 while a rank runs it), whether it still has to run and its weight; done_w
 * sums the weights of finished (or skipped) cells. */
typedef struct sweep_state {
    const qkt_sweep *s;
    qkt_sweep_result *res;
    pid_t *pids;
    int *where;
    bool *todo;
    double *weight;
    double total_w, done_w, w_at_start, t0;
    int finished;
    int next;        /* the plan's next cell to hand out (this process or, rank 0, any rank) */
    bool exhausted;  /* no cell left to take */
    bool live;       /* the log hook shows a status line (qkt_log_live) */
    /* An MPI sweep (s->mpi in a job of several ranks): sweep_mpi.c */
    bool dist, follower;
    bool stop_asked;     /* a rank > 0: rank 0 said stop */
    struct sweep_peer *peers; /* rank 0: per rank, what it said last */
    int lost_cells;      /* rank 0: cells of ranks that went silent */
    qkt_buf lost_msg;
    char ranks_note[96]; /* ", over N ranks" for the first line */
    double last_alive;   /* a rank > 0: when it last told rank 0 it lives */
    double stopped_at;   /* rank 0: when it began to stop (0: not) */
} sweep_state;

/* Collective start: the ranks check they hold the same plan of cells and see the run
 * directory (a filesystem every host shares); -1 with err on every rank if not. */
int qkt__sweep_dist_start(sweep_state *st, qkt_err *err);
/* A rank > 0: asks rank 0 for a cell; -1: none left. */
int qkt__sweep_dist_ask(sweep_state *st);
/* A rank > 0: cell i ended here (ok: its sealed file is written; ws its wait status). */
void qkt__sweep_dist_reaped(sweep_state *st, int i, bool ok, int ws);
/* Every loop round: rank 0 answers the others (cells asked for, finished, goodbyes,
 * heartbeats; a rank silent for too long is lost, its cells named); a rank > 0 looks
 * for rank 0's stop and says it lives. */
void qkt__sweep_dist_serve(sweep_state *st);
/* Rank 0 stopping: tells the others and names the cells running there. */
void qkt__sweep_dist_stop(sweep_state *st);
/* Nothing runs here and nothing is left to take: a rank > 0 says goodbye (true); rank 0
 * is done when every other rank has said goodbye or was lost. */
bool qkt__sweep_dist_finished(sweep_state *st);
/* A failed cell's log is empty (it could not write it: a full disk): the parent tries to
 * write a line there itself; why gets " (its log was empty)" or the write's error, or ""
 * when the log has content (sweep.c). */
void qkt__sweep_empty_log_note(const char *log, int ws, char *why, size_t n);

#endif
