/* The gradient checker (qkt_gradcheck.h). */
#include "qkt_gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_H 1e-6
#define GC_MAX_POINTS 48 /* per input: all elements up to this many, else a random sample */
#define GC_DROPOUT_SEED 0xD0D0ull

static void make_inputs(const qkt_gc_case *c, uint64_t seed, qkt_params *p, qkt_tensor **x) {
    qkt_params_init(p);
    char name[16];
    for (int i = 0; i < c->n_inputs; i++) {
        snprintf(name, sizeof name, "x%d", i);
        x[i] = qkt_params_add(p, name, c->ndim[i], c->shape[i], 0);
    }
    qkt_params_finalize(p);
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    for (int64_t j = 0; j < p->size; j++) {
        double v;
        do v = qkt_rng_normal(&r);
        while (fabs(v) < c->kink_margin);
        p->data[j] = (qkt_real)v;
    }
}

/* L = sum r * f(x), evaluated without recording. Dropout sees the same mask each time. */
static double project(qkt_ctx *ctx, const qkt_gc_case *c, qkt_tensor **x, const qkt_real *r) {
    qkt_ctx_reset(ctx);
    qkt_rng_seed(&ctx->rng, GC_DROPOUT_SEED);
    ctx->no_grad = true;
    qkt_tensor *y = c->fn(ctx, x, c);
    ctx->no_grad = false;
    double L = 0;
    for (int64_t i = 0; i < y->size; i++) L += (double)r[i] * y->data[i];
    return L;
}

/* The case's inputs in p, a context, and one forward (dropout drawn from GC_DROPOUT_SEED). */
static qkt_tensor *setup(const qkt_gc_case *c, uint64_t seed, bool no_grad, qkt_params *p, qkt_tensor **x, qkt_ctx *ctx) {
    make_inputs(c, seed, p, x);
    qkt_ctx_init(ctx, 1 << 20, seed);
    qkt_rng_seed(&ctx->rng, GC_DROPOUT_SEED);
    ctx->no_grad = no_grad;
    return c->fn(ctx, x, c);
}

bool qkt_gradcheck(const qkt_gc_case *c, uint64_t seed, qkt_gc_result *res) {
    qkt_params p;
    qkt_tensor *x[QKT_GC_MAX_INPUTS];
    qkt_ctx ctx;
    qkt_tensor *y = setup(c, seed, false, &p, x, &ctx);

    /* Analytic: backward with seed r. */
    int64_t ny = y->size;
    qkt_real *r = qkt_malloc((size_t)ny * sizeof *r);
    qkt_rng rr;
    qkt_rng_seed(&rr, seed ^ 0x5EEDull);
    for (int64_t i = 0; i < ny; i++) r[i] = (qkt_real)qkt_rng_normal(&rr);
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, y, r);
    qkt_real *analytic = qkt_malloc((size_t)p.size * sizeof *analytic);
    memcpy(analytic, p.grad, (size_t)p.size * sizeof *analytic);

    memset(res, 0, sizeof *res);
    bool ok = true;
    for (int i = 0; i < c->n_inputs; i++) {
        qkt_tensor *t = x[i];
        int64_t base = qkt_params_offset(&p, t), n = t->size;
        int64_t npts = n <= GC_MAX_POINTS ? n : GC_MAX_POINTS;
        double maxdiff = 0, scale = 1e-6, wa = 0, wn = 0;
        int64_t wj = 0;
        for (int64_t k = 0; k < npts; k++) {
            int64_t j = n <= GC_MAX_POINTS ? k : (int64_t)qkt_rng_below(&rr, (uint32_t)n);
            qkt_real old = t->data[j];
            t->data[j] = old + (qkt_real)GC_H;
            double lp = project(&ctx, c, x, r);
            t->data[j] = old - (qkt_real)GC_H;
            double lm = project(&ctx, c, x, r);
            t->data[j] = old;
            double num = (lp - lm) / (2 * GC_H), an = analytic[base + j];
            double diff = fabs(num - an);
            if (!(diff <= maxdiff)) maxdiff = diff, wj = j, wa = an, wn = num; /* a NaN (analytic or numeric) makes the check fail */
            if (fabs(num) > scale) scale = fabs(num);
            if (fabs(an) > scale) scale = fabs(an);
            res->points_checked++;
        }
        res->err[i] = maxdiff / scale;
        if (!(res->err[i] <= res->worst) || i == 0) {
            res->worst = res->err[i];
            res->worst_input = i, res->worst_index = wj, res->worst_analytic = wa, res->worst_numeric = wn;
        }
        bool pass = res->err[i] <= c->tol || (c->atol > 0 && maxdiff <= c->atol); /* NaN fails both */
        if (!pass) ok = false;
    }
    res->ok = ok;
    free(r);
    free(analytic);
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return ok;
}

const char *qkt_gc_describe(const qkt_gc_case *c, const qkt_gc_result *r, char *buf, size_t n) {
    if (r->ok)
        snprintf(buf, n, "%s: ok (err %.3g, tol %.3g, %d points)", c->name, r->worst, c->tol, r->points_checked);
    else
        snprintf(buf, n, "%s: input %d element %lld: analytic %.6g vs numeric %.6g (err %.3g > tol %.3g)", c->name,
                 r->worst_input, (long long)r->worst_index, r->worst_analytic, r->worst_numeric, r->worst, c->tol);
    return buf;
}

int64_t qkt_gc_forward(const qkt_gc_case *c, uint64_t seed, double *out, int64_t out_cap) {
    qkt_params p;
    qkt_tensor *x[QKT_GC_MAX_INPUTS];
    qkt_ctx ctx;
    qkt_tensor *y = setup(c, seed, true, &p, x, &ctx);
    int64_t n = y->size < out_cap ? y->size : out_cap;
    for (int64_t i = 0; i < n; i++) out[i] = y->data[i];
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return n;
}
