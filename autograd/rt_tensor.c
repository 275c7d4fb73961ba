/* Tensors (arena-backed activations) and the contiguous parameter store. */
#include "ops_internal.h"
#include "rt_memory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* At most 2^58 elements: the bytes of a float64 tensor then still fit an int64. */
#define QKT_MAX_ELEMS ((int64_t)1 << 58)

int64_t qkt_shape_size(int ndim, const int *shape) {
    int64_t n = 1;
    bool over = false;
    for (int i = 0; i < ndim; i++) over |= __builtin_mul_overflow(n, (int64_t)shape[i], &n) || n > QKT_MAX_ELEMS || n < -QKT_MAX_ELEMS;
    if (over) {
        char buf[96];
        size_t k = (size_t)snprintf(buf, sizeof buf, "(");
        for (int i = 0; i < ndim && i < QKT_MAX_DIMS && k < sizeof buf; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, i ? ", %d" : "%d", shape[i]);
        if (k < sizeof buf) snprintf(buf + k, sizeof buf - k, ")");
        QKT_CHECK(!over, "shape %s has more elements than fit in memory (at most 2^58)", buf);
    }
    return n;
}

const char *qkt_shape_str(const qkt_tensor *t, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %d" : "%d", t->shape[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
    return buf;
}

static void set_shape(qkt_tensor *t, int ndim, const int *shape) {
    QKT_CHECK(ndim >= 0 && ndim <= QKT_MAX_DIMS, "tensor with %d dims (at most %d)", ndim, QKT_MAX_DIMS);
    t->ndim = ndim;
    for (int i = 0; i < QKT_MAX_DIMS; i++) t->shape[i] = i < ndim ? shape[i] : 1;
    QKT_CHECK(ndim == 0 || shape, "a tensor of %d dims with a NULL shape", ndim);
    for (int i = 0; i < ndim; i++) QKT_CHECK(shape[i] > 0, "tensor dim %d has size %d", i, shape[i]);
    t->size = qkt_shape_size(ndim, shape);
}

/* A zeroed header of this step (rt_arena.c: slots apart from the data). */
qkt_tensor *qkt__tensor_header(qkt_ctx *ctx) {
    qkt__check_ctx(ctx, "qkt_tensor_new");
    qkt_tensor *t = qkt__hdr_alloc(ctx);
    t->gen = ctx->gen;
    return t;
}

qkt_tensor *qkt_tensor_new(qkt_ctx *ctx, int ndim, const int *shape) {
    qkt_tensor *t = qkt__tensor_header(ctx);
    set_shape(t, ndim, shape);
    t->data = qkt_arena_alloc(&ctx->arena, (size_t)t->size * sizeof(qkt_real));
    return t;
}

qkt_tensor *qkt_tensor_zeros(qkt_ctx *ctx, int ndim, const int *shape) {
    qkt_tensor *t = qkt_tensor_new(ctx, ndim, shape);
    memset(t->data, 0, (size_t)t->size * sizeof(qkt_real));
    return t;
}

qkt_tensor *qkt_tensor_1d(qkt_ctx *ctx, int a) { return qkt_tensor_new(ctx, 1, (int[]){a}); }
qkt_tensor *qkt_tensor_2d(qkt_ctx *ctx, int a, int b) { return qkt_tensor_new(ctx, 2, (int[]){a, b}); }
qkt_tensor *qkt_tensor_3d(qkt_ctx *ctx, int a, int b, int c) {
    return qkt_tensor_new(ctx, 3, (int[]){a, b, c});
}

/* ---------------------------------------------------------------- params */
void qkt_params_init(qkt_params *p) { memset(p, 0, sizeof *p); }

/* Points every tensor at its place in data / grad (store order = add order). */
static void repoint(qkt_params *p) {
    int64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        p->t[i]->data = p->data + off;
        p->t[i]->grad = p->grad + off;
        off += p->t[i]->size;
    }
}

/* A zeroed block of the parameter store (its values or its grads), marked for transparent
 * huge pages where the kernel has them (Linux's THP in "madvise" mode; else nothing): the
 * 2 MiB-aligned inside of a block of 2 MiB or more, a hint only. A fresh model's first
 * touch of its store then faults 2 MiB at a time, not 4 KiB: in a virtual machine, where
 * each fault is dear, the study's GPT-at-init cell at d_k 512 (25M parameters) made 56763
 * page faults and took 1.40 CPU-s, and 8220-8729 and 1.16-1.23 with the hint
 * (docs/performance.md, "What was changed", 13). Only the store: with the step arena's
 * blocks marked too, the study's training cells ran 1.4-1.6 times slower in two runs,
 * cause not settled. The values are the same either way. */
static qkt_real *store_block(size_t bytes) {
    /* 64-byte aligned, so that a vector pass over the store (AdamW's) reads and writes
     * whole cache lines: calloc's memory is 16 bytes past a line, and 512-bit AdamW at 2^20
     * parameters ran 1.9 times faster aligned (docs/performance.md, "What was changed", 19).
     * calloc, not memset: pages the run never uses (grads while sampling) stay untouched.
     * The byte before the block holds its offset from calloc's pointer (store_free). */
    unsigned char *raw = qkt_calloc(1, bytes + 64);
    unsigned char *blk = (unsigned char *)(((uintptr_t)raw + 64) & ~(uintptr_t)63); /* 1..64 bytes in */
    blk[-1] = (unsigned char)(blk - raw);
    qkt_real *p = (qkt_real *)blk;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    enum { BIG_PAGE = 2 << 20 };
    uintptr_t a = ((uintptr_t)p + BIG_PAGE - 1) & ~(uintptr_t)(BIG_PAGE - 1);
    uintptr_t b = ((uintptr_t)p + bytes) & ~(uintptr_t)(BIG_PAGE - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* refused: 4 KiB pages, as without it */
#endif
    return p;
}

static void store_free(qkt_real *p) {
    if (p) free((unsigned char *)p - ((unsigned char *)p)[-1]);
}

qkt_tensor *qkt_params_add(qkt_params *p, const char *name, int ndim, const int *shape, int flags) {
    QKT_CHECK(name, "qkt_params_add: the name is NULL");
    QKT_CHECK(!qkt_params_find(p, name), "parameter %s added twice", name);
    QKT_CHECK(!(flags & ~(QKT_PARAM_DECAY | QKT_PARAM_BUFFER)), "parameter %s: unknown flags %#x", name, flags);
    QKT_CHECK(!((flags & QKT_PARAM_DECAY) && (flags & QKT_PARAM_BUFFER)), "parameter %s: a buffer does not decay", name);
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->t = qkt_realloc(p->t, (size_t)p->cap * sizeof *p->t);
        p->flags = qkt_realloc(p->flags, (size_t)p->cap * sizeof *p->flags);
    }
    qkt_tensor shaped = {0};
    set_shape(&shaped, ndim, shape); /* checked before anything is allocated */
    qkt_tensor *t = qkt_calloc(1, sizeof *t);
    *t = shaped;
    t->name = qkt_strdup(name);
    t->requires_grad = !(flags & QKT_PARAM_BUFFER);
    t->is_param = true;
    p->t[p->n] = t;
    p->flags[p->n] = flags;
    p->n++;
    int64_t old = p->size;
    p->size += t->size;
    if (p->finalized) {
        /* Added after finalize: one new allocation of the grown size, the old values
         * copied, every tensor repointed; the new tensor starts at zero. */
        size_t bytes = (size_t)p->size * sizeof(qkt_real);
        qkt_real *data = store_block(bytes), *grad = store_block(bytes);
        if (old) {
            memcpy(data, p->data, (size_t)old * sizeof(qkt_real));
            memcpy(grad, p->grad, (size_t)old * sizeof(qkt_real));
        }
        store_free(p->data);
        store_free(p->grad);
        p->data = data, p->grad = grad;
        repoint(p);
        p->generation++;
    }
    return t;
}

void qkt_params_finalize(qkt_params *p) {
    QKT_CHECK(!p->finalized, "qkt_params_finalize called twice");
    size_t bytes = (size_t)(p->size ? p->size : 1) * sizeof(qkt_real);
    p->data = store_block(bytes);
    p->grad = store_block(bytes);
    repoint(p);
    p->finalized = true;
}

void qkt_params_zero_grad(qkt_params *p) {
    QKT_CHECK(p->finalized, "qkt_params_zero_grad before qkt_params_finalize (the store has no grads yet)");
    memset(p->grad, 0, (size_t)p->size * sizeof(qkt_real));
}

qkt_tensor *qkt_params_find(const qkt_params *p, const char *name) {
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->t[i]->name, name) == 0) return p->t[i];
    return NULL;
}

int64_t qkt_params_offset(const qkt_params *p, const qkt_tensor *t) { return t->data - p->data; }

void qkt_params_free(qkt_params *p) {
    for (int i = 0; i < p->n; i++) {
        free((char *)p->t[i]->name);
        free(p->t[i]);
    }
    free(p->t);
    free(p->flags);
    store_free(p->data);
    store_free(p->grad);
    memset(p, 0, sizeof *p);
}
