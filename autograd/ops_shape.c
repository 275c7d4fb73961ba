/* Shape ops: reshape, permute/transpose, split on the last axis, concat on any axis. */
#include "ops_generic.h"

/* ---------------------------------------------------------------- reshape */
qkt_tensor *qkt_reshape(qkt_ctx *ctx, qkt_tensor *x, int ndim, const int *shape) {
    QKT_LIVE(ctx, "reshape", x);
    int64_t n = qkt_shape_size(ndim, shape);
    qkt_tensor tmp = {.ndim = ndim};
    for (int i = 0; i < ndim && i < QKT_MAX_DIMS; i++) tmp.shape[i] = shape[i];
    QKT_CHECK_SHAPES(n == x->size && ndim <= QKT_MAX_DIMS, "reshape", x, &tmp);
    qkt_tensor *y = qkt__tensor_header(ctx);
    y->ndim = ndim;
    for (int i = 0; i < QKT_MAX_DIMS; i++) y->shape[i] = i < ndim ? shape[i] : 1;
    y->size = n;
    y->data = x->data; /* a view: same data, its own grad */
    qkt_op_record(ctx, QKT_OP_RESHAPE, y, 1, &x);
    return y;
}
/* dx += dy (same element order) */
void qkt__reshape_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dX = qkt_grad(ctx, n->in[0]);
    const qkt_real *dY = n->out->grad;
    QKT_PAR_FOR_SIMD(qkt_parallel_worth(n->out->size > QKT_PAR_MIN), i, n->out->size, dX[i] += dY[i]);
}

/* ---------------------------------------------------------------- permute */
/* One (i0, i1) plane of permute_copy: x from offset xo, y from offset yo. */
static void permute_plane(const qkt_real *src, qkt_real *dst, const int *ys, const int *ystr_x, bool accumulate_back,
                          int64_t xo, int64_t yo) {
    for (int i2 = 0; i2 < ys[2]; i2++)
        for (int i3 = 0; i3 < ys[3]; i3++) {
            int64_t xi = xo + (int64_t)i2 * ystr_x[2] + (int64_t)i3 * ystr_x[3];
            int64_t yi = yo + (int64_t)i2 * ys[3] + i3;
            if (accumulate_back)
                dst[xi] += src[yi];
            else
                dst[yi] = src[xi];
        }
}

/* Copies x into y where y's dim d is x's dim perm[d]; scatter = true does the inverse
 * accumulation (dx[x index] += dy[y index]). Shapes padded to 4 dims. */
static void permute_copy(const qkt_tensor *x, const int *perm, const qkt_real *src, qkt_real *dst, bool accumulate_back) {
    int nd = x->ndim, xs[4] = {1, 1, 1, 1}, xstride[4] = {0, 0, 0, 0}, ys[4] = {1, 1, 1, 1}, ystr_x[4];
    for (int d = 0; d < nd; d++) xs[d] = x->shape[d];
    int s = 1;
    for (int d = nd - 1; d >= 0; d--) xstride[d] = s, s *= xs[d];
    for (int d = 0; d < 4; d++) {
        ys[d] = d < nd ? xs[perm[d]] : 1;
        ystr_x[d] = d < nd ? xstride[perm[d]] : 0; /* x stride for a step along y's dim d */
    }
    int64_t plane = (int64_t)ys[2] * ys[3];
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), t, (int64_t)ys[0] * ys[1],
                permute_plane(src, dst, ys, ystr_x, accumulate_back, t / ys[1] * ystr_x[0] + t % ys[1] * ystr_x[1],
                              t * plane));
}

qkt_tensor *qkt_permute(qkt_ctx *ctx, qkt_tensor *x, const int *perm) {
    QKT_LIVE(ctx, "permute", x);
    int seen = 0, shape[QKT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        QKT_CHECK(perm[d] >= 0 && perm[d] < x->ndim && !(seen & (1 << perm[d])), "permute: perm is not a permutation of %d dims", x->ndim);
        seen |= 1 << perm[d];
        shape[d] = x->shape[perm[d]];
    }
    qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
    permute_copy(x, perm, x->data, y->data, false);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_PERMUTE, y, 1, &x);
    if (n)
        for (int d = 0; d < x->ndim; d++) n->p.i[d] = perm[d];
    qkt_op_done(ctx, QKT_OP_PERMUTE, y);
    return y;
}
/* dx[perm^-1 index] += dy */
void qkt__permute_backward(qkt_ctx *ctx, qkt_node *n) {
    permute_copy(n->in[0], n->p.i, n->out->grad, qkt_grad(ctx, n->in[0]), true);
}

qkt_tensor *qkt_transpose(qkt_ctx *ctx, qkt_tensor *x, int d0, int d1) {
    QKT_CHECK(d0 >= 0 && d1 >= 0 && d0 < x->ndim && d1 < x->ndim, "transpose(%d, %d) of a %d-dim tensor", d0, d1, x->ndim);
    int perm[QKT_MAX_DIMS] = {0, 1, 2, 3};
    perm[d0] = d1;
    perm[d1] = d0;
    return qkt_permute(ctx, x, perm);
}

/* ---------------------------------------------------------------- split / concat */
/* One node per part: p.i[0] = column offset into x's last axis, p.i[1] = width. */
void qkt_split(qkt_ctx *ctx, qkt_tensor *x, int n, const int *sizes, qkt_tensor **outs) {
    QKT_LIVE(ctx, "split", x);
    int C = qkt__last(x), total = 0;
    for (int k = 0; k < n; k++) total += sizes[k];
    QKT_CHECK(total == C && x->ndim >= 1, "split: sizes sum to %d but the last axis has %d", total, C);
    int64_t rows = x->size / C;
    int off = 0;
    for (int k = 0; k < n; k++) {
        int shape[QKT_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        shape[x->ndim - 1] = sizes[k];
        qkt_tensor *y = qkt__op_output(ctx, x->ndim, shape);
        for (int64_t r = 0; r < rows; r++) memcpy(y->data + r * sizes[k], x->data + r * C + off, (size_t)sizes[k] * sizeof(qkt_real));
        qkt_node *nd = qkt_op_record(ctx, QKT_OP_SPLIT, y, 1, &x);
        if (nd) nd->p.i[0] = off, nd->p.i[1] = sizes[k];
        outs[k] = y;
        off += sizes[k];
    }
}
/* dx[j] += dy[j], j < w */
static inline void add_row(qkt_real *dx, const qkt_real *dy, int w) {
#pragma omp simd
    for (int j = 0; j < w; j++) dx[j] += dy[j];
}

/* dx[:, off:off+w] += dy */
void qkt__split_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    int C = qkt__last(x), off = n->p.i[0], w = n->p.i[1];
    qkt_real *dX = qkt_grad(ctx, x);
    const qkt_real *dY = n->out->grad;
    int64_t rows = x->size / C;
    QKT_PAR_FOR(qkt_parallel_worth(x->size > QKT_PAR_MIN), r, rows, add_row(dX + r * C + off, dY + r * w, w));
}

/* Along any axis: x_k viewed as (outer, w_k inner), y as (outer, W inner), W = sum w_k;
 * p.i[0] = the axis. At most QKT_MAX_IN inputs per node: more are grouped. */
qkt_tensor *qkt_concat_axis(qkt_ctx *ctx, int n, qkt_tensor **xs, int axis) {
    QKT_CHECK(n >= 1, "concat of %d tensors (need at least 1)", n);
    qkt__check_inputs(ctx, "concat", n, (const qkt_tensor *const *)xs, n);
    if (n > QKT_MAX_IN) { /* concat(concat(first QKT_MAX_IN), rest...) */
        qkt_tensor *head = qkt_concat_axis(ctx, QKT_MAX_IN, xs, axis);
        qkt_tensor *rest[QKT_MAX_IN];
        int m = 0;
        rest[m++] = head;
        for (int k = QKT_MAX_IN; k < n; k += QKT_MAX_IN - 1) {
            int c = n - k < QKT_MAX_IN - 1 ? n - k : QKT_MAX_IN - 1;
            m = 1;
            for (int j = 0; j < c; j++) rest[m++] = xs[k + j];
            rest[0] = qkt_concat_axis(ctx, m, rest, axis);
        }
        return rest[0];
    }
    axis = qkt__axis("concat", xs[0], axis);
    int C = 0;
    for (int k = 0; k < n; k++) {
        bool ok = xs[k]->ndim == xs[0]->ndim;
        for (int d = 0; ok && d < xs[0]->ndim; d++) ok = d == axis || xs[k]->shape[d] == xs[0]->shape[d];
        QKT_CHECK_SHAPES(ok, "concat", xs[0], xs[k]);
        C += xs[k]->shape[axis];
    }
    int shape[QKT_MAX_DIMS];
    memcpy(shape, xs[0]->shape, sizeof shape);
    shape[axis] = C;
    qkt_tensor *y = qkt__op_output(ctx, xs[0]->ndim, shape);
    int64_t outer, inner;
    int Wn;
    qkt__axis_view(y, axis, &outer, &Wn, &inner);
    int64_t W = (int64_t)Wn * inner, off = 0;
    for (int k = 0; k < n; k++) {
        int64_t w = (int64_t)xs[k]->shape[axis] * inner;
        for (int64_t r = 0; r < outer; r++) memcpy(y->data + r * W + off, xs[k]->data + r * w, (size_t)w * sizeof(qkt_real));
        off += w;
    }
    qkt_node *nd = qkt_op_record(ctx, QKT_OP_CONCAT, y, n, xs);
    if (nd) nd->p.i[0] = axis;
    qkt_op_done(ctx, QKT_OP_CONCAT, y);
    return y;
}
qkt_tensor *qkt_concat(qkt_ctx *ctx, int n, qkt_tensor **xs) {
    QKT_CHECK(n >= 1, "concat of %d tensors (need at least 1)", n);
    return qkt_concat_axis(ctx, n, xs, -1);
}
/* dx_k += dy[:, off_k : off_k + w_k] in the (outer, W inner) view */
void qkt__concat_backward(qkt_ctx *ctx, qkt_node *n) {
    int64_t outer, inner;
    int Wn;
    qkt__axis_view(n->out, n->p.i[0], &outer, &Wn, &inner);
    int64_t W = (int64_t)Wn * inner, off = 0;
    const qkt_real *dY = n->out->grad;
    for (int k = 0; k < n->n_in; k++) {
        int64_t w = (int64_t)n->in[k]->shape[n->p.i[0]] * inner;
        if (qkt__needs_grad(n->in[k])) {
            qkt_real *dX = qkt_grad(ctx, n->in[k]);
            for (int64_t r = 0; r < outer; r++)
                for (int64_t j = 0; j < w; j++) dX[r * w + j] += dY[r * W + off + j];
        }
        off += w;
    }
}
