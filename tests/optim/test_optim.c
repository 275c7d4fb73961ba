/* Optimizers, clipping and schedules, pinned to values worked out by hand.
 *
 * The problem: two parameters a (a (1,1) matrix, flagged QKT_PARAM_DECAY) and b
 * (a (1) vector, not flagged), loss L = a^2 + 3 b^2, so dL/da = 2a, dL/db = 6b,
 * start a = 1, b = -2. Gradients are written straight into the grad store. The
 * expected numbers below were computed with 40-digit decimal arithmetic, not
 * with this code; the comments show the arithmetic step by step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_optim.h"
#include "qkt_test.h"

/* Float32 keeps ~7 digits; after 3 steps of values near 1 we allow a few ulps. */
#ifdef QKT_DOUBLE
#define TOL 1e-12
#else
#define TOL 2e-6
#endif

typedef struct two {
    qkt_params p;
    qkt_tensor *a, *b;
} two;

static void two_init(two *t) {
    qkt_params_init(&t->p);
    t->a = qkt_params_add(&t->p, "a", 2, (int[]){1, 1}, QKT_PARAM_DECAY);
    t->b = qkt_params_add(&t->p, "b", 1, (int[]){1}, 0);
    qkt_params_finalize(&t->p);
    t->a->data[0] = 1;
    t->b->data[0] = -2;
}

/* L = a^2 + 3 b^2 */
static void two_grad(two *t) {
    qkt_params_zero_grad(&t->p);
    t->a->grad[0] = 2 * t->a->data[0];
    t->b->grad[0] = 6 * t->b->data[0];
}

static void run_steps(two *t, qkt_optim *o, int n, double lr) {
    for (int s = 0; s < n; s++) {
        two_grad(t);
        qkt_optim_step(o, lr);
    }
}

/* Adam, lr 0.1, betas (0.9, 0.999), eps 1e-8, no weight decay.
 *   update = lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - 0.9^t), v_hat = v / (1 - 0.999^t)
 * step 1: g = (2, -12)
 *   m = 0.1 g = (0.2, -1.2)            v = 0.001 g^2 = (0.004, 0.144)
 *   m_hat = m / 0.1 = (2, -12)         v_hat = v / 0.001 = (4, 144)
 *   update = (0.1*2/(2+1e-8), 0.1*-12/(12+1e-8)) = (0.0999999995, -0.0999999999166667)
 *   a = 0.9000000005, b = -1.90000000008333
 * step 2: g = (1.800000001, -11.4000000005)
 *   m = 0.9 m + 0.1 g = (0.3600000001, -2.22000000005)
 *   v = 0.999 v + 0.001 g^2 = (0.0072360000036, 0.2738160000114)
 *   m_hat = m / 0.19 = (1.89473684263158, -11.6842105265789)
 *   v_hat = v / 0.001999 = (3.61980990675338, 136.976488249825)
 *   update = (0.0995877718082079, -0.0998335143045607)
 *   a = 0.800412228691792, b = -1.80016648577877
 * step 3: g = (1.60082445738358, -10.8009989146726)
 *   m = (0.484082445828358, -3.07809989151226)
 *   v = (0.00979140294695385, 0.390203761566148)
 *   m_hat = m / 0.271 = (1.78628208792752, -11.3583021827021)
 *   v_hat = v / 0.002997001 = (3.26706696025588, 130.198075197889)
 *   update = (0.0988259557457626, -0.0995430942427406)
 *   a = 0.701586272946030, b = -1.70062339153603 */
static void test_adam(void) {
    two t;
    two_init(&t);
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_ADAM);
    EXPECT(c.beta1 == 0.9 && c.beta2 == 0.999 && c.eps == 1e-8 && c.weight_decay == 0, "torch Adam defaults");
    qkt_optim o;
    qkt_optim_init(&o, &t.p, &c);
    EXPECT(o.m && o.v && o.size == 2 && o.step == 0, "Adam state: m, v of params->size");
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.9000000005, TOL);
    EXPECT_NEAR(t.b->data[0], -1.9000000000833333, TOL);
    EXPECT_NEAR(o.m[0], 0.2, TOL);
    EXPECT_NEAR(o.v[1], 0.144, TOL);
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.80041222869179219, TOL);
    EXPECT_NEAR(t.b->data[0], -1.8001664857787726, TOL);
    run_steps(&t, &o, 1, 0.1);
    EXPECT(o.step == 3, "step count %lld", (long long)o.step);
    EXPECT_NEAR(t.a->data[0], 0.70158627294602955, TOL);
    EXPECT_NEAR(t.b->data[0], -1.7006233915360320, TOL);
    EXPECT_NEAR(o.m[0], 0.48408244582835843, TOL);
    EXPECT_NEAR(o.m[1], -3.0780998915122636, TOL);
    EXPECT_NEAR(o.v[0], 0.0097914029469538471, TOL);
    EXPECT_NEAR(o.v[1], 0.39020376156614806, TOL);

    /* reset: a fresh optimizer on the same store repeats step 1 from the new point. */
    qkt_optim_reset(&o);
    EXPECT(o.step == 0 && o.m[0] == 0 && o.v[1] == 0, "reset zeroes the state");
    qkt_optim_free(&o);
    qkt_params_free(&t.p);
}

/* AdamW, same problem, weight decay 0.1 on a only (b is not flagged):
 * a is first multiplied by 1 - lr*wd = 0.99, then takes the Adam update computed
 * from the gradient at the undecayed a. b follows exactly the Adam path above.
 * step 1: g = (2, -12); a -> 0.99; update as Adam step 1 (0.0999999995)
 *   a = 0.8900000005
 * step 2: g = (1.780000001, -11.4000000005); a -> 0.881100000495
 *   m = (0.3580000001, ...)  v = (0.00716440000356, ...)
 *   m_hat = (1.88421052684211, ...)  v_hat = (3.58399199777889, ...)
 *   update = (0.0995281445584959, ...)   a = 0.781571855936504
 * step 3: g = (1.56314371187301, ...); a -> 0.773756137377139
 *   m = (0.478514371277301, ...)  v = (0.00960065386752457, ...)
 *   m_hat = (1.76573568737011, ...)  v_hat = (3.20342030834310, ...)
 *   update = (0.0986549157370700, ...)   a = 0.675101221640069 */
static void test_adamw(void) {
    two t;
    two_init(&t);
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    EXPECT(c.weight_decay == 0.01, "torch AdamW default weight decay 0.01");
    c.weight_decay = 0.1;
    qkt_optim o;
    qkt_optim_init(&o, &t.p, &c);
    EXPECT(o.n_decay_tensors == 1 && o.n_decay == 1 && o.n_runs == 2, "decay runs: %d tensors, %d runs",
           o.n_decay_tensors, o.n_runs);
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.8900000005, TOL);
    run_steps(&t, &o, 2, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.67510122164006905, TOL);
    EXPECT_NEAR(t.b->data[0], -1.7006233915360320, TOL); /* not flagged: plain Adam */
    EXPECT_NEAR(o.m[0], 0.47851437127730083, TOL);
    EXPECT_NEAR(o.m[1], -3.0780998915122636, TOL);
    EXPECT_NEAR(o.v[0], 0.0096006538675245663, TOL);
    EXPECT_NEAR(o.v[1], 0.39020376156614806, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);
}

/* Adam with L2 weight decay 0.1 (coupled: g += wd * p, flagged a only), 2 steps.
 * step 1: g = (2 + 0.1, -12) = (2.1, -12); m_hat = g, v_hat = g^2
 *   update = (0.1*2.1/(2.1+1e-8), ...) = (0.0999999995238095, ...)   a = 0.900000000476190
 * step 2: g_a = 2a + 0.1a = 1.890000001; m_a = 0.9*0.21 + 0.1*1.890000001 = 0.3780000001
 *   v_a = 0.999*0.00441 + 0.001*1.890000001^2 = 0.00797769000378
 *   m_hat = 1.98947368473684, v_hat = 3.99084042210105, update = 0.0995877718329957
 *   a = 0.800412228643195; b as in plain Adam, -1.80016648577877 */
static void test_adam_l2(void) {
    two t;
    two_init(&t);
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_ADAM);
    c.weight_decay = 0.1;
    qkt_optim o;
    qkt_optim_init(&o, &t.p, &c);
    run_steps(&t, &o, 2, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.80041222864319475, TOL);
    EXPECT_NEAR(t.b->data[0], -1.8001664857787726, TOL);
    EXPECT_NEAR(o.m[0], 0.3780000001, TOL);
    EXPECT_NEAR(o.v[0], 0.0079776900037800000, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);
}

/* eps is added outside the sqrt and after the bias correction:
 * one step with g = 1e-3, eps = 1e-3, lr = 1: m_hat = 1e-3, sqrt(v_hat) = 1e-3,
 * update = 1e-3 / (1e-3 + 1e-3) = 0.5. (Inside the sqrt it would be
 * 1e-3/sqrt(1e-6 + 1e-3) = 0.0316; before the bias correction 0.0306.) */
static void test_adam_eps(void) {
    two t;
    two_init(&t);
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_ADAM);
    c.eps = 1e-3;
    qkt_optim o;
    qkt_optim_init(&o, &t.p, &c);
    t.a->data[0] = 0;
    t.a->grad[0] = 1e-3f;
    t.b->grad[0] = 0;
    qkt_optim_step(&o, 1.0);
    EXPECT_NEAR(t.a->data[0], -0.5, 1e-6);
    EXPECT(t.b->data[0] == -2, "zero gradient, zero moments: b unchanged (%g)", (double)t.b->data[0]);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);
}

/* SGD, lr 0.1, momentum 0.9 (buf = g on the first step, then buf = 0.9 buf + g):
 * step 1: g = (2, -12)       buf = (2, -12)        a = 1 - 0.2 = 0.8       b = -2 + 1.2 = -0.8
 * step 2: g = (1.6, -4.8)    buf = (3.4, -15.6)    a = 0.8 - 0.34 = 0.46   b = -0.8 + 1.56 = 0.76
 * step 3: g = (0.92, 4.56)   buf = (3.98, -9.48)   a = 0.46 - 0.398 = 0.062  b = 0.76 + 0.948 = 1.708
 * Nesterov (d = g + 0.9 buf):
 * step 1: buf = (2, -12)       d = (3.8, -22.8)      a = 0.62     b = 0.28
 * step 2: g = (1.24, 1.68)     buf = (3.04, -9.12)   d = (3.976, -6.528)   a = 0.2224   b = 0.9328
 * step 3: g = (0.4448, 5.5968) buf = (3.1808, -2.6112) d = (3.30752, 3.24672) a = -0.108352 b = 0.608128
 * Dampening 0.5 (torch: the first step still takes buf = g undamped):
 * step 1: buf = (2, -12)  a = 0.8  b = -0.8
 * step 2: g = (1.6, -4.8) buf = 0.9 (2, -12) + 0.5 (1.6, -4.8) = (2.6, -13.2)  a = 0.54  b = 0.52
 * Plain SGD with L2 0.1 on a, one step: g = (2 + 0.1, -12), a = 1 - 0.21 = 0.79, b = -0.8. */
static void test_sgd(void) {
    two t;
    two_init(&t);
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_SGD);
    EXPECT(c.momentum == 0 && !c.nesterov && c.weight_decay == 0, "torch SGD defaults");
    c.momentum = 0.9;
    qkt_optim o;
    qkt_optim_init(&o, &t.p, &c);
    EXPECT(o.m && !o.v, "SGD with momentum keeps one buffer");
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.8, TOL);
    EXPECT_NEAR(t.b->data[0], -0.8, TOL);
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.46, TOL);
    EXPECT_NEAR(t.b->data[0], 0.76, TOL);
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.062, TOL);
    EXPECT_NEAR(t.b->data[0], 1.708, TOL);
    EXPECT_NEAR(o.m[0], 3.98, TOL);
    EXPECT_NEAR(o.m[1], -9.48, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);

    two_init(&t);
    c.nesterov = true;
    qkt_optim_init(&o, &t.p, &c);
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.62, TOL);
    EXPECT_NEAR(t.b->data[0], 0.28, TOL);
    run_steps(&t, &o, 2, 0.1);
    EXPECT_NEAR(t.a->data[0], -0.108352, TOL);
    EXPECT_NEAR(t.b->data[0], 0.608128, TOL);
    EXPECT_NEAR(o.m[0], 3.1808, TOL);
    EXPECT_NEAR(o.m[1], -2.6112, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);

    two_init(&t);
    c.nesterov = false;
    c.dampening = 0.5;
    qkt_optim_init(&o, &t.p, &c);
    run_steps(&t, &o, 2, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.54, TOL);
    EXPECT_NEAR(t.b->data[0], 0.52, TOL);
    EXPECT_NEAR(o.m[1], -13.2, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);

    two_init(&t);
    c = qkt_optim_defaults(QKT_OPTIM_SGD);
    c.weight_decay = 0.1;
    qkt_optim_init(&o, &t.p, &c);
    EXPECT(!o.m && !o.v, "plain SGD keeps no state");
    run_steps(&t, &o, 1, 0.1);
    EXPECT_NEAR(t.a->data[0], 0.79, TOL);
    EXPECT_NEAR(t.b->data[0], -0.8, TOL);
    qkt_optim_free(&o);
    qkt_params_free(&t.p);
}

/* A store with many tensors of odd sizes and alternating flags, big enough for
 * the threaded path: 3 AdamW steps must equal (a) a plain double-precision
 * reference loop to float rounding and (b) the same run on 1 thread bit for bit. */
static void test_store_runs(void) {
    static const int sizes[] = {3, 40000, 7, 1, 33, 25000, 1, 1, 4096, 17};
    static const int flags[] = {0, 1, 1, 0, 1, 0, 0, 1, 1, 0};
    enum { NT = 10, STEPS = 3 };
    qkt_params p[2];
    qkt_optim o[2];
    qkt_optim_config c = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    c.beta2 = 0.95;
    c.weight_decay = 0.1;
    for (int k = 0; k < 2; k++) {
        qkt_params_init(&p[k]);
        for (int i = 0; i < NT; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            qkt_params_add(&p[k], name, flags[i] ? 2 : 1, flags[i] ? (int[]){1, sizes[i]} : &sizes[i],
                           flags[i] ? QKT_PARAM_DECAY : 0);
        }
        qkt_params_finalize(&p[k]);
        qkt_optim_init(&o[k], &p[k], &c);
    }
    int64_t n = p[0].size;
    EXPECT(o[0].n_runs == 7, "adjacent tensors with one flag merge into runs: %d runs", o[0].n_runs);
    EXPECT(o[0].n_decay == 40000 + 7 + 33 + 1 + 4096, "decayed count %lld", (long long)o[0].n_decay);
    double *rp = malloc((size_t)n * sizeof *rp), *rm = calloc((size_t)n, sizeof *rm),
           *rv = calloc((size_t)n, sizeof *rv);
    int *dec = malloc((size_t)n * sizeof *dec);
    qkt_rng rng;
    qkt_rng_seed(&rng, 7);
    for (int i = 0, off = 0; i < NT; off += sizes[i], i++)
        for (int j = 0; j < sizes[i]; j++) dec[off + j] = flags[i];
    for (int64_t i = 0; i < n; i++) {
        p[0].data[i] = p[1].data[i] = (qkt_real)(0.5 * qkt_rng_normal(&rng));
        rp[i] = p[0].data[i];
    }
    for (int s = 1; s <= STEPS; s++) {
        double lr = 1e-2 * s;
        for (int64_t i = 0; i < n; i++) p[0].grad[i] = p[1].grad[i] = (qkt_real)qkt_rng_normal(&rng);
        qkt_set_threads(2);
        qkt_optim_step(&o[0], lr);
        qkt_set_threads(1);
        qkt_optim_step(&o[1], lr);
        for (int64_t i = 0; i < n; i++) { /* reference: the textbook formulas in double */
            double g = p[0].grad[i];
            if (dec[i]) rp[i] -= lr * 0.1 * rp[i];
            rm[i] = 0.9 * rm[i] + 0.1 * g;
            rv[i] = 0.95 * rv[i] + 0.05 * g * g;
            double mh = rm[i] / (1 - pow(0.9, s)), vh = rv[i] / (1 - pow(0.95, s));
            rp[i] -= lr * mh / (sqrt(vh) + 1e-8);
        }
    }
    qkt_set_threads(0);
    double maxd = 0;
    for (int64_t i = 0; i < n; i++) maxd = fmax(maxd, fabs(p[0].data[i] - rp[i]));
    EXPECT(maxd < 1e-5, "AdamW store vs double reference: max |diff| %.3g", maxd);
    EXPECT(memcmp(p[0].data, p[1].data, (size_t)n * sizeof(qkt_real)) == 0 &&
               memcmp(o[0].m, o[1].m, (size_t)n * sizeof(qkt_real)) == 0 &&
               memcmp(o[0].v, o[1].v, (size_t)n * sizeof(qkt_real)) == 0,
           "2 threads and 1 thread give identical bits");
    free(rp), free(rm), free(rv), free(dec);
    for (int k = 0; k < 2; k++) {
        qkt_optim_free(&o[k]);
        qkt_params_free(&p[k]);
    }
}

/* Clipping: grads (3, 4) have norm 5. max_norm 1: coef = 1 / (5 + 1e-6) = 0.19999996,
 * grads -> (0.59999988, 0.79999984), reported norm 5. max_norm 10: coef > 1, untouched. */
static void test_clip(void) {
    two t;
    two_init(&t);
    t.a->grad[0] = 3;
    t.b->grad[0] = 4;
    EXPECT_NEAR(qkt_grad_norm(&t.p), 5.0, 1e-12);
    double n = qkt_clip_grad_norm(&t.p, 10.0);
    EXPECT(n == 5.0 && t.a->grad[0] == 3 && t.b->grad[0] == 4, "below the threshold: no-op (norm %g)", n);
    n = qkt_clip_grad_norm(&t.p, 0.0);
    EXPECT(n == 5.0 && t.a->grad[0] == 3, "max_norm 0 only measures");
    n = qkt_clip_grad_norm(&t.p, 1.0);
    EXPECT(n == 5.0, "clip returns the pre-clip norm (%g)", n);
    EXPECT_NEAR(t.a->grad[0], 0.59999988000002400, 2e-7);
    EXPECT_NEAR(t.b->grad[0], 0.79999984000003200, 2e-7);
    EXPECT_NEAR(qkt_grad_norm(&t.p), 0.99999980000004, 1e-6);
    t.a->grad[0] = NAN;
    t.b->grad[0] = 4;
    n = qkt_clip_grad_norm(&t.p, 1.0);
    EXPECT(isnan(n) && t.b->grad[0] == 4, "non-finite norm is reported, grads untouched");
    qkt_params_free(&t.p);

    /* Norm of a row block: a fused (3C, C) weight with C = 2 whose rows q, k, v
     * hold grads (1, 2 | 2, 4 | 0, 0) per block: ||q|| = sqrt(1+4+4+16) = 5. */
    qkt_real g[12] = {1, 2, 2, 4, 0, 3, 0, 4, 0, 0, 0, 0};
    EXPECT_NEAR(qkt_grad_norm_range(g, 4), 5.0, 1e-12);
    EXPECT_NEAR(qkt_grad_norm_range(g + 4, 4), 5.0, 1e-12);
    EXPECT(qkt_grad_norm_range(g + 8, 4) == 0 && qkt_grad_norm_range(g, 0) == 0, "empty/zero norm");

    /* Large store: threaded chunked sum, same bits for 1 and 2 threads, equal to a
     * serial long-double sum to double rounding. */
    int64_t big = 300007;
    qkt_real *x = malloc((size_t)big * sizeof *x);
    qkt_rng rng;
    qkt_rng_seed(&rng, 3);
    long double ref = 0;
    for (int64_t i = 0; i < big; i++) {
        x[i] = (qkt_real)qkt_rng_normal(&rng);
        ref += (long double)x[i] * x[i];
    }
    qkt_set_threads(2);
    double n2 = qkt_grad_norm_range(x, big);
    qkt_set_threads(1);
    double n1 = qkt_grad_norm_range(x, big);
    qkt_set_threads(0);
    EXPECT(n1 == n2, "grad norm independent of threads: %.17g vs %.17g", n1, n2);
    EXPECT(fabs(n1 - (double)sqrtl(ref)) <= 1e-12 * n1, "grad norm %.17g vs %.17Lg", n1, sqrtl(ref));
    free(x);
}

/* Cosine: lr 1e-3, floor 1e-4, W = 10, T = 111 (decay over D = T-1-W = 100 steps).
 *   s = 0:   1e-3 * 1/11 = 9.0909090909e-5     s = 9:  1e-3 * 10/11
 *   s = 10:  peak 1e-3                          s = 35: p = 0.25, 1e-4 + 0.5 (1 + cos(pi/4)) 9e-4
 *            = 1e-4 + 0.5 * 1.70710678118655 * 9e-4 = 8.681980515339464e-4
 *   s = 60:  p = 0.5, 1e-4 + 0.5 * 9e-4 = 5.5e-4
 *   s = 110 (last step) and after: the floor 1e-4 */
static void test_schedule(void) {
    qkt_schedule s = {.kind = QKT_SCHED_COSINE, .lr = 1e-3, .min_lr = 1e-4, .warmup_steps = 10, .total_steps = 111};
    EXPECT_NEAR(qkt_schedule_lr(&s, 0), 1e-3 / 11, 1e-18);
    EXPECT_NEAR(qkt_schedule_lr(&s, 9), 1e-2 / 11, 1e-18);
    EXPECT(qkt_schedule_lr(&s, 10) == 1e-3, "peak at s = W");
    EXPECT_NEAR(qkt_schedule_lr(&s, 35), 8.681980515339464e-4, 1e-15);
    EXPECT_NEAR(qkt_schedule_lr(&s, 60), 5.5e-4, 1e-15);
    EXPECT(qkt_schedule_lr(&s, 110) == 1e-4 && qkt_schedule_lr(&s, 1000) == 1e-4, "floor at the end");
    bool mono = true;
    for (int64_t i = 1; i < 130; i++) {
        double a = qkt_schedule_lr(&s, i - 1), b = qkt_schedule_lr(&s, i);
        mono = mono && (i <= 10 ? b > a : b <= a);
    }
    EXPECT(mono, "rises through the warmup, never rises after");
    s.warmup_steps = 0;
    EXPECT(qkt_schedule_lr(&s, 0) == 1e-3, "no warmup: starts at the peak");
    s.total_steps = 1;
    EXPECT(qkt_schedule_lr(&s, 0) == 1e-3 && qkt_schedule_lr(&s, 1) == 1e-4, "T = W + 1: peak, then floor");

    qkt_schedule c = {.kind = QKT_SCHED_CONSTANT, .lr = 3e-4, .warmup_steps = 4, .total_steps = 100};
    EXPECT_NEAR(qkt_schedule_lr(&c, 0), 3e-4 / 5, 1e-18);
    EXPECT(qkt_schedule_lr(&c, 4) == 3e-4 && qkt_schedule_lr(&c, 5000) == 3e-4, "constant after warmup");
    c.warmup_steps = 0;
    EXPECT(qkt_schedule_lr(&c, 0) == 3e-4, "constant");

    qkt_sched_kind k;
    qkt_optim_kind ok;
    qkt_err err = {{0}};
    EXPECT(qkt_sched_kind_parse("cosine", &k, &err) == 0 && k == QKT_SCHED_COSINE, "parse cosine");
    EXPECT(qkt_sched_kind_parse("linear", &k, &err) == -1 && strstr(err.msg, "linear"), "bad schedule: %s",
           err.msg);
    EXPECT(qkt_optim_kind_parse("AdamW", &ok, &err) == 0 && ok == QKT_OPTIM_ADAMW, "parse adamw");
    EXPECT(qkt_optim_kind_parse("lion", &ok, &err) == -1 && strstr(err.msg, "lion"), "bad optimizer: %s",
           err.msg);
    EXPECT(strcmp(qkt_optim_kind_name(QKT_OPTIM_SGD), "sgd") == 0, "names");
}

int main(void) {
    test_adam();
    test_adamw();
    test_adam_l2();
    test_adam_eps();
    test_sgd();
    test_store_runs();
    test_clip();
    test_schedule();
    return qkt_test_finish();
}
