/* The elementwise, LayerNorm, column-sum and cross-entropy kernels (formulas in kern_table.h),
 * with their OpenMP splits. Included once per kernel path by kern_<isa>.c; everything
 * here is static. The loops are the ones the op files had before the paths existed,
 * unchanged, so the baseline path computes the same bits as the old default build. */
#include "kern_simd.h"
#include "ops_internal.h"

/* Column chunk of the broadcast loops (elements). */
#define QKT_COL_CHUNK 4096

static void binary_forward(qkt_op op, const qkt_real *A, const qkt_real *B, qkt_real *Y, int64_t na, int64_t nb) {
    /* Work items: (row, column chunk), so a same-shape op (one "row") still splits over
     * threads. The op is hoisted out of the loops so each inner loop vectorises. */
    int64_t ncc = (nb + QKT_COL_CHUNK - 1) / QKT_COL_CHUNK, items = na / nb * ncc;
#pragma omp parallel for if (na > QKT_PAR_MIN)
    for (int64_t t = 0; t < items; t++) {
        int64_t r = t / ncc, j0 = t % ncc * QKT_COL_CHUNK, j1 = j0 + QKT_COL_CHUNK < nb ? j0 + QKT_COL_CHUNK : nb;
        const qkt_real *Ar = A + r * nb;
        qkt_real *Yr = Y + r * nb;
        if (op == QKT_OP_ADD) {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] + B[j];
        } else if (op == QKT_OP_SUB) {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] - B[j];
        } else {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) Yr[j] = Ar[j] * B[j];
        }
    }
}

static void binary_backward_a(qkt_op op, bool fresh, const qkt_real *dY, const qkt_real *Bd, qkt_real *dA, int64_t na,
                              int64_t nb) {
    int64_t ncc = (nb + QKT_COL_CHUNK - 1) / QKT_COL_CHUNK, items = na / nb * ncc;
#pragma omp parallel for if (na > QKT_PAR_MIN)
    for (int64_t t = 0; t < items; t++) {
        int64_t r = t / ncc, j0 = t % ncc * QKT_COL_CHUNK, j1 = j0 + QKT_COL_CHUNK < nb ? j0 + QKT_COL_CHUNK : nb;
        qkt_real *da = dA + r * nb;
        const qkt_real *dy = dY + r * nb;
        /* a fresh (unzeroed) buffer is stored to, never read */
        if (op == QKT_OP_MUL && fresh) {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) da[j] = dy[j] * Bd[j];
        } else if (op == QKT_OP_MUL) {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) da[j] += dy[j] * Bd[j];
        } else if (fresh) {
            memcpy(da + j0, dy + j0, (size_t)(j1 - j0) * sizeof *da);
        } else {
#pragma omp simd
            for (int64_t j = j0; j < j1; j++) da[j] += dy[j];
        }
    }
}

/* ---------------------------------------------------------------- GELU (tanh form) */
#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_C 0.044715

/* t = tanh(k (x + c x^3)); y = 0.5 x (1 + t) */
static inline qkt_real gelu_t(qkt_real v) { return qkt__tanh((qkt_real)GELU_K * (v + (qkt_real)GELU_C * v * v * v)); }
static inline qkt_real gelu_of(qkt_real v, qkt_real t) { return (qkt_real)0.5 * v * (1 + t); }
/* dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
static inline qkt_real gelu_grad_of(qkt_real v, qkt_real t) {
    return (qkt_real)0.5 * (1 + t) + (qkt_real)0.5 * v * (1 - t * t) * (qkt_real)GELU_K * (1 + 3 * (qkt_real)GELU_C * v * v);
}
static inline qkt_real gelu_grad(qkt_real v) { return gelu_grad_of(v, gelu_t(v)); }

static void gelu_forward(const qkt_real *X, qkt_real *Y, int64_t n) {
#pragma omp parallel for simd if (n > QKT_PAR_MIN)
    for (int64_t i = 0; i < n; i++) Y[i] = gelu_of(X[i], gelu_t(X[i]));
}
/* gelu_forward's and gelu_grad's expressions on one tanh per element, one thread (a
 * product's epilogue: the block was just computed on this thread). */
static void gelu_epilogue(qkt_real *C, qkt_real *G, int rows, int cols, int ldc) {
    for (int r = 0; r < rows; r++) {
        qkt_real *c = C + (size_t)r * ldc, *g = G ? G + (size_t)r * ldc : NULL;
        if (!g) {
#pragma omp simd
            for (int j = 0; j < cols; j++) c[j] = gelu_of(c[j], gelu_t(c[j]));
            continue;
        }
#pragma omp simd
        for (int j = 0; j < cols; j++) {
            qkt_real v = c[j], t = gelu_t(v);
            g[j] = gelu_grad_of(v, t);
            c[j] = gelu_of(v, t);
        }
    }
}
static void gelu_backward(bool fresh, const qkt_real *X, const qkt_real *dY, qkt_real *dX, int64_t n) {
    if (fresh) { /* an unzeroed buffer: store, never read */
#pragma omp parallel for simd if (n > QKT_PAR_MIN)
        for (int64_t i = 0; i < n; i++) dX[i] = gelu_grad(X[i]) * dY[i];
    } else {
#pragma omp parallel for simd if (n > QKT_PAR_MIN)
        for (int64_t i = 0; i < n; i++) dX[i] += gelu_grad(X[i]) * dY[i];
    }
}

/* ---------------------------------------------------------------- LayerNorm */
static void layernorm_forward(const qkt_real *X, const qkt_real *W, const qkt_real *Bb, qkt_real *Y, qkt_real *mean,
                              qkt_real *rstd, int64_t rows, int C, double eps) {
#pragma omp parallel for if (rows * C > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = X + r * C;
        double m = 0, v = 0;
#pragma omp simd reduction(+ : m)
        for (int j = 0; j < C; j++) m += xr[j];
        m /= C;
#pragma omp simd reduction(+ : v)
        for (int j = 0; j < C; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);
        v /= C;
        qkt_real rs = (qkt_real)(1.0 / sqrt(v + eps)), mm = (qkt_real)m;
        mean[r] = mm, rstd[r] = rs;
        qkt_real *yr = Y + r * C;
        if (W && Bb) {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j] + Bb[j];
        } else if (W) {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs * W[j];
        } else {
#pragma omp simd
            for (int j = 0; j < C; j++) yr[j] = (xr[j] - mm) * rs + (Bb ? Bb[j] : 0);
        }
    }
}

static void layernorm_backward(bool fresh, const qkt_real *X, const qkt_real *W, const qkt_real *dY,
                               const qkt_real *mean, const qkt_real *rstd, qkt_real *dX, int64_t rows, int C) {
#pragma omp parallel for if (rows * C > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = X + r * C, *gr = dY + r * C;
        qkt_real m = mean[r], rs = rstd[r];
        double mg = 0, mgh = 0;
#pragma omp simd reduction(+ : mg, mgh)
        for (int j = 0; j < C; j++) {
            qkt_real g = gr[j] * (W ? W[j] : 1);
            mg += g;
            mgh += (double)g * ((xr[j] - m) * rs);
        }
        qkt_real a = (qkt_real)(mg / C), c = (qkt_real)(mgh / C);
        qkt_real *dx = dX + r * C;
        if (fresh) {
#pragma omp simd
            for (int j = 0; j < C; j++) dx[j] = rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
        } else {
#pragma omp simd
            for (int j = 0; j < C; j++) dx[j] += rs * (gr[j] * (W ? W[j] : 1) - a - (xr[j] - m) * rs * c);
        }
    }
}

/* ---------------------------------------------------------------- column sums */
static void colsum(int64_t rows, int64_t cols, const qkt_real *X, const qkt_real *Y, const qkt_real *sub,
                   const qkt_real *mul, qkt_real sign, qkt_real *out, double *part) {
    int64_t nch = (rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS;
#pragma omp parallel for if (rows * cols > QKT_PAR_MIN)
    for (int64_t c = 0; c < nch; c++) {
        double *p = part + c * cols;
        for (int64_t j = 0; j < cols; j++) p[j] = 0;
        int64_t r1 = (c + 1) * QKT_COLSUM_ROWS < rows ? (c + 1) * QKT_COLSUM_ROWS : rows;
        for (int64_t r = c * QKT_COLSUM_ROWS; r < r1; r++) {
            const qkt_real *xr = X + r * cols;
            if (Y) {
                const qkt_real *yr = Y + r * cols;
                qkt_real s = sub ? sub[r] : 0, m = mul ? mul[r] : 1;
#pragma omp simd
                for (int64_t j = 0; j < cols; j++) p[j] += (double)(xr[j] * ((yr[j] - s) * m));
            } else {
#pragma omp simd
                for (int64_t j = 0; j < cols; j++) p[j] += (double)xr[j];
            }
        }
    }
    for (int64_t c = 1; c < nch; c++) {
        const double *p = part + c * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) part[j] += p[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) out[j] += sign * (qkt_real)part[j];
}

/* dU = G dH (elementwise) and out[j] += sum_r dU[r, j] in one pass: colsum's chunks and
 * order (Y NULL, sign 1), so the bits of binary_forward's product, then colsum of dU. */
static void mul_colsum(int64_t rows, int64_t cols, const qkt_real *G, const qkt_real *dH, qkt_real *dU, qkt_real *out,
                       double *part) {
    int64_t nch = (rows + QKT_COLSUM_ROWS - 1) / QKT_COLSUM_ROWS;
#pragma omp parallel for if (rows * cols > QKT_PAR_MIN)
    for (int64_t c = 0; c < nch; c++) {
        double *p = part + c * cols;
        for (int64_t j = 0; j < cols; j++) p[j] = 0;
        int64_t r1 = (c + 1) * QKT_COLSUM_ROWS < rows ? (c + 1) * QKT_COLSUM_ROWS : rows;
        for (int64_t r = c * QKT_COLSUM_ROWS; r < r1; r++) {
            const qkt_real *gr = G + r * cols, *hr = dH + r * cols;
            qkt_real *ur = dU + r * cols;
#pragma omp simd
            for (int64_t j = 0; j < cols; j++) {
                qkt_real u = gr[j] * hr[j];
                ur[j] = u;
                p[j] += (double)u;
            }
        }
    }
    for (int64_t c = 1; c < nch; c++) {
        const double *p = part + c * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) part[j] += p[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) out[j] += (qkt_real)1 * (qkt_real)part[j];
}

/* ---------------------------------------------------------------- cross-entropy */
/* The rows' log-sum-exps in parallel, then their sum in row order: a reduction over the
 * threads would add partial sums in an order that depends on the thread count (other
 * last bits in float64, and sometimes in float32). */
static double cross_entropy_forward(const qkt_real *X, const int32_t *targets, qkt_real *lse, int64_t rows, int V) {
#pragma omp parallel for if (rows * V > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const qkt_real *xr = X + r * V;
        qkt_real mx = xr[0];
        for (int j = 1; j < V; j++) mx = xr[j] > mx ? xr[j] : mx;
        double sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < V; j++) sum += qkt__exp(xr[j] - mx);
        lse[r] = mx + (qkt_real)log(sum);
    }
    double total = 0;
    for (int64_t r = 0; r < rows; r++)
        if (targets[r] != QKT_IGNORE) total += (double)lse[r] - X[r * V + targets[r]];
    return total;
}

static void cross_entropy_backward(const qkt_real *X, const int32_t *targets, const qkt_real *lse, qkt_real g,
                                   qkt_real *dX, int64_t rows, int V) {
#pragma omp parallel for if (rows * V > QKT_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        int t = targets[r];
        if (t == QKT_IGNORE) continue;
        const qkt_real *xr = X + r * V;
        qkt_real *dr = dX + r * V, ls = lse[r];
#pragma omp simd
        for (int j = 0; j < V; j++) dr[j] += g * qkt__exp(xr[j] - ls);
        dr[t] -= g;
    }
}

/* ---------------------------------------------------------------- for the tests */
static void exp_tanh(const qkt_real *x, qkt_real *e, qkt_real *t, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) e[i] = qkt__exp(x[i]), t[i] = qkt__tanh(x[i]);
}
