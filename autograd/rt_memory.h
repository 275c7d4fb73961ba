/* The insides of the step arena and the grad pool, private to autograd: the public header
 * has only their handles (qkt_arena, a pointer to the qkt_grad_pool), and a program reads
 * their counters through qkt_ctx_mem. */
#ifndef QKT_RT_MEMORY_H
#define QKT_RT_MEMORY_H
#include "qkt_autograd.h"

typedef struct qkt_arena_block qkt_arena_block;
struct qkt_arena_state {
    qkt_arena_block *first; /* the blocks, in the order a step fills them */
    qkt_arena_block *cur;   /* the block allocations come from now */
    size_t used_total;      /* bytes handed out since reset */
    size_t peak;            /* max used_total over the arena's life */
    size_t capacity;        /* sum of block sizes */
    size_t limit;           /* 0 = unlimited */
    size_t n_mallocs;       /* blocks ever allocated (tests check no-malloc steps) */
};

typedef struct qkt_grad_buf qkt_grad_buf;
struct qkt_grad_pool {
    qkt_grad_buf *all, *free;
    size_t live, peak; /* bytes handed out now / at most (since init) */
    size_t capacity;   /* bytes of all buffers */
    size_t n_mallocs;  /* buffers ever allocated */
};

#endif
