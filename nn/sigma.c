/* Spectral reparametrisation (Zhai et al. 2023, sigmaReparam): W_hat = gamma / sigma(W) W,
 * sigma(W) the spectral norm from one persistent power-iteration vector u. The op works
 * on row blocks of W, so one op serves a whole Linear (sigma_reparam: every Linear of a
 * block) and the q and k blocks of c_attn alone (sigma_qk). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"

#define SIGMA_EPS 1e-12         /* sigma is clamped below at this */
#define SIGMA_CONVERGE_TOL 1e-9 /* init: power iterations stop when sigma moves by less (relative) */
#define SIGMA_CONVERGE_MAX 2000 /* init: at most this many power iterations */
#define QKT_NAME_LEN 256

/* out (rows) = W (rows, cols) x (cols), or out (cols) = W^T x (rows); in double */
static void matvec(const qkt_real *W, int rows, int cols, const double *x, double *out, bool transpose) {
    if (!transpose) {
        for (int i = 0; i < rows; i++) {
            double s = 0;
            for (int j = 0; j < cols; j++) s += (double)W[(int64_t)i * cols + j] * x[j];
            out[i] = s;
        }
    } else {
        for (int j = 0; j < cols; j++) out[j] = 0;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) out[j] += (double)W[(int64_t)i * cols + j] * x[i];
    }
}
static double normalise(double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    s = sqrt(s);
    if (s > 0)
        for (int i = 0; i < n; i++) x[i] /= s;
    return s;
}

double qkt_sigma_power_step(const qkt_real *W, int rows, int cols, qkt_real *u) {
    double *a = qkt_malloc(((size_t)rows + cols) * sizeof *a), *b = a + cols;
    for (int j = 0; j < cols; j++) a[j] = u[j];
    matvec(W, rows, cols, a, b, false);
    double s = normalise(b, rows);
    if (s > 0) {
        matvec(W, rows, cols, b, a, true);
        if (normalise(a, cols) > 0)
            for (int j = 0; j < cols; j++) u[j] = (qkt_real)a[j];
    }
    free(a);
    return s;
}

double qkt_sigma_of(const qkt_real *W, int rows, int cols, const qkt_real *u) {
    double s = 0;
    for (int i = 0; i < rows; i++) {
        double r = 0;
        for (int j = 0; j < cols; j++) r += (double)W[(int64_t)i * cols + j] * u[j];
        s += r * r;
    }
    return fmax(sqrt(s), SIGMA_EPS);
}

void qkt_sigma_init_u(const qkt_real *W, int rows, int cols, qkt_real *u, int iters, qkt_rng *r) {
    double s = 0;
    for (int j = 0; j < cols; j++) u[j] = (qkt_real)qkt_rng_normal(r), s += (double)u[j] * u[j];
    for (int j = 0; j < cols; j++) u[j] = (qkt_real)(u[j] / sqrt(s));
    if (iters > 0) {
        for (int it = 0; it < iters; it++) qkt_sigma_power_step(W, rows, cols, u);
        return;
    }
    double prev = -1; /* to convergence: sigma's estimate stops moving */
    for (int it = 0; it < SIGMA_CONVERGE_MAX; it++) {
        double now = qkt_sigma_power_step(W, rows, cols, u);
        if (prev > 0 && fabs(now - prev) <= SIGMA_CONVERGE_TOL * now) break;
        prev = now;
    }
}

/* ---------------------------------------------------------------- the op */
typedef struct {
    int nb, rows;
    double sigma[QKT_SIGMA_MAX_BLOCKS];
    qkt_real *v; /* (nb, rows): v = W_m u_m / sigma_m */
    qkt_real *u; /* (nb, cols): the u used (a copy: the buffer may advance before backward) */
} sigma_saved;

/* Block m (rows [m rows, (m + 1) rows)): W_hat_m = c_m W_m, c_m = gamma_m / sigma_m; rows past
 * the blocks are copied. With S_m = sum(G_m * W_m) (G = dL/dW_hat) and d sigma / dW = v u^T:
 *   dW_m += c_m G_m - gamma_m S_m / sigma_m^2 v_m u_m^T;  dgamma_m += S_m / sigma_m;  dW_rest += G_rest. */
static void sigma_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *w = n->in[0], *g = n->in[1];
    const sigma_saved *s = n->saved;
    int R = w->shape[0], C = w->shape[1];
    const qkt_real *G = n->out->grad, *W = w->data;
    qkt_real *dW = w->requires_grad ? qkt_grad(ctx, w) : NULL, *dg = g->requires_grad ? qkt_grad(ctx, g) : NULL;
    int64_t block = (int64_t)s->rows * C;
    for (int m = 0; m < s->nb; m++) {
        const qkt_real *Gm = G + m * block, *Wm = W + m * block, *v = s->v + (int64_t)m * s->rows, *u = s->u + (int64_t)m * C;
        double S = 0, sig = s->sigma[m], gam = g->data[m], c = gam / sig;
        for (int64_t i = 0; i < block; i++) S += (double)Gm[i] * Wm[i];
        if (dg) dg[m] += (qkt_real)(S / sig);
        if (dW) {
            qkt_real *dWm = dW + m * block;
            double k = gam * S / (sig * sig);
            for (int i = 0; i < s->rows; i++)
                for (int j = 0; j < C; j++)
                    dWm[(int64_t)i * C + j] += (qkt_real)(c * Gm[(int64_t)i * C + j] - k * v[i] * u[j]);
        }
    }
    if (dW)
        for (int64_t i = s->nb * block; i < (int64_t)R * C; i++) dW[i] += G[i];
}

qkt_tensor *qkt_sigma_reparam(qkt_ctx *ctx, qkt_tensor *w, qkt_tensor *gamma, const qkt_tensor *u, int nb, int rows) {
    qkt_op_check_inputs(ctx, "sigma_reparam", 2, (qkt_tensor *[]){w, gamma});
    QKT_CHECK(w->ndim == 2 && nb >= 1 && nb <= QKT_SIGMA_MAX_BLOCKS && rows >= 1 && (int64_t)nb * rows <= w->shape[0],
              "sigma_reparam: %d blocks of %d rows of a %d-D weight (%d rows)", nb, rows, w->ndim, w->ndim ? w->shape[0] : 0);
    QKT_CHECK(gamma->size == nb && u->size == (int64_t)nb * w->shape[1],
              "sigma_reparam: gamma has %lld values and u %lld (expected %d and %d x %d)", (long long)gamma->size,
              (long long)u->size, nb, nb, w->shape[1]);
    int C = w->shape[1];
    int64_t block = (int64_t)rows * C;
    sigma_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->nb = nb, s->rows = rows;
    s->v = qkt_arena_alloc(&ctx->arena, (size_t)nb * rows * sizeof(qkt_real));
    s->u = qkt_arena_alloc(&ctx->arena, (size_t)nb * C * sizeof(qkt_real));
    memcpy(s->u, u->data, (size_t)nb * C * sizeof(qkt_real));
    qkt_tensor *y = qkt_op_output(ctx, 2, w->shape);
    double *acc = qkt_arena_alloc(&ctx->arena, ((size_t)rows + C) * sizeof *acc), *ud = acc + rows;
    for (int m = 0; m < nb; m++) {
        for (int j = 0; j < C; j++) ud[j] = s->u[(int64_t)m * C + j];
        matvec(w->data + m * block, rows, C, ud, acc, false);
        double sig = 0;
        for (int i = 0; i < rows; i++) sig += acc[i] * acc[i];
        sig = fmax(sqrt(sig), SIGMA_EPS);
        s->sigma[m] = sig;
        for (int i = 0; i < rows; i++) s->v[(int64_t)m * rows + i] = (qkt_real)(acc[i] / sig);
        qkt_real c = (qkt_real)(gamma->data[m] / sig);
        for (int64_t i = 0; i < block; i++) y->data[m * block + i] = c * w->data[m * block + i];
    }
    memcpy(y->data + nb * block, w->data + nb * block, (size_t)(w->size - nb * block) * sizeof(qkt_real));
    qkt_node *n = qkt_op_record_custom(ctx, "sigma_reparam", sigma_backward, y, 2, (qkt_tensor *[]){w, gamma});
    if (n) n->saved = s;
    return y;
}

/* ---------------------------------------------------------------- a reparametrised Linear */
void qkt_linear_sigma_add(qkt_linear *l, qkt_params *p, const char *prefix) {
    char name[QKT_NAME_LEN];
    int in = l->weight->shape[1];
    int n = snprintf(name, sizeof name, "%s.sigma_u", prefix);
    QKT_CHECK(n > 0 && n < (int)sizeof name, "parameter name %s.sigma_u is too long", prefix);
    l->sigma_u = qkt_params_add(p, name, 1, (int[]){in}, QKT_PARAM_BUFFER);
    snprintf(name, sizeof name, "%s.sigma_gamma", prefix);
    l->sigma_gamma = qkt_params_add(p, name, 1, (int[]){1}, 0);
}

void qkt_linear_sigma_init(const qkt_linear *l, const qkt_tensor *t, qkt_rng *r) {
    int rows = l->weight->shape[0], cols = l->weight->shape[1];
    if (t == l->sigma_u) qkt_sigma_init_u(l->weight->data, rows, cols, l->sigma_u->data, 0, r);
    else if (t == l->sigma_gamma) l->sigma_gamma->data[0] = (qkt_real)qkt_sigma_of(l->weight->data, rows, cols, l->sigma_u->data);
}

void qkt_linear_advance(const qkt_linear *l) {
    if (l->sigma_u) qkt_sigma_power_step(l->weight->data, l->weight->shape[0], l->weight->shape[1], l->sigma_u->data);
}

qkt_tensor *qkt_linear_weight(qkt_ctx *ctx, const qkt_linear *l) {
    if (!l->sigma_gamma) return l->weight;
    return qkt_sigma_reparam(ctx, l->weight, l->sigma_gamma, l->sigma_u, 1, l->weight->shape[0]);
}
