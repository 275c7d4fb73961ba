/* Tensors (arena-backed activations) and the contiguous parameter store. */
#include "ops_internal.h"
#include "rt_memory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        qkt_real *data = qkt_calloc64(bytes), *grad = qkt_calloc64(bytes);
        if (old) {
            memcpy(data, p->data, (size_t)old * sizeof(qkt_real));
            memcpy(grad, p->grad, (size_t)old * sizeof(qkt_real));
        }
        qkt_free64(p->data);
        qkt_free64(p->grad);
        p->data = data, p->grad = grad;
        repoint(p);
        p->generation++;
    }
    return t;
}

void qkt_params_finalize(qkt_params *p) {
    QKT_CHECK(!p->finalized, "qkt_params_finalize called twice");
    size_t bytes = (size_t)(p->size ? p->size : 1) * sizeof(qkt_real);
    p->data = qkt_calloc64(bytes);
    p->grad = qkt_calloc64(bytes);
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
    qkt_free64(p->data);
    qkt_free64(p->grad);
    memset(p, 0, sizeof *p);
}
