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
    /* The products' scratch (qkt__arena_scratch): one buffer per thread of a product's team,
     * kept across resets and reused by every product, freed with the arena. */
    void **scratch;
    size_t scratch_bytes; /* of each */
    int n_scratch;
};

typedef struct qkt_grad_buf qkt_grad_buf;
struct qkt_grad_pool {
    qkt_grad_buf *all, *free;
    size_t live, peak; /* bytes handed out now / at most (since init) */
    size_t capacity;   /* bytes of all buffers */
    size_t n_mallocs;  /* buffers ever allocated */
};

/* Tensor headers live apart from the arena's data, in blocks of 2 x n slots: a step of
 * parity p (ctx->gen / 2 % 2) fills half p of each block in turn, so a step never writes
 * over the headers of the step before it and a tensor kept across one reset still reads its
 * own stamp, whatever the next step's layout. With ctx->debug_arena no slot is ever reused:
 * every stale tensor keeps its stamp (memory grows by one slot per tensor per step). */
typedef struct qkt_hdr_block qkt_hdr_block;
struct qkt_hdr_store {
    qkt_hdr_block *first, *cur;
    int used;         /* slots of cur's half taken this step */
    int parity;       /* the half this step fills */
    size_t n_mallocs; /* blocks ever allocated */
};
void qkt__hdr_init(qkt_ctx *ctx);
qkt_tensor *qkt__hdr_alloc(qkt_ctx *ctx); /* a zeroed header of this step */
void qkt__hdr_reset(qkt_ctx *ctx);
void qkt__hdr_free(qkt_ctx *ctx);
/* Fills every byte the arena handed out with 0xFF (a NaN in float32 and float64): with
 * ctx->debug_arena, reading an earlier step's values gives NaN, not plausible numbers. */
void qkt__arena_poison(qkt_arena *a);
/* n scratch buffers of at least `bytes` each (64-byte aligned, uninitialised), the same ones
 * for every call that asks no more: buffer i is for thread i of a product's team. Made or
 * grown here, on the calling thread, before the team starts; kept across qkt_arena_reset
 * (they hold nothing a step keeps) and freed by qkt_arena_free. A product's packing buffers
 * come from here, so steady-state steps allocate nothing for them (freeing them after
 * each product let malloc return the heap's top to the system and fault it in again). */
void **qkt__arena_scratch(qkt_arena *a, int n, size_t bytes);

#endif
