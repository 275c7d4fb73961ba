/* A 2-layer MLP trained with Adam on a toy regression: y = sin(3 x0) + x1^2, x ~ U(-1, 1)^2.
 * Shows the step lifecycle every qkt program follows:
 *   parameters in one store (qkt_params) -> optimizer over it -> per step: reset the
 *   context, build the graph (forward), qkt_backward, optimizer step.
 * Build: cc mlp_adam.c $(pkg-config --cflags --libs qkt) -o mlp_adam */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qkt.h"

enum { B = 64, HIDDEN = 32 };

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    int steps = argc > 1 ? atoi(argv[1]) : 300;
    qkt_params p;
    qkt_params_init(&p);
    qkt_linear l1, l2;
    qkt_linear_add(&l1, &p, "l1", 2, HIDDEN, true); /* y = x W^T + b, W (HIDDEN, 2) */
    qkt_linear_add(&l2, &p, "l2", HIDDEN, 1, true);
    qkt_params_finalize(&p); /* one contiguous block: data and grad */
    qkt_rng rng;
    qkt_rng_seed(&rng, 1);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(0.5 * qkt_rng_normal(&rng)); /* init */

    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAM);
    qkt_optim opt;
    qkt_optim_init(&opt, &p, &oc);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1); /* arena grows on the first step, then no malloc */

    double loss = NAN;
    for (int step = 0; step < steps; step++) {
        qkt_ctx_reset(&ctx); /* every tensor of the previous step dies here */
        qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){B, 2}), *y = qkt_tensor_new(&ctx, 2, (int[]){B, 1});
        for (int b = 0; b < B; b++) {
            double x0 = 2 * qkt_rng_uniform(&rng) - 1, x1 = 2 * qkt_rng_uniform(&rng) - 1;
            x->data[2 * b] = (qkt_real)x0, x->data[2 * b + 1] = (qkt_real)x1;
            y->data[b] = (qkt_real)(sin(3 * x0) + x1 * x1);
        }
        qkt_tensor *h = qkt_gelu(&ctx, qkt_linear_forward(&ctx, &l1, x)); /* (B, HIDDEN) */
        qkt_tensor *d = qkt_sub(&ctx, qkt_linear_forward(&ctx, &l2, h), y);
        qkt_tensor *mse = qkt_mean(&ctx, qkt_mul(&ctx, d, d)); /* scalar */
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, mse, NULL);
        qkt_optim_step(&opt, 1e-2);
        loss = mse->data[0];
        if (step % 50 == 0 || step == steps - 1) printf("step %4d  mse %.5f\n", step, loss);
    }
    qkt_ctx_free(&ctx);
    qkt_optim_free(&opt);
    qkt_params_free(&p);
    /* The target's variance is ~0.53: a fitted model is far below it. */
    if (steps >= 300 && !(loss < 0.05)) return fprintf(stderr, "mlp_adam: mse %.4f did not fall below 0.05\n", loss), 1;
    return 0;
}
