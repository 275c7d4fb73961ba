/* NaN and Inf through the kernels: every op must be free of undefined behaviour on
 * non-finite input (the CI runs this under -fsanitize=undefined with
 * -fno-sanitize-recover, where a NaN converted to an integer aborts), and a NaN must
 * come out as NaN rather than as a plausible finite number. exp and tanh directly,
 * then GELU, softmax (plain and causal), log-softmax, cross-entropy, layernorm and
 * attention, forward and backward, each on a row holding NaN, +Inf or -Inf next to a
 * clean row that must stay finite. */
#include <stdlib.h>
#include <string.h>

#include "kern_simd.h"
#include "qkt_test.h"

static void test_exp_tanh(void) {
    EXPECT(isnan(qkt__exp(NAN)), "exp(NaN) = %g", (double)qkt__exp(NAN));
    EXPECT(isnan(qkt__exp(-NAN)), "exp(-NaN) = %g", (double)qkt__exp(-NAN));
    EXPECT(qkt__exp(-INFINITY) == 0, "exp(-inf) = %g", (double)qkt__exp(-INFINITY));
    EXPECT(qkt__exp(INFINITY) > 1e38, "exp(+inf) = %g", (double)qkt__exp(INFINITY));
    EXPECT(isnan(qkt__tanh(NAN)), "tanh(NaN) = %g", (double)qkt__tanh(NAN));
    EXPECT(qkt__tanh(INFINITY) == 1 && qkt__tanh(-INFINITY) == -1, "tanh(+-inf) = %g, %g", (double)qkt__tanh(INFINITY),
           (double)qkt__tanh(-INFINITY));
    /* a vector of them, as the vectorised loops see it */
    qkt_real x[32], y[32];
    for (int i = 0; i < 32; i++) x[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? INFINITY : i % 4 == 2 ? -INFINITY : (qkt_real)(i - 16);
    for (int i = 0; i < 32; i++) y[i] = qkt__exp(x[i]);
    for (int i = 0; i < 32; i += 4) EXPECT(isnan(y[i]), "exp(NaN) at %d = %g", i, (double)y[i]);
    for (int i = 3; i < 32; i += 4) EXPECT(isfinite(y[i]) && y[i] > 0, "exp(%g) = %g", (double)x[i], (double)y[i]);
}

#define R 2  /* rows: row 0 holds the non-finite value, row 1 is clean */
#define C 32 /* a multiple of 16: the vectorised paths */

static bool row_finite(const qkt_real *p, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(p[i])) return false;
    return true;
}

static bool row_has_nan(const qkt_real *p, int n) {
    for (int i = 0; i < n; i++)
        if (isnan(p[i])) return true;
    return false;
}

/* x (R, C): row 0 = clean values with `bad` at column 5, row 1 clean. */
static qkt_tensor *input(qkt_ctx *ctx, double bad) {
    qkt_tensor *x = qkt_tensor_2d(ctx, R, C);
    for (int i = 0; i < R * C; i++) x->data[i] = (qkt_real)(0.1 * ((i * 7) % 13) - 0.6);
    x->data[5] = (qkt_real)bad;
    x->requires_grad = true;
    return x;
}

static void test_ops(double bad, const char *what) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_real dy[R * C];
    for (int i = 0; i < R * C; i++) dy[i] = (qkt_real)(0.01 * (i % 5) - 0.02);

    /* GELU: elementwise, so only the bad element may be non-finite; NaN stays NaN */
    qkt_tensor *x = input(&ctx, bad);
    qkt_tensor *y = qkt_gelu(&ctx, x);
    qkt_backward(&ctx, y, dy);
    EXPECT(row_finite(y->data + C, C) && row_finite(x->grad + C, C), "gelu(%s): the clean row is not finite", what);
    if (isnan(bad)) EXPECT(isnan(y->data[5]), "gelu(NaN) = %g", (double)y->data[5]);
    qkt_ctx_reset(&ctx);

    /* softmax, causal softmax, log-softmax: row-wise */
    for (int kind = 0; kind < 3; kind++) {
        x = input(&ctx, bad);
        y = kind == 2 ? qkt_log_softmax(&ctx, x) : qkt_softmax(&ctx, x, 0.5, kind ? QKT_MASK_CAUSAL : QKT_MASK_NONE, NULL);
        qkt_backward(&ctx, y, dy);
        EXPECT(row_finite(y->data + C, C) && row_finite(x->grad + C, C), "softmax kind %d (%s): the clean row is not finite",
               kind, what);
        if (isnan(bad)) EXPECT(row_has_nan(y->data, C), "softmax kind %d: a NaN input gave a finite row", kind);
        qkt_ctx_reset(&ctx);
    }

    /* cross-entropy over the clean row only (row 0 ignored), then over both */
    for (int both = 0; both < 2; both++) {
        x = input(&ctx, bad);
        int32_t tgt[R] = {both ? 3 : QKT_IGNORE, 7};
        qkt_tensor *loss = qkt_cross_entropy(&ctx, x, tgt, NULL);
        qkt_backward(&ctx, loss, NULL);
        if (!both) EXPECT(isfinite(loss->data[0]), "cross-entropy ignoring the %s row: loss %g", what, (double)loss->data[0]);
        if (both && isnan(bad)) EXPECT(isnan(loss->data[0]), "cross-entropy with a NaN logit: loss %g", (double)loss->data[0]);
        qkt_ctx_reset(&ctx);
    }

    /* layernorm with an affine */
    x = input(&ctx, bad);
    qkt_tensor *w = qkt_tensor_1d(&ctx, C), *b = qkt_tensor_1d(&ctx, C);
    for (int i = 0; i < C; i++) w->data[i] = 1 + 0.01f * i, b->data[i] = 0.1f;
    w->requires_grad = b->requires_grad = true;
    y = qkt_layernorm(&ctx, x, w, b, 1e-5);
    qkt_backward(&ctx, y, dy);
    EXPECT(row_finite(y->data + C, C) && row_finite(x->grad + C, C), "layernorm (%s): the clean row is not finite", what);
    EXPECT(row_has_nan(y->data, C) || !isnan(bad), "layernorm: a NaN input gave a finite row");
    qkt_ctx_reset(&ctx);

    /* attention: one batch, T = 2 (R), C channels in 2 heads; the bad value in q of
     * position 0 (only query 0 sees it) */
    qkt_tensor *q = input(&ctx, bad), *k = input(&ctx, 0.25), *v = input(&ctx, -0.5);
    int shape[3] = {1, R, C};
    q = qkt_reshape(&ctx, q, 3, shape), k = qkt_reshape(&ctx, k, 3, shape), v = qkt_reshape(&ctx, v, 3, shape);
    qkt_attn_opts ao = {.scale = 0.25};
    y = qkt_attention(&ctx, q, k, v, 2, &ao);
    qkt_backward(&ctx, y, dy);
    EXPECT(row_finite(y->data + C, C), "attention (%s): query 1 is not finite", what);
    if (isnan(bad)) EXPECT(row_has_nan(y->data, C), "attention: a NaN query gave a finite output");
    qkt_ctx_reset(&ctx);
    qkt_ctx_free(&ctx);
}

int main(void) {
    test_exp_tanh();
    test_ops(NAN, "NaN");
    test_ops(INFINITY, "+inf");
    test_ops(-INFINITY, "-inf");
    return qkt_test_finish();
}
