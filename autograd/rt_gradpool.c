/* The grad pool: reusable buffers for activation grads (see qkt_grad_pool). A
 * 64-byte header before each buffer links it into the list of all buffers and,
 * while free, into the free list. */
#include "ops_internal.h"
#include "rt_memory.h"

#include <stdio.h>
#include <stdlib.h>

struct qkt_grad_buf {
    qkt_grad_buf *next_all, *next_free;
    size_t bytes;
    bool in_use;
};
#define HDR 64 /* keeps the buffer 64-byte aligned */
_Static_assert(sizeof(qkt_grad_buf) <= HDR, "grad buffer header");

static qkt_grad_buf *hdr_of(void *p) { return (qkt_grad_buf *)((unsigned char *)p - HDR); }

/* A buffer of `bytes` (zeroed if asked): an exactly fitting free buffer, else the
 * smallest free one up to twice the size, else a new one (counted in n_mallocs). */
static void *pool_alloc(qkt_ctx *ctx, size_t bytes, bool zero) {
    qkt_grad_pool *g = ctx->grads;
    bytes = (bytes + 63) & ~(size_t)63;
    qkt_grad_buf **best = NULL;
    for (qkt_grad_buf **pp = &g->free; *pp; pp = &(*pp)->next_free) {
        size_t have = (*pp)->bytes;
        if (have == bytes) {
            best = pp;
            break;
        }
        if (have > bytes && have <= 2 * bytes && (!best || have < (*best)->bytes)) best = pp;
    }
    qkt_grad_buf *b;
    if (best) {
        b = *best;
        *best = b->next_free;
    } else {
        b = qkt_aligned_alloc(64, HDR + bytes);
        b->bytes = bytes;
        b->next_all = g->all;
        g->all = b;
        g->capacity += bytes;
        g->n_mallocs++;
    }
    b->in_use = true;
    b->next_free = NULL;
    g->live += b->bytes;
    if (g->live > g->peak) g->peak = g->live;
    void *p = (unsigned char *)b + HDR;
    if (zero) {
        memset(p, 0, bytes);
    } else {
#ifdef QKT_DOUBLE
        /* The gradient-check build poisons unzeroed buffers: an op that reads one
         * instead of storing to it turns the checked gradient into NaN. */
        qkt_real *r = p;
        for (size_t i = 0; i < bytes / sizeof *r; i++) r[i] = NAN;
#endif
    }
    return p;
}

qkt_real *qkt__grad_buffer(const qkt_ctx *ctx, const qkt_tensor *t) {
    if (!t->is_param || !ctx->pg_to) return t->grad;
    int64_t off = t->grad - ctx->pg_home;
    QKT_CHECK(off >= 0 && off + t->size <= ctx->pg_size, "parameter %s is not in the store the context's grads are redirected from",
              t->name ? t->name : "?");
    return ctx->pg_to + off;
}

qkt_real *qkt_grad(qkt_ctx *ctx, qkt_tensor *t) {
    if (t->is_param) return qkt__grad_buffer(ctx, t);
    if (!t->grad) t->grad = pool_alloc(ctx, (size_t)t->size * sizeof(qkt_real), true);
    return t->grad;
}

qkt_real *qkt__grad_out(qkt_ctx *ctx, qkt_tensor *t, bool *fresh) {
    *fresh = !t->grad;
    if (t->is_param) return qkt__grad_buffer(ctx, t);
    if (!t->grad) t->grad = pool_alloc(ctx, (size_t)t->size * sizeof(qkt_real), false);
    return t->grad;
}

void qkt__grad_release(qkt_ctx *ctx, qkt_tensor *t) {
    if (!t->grad || t->is_param) return;
    qkt_grad_buf *b = hdr_of(t->grad);
    QKT_CHECK(b->in_use, "grad of a tensor released twice");
    b->in_use = false;
    b->next_free = ctx->grads->free;
    ctx->grads->free = b;
    ctx->grads->live -= b->bytes;
    t->grad = NULL;
}

void qkt__grad_pool_init(qkt_ctx *ctx) { ctx->grads = qkt_calloc(1, sizeof *ctx->grads); }

void qkt__grad_pool_reset(qkt_ctx *ctx) {
    qkt_grad_pool *g = ctx->grads;
    g->free = NULL;
    for (qkt_grad_buf *b = g->all; b; b = b->next_all) {
        b->in_use = false;
        b->next_free = g->free;
        g->free = b;
    }
    g->live = 0;
}

void qkt__grad_pool_free(qkt_ctx *ctx) {
    if (!ctx->grads) return;
    for (qkt_grad_buf *b = ctx->grads->all; b;) {
        qkt_grad_buf *next = b->next_all;
        free(b);
        b = next;
    }
    free(ctx->grads);
    ctx->grads = NULL;
}
