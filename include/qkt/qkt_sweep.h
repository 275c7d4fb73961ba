/* Process-parallel sweep runner (see sweep.c). */
#ifndef QKT_SWEEP_H
#define QKT_SWEEP_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "qkt_autograd.h"
#include "qkt_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *exe;        /* the qkt program: cells run as `qkt _cell --run DIR --cell ID`;
                               NULL: in a child forked from this process, cell_fn (below) */
    const char *run_dir;
    int workers;            /* processes at once */
    int n_cells;
    const char *const *cell_ids;
    const double *cell_weights; /* relative cost for the ETA (NULL: equal) */
    bool verbose;           /* progress through qkt_logf: a status line to a live hook, else a line per cell */
    const volatile sig_atomic_t *stop; /* NULL, or a flag a signal handler sets: the sweep then
                                          stops its running cells (SIGTERM), waits for them and
                                          returns -1 (finished cells are kept) */
    bool mpi;               /* in an MPI job of several ranks (qkt_dist): every rank calls
                               qkt_sweep_run with the same cells; rank 0 plans and hands them
                               out, each rank runs `workers` at a time; rank 0's result counts
                               them all (docs/distributed.md). RUN must be on a filesystem
                               every host sees. */
    const char *isa;        /* NULL, or the kernel path of every cell: QKT_ISA=isa in the cells'
                               environment only (this process's is left as it is) */
    /* exe NULL: the forked child (stdin /dev/null, stdout and stderr the cell's log, the
     * stop signals back to their defaults) runs cell_fn(run_dir, id, err, cell_user) and
     * ends with status 0 if it returned 0, else 1 after "qkt _cell ID: <err>" in the log.
     * The child has the parent's state (e.g. its registered variants) but not its other
     * threads: it must run one thread (qkt_set_threads(1)), as OpenMP does not survive a fork. */
    int (*cell_fn)(const char *run_dir, const char *id, qkt_err *err, void *user);
    void *cell_user;
    bool rows_named; /* every row of a cell's csv starts with the cell's id and a comma: a
                        sealed file whose rows do not (another cell's, copied over it) is not
                        finished, and is rerun (qkt_cell_done_id) */
} qkt_sweep;

typedef struct {
    int ran, skipped, failed;
} qkt_sweep_result;

int qkt_sweep_run(const qkt_sweep *s, qkt_sweep_result *res, qkt_err *err);
/* Paths of a cell's result (csv), log and progress files; any may be NULL. */
/* A cell file is complete when its last line is the seal "#end rows=N crc32c=XXXXXXXX":
 * N data rows before it, and the CRC-32C of every byte before it. A file without it
 * (cut short, edited, or written before the seal existed) is rerun.
 * qkt_cell_seal appends the seal to b. qkt_cell_check: 0 and *body = the bytes before the
 * seal, or -1 with why (one line, e.g. "12 rows, the seal says 40"). */
void qkt_cell_seal(qkt_buf *b);
int qkt_cell_check(const char *text, size_t n, size_t *body, char *why, size_t why_n);
/* Does the cell's csv exist and pass qkt_cell_check? why (may be NULL) says what is wrong. */
bool qkt_cell_done(const char *csv_path, char *why, size_t why_n);
/* qkt_cell_done, and (id not NULL) the file holds at least one row and every row starts
 * with "id,". */
bool qkt_cell_done_id(const char *csv_path, const char *id, char *why, size_t why_n);
/* 0 when the body (n bytes of rows, each ending in '\n') has a row and every row starts
 * with "id,"; -1 with why. */
int qkt_cell_rows_check(const char *body, size_t n, const char *id, char *why, size_t why_n);
void qkt_cell_paths(const char *run_dir, const char *id, char *csv, char *log, char *progress, size_t n);

#ifdef __cplusplus
}
#endif
#endif
