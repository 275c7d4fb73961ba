/* Gradient norms and global norm clipping (torch.nn.utils.clip_grad_norm_). */
#include "qkt_optim.h"

#include <math.h>

/* The sum of squares is split into a fixed number of chunks (not one per thread),
 * each summed in double, then the chunk sums are added in order: the result
 * depends on n and the values only, never on the thread count, so runs and
 * resumed runs log (and clip by) the same bits. */
#define NORM_CHUNKS 64
#define NORM_PAR_MIN 65536

static double sumsq(const qkt_real *g, int64_t n) {
    double acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += (double)g[i] * (double)g[i];
    return acc;
}

/* The sum of squares of chunk c (of `chunk` values; the last may be short or empty). */
static double chunk_sumsq(const qkt_real *g, int64_t n, int64_t chunk, int c) {
    int64_t a = c * chunk, b = a + chunk < n ? a + chunk : n;
    return a < b ? sumsq(g + a, b - a) : 0.0;
}

double qkt_grad_norm_range(const qkt_real *g, int64_t n) {
    QKT_CHECK(n >= 0 && (g || n == 0), "qkt_grad_norm_range: %lld values at %p", (long long)n, (const void *)g);
    if (n < NORM_PAR_MIN) return sqrt(sumsq(g, n));
    double part[NORM_CHUNKS];
    int64_t chunk = (n + NORM_CHUNKS - 1) / NORM_CHUNKS;
    if (qkt_parallel_worth(true)) {
#pragma omp parallel for schedule(static)
        for (int c = 0; c < NORM_CHUNKS; c++) part[c] = chunk_sumsq(g, n, chunk, c);
    } else {
        for (int c = 0; c < NORM_CHUNKS; c++) part[c] = chunk_sumsq(g, n, chunk, c);
    }
    double total = 0;
    for (int c = 0; c < NORM_CHUNKS; c++) total += part[c];
    return sqrt(total);
}

double qkt_grad_norm(const qkt_params *p) {
    QKT_CHECK(p->finalized, "qkt_grad_norm before qkt_params_finalize");
    return qkt_grad_norm_range(p->grad, p->size);
}

/* torch: total_norm = ||g||_2; clip_coef = max_norm / (total_norm + 1e-6);
 * g *= clamp(clip_coef, max=1). Multiplying by 1 is exact, so we skip it. */
double qkt_clip_grad_norm(qkt_params *p, double max_norm) {
    double norm = qkt_grad_norm(p);
    if (max_norm <= 0 || !isfinite(norm)) return norm;
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) {
        qkt_real c = (qkt_real)coef, *g = p->grad;
        int64_t n = p->size;
        if (qkt_parallel_worth(n > NORM_PAR_MIN)) {
#pragma omp parallel for simd schedule(static)
            for (int64_t i = 0; i < n; i++) g[i] *= c;
        } else {
#pragma omp simd
            for (int64_t i = 0; i < n; i++) g[i] *= c;
        }
    }
    return norm;
}
