/* The C side of the op-level PyTorch cross-check (tests/torch/crosscheck_ops.py): runs every
 * case of the gradient-check table (tests/autograd/op_cases.h) once, forward and backward
 * with a random output grad, and writes what it saw to one binary file:
 *
 *   "QKTOPS1\n", int32 sizeof(qkt_real), int32 n_ops, then each op table name (int32 length,
 *   bytes); int32 n_cases; per case: name (int32 length, bytes), int32 flags, the ops on its
 *   tape (int32 length, comma-separated names), int32 n_inputs, per input int32 ndim, int32 shape[ndim],
 *   float64 data; the output likewise; float64 seed (the output grad); per input float64 grad.
 *
 * Inputs are N(0, 1) from a seeded qkt_rng (resampled away from a case's kinks), in
 * qkt_real: a float32 build dumps float32 values, so PyTorch sees exactly the same inputs.
 * Usage: qkt_opdump OUT.bin */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_cases.h"

static FILE *out;
static void put_i32(int32_t v) { fwrite(&v, sizeof v, 1, out); }
static void put_str(const char *s) {
    put_i32((int32_t)strlen(s));
    fwrite(s, 1, strlen(s), out);
}
static void put_reals(const qkt_real *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double d = v[i];
        fwrite(&d, sizeof d, 1, out);
    }
}
static void put_tensor(const qkt_tensor *t) {
    put_i32(t->ndim);
    for (int d = 0; d < t->ndim; d++) put_i32(t->shape[d]);
    put_reals(t->data, t->size);
}

static void run_case(const qkt_gc_case *c, uint64_t seed) {
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *x[QKT_GC_MAX_INPUTS];
    for (int k = 0; k < c->n_inputs; k++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", k);
        x[k] = qkt_params_add(&p, nm, c->ndim[k], c->shape[k], 0);
    }
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    for (int64_t j = 0; j < p.size; j++) {
        double v;
        do v = qkt_rng_normal(&r);
        while (fabs(v) < c->kink_margin);
        p.data[j] = (qkt_real)v;
    }
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, seed);
    qkt_tensor *y = c->fn(&ctx, x, c);
    qkt_real *g = qkt_malloc((size_t)y->size * sizeof *g);
    for (int64_t i = 0; i < y->size; i++) g[i] = (qkt_real)qkt_rng_normal(&r);
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, y, g);

    char ops[1024] = "";
    for (int k = 0; k < ctx.n_nodes; k++) {
        const char *nm = qkt_op_name(ctx.tape[k].op);
        if (strlen(ops) + strlen(nm) + 2 < sizeof ops) strcat(strcat(ops, *ops ? "," : ""), nm);
    }
    put_str(c->name);
    put_i32(c->flags);
    put_str(ops);
    put_i32(c->n_inputs);
    for (int k = 0; k < c->n_inputs; k++) put_tensor(x[k]);
    put_tensor(y);
    put_reals(g, y->size);
    for (int k = 0; k < c->n_inputs; k++) put_reals(x[k]->grad, x[k]->size);
    free(g);
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.bin\n", argv[0]);
        return 2;
    }
    out = fopen(argv[1], "wb");
    if (!out) {
        fprintf(stderr, "qkt_opdump: cannot write %s\n", argv[1]);
        return 1;
    }
    fwrite("QKTOPS1\n", 1, 8, out);
    put_i32((int32_t)sizeof(qkt_real));
    put_i32(QKT_OP_COUNT);
    for (int op = 0; op < QKT_OP_COUNT; op++) put_str(qkt_op_name((qkt_op)op));
    put_i32(N_OP_CASES);
    for (int i = 0; i < N_OP_CASES; i++) run_case(&op_cases[i], 3000 + (uint64_t)i);
    if (fclose(out) != 0) {
        fprintf(stderr, "qkt_opdump: error writing %s\n", argv[1]);
        return 1;
    }
    return 0;
}
