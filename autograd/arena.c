/* Per-step bump allocator. Blocks are chained when one runs out; reset merges
 * them into one block of the total size, so steady-state steps never malloc. */
#include "qkt_autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QKT_ALIGN 64

struct qkt_arena_block {
    qkt_arena_block *prev;
    size_t size, used;
    unsigned char *mem; /* QKT_ALIGN-aligned */
};

static qkt_arena_block *block_new(qkt_arena *a, size_t size) {
    qkt_arena_block *b = qkt_malloc(sizeof *b);
    void *mem = qkt_aligned_alloc(QKT_ALIGN, size ? size : QKT_ALIGN);
    b->prev = NULL;
    b->size = size;
    b->used = 0;
    b->mem = mem;
    a->capacity += size;
    a->n_mallocs++;
    return b;
}

void qkt_arena_init(qkt_arena *a, size_t initial_bytes, size_t limit) {
    memset(a, 0, sizeof *a);
    a->limit = limit;
    if (initial_bytes) a->head = block_new(a, initial_bytes);
}

void *qkt_arena_alloc(qkt_arena *a, size_t bytes) {
    size_t need = (bytes + QKT_ALIGN - 1) & ~(size_t)(QKT_ALIGN - 1);
    if (need == 0) need = QKT_ALIGN;
    if (a->limit && a->used_total + need > a->limit) {
        qkt_fatalf(QKT_FATAL_NOMEM, "the step arena limit of %zu bytes is too small: this step needs at least %zu bytes (raise the limit)",
                   a->limit, a->used_total + need);
    }
    qkt_arena_block *b = a->head;
    if (!b || b->used + need > b->size) {
        size_t grow = a->capacity > need ? a->capacity : need; /* geometric growth */
        if (grow < (1u << 20)) grow = 1u << 20;
        qkt_arena_block *nb = block_new(a, grow);
        nb->prev = b;
        a->head = b = nb;
    }
    void *p = b->mem + b->used;
    b->used += need;
    a->used_total += need;
    if (a->used_total > a->peak) a->peak = a->used_total;
    return p;
}

void *qkt_arena_calloc(qkt_arena *a, size_t bytes) {
    void *p = qkt_arena_alloc(a, bytes);
    memset(p, 0, bytes);
    return p;
}

static void free_blocks(qkt_arena_block *b) {
    while (b) {
        qkt_arena_block *prev = b->prev;
        free(b->mem);
        free(b);
        b = prev;
    }
}

void qkt_arena_reset(qkt_arena *a) {
    free_blocks(a->retired);
    a->retired = NULL;
    if (a->head && a->head->prev) {
        /* More than one block: replace them by one that holds the peak. */
        size_t total = a->peak > a->capacity ? a->peak : a->capacity;
        a->retired = a->head;
        a->capacity = 0;
        a->head = block_new(a, total);
    }
    if (a->head) a->head->used = 0;
    a->used_total = 0;
}

void qkt_arena_free(qkt_arena *a) {
    free_blocks(a->head);
    free_blocks(a->retired);
    memset(a, 0, sizeof *a);
}
