/* Both flavours in one program: a custom op, Mish(x) = x tanh(softplus(x)), trains a small
 * MLP in float32 (libqkt) and is gradient-checked in float64 (libqkt64) first. This file is
 * compiled twice: with -DQKT_DOUBLE (the check; qkt64.pc sets it) and without (the training
 * and main). The float64 library's names are qkt64_... (qkt64_names.h renames the calls of
 * a file compiled with QKT_DOUBLE), so the two objects link into one program:
 *   cc -c mixed_precision.c $(pkg-config --cflags qkt64) -o check64.o
 *   cc mixed_precision.c check64.o $(pkg-config --cflags --libs qkt) $(pkg-config --libs qkt64) -o mixed_precision
 * Each library keeps its own state: a fatal or log hook set in one flavour is not the other's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qkt.h"

/* The op, in the precision this file is compiled for (qkt_real). */
static double softplus(double x) { return x > 20 ? x : log1p(exp(x)); }

/* dx += dy (t + x (1 - t^2) sigmoid(x)),  t = tanh(softplus(x)) */
static void mish_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!x->requires_grad) return;
    qkt_real *dx = qkt_grad(ctx, x);
    const qkt_real *dy = n->out->grad;
    for (int64_t i = 0; i < x->size; i++) {
        double v = x->data[i], t = tanh(softplus(v)), s = 1 / (1 + exp(-v));
        dx[i] += (qkt_real)(dy[i] * (t + v * (1 - t * t) * s));
    }
}
/* A planted bug for the checker to catch: drops the x (1 - t^2) sigmoid(x) term. */
static void mish_backward_wrong(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    qkt_real *dx = qkt_grad(ctx, x);
    for (int64_t i = 0; i < x->size; i++) dx[i] += (qkt_real)(n->out->grad[i] * tanh(softplus(x->data[i])));
}

static qkt_tensor *mish(qkt_ctx *ctx, qkt_tensor *x, qkt_backward_fn backward) {
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    for (int64_t i = 0; i < x->size; i++) y->data[i] = (qkt_real)(x->data[i] * tanh(softplus(x->data[i])));
    qkt_op_record_custom(ctx, "mish", backward, y, 1, &x);
    return y;
}

#ifdef QKT_DOUBLE
/* ------------------------------------------------------------ float64: the check */
static qkt_tensor *f_mish(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return mish(ctx, x[0], mish_backward);
}
static qkt_tensor *f_wrong(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return mish(ctx, x[0], mish_backward_wrong);
}
static qkt_tensor *f_graph(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) { /* mish(x W^T) V^T */
    (void)c;
    return qkt_matmul(ctx, mish(ctx, qkt_matmul(ctx, x[0], x[1], false, true), mish_backward), x[2], false, true);
}

/* 0 when the op's backward passes in float64 and the planted bug fails. */
int mixed_precision_check64(void) {
    qkt_gc_case cases[] = {
        {.name = "mish", .n_inputs = 1, .ndim = {2}, .shape = {{4, 6}}, .tol = 1e-6, .fn = f_mish},
        {.name = "mish in a graph", .n_inputs = 3, .ndim = {2, 2, 2}, .shape = {{4, 6}, {5, 6}, {3, 5}}, .tol = 1e-6, .fn = f_graph},
        {.name = "mish, planted wrong backward", .n_inputs = 1, .ndim = {2}, .shape = {{4, 6}}, .tol = 1e-6, .fn = f_wrong},
    };
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        qkt_gc_result r;
        bool ok = qkt_gradcheck(&cases[i], 7, &r);
        char msg[256];
        printf("float64: %s\n", qkt_gc_describe(&cases[i], &r, msg, sizeof msg));
        bad += ok != (i < 2);
    }
    /* The library computes in float64 too: 0.1 + 0.2 keeps double's last bits. */
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *v = qkt_tensor_new(&ctx, 1, (int[]){2});
    v->data[0] = 0.1, v->data[1] = 0.2;
    double s = qkt_sum(&ctx, v)->data[0];
    printf("float64: qkt_sum(0.1, 0.2) = %.17g (%s)\n", s, QKT_REAL_NAME);
    bad += s != 0.1 + 0.2;
    qkt_ctx_free(&ctx);
    return bad;
}

#else
/* ------------------------------------------------------------ float32: the training */
int mixed_precision_check64(void);

enum { B = 64, HIDDEN = 32 };

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    int steps = argc > 1 ? atoi(argv[1]) : 600;
    if (mixed_precision_check64()) return fprintf(stderr, "mixed_precision: the float64 check failed\n"), 1;

    qkt_params p; /* y = sin(3 x0) + x1^2 from x ~ U(-1, 1)^2, as examples/mlp_adam.c, with Mish */
    qkt_params_init(&p);
    qkt_linear l1, l2;
    qkt_linear_add(&l1, &p, "l1", 2, HIDDEN, true);
    qkt_linear_add(&l2, &p, "l2", HIDDEN, 1, true);
    qkt_params_finalize(&p);
    qkt_rng rng;
    qkt_rng_seed(&rng, 1);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(0.5 * qkt_rng_normal(&rng));
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAM);
    qkt_optim opt;
    qkt_optim_init(&opt, &p, &oc);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    double loss = NAN;
    for (int step = 0; step < steps; step++) {
        qkt_ctx_reset(&ctx);
        qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){B, 2}), *y = qkt_tensor_new(&ctx, 2, (int[]){B, 1});
        for (int b = 0; b < B; b++) {
            double x0 = 2 * qkt_rng_uniform(&rng) - 1, x1 = 2 * qkt_rng_uniform(&rng) - 1;
            x->data[2 * b] = (qkt_real)x0, x->data[2 * b + 1] = (qkt_real)x1;
            y->data[b] = (qkt_real)(sin(3 * x0) + x1 * x1);
        }
        qkt_tensor *h = mish(&ctx, qkt_linear_forward(&ctx, &l1, x), mish_backward); /* (B, HIDDEN) */
        qkt_tensor *d = qkt_sub(&ctx, qkt_linear_forward(&ctx, &l2, h), y);
        qkt_tensor *mse = qkt_mean(&ctx, qkt_mul(&ctx, d, d));
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, mse, NULL);
        qkt_optim_step(&opt, 1e-2);
        loss = mse->data[0];
        if (step % 100 == 0 || step == steps - 1) printf("float32: step %4d  mse %.5f\n", step, loss);
    }
    qkt_ctx_free(&ctx);
    qkt_optim_free(&opt);
    qkt_params_free(&p);
    /* The target's variance is ~0.53; Mish leaves a plateau near 0.14 for its first ~300 steps. */
    if (steps >= 600 && !(loss < 0.05)) return fprintf(stderr, "mixed_precision: mse %.4f did not fall below 0.05\n", loss), 1;
    printf("float32 training with a custom op checked in float64, in one program: ok\n");
    return 0;
}
#endif
