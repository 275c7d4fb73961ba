/* A custom op, SiLU(x) = x sigmoid(x), with its backward, checked by qkt's gradient checker.
 * The contract of a custom op (docs/library.md):
 *   - compute the output first (qkt_op_output gives a tensor of this step), then record it
 *     with qkt_op_record_custom: the anomaly check (ctx->detect_anomaly) runs there;
 *   - the backward ADDS into each input's grad (qkt_grad(ctx, input)) and reads the output's
 *     grad n->out->grad; skip inputs with !requires_grad;
 *   - state needed by backward goes in the arena (qkt_arena_alloc) and hangs off n->saved.
 * Gradient checks need float64: build against qkt64.
 * Build: cc custom_op_silu.c $(pkg-config --cflags --libs qkt64) -lm -o custom_op_silu */
#include <math.h>
#include <stdio.h>

#include "qkt.h"
#include "qkt_gradcheck.h"

#ifndef QKT_DOUBLE
#error "gradient checks need the float64 flavour: build with $(pkg-config --cflags --libs qkt64) or qkt::qkt64"
#endif

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* dx += dy * s (1 + x (1 - s)),  s = sigmoid(x) */
static void silu_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!x->requires_grad) return;
    qkt_real *dx = qkt_grad(ctx, x);
    const qkt_real *dy = n->out->grad;
    for (int64_t i = 0; i < x->size; i++) {
        double s = sigmoid(x->data[i]);
        dx[i] += dy[i] * s * (1 + x->data[i] * (1 - s));
    }
}
/* A planted bug: forgets the x (1 - s) term. The checker must catch it. */
static void silu_backward_wrong(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    qkt_real *dx = qkt_grad(ctx, x);
    for (int64_t i = 0; i < x->size; i++) dx[i] += n->out->grad[i] * sigmoid(x->data[i]);
}

static qkt_tensor *silu(qkt_ctx *ctx, qkt_tensor *x, qkt_backward_fn backward) {
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    for (int64_t i = 0; i < x->size; i++) y->data[i] = x->data[i] * sigmoid(x->data[i]);
    qkt_op_record_custom(ctx, "silu", backward, y, 1, &x);
    return y;
}

static qkt_tensor *f_good(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return silu(ctx, x[0], silu_backward);
}
static qkt_tensor *f_wrong(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    return silu(ctx, x[0], silu_backward_wrong);
}
/* Inside a graph: layernorm -> silu -> matmul with a second input. */
static qkt_tensor *f_graph(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *h = silu(ctx, qkt_layernorm(ctx, x[0], NULL, NULL, 1e-5), silu_backward);
    return qkt_matmul(ctx, h, x[1], false, true);
}

int main(int argc, char **argv) {
    (void)argc;
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    qkt_gc_case cases[] = {
        {.name = "silu", .n_inputs = 1, .ndim = {2}, .shape = {{4, 6}}, .tol = 1e-6, .fn = f_good},
        {.name = "silu in a graph", .n_inputs = 2, .ndim = {2, 2}, .shape = {{4, 6}, {3, 6}}, .tol = 1e-6, .fn = f_graph},
        {.name = "silu, planted wrong backward", .n_inputs = 1, .ndim = {2}, .shape = {{4, 6}}, .tol = 1e-6, .fn = f_wrong},
    };
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        qkt_gc_result r;
        bool ok = qkt_gradcheck(&cases[i], 42, &r);
        char msg[256];
        printf("%s\n", qkt_gc_describe(&cases[i], &r, msg, sizeof msg));
        bad += ok != (i < 2); /* the first two must pass, the planted bug must fail */
    }
    printf(bad ? "UNEXPECTED\n" : "the checker passes the right backward and catches the wrong one\n");
    return bad ? 1 : 0;
}
