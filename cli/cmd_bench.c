/* qkt bench: steady-state training-step time of the GPT model (forward, backward,
 * AdamW update: qkt_trainer_step, timed by qkt_bench_steps), and the machine's sgemm peak
 * that MFU is measured against (qkt_bench_gemm_rate).
 *
 * One line per run, the format bench/torch_gpt.py prints too:
 *   qkt NAME threads=N ms_per_step=X tokens_per_s=Y peak_rss_mb=Z mfu=W isa=P
 * (isa: the kernel path that ran, qkt_isa_name; PyTorch prints no isa).
 * ms_per_step is the median over --steps timed steps after --warmup untimed ones.
 * mfu = analytic training FLOPs per step (qkt_train_step_flops) / step time / sgemm peak.
 * docs/performance.md derives it.
 *
 * --ops times the library's pieces outside the products instead, a line each:
 *   qkt op NAME threads=N elements=E ms=X isa=P          (forward and backward of one op)
 *   qkt residual NAME threads=N rows=R width=C ms=X isa=P (a residual add after an output
 *                                                         projection, fused or not)
 *   qkt layernorm threads=N rows=R width=C ms=X isa=P   (forward and backward, gain and bias)
 *   qkt attention threads=N B=.. T=.. C=.. heads=H d_k=D forward_ms=X forward_backward_ms=Y isa=P
 *                                                        (the fused attention, causal)
 *   qkt adamw threads=N params=P ms=X ns_per_param=Y isa=P  (one qkt_optim_step)
 *   qkt normal values=N fill_ms=X one_at_a_time_ms=Y ns_per_value=Z isa=P  (N(0, 0.02) draws:
 *                                                        qkt_rng_fill_normal, and qkt_rng_normal's loop)
 * each the best of --steps timed repetitions after --warmup untimed ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flags.h"
#include "qkt_optim.h"
#include "qkt_trainer.h"

typedef struct {
    const char *name;
    int V, T, B, C, L, NH;
} bench_config;

/* The configurations (V vocab, T length, B batch, C width, L layers, NH heads): the
 * three model sizes, and two cells of the study (`qkt ablate`: T 32, B 32 as in the full preset,
 * 2 layers, 2 heads, a 32-token vocabulary (the presets' induction task has 64); d_k 16 and 64). */
static const bench_config configs[] = {
    {"tiny", 65, 64, 16, 64, 2, 4},
    {"small", 65, 128, 16, 128, 4, 4},
    {"medium", 65, 256, 8, 384, 6, 6},
    {"cell32", 32, 32, 32, 32, 2, 2},
    {"cell128", 32, 32, 32, 128, 2, 2},
};
enum { n_configs = (int)(sizeof configs / sizeof configs[0]) };

/* "tiny, small, medium, cell32 or cell128", for the help and the messages. */
static const char *config_names(void) {
    static char buf[128];
    if (!buf[0])
        for (int i = 0; i < n_configs; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i == 0 ? "" : i == n_configs - 1 ? " or " : ", ",
                     configs[i].name);
    return buf;
}

/* The bench's step (qkt_bench_config_default) with the sizes of bc. */
static qkt_train_config train_config(const bench_config *bc, int replicas) {
    qkt_train_config c = qkt_bench_config_default();
    c.model.vocab_size = bc->V, c.model.block_size = bc->T, c.model.n_layer = bc->L, c.model.n_head = bc->NH;
    c.model.n_embd = bc->C, c.batch_size = bc->B, c.replicas = replicas;
    return c;
}

/* --gemm-shapes: the products of one training step of config bc as qkt_affine makes them
 * (qkt_bench_step_products), on the thread team as set; a line each, then all the step's
 * products (every layer, every replica, one after another) at those rates. */
static void gemm_shapes(const bench_config *bc, int replicas, int threads) {
    qkt_train_config c = train_config(bc, replicas);
    qkt_bench_product p[QKT_BENCH_PRODUCTS];
    qkt_bench_step_products(&c, p);
    double total_flops = 0, total_s = 0;
    for (int i = 0; i < QKT_BENCH_PRODUCTS; i++) {
        double g = qkt_bench_gemm_rate(p[i].ta, p[i].tb, p[i].M, p[i].N, p[i].K, p[i].beta, 5, 2e-2);
        double f = 2.0 * p[i].M * p[i].N * p[i].K * p[i].per_step * replicas;
        total_flops += f, total_s += f / (g * 1e9);
        printf("qkt gemm %s %s threads=%d M=%d N=%d K=%d gflops=%.1f isa=%s\n", p[i].layer, p[i].op, threads, p[i].M, p[i].N,
               p[i].K, g, qkt_isa_name());
    }
    printf("qkt gemm step threads=%d ms=%.2f gflops=%.1f isa=%s\n", threads, total_s * 1e3, total_flops / total_s * 1e-9,
           qkt_isa_name());
}

/* --ops: the elementwise ops on 262144 elements (B 16, T 128, C 128), forward and backward
 * through the tape, on the two paths of docs/autograd.md ("Broadcasting"): the kernels'
 * vectorised loops (same shapes, a bias (C), the bias first) and the general strided loops
 * ((B, T, C) * (B, T, 1), and every div). */
#define OPS_B 16
#define OPS_T 128
#define OPS_C 128
typedef struct {
    const char *name;
    qkt_tensor *(*op)(qkt_ctx *, qkt_tensor *, qkt_tensor *);
    int b_kind; /* b's shape: 0 (B, T, C), 1 (C), 2 (B, T, 1) */
    bool swap;  /* b first */
} ops_case;
static const ops_case ops_cases[] = {
    {"mul_same", qkt_mul, 0, false},  {"add_bias", qkt_add, 1, false}, {"add_bias_first", qkt_add, 1, true},
    {"mul_bt1", qkt_mul, 2, false},   {"div_same", qkt_div, 0, false},
};

/* The best of `steps` timings of fn(user) after `warmup` untimed calls, in seconds. */
static double best_time(void (*fn)(void *), void *user, int warmup, int steps) {
    for (int i = 0; i < warmup; i++) fn(user);
    double best = INFINITY;
    for (int i = 0; i < steps; i++) {
        double t0 = qkt_now_s();
        fn(user);
        best = fmin(best, qkt_now_s() - t0);
    }
    return best;
}

typedef struct {
    qkt_ctx *ctx;
    const ops_case *k;
    qkt_tensor *a, *b;
    const qkt_real *seed;
} ops_run;
static void ops_once(void *user) {
    ops_run *r = user;
    qkt_tensor *y = r->k->swap ? r->k->op(r->ctx, r->b, r->a) : r->k->op(r->ctx, r->a, r->b);
    qkt_backward(r->ctx, y, r->seed);
    qkt_ctx_reset(r->ctx);
}
static void adamw_once(void *user) { qkt_optim_step(user, 1e-3); }

/* --ops, N(0, 0.02) draws into a buffer (a GPT weight's init): qkt_rng_fill_normal, and the
 * same floats one qkt_rng_normal at a time */
typedef struct {
    qkt_real *x;
    int64_t n;
} normal_job;
static void normal_fill_once(void *user) {
    normal_job *j = user;
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    qkt_rng_fill_normal(&r, j->x, j->n, 0, 0.02);
}
static void normal_loop_once(void *user) {
    normal_job *j = user;
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    for (int64_t i = 0; i < j->n; i++) j->x[i] = (qkt_real)(0 + 0.02 * qkt_rng_normal(&r));
}


/* Values in [0.5, 1.5): no op meets a zero or a non-finite value. */
static void ops_fill(qkt_tensor *t, uint64_t seed) {
    qkt_rng g;
    qkt_rng_seed(&g, seed);
    qkt_init_uniform(t, &g, 0.5, 1.5);
}

/* --ops, the residual add after a block's output projection, forward and backward:
 * qkt_add(r, qkt_affine(h, W, b)) ("affine_then_add") against qkt_affine_add(h, W, b, r)
 * ("affine_add", what qkt_block_forward records without dropout), r and h computed (the
 * residual stream and the projection's input are never leaves), at the bench's rows and
 * the widths of cell32 and cell128. */
typedef struct {
    qkt_ctx *ctx;
    bool fused;
    qkt_tensor *h0, *w, *b, *r0;
    const qkt_real *seed;
} residual_run;
static void residual_once(void *user) {
    residual_run *u = user;
    qkt_tensor *h = qkt_scale(u->ctx, u->h0, 1), *r = qkt_scale(u->ctx, u->r0, 1);
    qkt_tensor *y = u->fused ? qkt_affine_add(u->ctx, h, u->w, u->b, r) : qkt_add(u->ctx, r, qkt_affine(u->ctx, h, u->w, u->b));
    qkt_backward(u->ctx, y, u->seed);
    qkt_ctx_reset(u->ctx);
}

static void bench_residual(int threads, int warmup, int steps) {
    const int rows = OPS_B * OPS_T, widths[] = {32, 128};
    for (int i = 0; i < 2; i++) {
        int C = widths[i];
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *h0 = qkt_params_add(&p, "h", QKT_SHAPE(rows, C), 0), *w = qkt_params_add(&p, "w", QKT_SHAPE(C, C), 0);
        qkt_tensor *b = qkt_params_add(&p, "b", QKT_SHAPE(C), 0), *r0 = qkt_params_add(&p, "r", QKT_SHAPE(rows, C), 0);
        qkt_params_finalize(&p);
        ops_fill(h0, 5), ops_fill(w, 6), ops_fill(b, 7), ops_fill(r0, 8);
        qkt_real *seed = qkt_malloc((size_t)rows * C * sizeof *seed);
        for (int64_t j = 0; j < (int64_t)rows * C; j++) seed[j] = 1;
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 1);
        for (int fused = 0; fused < 2; fused++) {
            residual_run u = {&ctx, fused, h0, w, b, r0, seed};
            double s = best_time(residual_once, &u, warmup, steps);
            printf("qkt residual %s threads=%d rows=%d width=%d ms=%.3f isa=%s\n", fused ? "affine_add" : "affine_then_add",
                   threads, rows, C, s * 1e3, qkt_isa_name());
        }
        qkt_ctx_free(&ctx);
        free(seed);
        qkt_params_free(&p);
    }
}

/* --ops, the fused attention (qkt_attention_qkv, causal, the scale 1/sqrt(d_k)) at the
 * study's and the bench's head widths, forward alone and forward plus backward (its
 * weighted sum's backward seeds dy): the shapes of cell32 (d_k 16), tiny (16), the study's
 * d_k 8 and 64 cells (batch 16) and small (32). */
typedef struct {
    qkt_ctx *ctx;
    qkt_tensor *qkv0, *w;
    int H;
    bool backward;
} attn_run;
static void attn_once(void *user) {
    attn_run *u = user;
    int C = u->qkv0->shape[2] / 3;
    qkt_attn_opts o = {.scale = 1 / sqrt((double)C / u->H)};
    /* a computed qkv in the backward run, as in a model: its grad is a new buffer (stored, not added) */
    qkt_tensor *y = qkt_attention_qkv(u->ctx, u->backward ? qkt_scale(u->ctx, u->qkv0, 1) : u->qkv0, u->H, &o);
    if (u->backward) qkt_backward(u->ctx, qkt_sum(u->ctx, qkt_mul(u->ctx, y, u->w)), NULL);
    qkt_ctx_reset(u->ctx);
}

static void bench_attention(int threads, int warmup, int steps) {
    static const struct {
        int B, T, C, H;
    } shapes[] = {{32, 32, 32, 2}, {16, 64, 64, 4}, {16, 32, 16, 2}, {16, 32, 128, 2}, {16, 128, 128, 4}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        int B = shapes[i].B, T = shapes[i].T, C = shapes[i].C, H = shapes[i].H;
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *qkv0 = qkt_params_add(&p, "qkv", QKT_SHAPE(B, T, 3 * C), 0), *w = qkt_params_add(&p, "w", QKT_SHAPE(B, T, C), 0);
        qkt_params_finalize(&p);
        qkt_rng g;
        qkt_rng_seed(&g, 9);
        qkt_init_normal(qkv0, &g, 0, 1), qkt_init_normal(w, &g, 0, 1);
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 1);
        attn_run fwd = {&ctx, qkv0, w, H, false}, all = {&ctx, qkv0, w, H, true};
        double sf = best_time(attn_once, &fwd, warmup, steps), sa = best_time(attn_once, &all, warmup, steps);
        printf("qkt attention threads=%d B=%d T=%d C=%d heads=%d d_k=%d forward_ms=%.4f forward_backward_ms=%.4f isa=%s\n",
               threads, B, T, C, H, C / H, sf * 1e3, sa * 1e3, qkt_isa_name());
        qkt_ctx_free(&ctx);
        qkt_params_free(&p);
    }
}

/* --ops, LayerNorm with gain and bias over rows of the study's widths (the input computed,
 * as in a model: its grad is a new buffer), forward and backward. */
typedef struct {
    qkt_ctx *ctx;
    qkt_tensor *x0, *w, *b;
    const qkt_real *seed;
} ln_run;
static void ln_once(void *user) {
    ln_run *u = user;
    qkt_tensor *y = qkt_layernorm(u->ctx, qkt_scale(u->ctx, u->x0, 1), u->w, u->b, 1e-5);
    qkt_backward(u->ctx, y, u->seed);
    qkt_ctx_reset(u->ctx);
}

static void bench_layernorm(int threads, int warmup, int steps) {
    const int rows = OPS_B * OPS_T, widths[] = {32, 64, 128};
    for (int i = 0; i < 3; i++) {
        int C = widths[i];
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *x0 = qkt_params_add(&p, "x", QKT_SHAPE(rows, C), 0), *w = qkt_params_add(&p, "w", QKT_SHAPE(C), 0);
        qkt_tensor *b = qkt_params_add(&p, "b", QKT_SHAPE(C), 0);
        qkt_params_finalize(&p);
        ops_fill(x0, 10), ops_fill(w, 11), ops_fill(b, 12);
        qkt_real *seed = qkt_malloc((size_t)rows * C * sizeof *seed);
        for (int64_t j = 0; j < (int64_t)rows * C; j++) seed[j] = 1;
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 1);
        ln_run u = {&ctx, x0, w, b, seed};
        double t = best_time(ln_once, &u, warmup, steps);
        printf("qkt layernorm threads=%d rows=%d width=%d ms=%.4f isa=%s\n", threads, rows, C, t * 1e3, qkt_isa_name());
        qkt_ctx_free(&ctx);
        free(seed);
        qkt_params_free(&p);
    }
}

static void bench_ops(int threads, int warmup, int steps) {
    const int64_t n = (int64_t)OPS_B * OPS_T * OPS_C;
    for (size_t i = 0; i < sizeof ops_cases / sizeof *ops_cases; i++) {
        const ops_case *k = &ops_cases[i];
        qkt_params p;
        qkt_params_init(&p);
        qkt_tensor *a = qkt_params_add(&p, "a", QKT_SHAPE(OPS_B, OPS_T, OPS_C), 0);
        qkt_tensor *b = k->b_kind == 0   ? qkt_params_add(&p, "b", QKT_SHAPE(OPS_B, OPS_T, OPS_C), 0)
                        : k->b_kind == 1 ? qkt_params_add(&p, "b", QKT_SHAPE(OPS_C), 0)
                                         : qkt_params_add(&p, "b", QKT_SHAPE(OPS_B, OPS_T, 1), 0);
        qkt_params_finalize(&p);
        ops_fill(a, 1), ops_fill(b, 2);
        qkt_real *seed = qkt_malloc((size_t)n * sizeof *seed);
        for (int64_t j = 0; j < n; j++) seed[j] = 1;
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 0, 1);
        ops_run r = {&ctx, k, a, b, seed};
        double s = best_time(ops_once, &r, warmup, steps);
        printf("qkt op %s threads=%d elements=%lld ms=%.3f isa=%s\n", k->name, threads, (long long)n, s * 1e3, qkt_isa_name());
        qkt_ctx_free(&ctx);
        free(seed);
        qkt_params_free(&p);
    }
    bench_residual(threads, warmup, steps);
    bench_layernorm(threads, warmup, steps);
    bench_attention(threads, warmup, steps);
    {
        normal_job j = {qkt_malloc(((size_t)1 << 20) * sizeof(qkt_real)), (int64_t)1 << 20};
        double f = best_time(normal_fill_once, &j, warmup, steps), l = best_time(normal_loop_once, &j, warmup, steps);
        printf("qkt normal values=%lld fill_ms=%.3f one_at_a_time_ms=%.3f ns_per_value=%.2f isa=%s\n", (long long)j.n,
               f * 1e3, l * 1e3, f * 1e9 / (double)j.n, qkt_isa_name());
        free(j.x);
    }
    /* AdamW over 2^20 parameters (the store's one loop per decay run) and over 10.5M (medium's size: memory bound) */
    const int64_t sizes[] = {(int64_t)1 << 20, 10485760};
    for (int i = 0; i < 2; i++) {
        qkt_params p;
        qkt_params_init(&p);
        /* two tensors, one decayed: the store's two kinds of run */
        qkt_tensor *w = qkt_params_add(&p, "w", QKT_SHAPE((int)(sizes[i] / 2)), QKT_PARAM_DECAY);
        qkt_tensor *g = qkt_params_add(&p, "g", QKT_SHAPE((int)(sizes[i] / 2)), 0);
        qkt_params_finalize(&p);
        ops_fill(w, 3), ops_fill(g, 4);
        for (int64_t j = 0; j < p.size; j++) p.grad[j] = p.data[j] - 1;
        qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
        qkt_optim o;
        qkt_optim_init(&o, &p, &oc);
        double s = best_time(adamw_once, &o, warmup, steps);
        printf("qkt adamw threads=%d params=%lld ms=%.3f ns_per_param=%.3f isa=%s\n", threads, (long long)p.size, s * 1e3,
               s * 1e9 / (double)p.size, qkt_isa_name());
        qkt_optim_free(&o);
        qkt_params_free(&p);
    }
}

typedef struct {
    const char *config;
    bench_config sizes; /* the size flags; 0: the config's */
    int threads, replicas, steps, warmup, peak_n;
    double peak;
    bool want_peak, want_shapes, want_ops;
} bench_args;
static const bench_args bench_defaults = {.replicas = 1, .steps = 10, .warmup = 3, .peak_n = 2048};
#define BENCH_MAX_VOCAB (1 << 20)
#define BENCH_MAX_STEPS 100000 /* --steps and --warmup */
#define BENCH_MIN_PEAK_N 64
#define BENCH_MAX_PEAK_N 16384
#define BENCH_MIN_PEAK 1e-3    /* GFLOP/s, for a --peak other than 0 */
#define BENCH_MAX_PEAK 1e9     /* GFLOP/s */

/* Is any of the model's size flags set (a custom config, or one over --config)? */
static bool sizes_set(const bench_config *z) { return z->V || z->T || z->B || z->C || z->L || z->NH; }

/* Flags -> a. Returns 0, -1 after --help, or 2 after a one-line error. */
static int parse(int argc, char **argv, bench_args *a) {
    *a = bench_defaults;
    bench_config *z = &a->sizes;
    char config_help[192];
    snprintf(config_help, sizeof config_help, "%s (flags below override its fields)", config_names());
    /* The model's sizes take the training config's bounds (qkt_trainer.h). */
    qkt_flag flags[] = {
        {"config", QKT_FLAG_STRING, &a->config, config_help, 1, 0, false, false},
        {"vocab", QKT_FLAG_INT, &z->V, "vocabulary size V; unset: the config's", 2, BENCH_MAX_VOCAB, true, false},
        {"seq", QKT_FLAG_INT, &z->T, "sequence length T; unset: the config's", 1, QKT_TRAIN_MAX_BLOCK_SIZE, true, false},
        {"batch", QKT_FLAG_INT, &z->B, "batch size B; unset: the config's", 1, QKT_TRAIN_MAX_BATCH_SIZE, true, false},
        {"n-embd", QKT_FLAG_INT, &z->C, "width C; unset: the config's", 1, QKT_TRAIN_MAX_N_EMBD, true, false},
        {"n-layer", QKT_FLAG_INT, &z->L, "layers L; unset: the config's", 1, QKT_TRAIN_MAX_N_LAYER, true, false},
        {"n-head", QKT_FLAG_INT, &z->NH, "heads NH, a divisor of C; unset: the config's", 1, QKT_TRAIN_MAX_N_HEAD, true, false},
        {"threads", QKT_FLAG_INT, &a->threads, "threads, the OpenMP team (0 = all cores; default env QKT_THREADS, else all cores)", 0, QKT_FLAGS_MAX_THREADS, false, false},
        {"replicas", QKT_FLAG_INT, &a->replicas, "data-parallel replicas: batch shards run side by side, grads summed (at most the batch)", 1, QKT_DP_MAX, true, false},
        {"steps", QKT_FLAG_INT, &a->steps, "timed steps (median reported)", 1, BENCH_MAX_STEPS, true, false},
        {"warmup", QKT_FLAG_INT, &a->warmup, "untimed steps first", 0, BENCH_MAX_STEPS, false, false},
        {"sgemm-peak", QKT_FLAG_BOOL, &a->want_peak, "measure the sgemm GFLOP/s on n x n matrices and print it", 1, 0, false, false},
        {"peak-n", QKT_FLAG_INT, &a->peak_n, "matrix size for the sgemm peak", BENCH_MIN_PEAK_N, BENCH_MAX_PEAK_N, true, false},
        {"gemm-shapes", QKT_FLAG_BOOL, &a->want_shapes, "time the config's step products (each linear layer's forward, dx, dw) instead of the step", 1, 0, false, false},
        {"ops", QKT_FLAG_BOOL, &a->want_ops, "time the elementwise ops, the residual add (fused or not), LayerNorm and the fused attention (forward and backward), AdamW and the normal draws of an init instead of a step (best of --steps)", 1, 0, false, false},
        {"peak", QKT_FLAG_DOUBLE, &a->peak, "sgemm peak GFLOP/s for mfu (0 = measure it first)", 0, BENCH_MAX_PEAK, false, false},
    };
    int nf = (int)(sizeof flags / sizeof flags[0]);
    int rc = qkt_flags_parse("bench",
                             "Time qkt's steady-state GPT training steps (forward, backward, AdamW), or the sgemm peak.\n"
                             "qkt only: bench/compare.sh runs PyTorch's step (bench/torch_gpt.py) beside it.",
                             flags, nf, argc, argv, NULL, 0, NULL);
    if (!rc) rc = qkt_flags_threads("bench", flags, nf, &a->threads);
    if (rc) return rc == 1 ? -1 : 2;
    if (a->peak > 0 && a->peak < BENCH_MIN_PEAK) /* a rate no CPU has: an mfu of 1e300 */
        return qkt_cli_err("qkt bench: --peak %g: expected 0 (measure it) or at least %g GFLOP/s\n", a->peak, BENCH_MIN_PEAK), 2;
    /* One thing to time: the modes exclude each other, and --ops times fixed shapes. */
    if (a->want_peak + a->want_shapes + a->want_ops > 1)
        return qkt_cli_err("qkt bench: --sgemm-peak, --gemm-shapes and --ops each time something else: give one of them\n"), 2;
    if ((a->want_ops || a->want_peak || a->want_shapes) && qkt_flag_seen(flags, nf, "peak"))
        return qkt_cli_err("qkt bench: --peak sets a step's MFU denominator: %s prints no MFU\n",
                           a->want_ops ? "--ops" : a->want_peak ? "--sgemm-peak" : "--gemm-shapes"),
               2;
    if ((a->want_ops || a->want_peak) && (a->config || sizes_set(z) || a->replicas != bench_defaults.replicas))
        return qkt_cli_err("qkt bench: %s times fixed shapes: --config, the model flags and --replicas do not apply\n",
                           a->want_ops ? "--ops" : "--sgemm-peak"),
               2;
    return 0;
}

/* --config, then the size flags over it -> *bc. 0, or 2 after a one-line error. */
static int choose_config(const bench_args *a, bench_config *bc) {
    const bench_config *z = &a->sizes;
    bool custom = sizes_set(z);
    *bc = configs[0];
    if (a->config) {
        int found = -1;
        for (int i = 0; i < n_configs; i++)
            if (!strcmp(a->config, configs[i].name)) found = i;
        if (found < 0) return qkt_cli_err("qkt bench: --config '%s': expected %s\n", a->config, config_names()), 2;
        *bc = configs[found];
    } else if (!custom) {
        return qkt_cli_err("qkt bench: --config: expected %s (or the model flags, or --sgemm-peak)\n", config_names()), 2;
    }
    if (custom) bc->name = "custom";
    if (z->V) bc->V = z->V;
    if (z->T) bc->T = z->T;
    if (z->B) bc->B = z->B;
    if (z->C) bc->C = z->C;
    if (z->L) bc->L = z->L;
    if (z->NH) bc->NH = z->NH;
    if (a->replicas > bc->B)
        return qkt_cli_err("qkt bench: --replicas %d: expected at most the batch size %d\n", a->replicas, bc->B), 2;
    if (bc->C % bc->NH) return qkt_cli_err("qkt bench: --n-head %d: expected a divisor of the width %d\n", bc->NH, bc->C), 2;
    if ((int64_t)bc->B * bc->T > QKT_TRAIN_MAX_BATCH_TOKENS) /* the trainer's bound on one step's (B, T) arrays */
        return qkt_cli_err("qkt bench: --batch %d x --seq %d: expected at most 2^28 tokens a step\n", bc->B, bc->T), 2;
    return 0;
}

/* An mfu above 1 is no fraction of a peak: the peak given (or measured on one n x n
 * product) is below the rate the step itself ran at. The line keeps its number; this says
 * so beside it. */
static void warn_mfu(const bench_args *a, double peak, double rate) {
    if (rate <= peak) return;
    if (a->peak > 0)
        qkt_cli_err("qkt bench: warning: --peak %g GFLOP/s is below the rate the step ran at (%.1f GFLOP/s), "
                    "so the mfu is not a fraction of a peak\n",
                    peak, rate);
    else
        qkt_cli_err("qkt bench: warning: the sgemm peak measured at --peak-n %d, %.1f GFLOP/s, is below the rate "
                    "the step ran at (%.1f GFLOP/s), so the mfu is not a fraction of a peak (give --peak)\n",
                    a->peak_n, peak, rate);
}

int qkt_cmd_bench(int argc, char **argv) {
    bench_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    qkt_set_threads(a.threads);
    int threads = qkt_get_threads();
    if (a.want_peak) {
        double g = qkt_bench_gemm_rate(false, false, a.peak_n, a.peak_n, a.peak_n, 0, 5, 0); /* C = A B, n x n */
        printf("qkt sgemm threads=%d n=%d gflops=%.1f isa=%s\n", threads, a.peak_n, g, qkt_isa_name());
        return 0;
    }
    if (a.want_ops) {
        bench_ops(threads, a.warmup, a.steps);
        return 0;
    }
    bench_config bc;
    if ((rc = choose_config(&a, &bc))) return rc;
    if (a.want_shapes) {
        gemm_shapes(&bc, a.replicas, threads);
        return 0;
    }
    qkt_err err = {{0}};
    qkt_train_config c = train_config(&bc, a.replicas);
    qkt_bench_stats st;
    if (qkt_bench_steps(&c, a.warmup, a.steps, &st, &err)) {
        qkt_cli_err("qkt bench: %s\n", err.msg);
        return 1;
    }
    double t = st.step_s, flops = st.flops; /* st.peak_rss_mb: before the sgemm peak's matrices (3 n^2 floats) exist */
    double peak = a.peak > 0 ? a.peak : qkt_bench_gemm_rate(false, false, a.peak_n, a.peak_n, a.peak_n, 0, 3, 0);
    printf("qkt %s threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mb=%.1f mfu=%.3f isa=%s\n", bc.name, threads,
           t * 1e3, (double)bc.B * bc.T / t, st.peak_rss_mb, flops / t / (peak * 1e9), qkt_isa_name());
    const char *wait = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    char pk[32]; /* a --peak below 1 as given, not as 0.0 */
    snprintf(pk, sizeof pk, peak >= 1 ? "%.1f" : "%.3g", peak);
    qkt_cli_err("qkt bench: V=%d T=%d B=%d C=%d L=%d NH=%d, replicas %d, %.3f GFLOP per step, sgemm peak %s GFLOP/s, "
                "cpu_ms_per_step=%.2f, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n",
                bc.V, bc.T, bc.B, bc.C, bc.L, bc.NH, a.replicas, flops * 1e-9, pk, st.cpu_s * 1e3,
                wait ? wait : "(unset)", spin ? spin : "(unset)");
    warn_mfu(&a, peak, flops / t * 1e-9);
    return 0;
}
