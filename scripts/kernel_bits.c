/* Compiled by scripts/kernel_bits.sh, with two objects holding one kernel path's kern_ops.h
 * from two sources (prefixes old_ and new_): compares their elementwise kernels bit for bit
 * on all 2^32 float32 inputs (exp, tanh, the exp/tanh kernel, GELU forward, gradient and the
 * c_fc epilogue) and cross-entropy forward and backward on random cases with +-inf and NaN.
 * Prints the differing counts; exit status 1 when any differs. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECLARE(v)                                                                                          \
    void v##_epi(float *c, float *g, int rows, int cols);                                                  \
    void v##_fwd(const float *x, float *y, long n);                                                        \
    void v##_bwd(bool fresh, const float *x, const float *dy, float *dx, long n);                          \
    void v##_exp_tanh(const float *x, float *e, float *t, long n);                                         \
    double v##_cef(const float *x, const int *tg, float *lse, long rows, int V);                           \
    void v##_ceb(const float *x, const int *tg, const float *lse, float g, float *dx, long rows, int V);
DECLARE(old)
DECLARE(new)
int qkt_abi_float32__link_with_libqkt; /* ops_internal.h's ABI guard, normally in libqkt */
/* autograd/rt_threads.c's rule, asked by the kernels of revisions that have it (in libqkt) */
bool qkt_parallel_worth(bool big) { return big && omp_get_max_threads() > 1 && !omp_in_parallel(); }

enum { N = 1 << 20 };
static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { return rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; }
static bool same(const void *a, const void *b, size_t n) { return !memcmp(a, b, n); }

int main(int argc, char **argv) {
    const char *isa = argc > 1 ? argv[1] : "?";
    float *x = malloc(4 * N), *a = malloc(4 * N), *b = malloc(4 * N), *c = malloc(4 * N), *d = malloc(4 * N);
    float *one = malloc(4 * N);
    int *tg = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++) one[i] = 1;
    long exp_tanh = 0, fwd = 0, bwd = 0, epi = 0, cef = 0, ceb = 0; /* chunks / cases that differ */
    for (uint64_t ch = 0; ch < (1ull << 32); ch += N) {
        for (int i = 0; i < N; i++) {
            uint32_t u = (uint32_t)(ch + (uint64_t)i);
            memcpy(&x[i], &u, 4);
        }
        old_exp_tanh(x, a, b, N), new_exp_tanh(x, c, d, N);
        exp_tanh += !same(a, c, 4 * N) || !same(b, d, 4 * N);
        old_fwd(x, a, N), new_fwd(x, b, N);
        fwd += !same(a, b, 4 * N);
        old_bwd(true, x, one, a, N), new_bwd(true, x, one, b, N);
        bwd += !same(a, b, 4 * N);
        memcpy(a, x, 4 * N), memcpy(b, x, 4 * N);
        old_epi(a, c, 1024, 1024), new_epi(b, d, 1024, 1024);
        epi += !same(a, b, 4 * N) || !same(c, d, 4 * N);
    }
    for (int it = 0; it < 3000; it++) {
        int V = 1 + (int)(next() % 300), rows = 1 + (int)(next() % 200);
        double scale = (double)(next() % 1000) / 10;
        for (int i = 0; i < rows * V; i++) {
            x[i] = (float)(((double)(next() % 2000001) / 1e6 - 1) * scale);
            if (next() % 5000 == 0) x[i] = next() & 1 ? INFINITY : NAN;
            if (next() % 3000 == 0) x[i] = -INFINITY;
        }
        for (int r = 0; r < rows; r++) tg[r] = (int)(next() % (uint64_t)V);
        double fa = old_cef(x, tg, a, rows, V), fb = new_cef(x, tg, b, rows, V);
        cef += !same(&fa, &fb, sizeof fa) || !same(a, b, 4 * (size_t)rows);
        old_ceb(x, tg, a, 0.37f, c, rows, V), new_ceb(x, tg, a, 0.37f, d, rows, V);
        ceb += !same(c, d, 4 * (size_t)rows * V);
    }
    printf("%s: differing 2^20-input chunks of 4096: exp/tanh %ld, gelu forward %ld, gelu gradient %ld, epilogue %ld; "
           "differing cross-entropy cases of 3000: forward %ld, backward %ld\n",
           isa, exp_tanh, fwd, bwd, epi, cef, ceb);
    return exp_tanh + fwd + bwd + epi + cef + ceb ? 1 : 0;
}
