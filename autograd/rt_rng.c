/* The project RNG: xoshiro256** seeded through splitmix64, its named streams and splits.
 * Every random draw in qkt (init, data, dropout, the statistics' bootstrap) comes from here. */
#include "kern_table.h"
#include "qkt_autograd.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void qkt_rng_seed(qkt_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256**'s step, inlined where many draws are taken in a row (qkt_rng_fill_normal) */
static inline uint64_t next_u64(qkt_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}
uint64_t qkt_rng_u64(qkt_rng *r) { return next_u64(r); }
static inline double next_uniform(qkt_rng *r) { return (double)(next_u64(r) >> 11) * 0x1.0p-53; }

uint32_t qkt_rng_below(qkt_rng *r, uint32_t n) {
    QKT_CHECK(n > 0, "qkt_rng_below(0)");
    /* Lemire's multiply-shift with rejection: unbiased. */
    uint64_t m = (uint64_t)(uint32_t)(qkt_rng_u64(r) >> 32) * n;
    uint32_t lo = (uint32_t)m;
    if (lo < n) {
        uint32_t t = (uint32_t)(-n) % n;
        while (lo < t) {
            m = (uint64_t)(uint32_t)(qkt_rng_u64(r) >> 32) * n;
            lo = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double qkt_rng_uniform(qkt_rng *r) { return next_uniform(r); }

/* Box-Muller from u1 in (0, 1] (so log never sees 0) and u2 in [0, 1). */
static double box_muller(double u1, double u2) { return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2); }

double qkt_rng_normal(qkt_rng *r) {
    double u1 = 1.0 - qkt_rng_uniform(r);
    double u2 = qkt_rng_uniform(r);
    return box_muller(u1, u2);
}

/* (qkt_real)(mean + std z) for a draw z = box_muller(u1, u2): qkt_init_normal's element. */
static qkt_real normal_value(double mean, double std, double u1, double u2) {
    return (qkt_real)(mean + std * box_muller(u1, u2));
}

/* Blocks of 256 draws: the uniforms in qkt_rng_normal's order (u1 then u2 per draw), the
 * kernel path's vectorised Box-Muller (kern_ops.h, normal_block), and libm where the kernel
 * cannot vouch for the float (normal_value) or has no such loop. */
void qkt_rng_fill_normal(qkt_rng *r, qkt_real *x, int64_t n, double mean, double std) {
    QKT_CHECK(isfinite(mean) && isfinite(std) && std >= 0, "qkt_rng_fill_normal: mean %g, std %g (finite, std >= 0)",
              mean, std);
    QKT_CHECK(n >= 0 && (n == 0 || x), "qkt_rng_fill_normal: %lld values into %p", (long long)n, (void *)x);
    enum { BLOCK = 256 };
    double u1[BLOCK], u2[BLOCK];
    unsigned char redo[BLOCK];
    const qkt__kern *kn = qkt__kern_get();
    for (int64_t i0 = 0; i0 < n; i0 += BLOCK) {
        int m = n - i0 < BLOCK ? (int)(n - i0) : BLOCK;
        for (int i = 0; i < m; i++) {
            u1[i] = 1.0 - next_uniform(r);
            u2[i] = next_uniform(r);
        }
        if (kn->normal_block)
            kn->normal_block(u1, u2, m, mean, std, x + i0, redo);
        else
            memset(redo, 1, (size_t)m); /* a path without vectorised draws: every one from libm */
        for (int i = 0; i < m; i++)
            if (redo[i]) x[i0 + i] = normal_value(mean, std, u1[i], u2[i]);
    }
}

void qkt_rng_seed_stream(qkt_rng *r, uint64_t seed, qkt_rng_stream stream) { qkt_rng_seed(r, seed ^ (uint64_t)stream); }

void qkt_rng_split(qkt_rng *r, uint64_t stream, qkt_rng *out) {
    uint64_t x = qkt_rng_u64(r) ^ (stream * 0xD1B54A32D192ED03ull);
    for (int i = 0; i < 4; i++) out->s[i] = splitmix64(&x);
}

/* ---------------------------------------------------------------- initialisers */
static void check_init(const char *call, const qkt_tensor *t) {
    QKT_CHECK(t, "%s: the tensor is NULL (a name qkt_params_find did not find?)", call);
    QKT_CHECK(t->data, "%s: tensor %s has no data yet (a parameter before qkt_params_finalize)", call, t->name ? t->name : "");
}

void qkt_init_normal(qkt_tensor *t, qkt_rng *r, double mean, double std) {
    check_init("qkt_init_normal", t);
    QKT_CHECK(isfinite(mean) && isfinite(std) && std >= 0, "qkt_init_normal: mean %g, std %g (finite, std >= 0)", mean, std);
    qkt_rng_fill_normal(r, t->data, t->size, mean, std);
}

void qkt_init_uniform(qkt_tensor *t, qkt_rng *r, double lo, double hi) {
    check_init("qkt_init_uniform", t);
    QKT_CHECK(isfinite(lo) && isfinite(hi) && lo <= hi, "qkt_init_uniform: [%g, %g) (finite, lo <= hi)", lo, hi);
    for (int64_t i = 0; i < t->size; i++) t->data[i] = (qkt_real)(lo + (hi - lo) * qkt_rng_uniform(r));
}
