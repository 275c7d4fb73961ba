/* API misuse is loud, never a silent wrong result (libqkt cannot be misused silently).
 * Each case runs with a fatal hook that records the error and longjmps back:
 *   - backward on a loss made before qkt_ctx_reset;
 *   - a tensor of an earlier step, or of another context, as an op input;
 *   - backward twice through the same nodes (allowed with ctx->retain_graph, adding up);
 *   - NaN passes through ReLU (forward and backward) instead of becoming 0;
 *   - a custom op's NaN output is caught by detect_anomaly without a qkt_op_done call;
 *   - a tensor kept across a reset when the next step has the same layout, and under
 *     QKT_DEBUG_ARENA=1 across several resets (a dead tensor's data then reads NaN);
 *   - a zeroed or freed context, a parameter before finalize, a NULL input, a shape whose
 *     element count overflows, a custom op's output used or backpropagated unrecorded;
 *   - affine_add without its residual, with one of another shape or of an earlier step;
 *   - a usage error names the op and ctx->scope (also in backward), and only while in it. */
#include <setjmp.h>
#include <stdlib.h>
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

/* ---------------------------------------------------------------- lifetimes */
/* One step of a recurrent state: h = tanh(x W^T) (+ prev). */
static qkt_tensor *rnn_step(qkt_ctx *ctx, qkt_tensor *prev) {
    qkt_tensor *x = qkt_tensor_new(ctx, 2, (int[]){2, 3});
    for (int i = 0; i < 6; i++) x->data[i] = 0.1f * (qkt_real)(i + 1);
    qkt_tensor *h = qkt_tanh(ctx, qkt_matmul(ctx, x, w, false, true));
    return prev ? qkt_add(ctx, h, prev) : h;
}

static void test_stale_same_layout(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    ctx.debug_arena = false; /* whatever the environment says */
    /* Kept across one reset, and the next step lays out its tensors exactly as the first:
     * the old pointer is where the new step's h would be if headers lived in the arena. */
    qkt_tensor *h = rnn_step(&ctx, NULL);
    for (int k = 0; k < 4; k++) {
        qkt_ctx_reset(&ctx);
        EXPECT_REFUSED(QKT_FATAL_USAGE, "add: input 1 is a tensor of an earlier step", rnn_step(&ctx, h),
                       "a recurrent state kept across a reset (same layout)");
        qkt_ctx_reset(&ctx);
        h = rnn_step(&ctx, NULL);
    }
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_backward: the output is a tensor of an earlier step",
                   (qkt_ctx_reset(&ctx), qkt_backward(&ctx, h, (qkt_real[8]){0})),
                   "backward from a state of the step before");
    /* A dead tensor's header stays readable (its data is another step's): no crash even
     * after a step that fills the arena with other values. */
    qkt_ctx_reset(&ctx);
    qkt_tensor *loss = loss_of(&ctx);
    qkt_real before = loss->data[0];
    qkt_ctx_reset(&ctx);
    qkt_tensor *big = qkt_tensor_new(&ctx, 1, (int[]){4096});
    memset(big->data, 0x7f, 4096 * sizeof(qkt_real));
    EXPECT(loss->size == 1 && loss->ndim == 0 && loss->data, "a dead loss' header was overwritten");
    volatile qkt_real after = loss->data[0];
    (void)after, (void)before;
    qkt_ctx_free(&ctx);
}

/* QKT_DEBUG_ARENA=1: no header slot is reused (stale refused however many resets ago) and a
 * reset fills the step's values with NaN. */
static void test_debug_arena(void) {
    setenv("QKT_DEBUG_ARENA", "1", 1);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    unsetenv("QKT_DEBUG_ARENA");
    EXPECT(ctx.debug_arena, "QKT_DEBUG_ARENA=1 did not set ctx.debug_arena");
    qkt_tensor *h = rnn_step(&ctx, NULL), *loss = loss_of(&ctx);
    for (int k = 0; k < 3; k++) {
        qkt_ctx_reset(&ctx);
        EXPECT(isnan(loss->data[0]), "after %d resets a dead loss reads %g, not NaN", k + 1, (double)loss->data[0]);
        qkt_tensor *h2 = rnn_step(&ctx, NULL);
        (void)loss_of(&ctx);
        EXPECT_REFUSED(QKT_FATAL_USAGE, "is a tensor of an earlier step", qkt_add(&ctx, h2, h),
                       "a state kept across resets (debug arena)");
    }
    qkt_ctx_free(&ctx);
}

static void test_bad_context(void) {
    qkt_ctx z;
    memset(&z, 0, sizeof z); /* declared, never initialised */
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_ctx_reset: the context is not initialised", qkt_ctx_reset(&z), "reset a zeroed context");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_tensor_new: the context is not initialised", qkt_tensor_new(&z, 1, (int[]){4}),
                   "a tensor in a zeroed context");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "scale: the context is not initialised", qkt_scale(&z, w, 2), "an op in a zeroed context");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_backward: the context is not initialised", qkt_backward(&z, w, NULL),
                   "backward in a zeroed context");
    qkt_ctx f;
    qkt_ctx_init(&f, 0, 1);
    qkt_ctx_free(&f);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "relu: the context is not initialised", qkt_relu(&f, w), "an op in a freed context");
}

static void test_unfinalized_and_null(void) {
    qkt_params q;
    qkt_params_init(&q);
    qkt_tensor *v = qkt_params_add(&q, "v", 1, (int[]){3}, 0);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "scale: input 0 is parameter v of a store not yet finalised", qkt_scale(&ctx, v, 2),
                   "an op on a parameter before finalize");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_params_zero_grad before qkt_params_finalize", qkt_params_zero_grad(&q),
                   "zero_grad before finalize");
    qkt_params_free(&q);
    qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){2, 3});
    EXPECT_REFUSED(QKT_FATAL_USAGE, "matmul: input 1 is NULL", qkt_matmul(&ctx, x, qkt_params_find(&p, "W"), false, true),
                   "a misspelled parameter name");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "add: input 0 is NULL", qkt_add(&ctx, NULL, x), "NULL into add");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "layernorm: input 0 is NULL", qkt_layernorm(&ctx, NULL, NULL, NULL, 1e-5), "NULL into layernorm");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "concat: input 1 is NULL", qkt_concat(&ctx, 2, (qkt_tensor *[]){x, NULL}), "NULL into concat");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "attention: input 2 is NULL",
                   qkt_attention(&ctx, x, x, NULL, 1, &(qkt_attn_opts){.scale = 1}), "NULL v into attention");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_backward: the output is NULL", qkt_backward(&ctx, NULL, NULL), "backward from NULL");
    /* affine_add: its residual (input 3) is required, live and of the output's shape */
    qkt_tensor *W = w, *r = qkt_tensor_new(&ctx, 2, (int[]){2, W->shape[0]}); /* W (4, 3) */
    EXPECT_REFUSED(QKT_FATAL_USAGE, "affine_add: input 3 is NULL", qkt_affine_add(&ctx, x, W, NULL, NULL), "NULL residual");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "affine_add (x W^T, r): shapes (2, 4) and (2, 3) do not fit",
                   qkt_affine_add(&ctx, x, W, NULL, x), "a residual of the input's shape, not the output's");
    qkt_tensor *y0 = qkt_affine_add(&ctx, x, W, NULL, r);
    EXPECT(y0 && y0->ndim == 2 && y0->shape[1] == W->shape[0], "affine_add with a fitting residual");
    qkt_ctx_reset(&ctx);
    x = qkt_tensor_new(&ctx, 2, (int[]){2, 3});
    EXPECT_REFUSED(QKT_FATAL_USAGE, "affine_add: input 3 is a tensor of an earlier step", qkt_affine_add(&ctx, x, W, NULL, r),
                   "a residual of an earlier step");
    /* optional inputs stay optional */
    qkt_tensor *y = qkt_layernorm(&ctx, x, NULL, NULL, 1e-5);
    EXPECT(y && y->size == 6, "layernorm without affine");
    qkt_ctx_free(&ctx);
}

static void test_overflow(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "shape (65536, 65536, 65536, 65536) has more elements than fit",
                   qkt_tensor_new(&ctx, 4, (int[]){65536, 65536, 65536, 65536}), "65536^4 elements");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "has more elements than fit", qkt_tensor_new(&ctx, 4, (int[]){65536, 65536, 65536, 32768}),
                   "2^63 elements");
    qkt_params q;
    qkt_params_init(&q);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "has more elements than fit", qkt_params_add(&q, "huge", 3, (int[]){1 << 30, 1 << 30, 1 << 30}, 0),
                   "a 2^90-element parameter");
    qkt_params_free(&q);
    qkt_tensor *x = qkt_tensor_new(&ctx, 1, (int[]){4});
    EXPECT_REFUSED(QKT_FATAL_USAGE, "", qkt_reshape(&ctx, x, 4, (int[]){65536, 65536, 65536, 65536}), "reshape to 2^64 elements");
    qkt_ctx_free(&ctx);
}

/* A custom op that computes y = 2 x but forgets qkt_op_record_custom. */
static void twice_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dx = qkt_grad(ctx, n->in[0]);
    for (int64_t i = 0; i < n->in[0]->size; i++) dx[i] += 2 * n->out->grad[i];
}
static qkt_tensor *twice(qkt_ctx *ctx, qkt_tensor *x, bool record) {
    qkt_op_check_inputs(ctx, "twice", 1, &x);
    qkt_tensor *y = qkt_op_output(ctx, x->ndim, x->shape);
    for (int64_t i = 0; i < x->size; i++) y->data[i] = 2 * x->data[i];
    if (record) qkt_op_record_custom(ctx, "twice", twice_backward, y, 1, &x);
    return y;
}
static void test_unrecorded_custom(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){2, 3});
    for (int i = 0; i < 6; i++) x->data[i] = 1;
    /* Part of the graph: loss = sum(a + twice(a)), a = x W^T. Taken as a constant, the
     * unrecorded output would leave dW that of sum(a) alone: 2 instead of 6. */
    qkt_tensor *a = qkt_matmul(&ctx, x, w, false, true);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "add: input 1 is a custom op's output that was never recorded",
                   qkt_sum(&ctx, qkt_add(&ctx, a, twice(&ctx, a, false))), "an unrecorded output in part of the graph");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "qkt_backward: the output is a custom op's output that was never recorded",
                   qkt_backward(&ctx, twice(&ctx, qkt_sum(&ctx, a), false), NULL), "backward from an unrecorded output");
    EXPECT_REFUSED(QKT_FATAL_USAGE, "twice: input 0 is NULL", twice(&ctx, NULL, true), "NULL into a custom op that checks");
    /* Recorded: dW = 3 dW of sum(a). */
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, qkt_sum(&ctx, qkt_add(&ctx, a, twice(&ctx, a, true))), NULL);
    EXPECT_NEAR(w->grad[0], 3 * 2, 1e-5); /* d sum(x W^T) / dW[0][0] = sum over 2 rows of x = 2 */
    /* The hint for a graph that records nothing names both causes. */
    qkt_ctx_reset(&ctx);
    int prev = qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    qkt_tensor *l = loss_of(&ctx);
    qkt_ctx_set_mode(&ctx, prev);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "QKT_MODE_EVAL", qkt_backward(&ctx, l, NULL), "backward after an eval forward");
    qkt_ctx_free(&ctx);
}

/* A usage error names the op and the context's scope, in forward and in backward. */
static void bad_backward(qkt_ctx *ctx, qkt_node *n) {
    (void)ctx;
    QKT_CHECK(n->n_in == 7, "my_op's backward wants 7 inputs, got %d", n->n_in);
}
static void test_error_names_call(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    ctx.scope = "h.1.mlp";
    qkt_tensor *x = qkt_tensor_new(&ctx, 2, (int[]){2, 5});
    EXPECT_REFUSED(QKT_FATAL_USAGE, "(op matmul, scope h.1.mlp): matmul (inner dims): shapes", qkt_matmul(&ctx, x, w, false, true),
                   "a shape mismatch names the op and scope");
    ctx.scope = NULL;
    EXPECT_REFUSED(QKT_FATAL_USAGE, "(op softmax): ", qkt_softmax(&ctx, x, 1, QKT_MASK_ADDITIVE, NULL), "no scope: the op alone");
    ctx.scope = "probe";
    qkt_tensor *in = qkt_scale(&ctx, w, 1);
    qkt_tensor *out = qkt_op_output(&ctx, in->ndim, in->shape);
    memcpy(out->data, in->data, (size_t)in->size * sizeof(qkt_real));
    qkt_op_record_custom(&ctx, "my_op", bad_backward, out, 1, &in);
    EXPECT_REFUSED(QKT_FATAL_USAGE, "(backward of op my_op, scope probe): my_op's backward wants 7 inputs",
                   qkt_backward(&ctx, qkt_sum(&ctx, out), NULL), "a backward's error names the op");
    /* Once an op has returned, a later error is not pinned on it. */
    qkt_ctx_reset(&ctx);
    (void)qkt_relu(&ctx, in = qkt_scale(&ctx, w, 1));
    EXPECT_REFUSED(QKT_FATAL_USAGE, "parameter w added twice", qkt_params_add(&p, "w", 1, (int[]){1}, 0), "a later error");
    EXPECT(!strstr(got, "(op "), "a non-op error names an op: %s", got);
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
    test_stale_same_layout();
    test_debug_arena();
    test_bad_context();
    test_unfinalized_and_null();
    test_overflow();
    test_unrecorded_custom();
    test_error_names_call();
    qkt_set_fatal_handler(NULL, NULL);
    qkt_params_free(&p);
    return qkt_test_finish();
}
