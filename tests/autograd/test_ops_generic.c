/* The generic ops' edges, beyond the gradient checks: exact values of
 * broadcasting, ties in max, IEEE edges (log 0, x / 0, sqrt 0, all -inf logsumexp), NaN
 * propagating through every op forward and backward, thread-count independence of the
 * broadcast and axis backwards, the GPT's adds staying on the fast path, and bad shapes
 * or axes refused with a message naming the shapes. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

static jmp_buf jb;
static char got[1024];
static qkt_fatal_kind got_kind;
static void hook(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)user;
    got_kind = kind;
    snprintf(got, sizeof got, "%s", msg);
    longjmp(jb, 1);
}
#define EXPECT_USAGE(want, stmt)                                                                     \
    do {                                                                                             \
        got[0] = 0;                                                                                  \
        if (setjmp(jb) == 0) {                                                                       \
            stmt;                                                                                    \
            EXPECT(0, "returned instead of refusing: %s", #stmt);                                    \
        } else {                                                                                     \
            EXPECT(got_kind == QKT_FATAL_USAGE && strstr(got, (want)) != NULL, "got '%s' for %s", got, #stmt); \
        }                                                                                            \
    } while (0)

static qkt_tensor *leaf(qkt_ctx *ctx, int ndim, const int *shape, const double *v) {
    qkt_tensor *t = qkt_tensor_new(ctx, ndim, shape);
    for (int64_t i = 0; i < t->size; i++) t->data[i] = (qkt_real)v[i];
    t->requires_grad = true;
    return t;
}
static void backward_ones(qkt_ctx *ctx, qkt_tensor *y) {
    qkt_real *seed = qkt_arena_alloc(&ctx->arena, (size_t)y->size * sizeof *seed);
    for (int64_t i = 0; i < y->size; i++) seed[i] = 1;
    qkt_backward(ctx, y, seed);
}

static void test_broadcast_values(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *a = leaf(&ctx, 2, (int[]){2, 1}, (double[]){1, 2});
    qkt_tensor *b = leaf(&ctx, 2, (int[]){1, 3}, (double[]){10, 20, 30});
    qkt_tensor *y = qkt_sub(&ctx, a, b); /* (2, 3): a_i - b_j */
    EXPECT(y->ndim == 2 && y->shape[0] == 2 && y->shape[1] == 3, "shape (%d, %d)", y->shape[0], y->shape[1]);
    EXPECT(y->data[0] == -9 && y->data[2] == -29 && y->data[3] == -8 && y->data[5] == -28, "values %g %g %g %g",
           y->data[0], y->data[2], y->data[3], y->data[5]);
    backward_ones(&ctx, y);
    EXPECT(a->grad[0] == 3 && a->grad[1] == 3 && b->grad[0] == -2 && b->grad[2] == -2, "grads %g %g %g %g", a->grad[0],
           a->grad[1], b->grad[0], b->grad[2]);
    /* rank extension and a scalar: (3) / scalar 2 -> (3); scalar - (2, 1, 3) -> (2, 1, 3) */
    qkt_tensor *s = qkt_tensor_scalar(&ctx, 2);
    qkt_tensor *c = qkt_div(&ctx, b, s);
    EXPECT(c->ndim == 2 && c->data[1] == 10, "(1, 3) / scalar: ndim %d, [1] = %g", c->ndim, c->data[1]);
    qkt_tensor *d = qkt_sub(&ctx, s, qkt_tensor_zeros(&ctx, 3, (int[]){2, 1, 3}));
    EXPECT(d->ndim == 3 && d->size == 6 && d->data[5] == 2, "scalar - (2, 1, 3): ndim %d size %lld", d->ndim,
           (long long)d->size);
    qkt_ctx_free(&ctx);
}

/* The GPT's residual and bias adds stay on the kernels' fast path (node flag p.i[0]). */
static void test_fast_path(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x = qkt_tensor_zeros(&ctx, 3, (int[]){2, 3, 4});
    x->requires_grad = true;
    qkt_tensor *bias = qkt_tensor_zeros(&ctx, 1, (int[]){4}), *tc = qkt_tensor_zeros(&ctx, 3, (int[]){1, 3, 4});
    qkt_add(&ctx, x, x);
    qkt_add(&ctx, x, bias);
    qkt_mul(&ctx, x, tc);
    qkt_add(&ctx, bias, x);                                        /* swapped: still fast */
    qkt_sub(&ctx, bias, x);                                        /* sub does not commute: general */
    qkt_mul(&ctx, x, qkt_tensor_zeros(&ctx, 3, (int[]){2, 3, 1})); /* (B, T, 1): general */
    EXPECT(ctx.n_nodes == 6, "%d nodes", ctx.n_nodes);
    int want[6] = {1, 1, 1, 2, 0, 0}; /* p.i[0]: 0 general, 1 fast, 2 fast with a and b swapped */
    for (int k = 0; k < 6 && k < ctx.n_nodes; k++) EXPECT(ctx.tape[k].p.i[0] == want[k], "node %d fast %d", k, ctx.tape[k].p.i[0]);
    qkt_ctx_free(&ctx);
}

static void test_max_ties(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *x = leaf(&ctx, 2, (int[]){2, 4}, (double[]){1, 3, 3, 0, 5, 5, 5, 5});
    qkt_tensor *y = qkt_max_axis(&ctx, x, 1, false);
    EXPECT(y->ndim == 1 && y->data[0] == 3 && y->data[1] == 5, "max %g %g", y->data[0], y->data[1]);
    backward_ones(&ctx, y);
    double want[8] = {0, 1, 0, 0, 1, 0, 0, 0}; /* the first of the tied entries */
    for (int i = 0; i < 8; i++) EXPECT(x->grad[i] == want[i], "tie grad[%d] = %g, want %g", i, x->grad[i], want[i]);
    qkt_ctx_free(&ctx);
}

static void test_ieee_edges(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *z = leaf(&ctx, 1, (int[]){2}, (double[]){0, 4});
    qkt_tensor *l = qkt_log(&ctx, z), *s = qkt_sqrt(&ctx, z), *r = qkt_rsqrt(&ctx, z);
    EXPECT(l->data[0] == -INFINITY && s->data[0] == 0 && r->data[0] == INFINITY && s->data[1] == 2 && r->data[1] == 0.5f,
           "log 0 = %g, sqrt 0 = %g, rsqrt 0 = %g", l->data[0], s->data[0], r->data[0]);
    backward_ones(&ctx, qkt_add(&ctx, qkt_add(&ctx, l, s), qkt_scale(&ctx, r, 0)));
    /* d log + d sqrt at 0: +inf + +inf; rsqrt's -inf times 0 (scale) is NaN: inf * 0 */
    EXPECT(isnan(z->grad[0]), "grad at 0: %g (inf + inf + 0 * -inf = NaN)", z->grad[0]);
    EXPECT_NEAR(z->grad[1], 0.25 + 0.25, 1e-6);
    qkt_tensor *a = leaf(&ctx, 1, (int[]){3}, (double[]){1, -1, 0});
    qkt_tensor *q = qkt_div(&ctx, a, qkt_tensor_zeros(&ctx, 0, NULL));
    EXPECT(q->data[0] == INFINITY && q->data[1] == -INFINITY && isnan(q->data[2]), "x / 0 = %g %g %g", q->data[0],
           q->data[1], q->data[2]);
    /* logsumexp: all -inf gives -inf and no grad; huge values do not overflow */
    qkt_tensor *m = leaf(&ctx, 2, (int[]){2, 2}, (double[]){-INFINITY, -INFINITY, 1e4, 1e4});
    qkt_tensor *e = qkt_logsumexp(&ctx, m, -1, true);
    EXPECT(e->data[0] == -INFINITY && fabs(e->data[1] - (1e4 + log(2.0))) < 1e-2, "lse %g %g", e->data[0], e->data[1]);
    backward_ones(&ctx, e);
    EXPECT(m->grad[0] == 0 && m->grad[1] == 0 && fabs(m->grad[2] - 0.5) < 1e-3, "lse grads %g %g %g", m->grad[0],
           m->grad[1], m->grad[2]);
    /* masked_fill with -inf, then softmax: blocked entries get 0 */
    qkt_tensor *x = leaf(&ctx, 2, (int[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
    qkt_tensor *f = qkt_masked_fill(&ctx, x, (const uint8_t[]){0, 1, 0}, 1, (int[]){3}, -INFINITY);
    EXPECT(f->data[1] == -INFINITY && f->data[4] == -INFINITY && f->data[3] == 4, "masked_fill %g %g", f->data[1], f->data[3]);
    /* pow by 0: 1 with grad 0; clamp: the bounds pass the gradient */
    qkt_tensor *p = leaf(&ctx, 1, (int[]){3}, (double[]){0, -2, 0.5});
    qkt_tensor *p0 = qkt_pow(&ctx, p, 0), *c = qkt_clamp(&ctx, p, -2, 0.25);
    EXPECT(p0->data[0] == 1 && p0->data[1] == 1 && c->data[1] == -2 && c->data[2] == 0.25f, "pow 0 / clamp values");
    backward_ones(&ctx, qkt_add(&ctx, p0, c));
    EXPECT(p->grad[0] == 1 && p->grad[1] == 1 && p->grad[2] == 0, "pow 0 + clamp grads %g %g %g", p->grad[0],
           p->grad[1], p->grad[2]);
    qkt_ctx_free(&ctx);
}

/* A NaN input comes out as NaN through every op; where the derivative depends on x, the
 * NaN input's grad is NaN too (a linear op's derivative does not: sum, narrow, ... pass dy),
 * and it reaches the other inputs' grads only where they met the NaN in the math. */
typedef qkt_tensor *(*unary_fn)(qkt_ctx *, qkt_tensor *);
static qkt_tensor *u_pow(qkt_ctx *c, qkt_tensor *x) { return qkt_pow(c, x, 1.5); }
static qkt_tensor *u_pow0(qkt_ctx *c, qkt_tensor *x) { return qkt_pow(c, x, 0); }
static qkt_tensor *u_clamp(qkt_ctx *c, qkt_tensor *x) { return qkt_clamp(c, x, -1, 1); }
static qkt_tensor *u_sum(qkt_ctx *c, qkt_tensor *x) { return qkt_sum_axis(c, x, 0, false); }
static qkt_tensor *u_mean(qkt_ctx *c, qkt_tensor *x) { return qkt_mean_axis(c, x, -1, true); }
static qkt_tensor *u_max(qkt_ctx *c, qkt_tensor *x) { return qkt_max_axis(c, x, 0, false); }
static qkt_tensor *u_lse(qkt_ctx *c, qkt_tensor *x) { return qkt_logsumexp(c, x, 0, false); }
static qkt_tensor *u_narrow(qkt_ctx *c, qkt_tensor *x) { return qkt_narrow(c, x, 0, 1, 2); }
static qkt_tensor *u_isel(qkt_ctx *c, qkt_tensor *x) { return qkt_index_select(c, x, 0, (const int32_t[]){1, 1}, 2); }
static qkt_tensor *u_gather(qkt_ctx *c, qkt_tensor *x) { return qkt_gather(c, x, 0, (const int32_t[]){1}, 1, (int[]){1}); }
static qkt_tensor *u_stack(qkt_ctx *c, qkt_tensor *x) { return qkt_stack(c, 2, (qkt_tensor *[]){x, x}, 1); }
static qkt_tensor *u_concat(qkt_ctx *c, qkt_tensor *x) { return qkt_concat_axis(c, 2, (qkt_tensor *[]){x, x}, 0); }
static qkt_tensor *u_div(qkt_ctx *c, qkt_tensor *x) { return qkt_div(c, qkt_tensor_scalar(c, 1), x); }
static qkt_tensor *u_mul(qkt_ctx *c, qkt_tensor *x) { return qkt_mul(c, qkt_tensor_scalar(c, 2), x); }
static qkt_tensor *u_mulx(qkt_ctx *c, qkt_tensor *x) { return qkt_mul(c, qkt_reshape(c, x, 2, (int[]){3, 1}), x); }
static qkt_tensor *u_where(qkt_ctx *c, qkt_tensor *x) { return qkt_where(c, qkt_tensor_scalar(c, 1), x, qkt_tensor_scalar(c, 0)); }

static void test_nan(void) {
    static const struct { const char *name; unary_fn f; bool y_nan, grad_nan, mixes; } ops[] = {
        {"exp", qkt_exp, 1, 1, 0}, {"log", qkt_log, 1, 1, 0}, {"sqrt", qkt_sqrt, 1, 1, 0}, {"rsqrt", qkt_rsqrt, 1, 1, 0},
        {"pow 1.5", u_pow, 1, 1, 0}, {"pow 0", u_pow0, 0, 1, 0} /* x^0 = 1 even for NaN (C, PyTorch); its grad is NaN */,
        {"sigmoid", qkt_sigmoid, 1, 1, 0}, {"tanh", qkt_tanh, 1, 1, 0}, {"silu", qkt_silu, 1, 1, 0}, {"abs", qkt_abs, 1, 1, 0},
        {"clamp", u_clamp, 1, 1, 0}, {"logsumexp", u_lse, 1, 1, 1} /* the row's y is NaN: every x of it gets e^(x - NaN) */, {"div", u_div, 1, 1, 0}, {"mul x (3,1) * x (3)", u_mulx, 1, 1, 1} /* each x[i] meets the NaN */,
        {"max_axis", u_max, 1, 0, 0} /* the NaN is the argmax: its grad is dy */,
        {"sum_axis", u_sum, 1, 0, 0}, {"mean_axis", u_mean, 1, 0, 0}, {"narrow", u_narrow, 1, 0, 0}, {"index_select", u_isel, 1, 0, 0},
        {"gather", u_gather, 1, 0, 0}, {"stack", u_stack, 1, 0, 0}, {"concat", u_concat, 1, 0, 0}, {"mul", u_mul, 1, 0, 0},
        {"where", u_where, 1, 0, 0},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 1);
        qkt_tensor *x = leaf(&ctx, 1, (int[]){3}, (double[]){0.5, NAN, 2});
        qkt_tensor *y = ops[k].f(&ctx, x);
        bool any = false;
        for (int64_t i = 0; i < y->size; i++) any |= isnan(y->data[i]);
        EXPECT(any == ops[k].y_nan, "%s of a NaN: NaN in the output %d, expected %d", ops[k].name, any, ops[k].y_nan);
        backward_ones(&ctx, y);
        EXPECT(isnan(x->grad[1]) == ops[k].grad_nan, "%s: the NaN input's grad is %g", ops[k].name, x->grad[1]);
        if (!ops[k].mixes)
            EXPECT(!isnan(x->grad[0]) && !isnan(x->grad[2]), "%s: NaN leaked into the other grads (%g, %g)", ops[k].name,
               x->grad[0], x->grad[2]);
        qkt_ctx_free(&ctx);
    }
    /* where: a NaN in the branch not taken reaches neither the output nor the grads */
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *a = leaf(&ctx, 1, (int[]){2}, (double[]){NAN, 1}), *b = leaf(&ctx, 1, (int[]){2}, (double[]){3, NAN});
    qkt_tensor *cond = leaf(&ctx, 1, (int[]){2}, (double[]){0, 1});
    cond->requires_grad = false;
    qkt_tensor *y = qkt_where(&ctx, cond, a, b);
    EXPECT(y->data[0] == 3 && y->data[1] == 1, "where picks %g %g", y->data[0], y->data[1]);
    backward_ones(&ctx, y);
    EXPECT(a->grad[0] == 0 && a->grad[1] == 1 && b->grad[0] == 1 && b->grad[1] == 0, "where grads %g %g %g %g",
           a->grad[0], a->grad[1], b->grad[0], b->grad[1]);
    qkt_ctx_free(&ctx);
}

/* The broadcast and axis backwards give the same bits on 1 and 2 threads, on tensors
 * large enough to run in parallel. */
static void grads_of(int threads, qkt_real *out) {
    qkt_set_threads(threads);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    int n = 8 * 64 * 96;
    qkt_tensor *x = qkt_tensor_new(&ctx, 3, (int[]){8, 64, 96});
    qkt_tensor *w = qkt_tensor_new(&ctx, 3, (int[]){8, 1, 96});
    for (int i = 0; i < n; i++) x->data[i] = (qkt_real)sin(0.37 * i);
    for (int i = 0; i < 8 * 96; i++) w->data[i] = (qkt_real)(1.5 + cos(0.11 * i));
    x->requires_grad = w->requires_grad = true;
    qkt_tensor *y = qkt_div(&ctx, qkt_mul(&ctx, x, w), qkt_add(&ctx, w, w)); /* (8, 64, 96) by (8, 1, 96) */
    y = qkt_logsumexp(&ctx, qkt_add(&ctx, y, qkt_max_axis(&ctx, x, 1, true)), 1, false); /* (8, 96) */
    y = qkt_mul(&ctx, qkt_sum_axis(&ctx, qkt_tanh(&ctx, x), 0, false), qkt_mean_axis(&ctx, y, 0, true)); /* (64, 96) */
    backward_ones(&ctx, y);
    memcpy(out, x->grad, (size_t)n * sizeof *out);
    memcpy(out + n, w->grad, (size_t)(8 * 96) * sizeof *out);
    qkt_ctx_free(&ctx);
}
static void test_threads(void) {
    int n = 8 * 64 * 96 + 8 * 96;
    qkt_real *g1 = malloc((size_t)n * sizeof *g1), *g2 = malloc((size_t)n * sizeof *g2);
    int before = qkt_get_threads();
    grads_of(1, g1);
    grads_of(2, g2);
    qkt_set_threads(before);
    EXPECT(memcmp(g1, g2, (size_t)n * sizeof *g1) == 0, "grads differ between 1 and 2 threads");
    free(g1);
    free(g2);
}

static void test_refused(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *a = qkt_tensor_zeros(&ctx, 2, (int[]){2, 3}), *b = qkt_tensor_zeros(&ctx, 2, (int[]){4, 3});
    EXPECT_USAGE("add: shapes (2, 3) and (4, 3) do not fit", qkt_add(&ctx, a, b));
    EXPECT_USAGE("div: shapes (2, 3) and (4, 3) do not fit", qkt_div(&ctx, a, b));
    EXPECT_USAGE("mul: shapes (2, 3) and (2)", qkt_mul(&ctx, a, qkt_tensor_zeros(&ctx, 1, (int[]){2})));
    EXPECT_USAGE("where: shapes (4, 3) (cond), (2, 3) (a) and (2, 3) (b) do not broadcast", qkt_where(&ctx, b, a, a));
    EXPECT_USAGE("masked_fill (mask must broadcast to x): shapes (2, 3) and (2, 1, 3)",
                 qkt_masked_fill(&ctx, a, (const uint8_t[6]){0}, 3, (int[]){2, 1, 3}, 0));
    EXPECT_USAGE("sum_axis: axis 2 out of range for shape (2, 3)", qkt_sum_axis(&ctx, a, 2, false));
    EXPECT_USAGE("logsumexp: axis -3 out of range for shape (2, 3)", qkt_logsumexp(&ctx, a, -3, false));
    EXPECT_USAGE("max_axis: axis 0 out of range for shape ()", qkt_max_axis(&ctx, qkt_tensor_scalar(&ctx, 1), 0, false));
    EXPECT_USAGE("narrow: [2, 2 + 2) is not inside axis 1 of shape (2, 3)", qkt_narrow(&ctx, a, 1, 2, 2));
    EXPECT_USAGE("index_select: index 3 (entry 1) out of range [0, 3) for axis 1 of shape (2, 3)",
                 qkt_index_select(&ctx, a, -1, (const int32_t[]){0, 3}, 2));
    EXPECT_USAGE("gather (index dims must be <= x's but on the axis): shapes (2, 3) and (3, 1)",
                 qkt_gather(&ctx, a, 1, (const int32_t[3]){0}, 2, (int[]){3, 1}));
    EXPECT_USAGE("gather: index -1 (entry 0) out of range", qkt_gather(&ctx, a, 1, (const int32_t[]){-1, 0}, 2, (int[]){2, 1}));
    EXPECT_USAGE("concat: shapes (2, 3) and (4, 3) do not fit", qkt_concat_axis(&ctx, 2, (qkt_tensor *[]){a, b}, 1));
    EXPECT_USAGE("concat: axis 2 out of range", qkt_concat_axis(&ctx, 2, (qkt_tensor *[]){a, b}, 2));
    EXPECT_USAGE("stack (every input of one shape): shapes (2, 3) and (4, 3)", qkt_stack(&ctx, 2, (qkt_tensor *[]){a, b}, 0));
    EXPECT_USAGE("stack: axis 3 out of range", qkt_stack(&ctx, 2, (qkt_tensor *[]){a, a}, 3));
    qkt_tensor *d4 = qkt_tensor_zeros(&ctx, 4, (int[]){1, 2, 1, 2});
    EXPECT_USAGE("stack: shape (1, 2, 1, 2) has 4 dims", qkt_stack(&ctx, 2, (qkt_tensor *[]){d4, d4}, 0));
    EXPECT_USAGE("clamp: bounds [1, 0]", qkt_clamp(&ctx, a, 1, 0));
    EXPECT_USAGE("pow: exponent inf", qkt_pow(&ctx, a, INFINITY));
    /* concat of 6 along axis 0 (grouped nodes) and stack on the last axis give the right layout */
    qkt_tensor *r = qkt_tensor_new(&ctx, 2, (int[]){1, 2});
    r->data[0] = 1, r->data[1] = 2;
    qkt_tensor *c6 = qkt_concat_axis(&ctx, 6, (qkt_tensor *[]){r, r, r, r, r, r}, 0);
    EXPECT(c6->shape[0] == 6 && c6->shape[1] == 2 && c6->data[10] == 1 && c6->data[11] == 2, "concat of 6");
    qkt_tensor *st = qkt_stack(&ctx, 2, (qkt_tensor *[]){r, qkt_scale(&ctx, r, 10)}, -1); /* (1, 2, 2) */
    EXPECT(st->ndim == 3 && st->shape[2] == 2 && st->data[0] == 1 && st->data[1] == 10 && st->data[2] == 2 && st->data[3] == 20,
           "stack -1: %g %g %g %g", st->data[0], st->data[1], st->data[2], st->data[3]);
    qkt_ctx_free(&ctx);
}

int main(void) {
    qkt_test_isa_or_skip();
    test_broadcast_values();
    test_fast_path();
    test_max_ties();
    test_ieee_edges();
    test_nan();
    test_threads();
    qkt_set_fatal_handler(hook, NULL);
    test_refused();
    qkt_set_fatal_handler(NULL, NULL);
    return qkt_test_finish();
}
