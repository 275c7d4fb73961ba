/* Per-step bump allocator. Blocks are chained when one runs out and kept: a reset
 * rewinds to the first block and the next step refills the same blocks in order, so
 * steady-state steps never malloc, and no block is freed before qkt_arena_free (a
 * tensor kept across a reset still reads a stamp, never freed memory).
 *
 * (Merging the blocks into one at reset, as this did before, had to keep the old blocks
 * until the next reset for that reason: the step after a merge held the arena twice,
 * and that step set the process's peak memory: 188 MB instead of 110 for `qkt bench
 * --config small`, 897 instead of 551 for medium.) */
#include "rt_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QKT_ALIGN 64

struct qkt_arena_block {
    qkt_arena_block *next;
    size_t size, used;
    unsigned char *mem; /* QKT_ALIGN-aligned */
};

static qkt_arena_block *block_new(qkt_arena_state *a, size_t size) {
    qkt_arena_block *b = qkt_malloc(sizeof *b);
    void *mem = qkt_aligned_alloc(QKT_ALIGN, size ? size : QKT_ALIGN);
    b->next = NULL;
    b->size = size;
    b->used = 0;
    b->mem = mem;
    a->capacity += size;
    a->n_mallocs++;
    return b;
}

void qkt_arena_init(qkt_arena *arena, size_t initial_bytes, size_t limit) {
    qkt_arena_state *a = arena->s = qkt_calloc(1, sizeof *a);
    a->limit = limit;
    if (initial_bytes) a->first = a->cur = block_new(a, initial_bytes);
}

void *qkt_arena_alloc(qkt_arena *arena, size_t bytes) {
    QKT_CHECK(arena->s, "qkt_arena_alloc on an arena that is not initialised (qkt_arena_init) or was freed");
    qkt_arena_state *a = arena->s;
    if (bytes > SIZE_MAX / 2) qkt_fatalf(QKT_FATAL_NOMEM, "out of memory: %zu bytes asked of the step arena", bytes);
    size_t need = (bytes + QKT_ALIGN - 1) & ~(size_t)(QKT_ALIGN - 1);
    if (need == 0) need = QKT_ALIGN;
    if (a->limit && a->used_total + need > a->limit) {
        qkt_fatalf(QKT_FATAL_NOMEM, "the step arena limit of %zu bytes is too small: this step needs at least %zu bytes (raise the limit)",
                   a->limit, a->used_total + need);
    }
    qkt_arena_block *b = a->cur, *last = NULL;
    while (b && b->used + need > b->size) { /* the next kept block, rewound at reset */
        last = b, b = b->next;
        if (b) b->used = 0;
    }
    if (!b) { /* past the last block (or none yet): a new one after it */
        size_t grow = a->capacity > need ? a->capacity : need; /* geometric growth */
        if (grow < (1u << 20)) grow = 1u << 20;
        b = block_new(a, grow);
        if (last) last->next = b;
        else a->first = b;
    }
    a->cur = b;
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

void qkt_arena_reset(qkt_arena *arena) {
    qkt_arena_state *a = arena->s;
    if (!a) return;
    a->cur = a->first;
    if (a->cur) a->cur->used = 0;
    a->used_total = 0;
}

void **qkt__arena_scratch(qkt_arena *arena, int n, size_t bytes) {
    QKT_CHECK(arena->s, "qkt__arena_scratch on an arena that is not initialised (qkt_arena_init) or was freed");
    qkt_arena_state *a = arena->s;
    if (n <= a->n_scratch && bytes <= a->scratch_bytes) return a->scratch;
    int keep = a->n_scratch;
    if (bytes > a->scratch_bytes) { /* all of them grow: free the old ones */
        for (int i = 0; i < a->n_scratch; i++) free(a->scratch[i]);
        a->scratch_bytes = bytes, keep = 0;
    }
    if (n > a->n_scratch) {
        a->scratch = qkt_realloc(a->scratch, (size_t)n * sizeof *a->scratch);
        a->n_scratch = n;
    }
    for (int i = keep; i < a->n_scratch; i++) {
        a->scratch[i] = qkt_aligned_alloc(QKT_ALIGN, a->scratch_bytes);
        a->n_mallocs++;
    }
    return a->scratch;
}

void qkt_arena_free(qkt_arena *arena) {
    qkt_arena_state *a = arena->s;
    if (!a) return;
    for (int i = 0; i < a->n_scratch; i++) free(a->scratch[i]);
    free(a->scratch);
    for (qkt_arena_block *b = a->first; b;) {
        qkt_arena_block *next = b->next;
        free(b->mem);
        free(b);
        b = next;
    }
    free(a);
    arena->s = NULL;
}

/* ---------------------------------------------------------------- tensor headers */
struct qkt_hdr_block {
    qkt_hdr_block *next;
    int n;              /* slots per half */
    qkt_tensor *slots;  /* 2 n: half 0, then half 1 */
};

static qkt_hdr_block *hdr_block_new(qkt_hdr_store *h, int n) {
    qkt_hdr_block *b = qkt_malloc(sizeof *b);
    b->next = NULL;
    b->n = n;
    b->slots = qkt_aligned_alloc(QKT_ALIGN, 2 * (size_t)n * sizeof *b->slots);
    h->n_mallocs++;
    return b;
}

void qkt__hdr_init(qkt_ctx *ctx) {
    qkt_hdr_store *h = ctx->hdrs = qkt_calloc(1, sizeof *h);
    h->first = h->cur = hdr_block_new(h, 256);
}

qkt_tensor *qkt__hdr_alloc(qkt_ctx *ctx) {
    qkt_hdr_store *h = ctx->hdrs;
    if (h->used == h->cur->n) { /* the next kept block, or a new one as large as all before it */
        if (!h->cur->next) {
            int total = 0;
            for (qkt_hdr_block *b = h->first; b; b = b->next) total += b->n;
            h->cur->next = hdr_block_new(h, total);
        }
        h->cur = h->cur->next;
        h->used = 0;
    }
    qkt_tensor *t = &h->cur->slots[(size_t)h->parity * (size_t)h->cur->n + (size_t)h->used++];
    memset(t, 0, sizeof *t);
    return t;
}

void qkt__hdr_reset(qkt_ctx *ctx) {
    qkt_hdr_store *h = ctx->hdrs;
    if (ctx->debug_arena) return; /* keep going: no slot is reused */
    h->cur = h->first;
    h->used = 0;
    h->parity ^= 1;
}

void qkt__hdr_free(qkt_ctx *ctx) {
    qkt_hdr_store *h = ctx->hdrs;
    if (!h) return;
    for (qkt_hdr_block *b = h->first; b;) {
        qkt_hdr_block *next = b->next;
        free(b->slots);
        free(b);
        b = next;
    }
    free(h);
    ctx->hdrs = NULL;
}

void qkt__arena_poison(qkt_arena *arena) {
    qkt_arena_state *a = arena->s;
    if (!a) return;
    for (qkt_arena_block *b = a->first; b; b = b->next) memset(b->mem, 0xFF, b->used);
}
