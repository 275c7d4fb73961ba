/* How qkt_dist.h's calls reach a transport: libqkt holds one process's (dist_local.c)
 * and dispatches every call through the backend in use; libqkt_mpi's qkt_dist_use_mpi
 * (dist_mpi.c) installs MPI's. So a program that never asks for MPI links no MPI. */
#ifndef QKT_DIST_BACKEND_H
#define QKT_DIST_BACKEND_H
#include "qkt_dist.h"

typedef struct qkt__dist_backend {
    const char *(*library)(void); /* the MPI library's version line, "none" for one process */
    int (*init)(int *argc, char ***argv, qkt_err *err);
    void (*finalize)(void);
    void (*set_broken)(void);
    void (*abort)(int code); /* ends the job, or returns for the fatal hook */
    int (*rank)(void);
    int (*size)(void);
    int (*local_size)(void);
    const char *(*host)(void);
    void (*barrier)(void);
    void (*bcast)(void *buf, size_t n, int root);
    void (*allgather)(const void *mine, void *all, size_t n);
    void (*sum_ordered)(qkt_real *x, int64_t n);
    void (*send)(const void *buf, size_t n, int to, int tag);
    void (*recv)(void *buf, size_t n, int from, int tag);
    bool (*probe)(int from, int tag);
    void (*get_stats)(qkt_dist_stats *st);
} qkt__dist_backend;

/* One process, rank 0 of 1 (the default). */
extern const qkt__dist_backend qkt__dist_local;
/* Installs b (before qkt_dist_init; NULL: one process again). */
void qkt__dist_set_backend(const qkt__dist_backend *b);

#endif
