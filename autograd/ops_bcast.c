/* NumPy broadcasting for the binary ops and where (ops_generic.h), and the axis check. */
#include <stdio.h>

#include "ops_generic.h"

bool qkt__bcast_init(qkt_bcast *b, int n, qkt_tensor *const *xs) {
    memset(b, 0, sizeof *b);
    b->n = n;
    for (int k = 0; k < n; k++) {
        if (xs[k]->ndim > b->ndim) b->ndim = xs[k]->ndim;
        for (int d = 0; d < 4; d++) {
            int src = d - (4 - xs[k]->ndim);
            b->dims[k][d] = src >= 0 ? xs[k]->shape[src] : 1;
        }
    }
    for (int d = 0; d < 4; d++) {
        int m = 1;
        for (int k = 0; k < n; k++) {
            int v = b->dims[k][d];
            if (v != 1 && m != 1 && v != m) return false;
            if (v != 1) m = v;
        }
        b->shape[d] = m;
    }
    int64_t s = 1;
    for (int d = 3; d >= 0; d--) b->ostr[d] = s, s *= b->shape[d];
    for (int k = 0; k < n; k++) {
        int64_t t = 1;
        for (int d = 3; d >= 0; d--) {
            b->str[k][d] = b->dims[k][d] == 1 ? 0 : t;
            t *= b->dims[k][d];
        }
    }
    return true;
}

void qkt__bcast_shape(const qkt_bcast *b, int *shape) {
    for (int d = 0; d < b->ndim; d++) shape[d] = b->shape[d + 4 - b->ndim];
}

/* Row t (t = (i0 S1 + i1) S2 + i2) of the last dim of the forward; the op is hoisted out
 * of the inner loop. */
static void bcast_row(const qkt_bcast *b, qkt_op op, const qkt_real *x0, const qkt_real *x1, const qkt_real *x2,
                      qkt_real *y, int64_t t) {
    const int *S = b->shape;
    int i2 = (int)(t % S[2]), i1 = (int)(t / S[2] % S[1]), i0 = (int)(t / S[2] / S[1]);
    int64_t s0 = b->str[0][3], s1 = b->str[1][3], s2 = b->n > 2 ? b->str[2][3] : 0;
    int64_t o = i0 * b->ostr[0] + i1 * b->ostr[1] + i2 * b->ostr[2];
    const qkt_real *p0 = x0 + i0 * b->str[0][0] + i1 * b->str[0][1] + i2 * b->str[0][2];
    const qkt_real *p1 = x1 + i0 * b->str[1][0] + i1 * b->str[1][1] + i2 * b->str[1][2];
    qkt_real *yr = y + o;
    int n3 = S[3];
    if (op == QKT_OP_ADD) {
        for (int j = 0; j < n3; j++) yr[j] = p0[j * s0] + p1[j * s1];
    } else if (op == QKT_OP_SUB) {
        for (int j = 0; j < n3; j++) yr[j] = p0[j * s0] - p1[j * s1];
    } else if (op == QKT_OP_MUL) {
        for (int j = 0; j < n3; j++) yr[j] = p0[j * s0] * p1[j * s1];
    } else if (op == QKT_OP_DIV) {
        for (int j = 0; j < n3; j++) yr[j] = p0[j * s0] / p1[j * s1];
    } else { /* WHERE */
        const qkt_real *p2 = x2 + i0 * b->str[2][0] + i1 * b->str[2][1] + i2 * b->str[2][2];
        for (int j = 0; j < n3; j++) yr[j] = p0[j * s0] != 0 ? p1[j * s1] : p2[j * s2];
    }
}

void qkt__bcast_forward(const qkt_bcast *b, qkt_op op, const qkt_real *x0, const qkt_real *x1, const qkt_real *x2,
                        qkt_real *y) {
    const int *S = b->shape;
    int64_t total = (int64_t)S[0] * S[1] * S[2] * S[3], rows = (int64_t)S[0] * S[1] * S[2];
    QKT_PAR_FOR(qkt_parallel_worth(total > QKT_PAR_MIN), t, rows, bcast_row(b, op, x0, x1, x2, y, t));
}

/* Row t of the last dim of an unbroadcast operand's gradient: one term per element. */
static void reduce_row(const qkt_bcast *b, qkt_bc_term term, const qkt_real *dy, const int64_t *so, const qkt_real *other,
                       const qkt_real *self, qkt_real *dx, int64_t t) {
    const int *S = b->shape;
    int i2 = (int)(t % S[2]), i1 = (int)(t / S[2] % S[1]), i0 = (int)(t / S[2] / S[1]);
    int64_t s3 = so[3], o = i0 * b->ostr[0] + i1 * b->ostr[1] + i2 * b->ostr[2];
    const qkt_real *dyr = dy + o, *ot = other + (i0 * so[0] + i1 * so[1] + i2 * so[2]);
    qkt_real *dxr = dx + o;
    const qkt_real *sf = self ? self + o : NULL;
    int n3 = S[3];
    switch (term) {
    case QKT_BC_DY: for (int j = 0; j < n3; j++) dxr[j] += dyr[j]; break;
    case QKT_BC_NEG_DY: for (int j = 0; j < n3; j++) dxr[j] -= dyr[j]; break;
    case QKT_BC_MUL: for (int j = 0; j < n3; j++) dxr[j] += dyr[j] * ot[j * s3]; break;
    case QKT_BC_DIV: for (int j = 0; j < n3; j++) dxr[j] += dyr[j] / ot[j * s3]; break;
    case QKT_BC_DIV_DEN:
        for (int j = 0; j < n3; j++) dxr[j] -= dyr[j] * ot[j * s3] / (sf[j] * sf[j]);
        break;
    case QKT_BC_IF_TRUE: for (int j = 0; j < n3; j++) dxr[j] += ot[j * s3] != 0 ? dyr[j] : 0; break;
    case QKT_BC_IF_FALSE: for (int j = 0; j < n3; j++) dxr[j] += ot[j * s3] == 0 ? dyr[j] : 0; break;
    }
}

/* Element j of a broadcast operand's gradient: the sum over the output coords reading it. */
static void reduce_elem(const qkt_bcast *b, const int *D, qkt_bc_term term, const qkt_real *dy, const int64_t *so,
                        const qkt_real *other, const qkt_real *self, qkt_real *dx, int64_t j) {
    const int *S = b->shape;
    /* j's coords in the operand; the output coords reading it: c[d] alone, or every
     * coord of a dim the operand is broadcast along */
    int lo[4], hi[4];
    int64_t r = j;
    for (int d = 3; d >= 0; d--) {
        int c = (int)(r % D[d]);
        r /= D[d];
        bool bc = D[d] == 1 && S[d] > 1;
        lo[d] = bc ? 0 : c, hi[d] = bc ? S[d] : c + 1;
    }
    double acc = 0;
    for (int i0 = lo[0]; i0 < hi[0]; i0++)
        for (int i1 = lo[1]; i1 < hi[1]; i1++)
            for (int i2 = lo[2]; i2 < hi[2]; i2++)
                for (int i3 = lo[3]; i3 < hi[3]; i3++) {
                    int64_t o = i0 * b->ostr[0] + i1 * b->ostr[1] + i2 * b->ostr[2] + i3;
                    int64_t q = i0 * so[0] + i1 * so[1] + i2 * so[2] + i3 * so[3];
                    switch (term) {
                    case QKT_BC_DY: acc += dy[o]; break;
                    case QKT_BC_NEG_DY: acc -= dy[o]; break;
                    case QKT_BC_MUL: acc += (double)(dy[o] * other[q]); break;
                    case QKT_BC_DIV: acc += (double)(dy[o] / other[q]); break;
                    case QKT_BC_DIV_DEN: acc -= (double)(dy[o] * other[q] / (self[j] * self[j])); break;
                    case QKT_BC_IF_TRUE: if (other[q] != 0) acc += dy[o]; break;
                    case QKT_BC_IF_FALSE: if (other[q] == 0) acc += dy[o]; break;
                    }
                }
    dx[j] += (qkt_real)acc;
}

void qkt__bcast_reduce(const qkt_bcast *b, int k, qkt_bc_term term, const qkt_real *dy, int other_k,
                       const qkt_real *other, const qkt_real *self, qkt_real *dx) {
    const int *S = b->shape, *D = b->dims[k];
    const int64_t *so = other_k >= 0 ? b->str[other_k] : b->str[k];
    int64_t nx = (int64_t)D[0] * D[1] * D[2] * D[3], total = (int64_t)S[0] * S[1] * S[2] * S[3];
    bool team = qkt_parallel_worth(total > QKT_PAR_MIN);
    if (nx == total) /* not broadcast: one term per element, rows of the last dim as in the forward */
        QKT_PAR_FOR(team, t, (int64_t)S[0] * S[1] * S[2], reduce_row(b, term, dy, so, other, self, dx, t));
    else
        QKT_PAR_FOR(team, j, nx, reduce_elem(b, D, term, dy, so, other, self, dx, j));
}

int qkt__axis(const char *op, const qkt_tensor *x, int axis) {
    char s[64];
    QKT_CHECK(axis >= -x->ndim && axis < x->ndim, "%s: axis %d out of range for shape %s (%d dims)", op, axis,
              qkt_shape_str(x, s, sizeof s), x->ndim);
    return axis < 0 ? axis + x->ndim : axis;
}
