/* Float64 gradient checks of every autograd op (cases in op_cases.h), the planted
 * bug that the checker must catch, and a dump of the forward outputs that the float32
 * test compares against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "op_cases.h"
#include "qkt_test.h"

/* A planted bug: y = 2x whose backward forgets the factor 2. */
static void bad_double_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_real *dx = qkt_grad(ctx, n->in[0]);
    for (int64_t i = 0; i < n->out->size; i++) dx[i] += n->out->grad[i]; /* should be 2 * dy */
}
static qkt_tensor *f_planted(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    (void)c;
    qkt_tensor *y = qkt_op_output(ctx, x[0]->ndim, x[0]->shape);
    for (int64_t i = 0; i < y->size; i++) y->data[i] = 2 * x[0]->data[i];
    qkt_op_record_custom(ctx, "planted_double", bad_double_backward, y, 1, x);
    return qkt_gelu(ctx, y);
}
/* The same bug planted deep in a graph: one wrong op among correct ones. */
static qkt_tensor *f_planted_deep(qkt_ctx *ctx, qkt_tensor **x, const qkt_gc_case *c) {
    qkt_tensor *h = qkt_layernorm(ctx, x[0], NULL, NULL, 1e-5);
    h = f_planted(ctx, &h, c);
    return qkt_softmax(ctx, h, 1.0, QKT_MASK_NONE, NULL);
}

int main(void) {
    qkt_test_isa_or_skip();
    QKT_CHECK(sizeof(qkt_real) == 8, "test_gc_ops must be built with QKT_DOUBLE");
    bool covered[QKT_OP_COUNT] = {0};
    for (int i = 0; i < N_OP_CASES; i++) {
        const qkt_gc_case *c = &op_cases[i];
        qkt_gc_result r;
        bool ok = qkt_gradcheck(c, 1000 + (uint64_t)i, &r);
        printf("%-34s err %.2e (tol %.0e, %d points) %s\n", c->name, r.worst, c->tol, r.points_checked, ok ? "ok" : "FAIL");
        EXPECT(ok, "gradcheck %s: err %.3g > tol %.3g", c->name, r.worst, c->tol);
        /* Which ops did the case exercise? Record the ops on one recorded tape. */
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *x[QKT_GC_MAX_INPUTS];
        for (int k = 0; k < c->n_inputs; k++) {
            char nm[16];
            snprintf(nm, sizeof nm, "x%d", k);
            x[k] = qkt_params_add(&p, nm, c->ndim[k], c->shape[k], 0);
        }
        qkt_params_finalize(&p);
        for (int64_t j = 0; j < p.size; j++) p.data[j] = 0.5;
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 1 << 16, 1);
        c->fn(&ctx, x, c);
        for (int k = 0; k < ctx.n_nodes; k++) covered[ctx.tape[k].op] = true;
        qkt_ctx_free(&ctx);
        qkt_params_free(&p);
    }
    for (int op = 0; op < QKT_OP_COUNT; op++)
        if (op != QKT_OP_CUSTOM) EXPECT(covered[op], "op %s has no gradient check", qkt_op_name(op));

    /* The checker must fail the planted bugs, by a wide margin. */
    qkt_gc_case planted = {.name = "planted", .fn = f_planted, .tol = TOL, .n_inputs = 1, .ndim = {2}, .shape = {{3, 7}}};
    qkt_gc_result r;
    bool ok = qkt_gradcheck(&planted, 7, &r);
    printf("planted bug (dropped factor 2): err %.2e -> %s\n", r.worst, ok ? "NOT CAUGHT" : "caught");
    EXPECT(!ok && r.worst > 0.1, "the planted wrong backward was not caught (err %.3g)", r.worst);
    /* The report names the worst element: its analytic grad is half the numeric one. */
    char msg[256];
    qkt_gc_describe(&planted, &r, msg, sizeof msg);
    printf("%s\n", msg);
    EXPECT(!r.ok && strstr(msg, "planted: input 0 element ") && r.worst_index >= 0 && r.worst_index < 21 &&
               fabs(2 * r.worst_analytic - r.worst_numeric) < 1e-6 * (1 + fabs(r.worst_numeric)),
           "describe: %s (analytic %g numeric %g)", msg, r.worst_analytic, r.worst_numeric);
    /* An absolute tolerance above the error passes; one below it does not. */
    planted.atol = 1e3;
    EXPECT(qkt_gradcheck(&planted, 7, &r) && r.ok, "atol 1e3 should pass the planted case");
    planted.atol = 1e-3;
    EXPECT(!qkt_gradcheck(&planted, 7, &r), "atol 1e-3 passed the planted bug");
    planted.atol = 0;
    planted.fn = f_planted_deep;
    ok = qkt_gradcheck(&planted, 8, &r);
    printf("planted bug deep in a graph: err %.2e -> %s\n", r.worst, ok ? "NOT CAUGHT" : "caught");
    EXPECT(!ok && r.worst > 1e-3, "the planted wrong backward inside a graph was not caught (err %.3g)", r.worst);

    /* Forward outputs for the float32 comparison (test_ops_f32). Written to a temp file
     * and renamed: the per-path runs (test_gc_ops_<isa>) write it too, in parallel with
     * test_ops_f32 reading it, which must never see a half-written file. */
    const char *dir = getenv("QKT_BUILD_DIR");
    char path[1024], tmp[1100];
    snprintf(path, sizeof path, "%s/op_forward_f64.bin", dir ? dir : ".");
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    EXPECT(f != NULL, "cannot write %s", tmp);
    if (f) {
        static double out[1 << 14];
        for (int i = 0; i < N_OP_CASES; i++) {
            int64_t n = qkt_gc_forward(&op_cases[i], 1000 + (uint64_t)i, out, 1 << 14);
            fwrite(&n, sizeof n, 1, f);
            fwrite(out, sizeof(double), (size_t)n, f);
        }
        EXPECT(fclose(f) == 0 && rename(tmp, path) == 0, "cannot write %s", path);
    }
    return qkt_test_finish();
}
