/* Narrowing and indexing along an axis: narrow, index_select, gather; stack (a composite
 * of reshape views and qkt_concat_axis, ops_shape.c). x is viewed as (outer, n, inner)
 * around the axis. Backward loops over the destination: threads own slabs of dx, so
 * scatter-adds (repeated indices) need no atomics and do not depend on the thread count. */
#include <stdio.h>

#include "ops_generic.h"

/* ---------------------------------------------------------------- narrow */
qkt_tensor *qkt_narrow(qkt_ctx *ctx, qkt_tensor *x, int axis, int start, int len) {
    QKT_LIVE(ctx, "narrow", x);
    axis = qkt__axis("narrow", x, axis);
    char s[64];
    QKT_CHECK(start >= 0 && len >= 1 && start <= x->shape[axis] - len,
              "narrow: [%d, %d + %d) is not inside axis %d of shape %s", start, start, len, axis,
              qkt_shape_str(x, s, sizeof s));
    int shape[QKT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = len;
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    int64_t w = len * inner;
    QKT_PAR_FOR(qkt_parallel_worth(y->size > QKT_PAR_MIN), o, outer,
                memcpy(y->data + o * w, x->data + (o * n + start) * inner, (size_t)w * sizeof(qkt_real)));
    qkt_node *nd = qkt_op_record(ctx, QKT_OP_NARROW, y, 1, &x);
    if (nd) nd->p.i[0] = axis, nd->p.i[1] = start;
    qkt_op_done(ctx, QKT_OP_NARROW, y);
    return y;
}
/* dx[j] += dy[j], j < w */
static void add_run(qkt_real *dx, const qkt_real *dy, int64_t w) {
    for (int64_t j = 0; j < w; j++) dx[j] += dy[j];
}

/* dx[o, start + k, i] += dy[o, k, i] */
void qkt__narrow_backward(qkt_ctx *ctx, qkt_node *nd) {
    qkt_tensor *x = nd->in[0];
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, nd->p.i[0], &outer, &n, &inner);
    int64_t w = nd->out->shape[nd->p.i[0]] * inner;
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = nd->out->grad;
    int start = nd->p.i[1];
    QKT_PAR_FOR(qkt_parallel_worth(nd->out->size > QKT_PAR_MIN), o, outer, add_run(dX + (o * n + start) * inner, dY + o * w, w));
}

/* ---------------------------------------------------------------- index_select */
/* Copies idx into the arena after checking every entry is in [0, n). */
static int32_t *copy_idx(qkt_ctx *ctx, const char *op, const int32_t *idx, int64_t m, int n, int axis,
                         const qkt_tensor *x) {
    int32_t *c = qkt_arena_alloc(&ctx->arena, (size_t)(m ? m : 1) * sizeof *c);
    for (int64_t k = 0; k < m; k++) {
        char s[64];
        QKT_CHECK(idx[k] >= 0 && idx[k] < n, "%s: index %d (entry %lld) out of range [0, %d) for axis %d of shape %s", op,
                  idx[k], (long long)k, n, axis, qkt_shape_str(x, s, sizeof s));
        c[k] = idx[k];
    }
    return c;
}

qkt_tensor *qkt_index_select(qkt_ctx *ctx, qkt_tensor *x, int axis, const int32_t *idx, int m) {
    QKT_LIVE(ctx, "index_select", x);
    axis = qkt__axis("index_select", x, axis);
    QKT_CHECK(m >= 1, "index_select: %d indices (need at least 1)", m);
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    int32_t *ix = copy_idx(ctx, "index_select", idx, m, n, axis, x);
    int shape[QKT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = m;
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
    QKT_PAR_FOR(qkt_parallel_worth(y->size > QKT_PAR_MIN), t, outer * m, /* t = o m + k */
                memcpy(y->data + t * inner, x->data + (t / m * n + ix[t % m]) * inner, (size_t)inner * sizeof(qkt_real)));
    qkt_node *nd = qkt_op_record(ctx, QKT_OP_INDEX_SELECT, y, 1, &x);
    if (nd) nd->p.i[0] = axis, nd->saved = ix;
    qkt_op_done(ctx, QKT_OP_INDEX_SELECT, y);
    return y;
}
/* Slab o of index_select's dx: k in order. */
static void index_select_slab(qkt_real *dX, const qkt_real *dY, const int32_t *ix, int m, int n, int64_t inner, int64_t o) {
    for (int k = 0; k < m; k++) add_run(dX + (o * n + ix[k]) * inner, dY + (o * m + k) * inner, inner);
}

/* dx[o, idx[k], i] += dy[o, k, i]: a thread owns an o (a slab of dx), k runs in order */
void qkt__index_select_backward(qkt_ctx *ctx, qkt_node *nd) {
    qkt_tensor *x = nd->in[0];
    int axis = nd->p.i[0], m = nd->out->shape[axis];
    int64_t outer, inner;
    int n;
    qkt__axis_view(x, axis, &outer, &n, &inner);
    const int32_t *ix = nd->saved;
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = nd->out->grad;
    QKT_PAR_FOR(qkt_parallel_worth(nd->out->size > QKT_PAR_MIN), o, outer, index_select_slab(dX, dY, ix, m, n, inner, o));
}

/* ---------------------------------------------------------------- gather */
/* Padded 4-dim shapes and strides of x and idx; the axis becomes padded dim pa. */
typedef struct {
    int is[4];      /* idx's (= y's) padded shape */
    int64_t xs[4];  /* x's padded strides */
    int pa;
} gather_geom;
static void gather_geom_init(gather_geom *g, const qkt_tensor *x, const int *ishape, int axis) {
    int off = 4 - x->ndim;
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) {
        g->is[d] = d >= off ? ishape[d - off] : 1;
        g->xs[d] = s;
        s *= d >= off ? x->shape[d - off] : 1;
    }
    g->pa = axis + off;
}

/* The offset in x that element j of y (padded coords (i0, i1, i2, i3)) reads: its coords
 * with the axis's replaced by ix[j]. */
static int64_t gather_src(const gather_geom *g, const int32_t *ix, int64_t j) {
    int64_t c[4], r = j;
    for (int d = 3; d >= 0; d--) c[d] = r % g->is[d], r /= g->is[d];
    c[g->pa] = ix[j];
    return c[0] * g->xs[0] + c[1] * g->xs[1] + c[2] * g->xs[2] + c[3] * g->xs[3];
}

qkt_tensor *qkt_gather(qkt_ctx *ctx, qkt_tensor *x, int axis, const int32_t *idx, int ndim, const int *shape) {
    QKT_LIVE(ctx, "gather", x);
    axis = qkt__axis("gather", x, axis);
    qkt_tensor it = {.ndim = ndim};
    for (int d = 0; d < ndim && d < QKT_MAX_DIMS; d++) it.shape[d] = shape[d];
    bool ok = ndim == x->ndim;
    for (int d = 0; ok && d < ndim; d++) ok = shape[d] >= 1 && (d == axis || shape[d] <= x->shape[d]);
    QKT_CHECK_SHAPES(ok, "gather (index dims must be <= x's but on the axis)", x, &it);
    qkt_tensor *y = qkt__op_output(ctx, ndim, shape);
    int32_t *ix = copy_idx(ctx, "gather", idx, y->size, x->shape[axis], axis, x);
    gather_geom g;
    gather_geom_init(&g, x, shape, axis);
    QKT_PAR_FOR(qkt_parallel_worth(y->size > QKT_PAR_MIN), j, y->size, y->data[j] = x->data[gather_src(&g, ix, j)]);
    qkt_node *nd = qkt_op_record(ctx, QKT_OP_GATHER, y, 1, &x);
    if (nd) nd->p.i[0] = axis, nd->saved = ix;
    qkt_op_done(ctx, QKT_OP_GATHER, y);
    return y;
}
/* Slab i0 of gather's dx, its elements j in order. */
static void gather_back_slab(const gather_geom *g, const int32_t *ix, const qkt_real *dY, qkt_real *dX, int64_t slab,
                             int64_t i0) {
    for (int64_t j = i0 * slab; j < (i0 + 1) * slab; j++) dX[gather_src(g, ix, j)] += dY[j];
}

/* dx[.., idx[j], ..] += dy[j]. Threads split padded dim 0 when it is not the axis (its
 * coordinate is then the same in x: disjoint slabs of dx); otherwise one thread. */
void qkt__gather_backward(qkt_ctx *ctx, qkt_node *nd) {
    qkt_tensor *x = nd->in[0], *y = nd->out;
    gather_geom g;
    gather_geom_init(&g, x, y->shape, nd->p.i[0]);
    const int32_t *ix = nd->saved;
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = y->grad;
    int64_t slab = y->size / g.is[0]; /* the elements of one padded dim-0 coordinate, in order */
    QKT_PAR_FOR(qkt_parallel_worth(g.pa != 0 && y->size > QKT_PAR_MIN), i0, g.is[0],
                gather_back_slab(&g, ix, dY, dX, slab, i0));
}

/* ---------------------------------------------------------------- stack */
qkt_tensor *qkt_stack(qkt_ctx *ctx, int n, qkt_tensor **xs, int axis) {
    QKT_CHECK(n >= 1, "stack of %d tensors (need at least 1)", n);
    qkt__check_inputs(ctx, "stack", n, (const qkt_tensor *const *)xs, n);
    int nd = xs[0]->ndim;
    char s[64];
    QKT_CHECK(nd + 1 <= QKT_MAX_DIMS, "stack: shape %s has %d dims; the result would have %d (at most %d)",
              qkt_shape_str(xs[0], s, sizeof s), nd, nd + 1, QKT_MAX_DIMS);
    QKT_CHECK(axis >= -(nd + 1) && axis <= nd, "stack: axis %d out of range for %d-dim inputs %s (the result has %d dims)",
              axis, nd, qkt_shape_str(xs[0], s, sizeof s), nd + 1);
    if (axis < 0) axis += nd + 1;
    int shape[QKT_MAX_DIMS];
    for (int d = 0, j = 0; d <= nd; d++) shape[d] = d == axis ? 1 : xs[0]->shape[j++];
    qkt_tensor *views[64], **v = n <= 64 ? views : qkt_arena_alloc(&ctx->arena, (size_t)n * sizeof *v);
    for (int k = 0; k < n; k++) {
        bool same = xs[k]->ndim == nd;
        for (int d = 0; same && d < nd; d++) same = xs[k]->shape[d] == xs[0]->shape[d];
        QKT_CHECK_SHAPES(same, "stack (every input of one shape)", xs[0], xs[k]);
        v[k] = qkt_reshape(ctx, xs[k], nd + 1, shape);
    }
    return qkt_concat_axis(ctx, n, v, axis);
}
