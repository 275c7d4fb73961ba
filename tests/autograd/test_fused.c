/* The fused ops against the ops they replace, bit for bit, on the kernel path of the
 * process (CTest runs it once per path, tests/isa.cmake): qkt_affine_gelu(x, W, b) and
 * qkt_gelu(qkt_affine(x, W, b)), and qkt_affine_add(x, W, b, r) and qkt_add(r, qkt_affine(x,
 * W, b)), give the same output and the same grads of x, W, b (and of r's source), on 1 and
 * 2 threads, with and without a bias, with grads kept (keep_grads) and in eval mode
 * (no_grad), at shapes that split over threads, span several K blocks of the own gemm
 * (K > 256) and end in ragged columns. The residual r is computed (0.5 r0, exact), so its
 * grad is dy's buffer handed over, or r is x itself where W is square. (The float64
 * gradient checks of the fused ops are in op_cases.h, test_gc_ops.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

typedef struct {
    int rows, in, out;
} shape;

enum { GELU, ADD, ADD_X }; /* gelu(x W^T + b); 0.5 r0 + (x W^T + b); x + (x W^T + b) */

/* y and the grads of x, W, b, r0 of sum(R * f(x, W, b)) (f by op), fused or not, as one float array. */
static qkt_real *run(int op, const shape *s, bool fused, bool bias, int threads, bool keep, bool no_grad, int64_t *n) {
    qkt_set_threads(threads);
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *x = qkt_params_add(&p, "x", 2, (int[]){s->rows, s->in}, 0);
    qkt_tensor *w = qkt_params_add(&p, "w", 2, (int[]){s->out, s->in}, 0);
    qkt_tensor *b = qkt_params_add(&p, "b", 1, (int[]){s->out}, 0);
    qkt_tensor *r0 = qkt_params_add(&p, "r0", 2, (int[]){s->rows, s->out}, 0);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, 11);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(0.6 * qkt_rng_normal(&r));
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 3);
    ctx.keep_grads = keep, ctx.no_grad = no_grad;
    qkt_tensor *R = qkt_tensor_new(&ctx, 2, (int[]){s->rows, s->out});
    for (int64_t i = 0; i < R->size; i++) R->data[i] = (qkt_real)qkt_rng_normal(&r);
    qkt_tensor *bb = bias ? b : NULL;
    qkt_tensor *y, *res = op == ADD ? qkt_scale(&ctx, r0, 0.5) : x;
    if (op == GELU)
        y = fused ? qkt_affine_gelu(&ctx, x, w, bb) : qkt_gelu(&ctx, qkt_affine(&ctx, x, w, bb));
    else
        y = fused ? qkt_affine_add(&ctx, x, w, bb, res) : qkt_add(&ctx, res, qkt_affine(&ctx, x, w, bb));
    int64_t ny = y->size;
    *n = ny + (no_grad ? 0 : p.size);
    qkt_real *out = malloc(sizeof *out * (size_t)*n);
    memcpy(out, y->data, sizeof *out * (size_t)ny);
    if (!no_grad) {
        qkt_params_zero_grad(&p);
        qkt_backward(&ctx, qkt_sum(&ctx, qkt_mul(&ctx, y, R)), NULL);
        memcpy(out + ny, p.grad, sizeof *out * (size_t)p.size);
    }
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return out;
}

static bool same(const qkt_real *a, const qkt_real *b, int64_t n, int64_t *first) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) return *first = i, false;
    return true;
}

int main(void) {
    qkt_test_isa_or_skip();
    /* serial; split over threads (2 M N K >= 2^23); K = 300 over two K blocks with N = 133
     * ragged; the study's cell128 c_fc (B T = 1024 rows, C = 128, 4C = 512); square W for
     * r = x: cell128's attention c_proj, and a ragged one */
    const shape shapes[] = {{7, 5, 33},       {560, 64, 256},   {37, 300, 133},
                            {1024, 128, 512}, {1024, 128, 128}, {5, 33, 33}};
    const char *names[] = {"gelu", "add", "add x"};
    for (size_t k = 0; k < 3 * sizeof shapes / sizeof *shapes; k++) {
        const shape *s = &shapes[k / 3];
        int op = (int)(k % 3);
        if (op == ADD_X && s->in != s->out) continue;
        for (int mode = 0; mode < 4; mode++) { /* 0 plain, 1 no bias, 2 keep_grads, 3 no_grad */
            bool bias = mode != 1, keep = mode == 2, no_grad = mode == 3;
            int64_t n0, n1, n2, n3, at = -1;
            qkt_real *ref1 = run(op, s, false, bias, 1, keep, no_grad, &n0),
                     *fus1 = run(op, s, true, bias, 1, keep, no_grad, &n1);
            qkt_real *ref2 = run(op, s, false, bias, 2, keep, no_grad, &n2),
                     *fus2 = run(op, s, true, bias, 2, keep, no_grad, &n3);
            EXPECT(n0 == n1 && n0 == n2 && n0 == n3, "%s %dx%dx%d mode %d: sizes %lld %lld", names[op], s->rows, s->in,
                   s->out, mode, (long long)n0, (long long)n1);
            EXPECT(same(ref1, fus1, n0, &at),
                   "%s %dx%dx%d mode %d, 1 thread: fused differs from unfused at %lld (%.9g vs %.9g)", names[op],
                   s->rows, s->in, s->out, mode, (long long)at, at >= 0 ? (double)fus1[at] : 0.0,
                   at >= 0 ? (double)ref1[at] : 0.0);
            EXPECT(same(ref2, fus2, n0, &at), "%s %dx%dx%d mode %d, 2 threads: fused differs from unfused at %lld",
                   names[op], s->rows, s->in, s->out, mode, (long long)at);
            EXPECT(same(fus1, fus2, n0, &at), "%s %dx%dx%d mode %d: fused on 1 and 2 threads differ at %lld", names[op],
                   s->rows, s->in, s->out, mode, (long long)at);
            free(ref1), free(fus1), free(ref2), free(fus2);
        }
    }
    /* The comparison can fail: a planted one-ulp change is found. */
    qkt_real a[3] = {1, 2, 3}, b[3] = {1, 2, 3};
    b[1] = nextafterf(b[1], 3);
    int64_t at = -1;
    EXPECT(!same(a, b, 3, &at) && at == 1, "a one-ulp difference at 1 is not found (at %lld)", (long long)at);
    return qkt_test_finish();
}
