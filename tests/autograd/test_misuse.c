/* API misuse is loud, never a silent wrong result (libqkt cannot be misused silently).
 * Each case runs with a fatal hook that records the error and longjmps back:
 *   - backward on a loss made before qkt_ctx_reset;
 *   - a tensor of an earlier step, or of another context, as an op input;
 *   - backward twice through the same nodes (allowed with ctx->retain_graph, adding up);
 *   - NaN passes through ReLU (forward and backward) instead of becoming 0;
 *   - a custom op's NaN output is caught by detect_anomaly without a qkt_op_done call. */
#include <setjmp.h>
#include <string.h>

#include "qkt_test.h"

static jmp_buf jb;
static qkt_fatal_kind got_kind;
static char got[1024];
static void hook(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)user;
    got_kind = kind;
    snprintf(got, sizeof got, "%s", msg);
    longjmp(jb, 1);
}
/* Runs `stmt`; expects it to end in the hook with `kind` and a message containing `want`. */
#define EXPECT_REFUSED(kind, want, stmt, ...)                                                          \
    do {                                                                                               \
        got[0] = 0;                                                                                    \
        if (setjmp(jb) == 0) {                                                                         \
            stmt;                                                                                      \
            EXPECT(0, "returned instead of refusing: %s", __VA_ARGS__);                                \
        } else {                                                                                       \
            EXPECT(got_kind == (kind) && strstr(got, (want)) != NULL, "got '%s': %s", got, __VA_ARGS__); \
        }                                                                                              \
    } while (0)

static qkt_params p;
static qkt_tensor *w;

static qkt_tensor *loss_of(qkt_ctx *ctx) {
    qkt_tensor *x = qkt_tensor_new(ctx, 2, (int[]){2, 3});
    for (int i = 0; i < 6; i++) x->data[i] = 0.1f * (qkt_real)(i - 2);
    return qkt_sum(ctx, qkt_mul(ctx, qkt_matmul(ctx, x, w, false, true), qkt_matmul(ctx, x, w, false, true)));
}

static void test_stale(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *old = loss_of(&ctx);
    qkt_ctx_reset(&ctx);
    qkt_params_zero_grad(&p);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_backward: the output is a tensor of an earlier step", qkt_backward(&ctx, old, NULL), "backward on a loss from before the reset");
    qkt_ctx_reset(&ctx);
    qkt_tensor *stale = qkt_tensor_new(&ctx, 1, (int[]){4});
    qkt_ctx_reset(&ctx);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "input 0 is a tensor of an earlier step", qkt_scale(&ctx, stale, 2), "stale tensor as an op input");
    qkt_ctx other;
    qkt_ctx_init(&other, 0, 2);
    qkt_tensor *foreign = qkt_tensor_new(&other, 1, (int[]){4});
    EXPECT_REFUSED(QKT_FATAL_USAGE, "or of another context", qkt_relu(&ctx, foreign), "tensor of another context");
    /* A parameter is valid in every step and context. */
    qkt_ctx_reset(&ctx);
    qkt_tensor *ok = qkt_scale(&ctx, w, 2);
    EXPECT(ok->data[0] == 2 * w->data[0], "a parameter as input");
    qkt_ctx_free(&other);
    qkt_ctx_free(&ctx);
}

static void test_backward_twice(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_params_zero_grad(&p);
    qkt_tensor *l = loss_of(&ctx);
    qkt_backward(&ctx, l, NULL);
    qkt_real g0 = w->grad[0];
    EXPECT(g0 != 0, "grad is zero");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "reached op sum a second time", qkt_backward(&ctx, l, NULL), "backward twice");
    EXPECT(w->grad[0] == g0, "the refused backward changed a grad");
    /* Asked for: the grads add up again. */
    qkt_ctx_reset(&ctx);
    ctx.retain_graph = true;
    ctx.keep_grads = true;
    qkt_params_zero_grad(&p);
    l = loss_of(&ctx);
    qkt_backward(&ctx, l, NULL);
    qkt_real once = w->grad[0];
    for (int64_t i = 0; i < ctx.n_nodes; i++) /* a second pass needs fresh upstream grads */
        if (ctx.tape[i].out->grad) memset(ctx.tape[i].out->grad, 0, (size_t)ctx.tape[i].out->size * sizeof(qkt_real));
    qkt_backward(&ctx, l, NULL);
    EXPECT_NEAR(w->grad[0], 2 * once, 1e-5 * (1 + fabs(once)));
    /* Two disjoint graphs on one tape each get one backward: allowed. */
    qkt_ctx_reset(&ctx);
    ctx.retain_graph = ctx.keep_grads = false;
    qkt_tensor *a = loss_of(&ctx), *b = loss_of(&ctx);
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, a, NULL);
    qkt_backward(&ctx, b, NULL);
    EXPECT_NEAR(w->grad[0], 2 * once, 1e-5 * (1 + fabs(once)));
    qkt_ctx_free(&ctx);
}

/* A custom op that writes NaN and never calls qkt_op_done. */
static void nan_backward(qkt_ctx *ctx, qkt_node *n) { (void)ctx, (void)n; }
static void test_nan(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x = qkt_tensor_new(&ctx, 1, (int[]){3});
    x->data[0] = -1, x->data[1] = NAN, x->data[2] = 2;
    x->requires_grad = true;
    qkt_tensor *y = qkt_relu(&ctx, x);
    EXPECT(y->data[0] == 0 && isnan(y->data[1]) && y->data[2] == 2, "relu(-1, NaN, 2) = (%g, %g, %g)", y->data[0],
           y->data[1], y->data[2]);
    qkt_backward(&ctx, y, (qkt_real[]){1, 1, 1});
    EXPECT(x->grad[0] == 0 && isnan(x->grad[1]) && x->grad[2] == 1, "relu grad (%g, %g, %g)", x->grad[0], x->grad[1],
           x->grad[2]);
    qkt_ctx_reset(&ctx);
    ctx.detect_anomaly = true;
    qkt_tensor *in = qkt_scale(&ctx, w, 1);
    qkt_tensor *out = qkt_op_output(&ctx, in->ndim, in->shape);
    for (int64_t i = 0; i < out->size; i++) out->data[i] = i == 3 ? NAN : in->data[i];
    EXPECT_REFUSED(QKT_FATAL_ANOMALY, "anomaly: op my_op produced NaN at element 3",
                   qkt_op_record_custom(&ctx, "my_op", nan_backward, out, 1, &in), "custom op NaN");
    qkt_ctx_free(&ctx);
}

int main(void) {
    qkt_params_init(&p);
    w = qkt_params_add(&p, "w", 2, (int[]){4, 3}, 0);
    qkt_params_finalize(&p);
    for (int i = 0; i < 12; i++) w->data[i] = 0.05f * (qkt_real)(i + 1);
    qkt_set_fatal_handler(hook, NULL);
    test_stale();
    test_backward_twice();
    test_nan();
    qkt_set_fatal_handler(NULL, NULL);
    qkt_params_free(&p);
    return qkt_test_finish();
}
