/* End to end: a 2-layer MLP built from autograd ops, trained with plain SGD on a
 * synthetic regression problem, must cut its loss at least 10x; and after the
 * first step (whose reset consolidates the arena) a step performs no malloc.
 *
 *   h = relu(x W1^T + b1)     x (N, D), W1 (H, D), b1 (H)      -> (N, H)
 *   y = h W2^T + b2           W2 (1, H), b2 (1)                 -> (N, 1)
 *   loss = mean((y - t)^2)
 * Targets come from a fixed random "teacher" MLP of the same form (hidden width
 * HT < H), so the problem is realisable and the loss can fall far. */
#include <math.h>
#include <stdlib.h>

#include "qkt_optim.h"
#include "qkt_test.h"

enum { N = 128, D = 4, H = 32, HT = 6, STEPS = 600 };

/* Teacher: t = sum_j v_j relu(u_j . x + c_j) with u, v, c ~ N(0, 1). */
static void make_data(qkt_rng *r, qkt_real *x, qkt_real *t) {
    double u[HT][D], v[HT], c[HT];
    for (int j = 0; j < HT; j++) {
        for (int k = 0; k < D; k++) u[j][k] = qkt_rng_normal(r);
        v[j] = qkt_rng_normal(r);
        c[j] = qkt_rng_normal(r);
    }
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < D; k++) x[i * D + k] = (qkt_real)qkt_rng_normal(r);
        double y = 0;
        for (int j = 0; j < HT; j++) {
            double z = c[j];
            for (int k = 0; k < D; k++) z += u[j][k] * x[i * D + k];
            y += v[j] * (z > 0 ? z : 0);
        }
        t[i] = (qkt_real)y;
    }
}

int main(void) {
    qkt_rng rng;
    qkt_rng_seed(&rng, 1234);

    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *W1 = qkt_params_add(&p, "fc1.weight", 2, (int[]){H, D}, QKT_PARAM_DECAY);
    qkt_tensor *b1 = qkt_params_add(&p, "fc1.bias", 1, (int[]){H}, 0);
    qkt_tensor *W2 = qkt_params_add(&p, "fc2.weight", 2, (int[]){1, H}, QKT_PARAM_DECAY);
    qkt_tensor *b2 = qkt_params_add(&p, "fc2.bias", 1, (int[]){1}, 0);
    qkt_params_finalize(&p);
    /* He-style init: Var(W1) = 2 / D, Var(W2) = 1 / H; biases zero. */
    for (int64_t i = 0; i < W1->size; i++) W1->data[i] = (qkt_real)(qkt_rng_normal(&rng) * sqrt(2.0 / D));
    for (int64_t i = 0; i < W2->size; i++) W2->data[i] = (qkt_real)(qkt_rng_normal(&rng) * sqrt(1.0 / H));

    qkt_real xs[N * D], ts[N];
    make_data(&rng, xs, ts);

    qkt_optim_config cfg = qkt_optim_defaults(QKT_OPTIM_SGD); /* plain SGD: no momentum, no decay */
    qkt_optim opt;
    qkt_optim_init(&opt, &p, &cfg);
    const double lr = 0.02;

    /* A deliberately small first arena block, so the first step has to grow it. */
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 4096, 1);
    double first = 0, last = 0;
    bool finite = true;
    size_t mallocs_after_first = 0;
    int cap_nodes_after_first = 0;
    for (int step = 0; step < STEPS; step++) {
        qkt_ctx_reset(&ctx);
        if (step == 1) { /* the first step, which grew the arena, is done */
            mallocs_after_first = qkt_ctx_mem(&ctx).n_mallocs;
            cap_nodes_after_first = ctx.cap_nodes;
        }
        qkt_tensor *x = qkt_tensor_2d(&ctx, N, D);
        qkt_tensor *t = qkt_tensor_2d(&ctx, N, 1);
        for (int i = 0; i < N * D; i++) x->data[i] = xs[i];
        for (int i = 0; i < N; i++) t->data[i] = ts[i];

        qkt_tensor *h = qkt_relu(&ctx, qkt_add(&ctx, qkt_matmul(&ctx, x, W1, false, true), b1)); /* (N, H) */
        qkt_tensor *y = qkt_add(&ctx, qkt_matmul(&ctx, h, W2, false, true), b2);                /* (N, 1) */
        qkt_tensor *d = qkt_sub(&ctx, y, t);
        qkt_tensor *loss = qkt_mean(&ctx, qkt_mul(&ctx, d, d));

        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, loss, NULL);
        qkt_optim_step(&opt, lr);

        if (step == 0) {
            first = loss->data[0];
            EXPECT(qkt_ctx_mem(&ctx).n_mallocs > 1, "the 4 KB arena had to grow in step 1 (%zu blocks)", qkt_ctx_mem(&ctx).n_mallocs);
        }
        last = loss->data[0];
        if (!isfinite(last)) {
            finite = false;
            break;
        }
    }
    EXPECT(finite, "loss became %g", last);
    printf("mlp sgd: loss %.6f -> %.6f after %d steps (%.1fx), arena %zu bytes, %zu mallocs\n", first, last, STEPS,
           first / last, qkt_ctx_mem(&ctx).arena_capacity, qkt_ctx_mem(&ctx).n_mallocs);
    EXPECT(last * 10 <= first, "loss fell only from %g to %g", first, last);
    EXPECT(qkt_ctx_mem(&ctx).n_mallocs == mallocs_after_first, "steps 2..%d malloc'd: %zu arena blocks, %zu after step 1",
           STEPS, qkt_ctx_mem(&ctx).n_mallocs, mallocs_after_first);
    EXPECT(ctx.cap_nodes == cap_nodes_after_first, "tape grew after step 1");

    qkt_ctx_free(&ctx);
    qkt_optim_free(&opt);
    qkt_params_free(&p);
    return qkt_test_finish();
}
