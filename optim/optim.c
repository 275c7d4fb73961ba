/* SGD, Adam and AdamW over the flat parameter store.
 *
 * Each formula follows torch.optim's single-tensor path (PyTorch 1.13, the one
 * CPU tensors take) operation by operation: Python-float hyperparameters are
 * combined in double (as Python does) and cast to qkt_real once, then every
 * element is updated in qkt_real in torch's order, with the same fused
 * multiply-adds, so the results equal PyTorch's bit for bit (docs/optim.md).
 * The loops run over precomputed runs of tensors that share the decay flag;
 * each thread takes one contiguous slice of the store, and each run inside it is
 * one vectorised loop. */
#include "qkt_optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Parallelise the update only when the store is big enough to pay for the threads. */
#define QKT_OPTIM_PAR_MIN 32768

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef QKT_DOUBLE
#define R_SQRT sqrt
#define R_FMA fma
#else
#define R_SQRT sqrtf
#define R_FMA fmaf
#endif

/* The fused multiply-adds must be single instructions to vectorise. Unless the
 * whole build already targets FMA hardware (QKT_NATIVE), x86-64 kernels are
 * compiled three times and picked at load time: 512-bit vectors where the CPU has
 * AVX-512 (AdamW at 2^20 parameters 1.9 times faster than 256-bit, on the aligned
 * store), 256-bit with FMA, and a fallback that computes the same fma() in
 * software (same bits, slower). Each element's operations are the same in all three. The module is built with -ffp-contract=off, so
 * the only fusions are the ones written out. */
#if defined(__x86_64__) && !defined(__FMA__) && !defined(QKT_NO_FMA_CLONES) && (defined(__GNUC__) || defined(__clang__))
#define QKT_FMA_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define QKT_FMA_CLONES
#endif

typedef qkt_real R;

qkt_optim_config qkt_optim_defaults(qkt_optim_kind kind) {
    qkt_optim_config c = {.kind = kind, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (kind == QKT_OPTIM_ADAMW) c.weight_decay = 0.01;
    return c;
}

static void check_config(const qkt_optim_config *c) {
    QKT_CHECK(c->kind == QKT_OPTIM_SGD || c->kind == QKT_OPTIM_ADAM || c->kind == QKT_OPTIM_ADAMW,
              "unknown optimizer kind %d", (int)c->kind);
    QKT_CHECK(c->weight_decay >= 0, "weight decay %g < 0", c->weight_decay);
    if (c->kind == QKT_OPTIM_SGD) {
        QKT_CHECK(c->momentum >= 0, "SGD momentum %g < 0", c->momentum);
        QKT_CHECK(!c->nesterov || (c->momentum > 0 && c->dampening == 0),
                  "Nesterov SGD needs momentum > 0 and dampening 0 (got %g, %g)", c->momentum, c->dampening);
    } else {
        QKT_CHECK(c->beta1 >= 0 && c->beta1 < 1, "Adam beta1 %g not in [0, 1)", c->beta1);
        QKT_CHECK(c->beta2 >= 0 && c->beta2 < 1, "Adam beta2 %g not in [0, 1)", c->beta2);
        QKT_CHECK(c->eps > 0, "Adam eps %g <= 0", c->eps);
    }
}

/* Zeroed and 64-byte aligned by the parameter store's allocator (qkt_calloc64): the
 * update's vectors read and write whole cache lines, and a run that takes no step (the
 * study's cells at init read only the gradients) never touches its moments' pages. */
static qkt_real *alloc_state(int64_t n) { return qkt_calloc64((size_t)(n ? n : 1) * sizeof(qkt_real)); }

/* Runs of consecutive tensors with the same decay flag (store order = add order);
 * buffers (QKT_PARAM_BUFFER) are in no run: the optimizer never touches them. */
static void build_runs(qkt_optim *o) {
    const qkt_params *p = o->params;
    free(o->runs);
    o->runs = qkt_malloc((size_t)(p->n ? p->n : 1) * sizeof *o->runs);
    o->n_runs = 0, o->n_decay_tensors = 0, o->n_decay = 0;
    for (int i = 0; i < p->n; i++) {
        const qkt_tensor *t = p->t[i];
        if (p->flags[i] & QKT_PARAM_BUFFER) continue;
        int64_t off = qkt_params_offset(p, t);
        bool decay = (p->flags[i] & QKT_PARAM_DECAY) != 0;
        if (decay) {
            o->n_decay_tensors++;
            o->n_decay += t->size;
        }
        qkt_optim_run *last = o->n_runs ? &o->runs[o->n_runs - 1] : NULL;
        if (last && last->decay == decay && last->off + last->n == off) {
            last->n += t->size;
        } else {
            o->runs[o->n_runs++] = (qkt_optim_run){.off = off, .n = t->size, .decay = decay};
        }
    }
}

void qkt_optim_init(qkt_optim *o, qkt_params *p, const qkt_optim_config *cfg) {
    QKT_CHECK(p->finalized, "qkt_optim_init before qkt_params_finalize");
    check_config(cfg);
    memset(o, 0, sizeof *o);
    o->cfg = *cfg;
    o->params = p;
    o->size = p->size;
    bool adam = cfg->kind != QKT_OPTIM_SGD;
    if (adam || cfg->momentum != 0) o->m = alloc_state(p->size);
    if (adam) o->v = alloc_state(p->size);

    build_runs(o);
}

void qkt_optim_sync(qkt_optim *o) {
    qkt_params *p = o->params;
    QKT_CHECK(p->size >= o->size, "qkt_optim_sync: the store shrank (%lld -> %lld values)", (long long)o->size,
              (long long)p->size);
    qkt_real **st[2] = {&o->m, &o->v};
    for (int k = 0; k < 2; k++)
        if (*st[k]) {
            qkt_real *grown = alloc_state(p->size); /* not realloc: it keeps no alignment */
            memcpy(grown, *st[k], (size_t)o->size * sizeof(qkt_real));
            qkt_free64(*st[k]);
            *st[k] = grown;
        }
    o->size = p->size;
    build_runs(o);
}

void qkt_optim_reset(qkt_optim *o) {
    if (o->m) memset(o->m, 0, (size_t)o->size * sizeof(qkt_real));
    if (o->v) memset(o->v, 0, (size_t)o->size * sizeof(qkt_real));
    o->step = 0;
}

void qkt_optim_free(qkt_optim *o) {
    qkt_free64(o->m);
    qkt_free64(o->v);
    free(o->runs);
    memset(o, 0, sizeof *o);
}

/* ---------------------------------------------------------------- threads */
/* The store is cut into one contiguous slice per thread; a thread updates the
 * parts of each run that fall in its slice. `fn` gets [lo, hi) and the run. */
typedef void (*slice_fn)(qkt_optim *o, const void *k, const qkt_optim_run *run, int64_t lo, int64_t hi);

static void slice(qkt_optim *o, const void *k, slice_fn fn, int id, int nt) {
    int64_t t0 = o->size * id / nt, t1 = o->size * (id + 1) / nt;
    for (int r = 0; r < o->n_runs; r++) {
        const qkt_optim_run *run = &o->runs[r];
        int64_t lo = run->off > t0 ? run->off : t0, hi = run->off + run->n < t1 ? run->off + run->n : t1;
        if (lo < hi) fn(o, k, run, lo, hi);
    }
}

static void for_each_slice(qkt_optim *o, const void *k, slice_fn fn) {
#ifdef _OPENMP
    if (qkt_parallel_worth(o->size > QKT_OPTIM_PAR_MIN)) {
#pragma omp parallel
        slice(o, k, fn, omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    slice(o, k, fn, 0, 1);
}

/* ---------------------------------------------------------------- Adam / AdamW */
/* Per-step constants, computed once in double (torch: Python floats), cast once. */
typedef struct adam_k {
    R b1, omb1, b2, omb2; /* beta1, 1 - beta1, beta2, 1 - beta2 */
    R neg_step;           /* -lr / (1 - beta1^t) */
    R bc2_sqrt;           /* sqrt(1 - beta2^t) */
    R eps;
    R wd;   /* Adam (L2): g += wd * p */
    R keep; /* AdamW: p *= 1 - lr * wd */
    bool adamw, has_wd;
} adam_k;

/* torch 1.13 _single_tensor_adam(w), element by element (fma(a, b, c) = a*b + c
 * rounded once: torch's AVX2 kernels fuse `x + alpha * y` and addcmul):
 *   [Adam, decay]   g = fma(wd, p, g)                   grad.add(param, alpha=wd)
 *   [AdamW, decay]  p = p * (1 - lr wd)                 param.mul_(1 - lr * wd)
 *   m = fma(1 - b1, g, m * b1)                          exp_avg.mul_(b1).add_(g, alpha=1-b1)
 *   v = fma((1 - b2) * g, g, v * b2)                    exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2)
 *   denom = sqrt(v) / sqrt(1 - b2^t) + eps              (eps outside the sqrt)
 *   p = p + (-lr / (1 - b1^t)) * m / denom              param.addcdiv_(m, denom, value=-step_size)
 * The mode flags are literals at each call, so every variant is a branch-free loop. */
static inline __attribute__((always_inline)) void adam_loop(R *restrict P, const R *restrict G, R *restrict M,
                                                          R *restrict V, int64_t n, const adam_k *k, bool l2,
                                                          bool decoupled) {
    const adam_k c = *k;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        R p = P[i], g = G[i];
        if (l2) g = R_FMA(c.wd, p, g);
        if (decoupled) p = p * c.keep;
        R m = R_FMA(c.omb1, g, M[i] * c.b1);
        R v = R_FMA(c.omb2 * g, g, V[i] * c.b2);
        R denom = R_SQRT(v) / c.bc2_sqrt + c.eps;
        M[i] = m;
        V[i] = v;
        P[i] = p + c.neg_step * m / denom;
    }
}

QKT_FMA_CLONES static void adam_slice(qkt_optim *o, const void *kv, const qkt_optim_run *run, int64_t lo,
                                      int64_t hi) {
    const adam_k *k = kv;
    R *P = o->params->data + lo, *M = o->m + lo, *V = o->v + lo;
    const R *G = o->params->grad + lo;
    int64_t n = hi - lo;
    bool decay = run->decay && k->has_wd;
    if (decay && k->adamw)
        adam_loop(P, G, M, V, n, k, false, true);
    else if (decay)
        adam_loop(P, G, M, V, n, k, true, false);
    else
        adam_loop(P, G, M, V, n, k, false, false);
}

static void adam_step(qkt_optim *o, double lr) {
    const qkt_optim_config *cfg = &o->cfg;
    o->step++;
    double t = (double)o->step;
    double bc1 = 1.0 - pow(cfg->beta1, t), bc2 = 1.0 - pow(cfg->beta2, t);
    adam_k k = {
        .b1 = (R)cfg->beta1,
        .omb1 = (R)(1.0 - cfg->beta1),
        .b2 = (R)cfg->beta2,
        .omb2 = (R)(1.0 - cfg->beta2),
        .neg_step = (R)(-(lr / bc1)),
        .bc2_sqrt = (R)sqrt(bc2),
        .eps = (R)cfg->eps,
        .wd = (R)cfg->weight_decay,
        .keep = (R)(1.0 - lr * cfg->weight_decay),
        .adamw = cfg->kind == QKT_OPTIM_ADAMW,
        .has_wd = cfg->weight_decay != 0,
    };
    for_each_slice(o, &k, adam_slice);
}

/* ---------------------------------------------------------------- SGD */
typedef struct sgd_k {
    R wd, mu, omd, neg_lr; /* weight decay, momentum, 1 - dampening, -lr */
    int mode;              /* 0 no momentum, 1 first step (buf = g), 2 later steps */
    bool nesterov, has_wd;
} sgd_k;

/* torch 1.13 _single_tensor_sgd, element by element:
 *   [decay]     g = fma(wd, p, g)                     d_p.add(param, alpha=wd)
 *   [momentum]  first step: buf = g                   buf = clone(d_p)
 *               later: buf = fma(1 - damp, g, buf * mu)   buf.mul_(mu).add_(d_p, alpha=1-damp)
 *               g = nesterov ? fma(mu, buf, g) : buf  d_p.add(buf, alpha=mu)
 *   p = fma(-lr, g, p)                                param.add_(d_p, alpha=-lr) */
static inline __attribute__((always_inline)) void sgd_loop(R *restrict P, const R *restrict G, R *restrict B,
                                                         int64_t n, const sgd_k *k, bool l2, int mode,
                                                         bool nesterov) {
    const sgd_k c = *k;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        R p = P[i], g = G[i];
        if (l2) g = R_FMA(c.wd, p, g);
        if (mode) {
            R buf = mode == 1 ? g : R_FMA(c.omd, g, B[i] * c.mu);
            B[i] = buf;
            g = nesterov ? R_FMA(c.mu, buf, g) : buf;
        }
        P[i] = R_FMA(c.neg_lr, g, p);
    }
}

QKT_FMA_CLONES static void sgd_slice(qkt_optim *o, const void *kv, const qkt_optim_run *run, int64_t lo,
                                     int64_t hi) {
    const sgd_k *k = kv;
    R *P = o->params->data + lo, *B = o->m ? o->m + lo : NULL;
    const R *G = o->params->grad + lo;
    int64_t n = hi - lo;
    bool l2 = run->decay && k->has_wd;
    /* Every flag a literal at its call, so that each variant is its own vector loop. */
#define SGD_LOOP(L2, MODE, NEST) sgd_loop(P, G, B, n, k, L2, MODE, NEST)
    switch ((l2 ? 1 : 0) | k->mode << 1 | (k->nesterov ? 8 : 0)) {
    case 0: case 8: SGD_LOOP(false, 0, false); break;
    case 1: case 9: SGD_LOOP(true, 0, false); break;
    case 2: SGD_LOOP(false, 1, false); break;
    case 3: SGD_LOOP(true, 1, false); break;
    case 4: SGD_LOOP(false, 2, false); break;
    case 5: SGD_LOOP(true, 2, false); break;
    case 10: SGD_LOOP(false, 1, true); break;
    case 11: SGD_LOOP(true, 1, true); break;
    case 12: SGD_LOOP(false, 2, true); break;
    case 13: SGD_LOOP(true, 2, true); break;
    default: QKT_CHECK(0, "sgd: bad variant");
    }
#undef SGD_LOOP
}

static void sgd_step(qkt_optim *o, double lr) {
    const qkt_optim_config *cfg = &o->cfg;
    sgd_k k = {
        .wd = (R)cfg->weight_decay,
        .mu = (R)cfg->momentum,
        .omd = (R)(1.0 - cfg->dampening),
        .neg_lr = (R)(-lr),
        .mode = cfg->momentum == 0 ? 0 : o->step == 0 ? 1 : 2,
        .nesterov = cfg->nesterov,
        .has_wd = cfg->weight_decay != 0,
    };
    for_each_slice(o, &k, sgd_slice);
    o->step++;
}

void qkt_optim_step(qkt_optim *o, double lr) {
    QKT_CHECK(o->params && o->size == o->params->size,
              "qkt_optim_step: optimizer not initialised for this store (or the store grew: call qkt_optim_sync)");
    QKT_CHECK(lr >= 0, "learning rate %g < 0", lr);
    if (o->cfg.kind == QKT_OPTIM_SGD)
        sgd_step(o, lr);
    else
        adam_step(o, lr);
}

/* ---------------------------------------------------------------- names */
static const char *const kind_names[] = {"sgd", "adam", "adamw"};

const char *qkt_optim_kind_name(qkt_optim_kind kind) {
    return (unsigned)kind < 3 ? kind_names[kind] : "?";
}

int qkt_optim_kind_parse(const char *s, qkt_optim_kind *out, qkt_err *err) {
    for (int i = 0; i < 3; i++)
        if (s && strcasecmp(s, kind_names[i]) == 0) {
            *out = (qkt_optim_kind)i;
            return 0;
        }
    return qkt_err_set(err, "unknown optimizer '%s' (expected sgd, adam or adamw)", s ? s : "");
}
