/* Process-parallel sweep runner (see sweep.c). */
#ifndef QKT_SWEEP_H
#define QKT_SWEEP_H
#include <stdbool.h>
#include <stddef.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *exe;        /* the qkt program: cells run as `qkt _cell --run DIR --cell ID` */
    const char *run_dir;
    int workers;            /* processes at once */
    int n_cells;
    const char *const *cell_ids;
    const double *cell_weights; /* relative cost for the ETA (NULL: equal) */
    bool verbose;           /* progress line on a terminal, plain lines otherwise */
} qkt_sweep;

typedef struct {
    int ran, skipped, failed;
} qkt_sweep_result;

int qkt_sweep_run(const qkt_sweep *s, qkt_sweep_result *res, qkt_err *err);
/* Paths of a cell's result (csv), log and progress files; any may be NULL. */
void qkt_cell_paths(const char *run_dir, const char *id, char *csv, char *log, char *progress, size_t n);

#ifdef __cplusplus
}
#endif
#endif
