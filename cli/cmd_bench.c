/* qkt bench: steady-state training-step time of the GPT model (forward, backward,
 * AdamW update), and the machine's sgemm peak that MFU is measured against.
 *
 * One line per run, the format bench/torch_gpt.py prints too:
 *   qkt NAME threads=N ms_per_step=X tokens_per_s=Y peak_rss_mb=Z mfu=W isa=P
 * (isa: the kernel path that ran, qkt_isa_name; PyTorch prints no isa).
 * ms_per_step is the median over --steps timed steps after --warmup untimed ones.
 * mfu = analytic training FLOPs per step / step time / sgemm peak, where
 *   FLOPs = 6 B T (12 L C^2 + V C)  +  6 B L T^2 C
 * (matmul weights: 2 flops per weight and token forward, 4 backward, the tied head
 * included; causal attention: q k^T and P v over the T^2/2 visible pairs, times three
 * for training). docs/performance.md derives it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "qkt_autograd.h"
#include "cli.h"
#include "flags.h"
#include "qkt_nn.h"
#include "qkt_optim.h"
#include "qkt_trainer.h"

typedef struct {
    const char *name;
    int V, T, B, C, L, NH;
} bench_config;

/* The configurations (V vocab, T length, B batch, C width, L layers, NH heads): the
 * issue's three, and two cells of the study's quick preset (`qkt ablate --preset quick`:
 * mqar's 32 tokens, T 32, B 32, 2 layers, 2 heads; d_k 16, and d_k 64 of its init sweep). */
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

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

/* GFLOP/s of one qkt_gemm shape (threads as set): the best of `timings` timings, each of
 * one call, or (batch_s > 0) of enough calls for about batch_s seconds. */
static double gemm_rate(bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s) {
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    qkt_real *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
    QKT_CHECK(a && b && c, "out of memory for a %d x %d x %d product", M, N, K);
    qkt_rng r;
    qkt_rng_seed(&r, 2);
    for (size_t i = 0; i < na; i++) a[i] = (qkt_real)(qkt_rng_uniform(&r) - 0.5);
    for (size_t i = 0; i < nb; i++) b[i] = (qkt_real)(qkt_rng_uniform(&r) - 0.5);
    for (size_t i = 0; i < nc; i++) c[i] = 0;
    double flops = 2.0 * M * N * K;
    int reps = batch_s > 0 ? (int)(batch_s * 100e9 / flops) + 1 : 1;
    qkt_gemm(ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, beta, c, N); /* warm-up: thread start, page faults */
    double best = 1e30;
    for (int t = 0; t < timings; t++) {
        double t0 = now_s();
        for (int i = 0; i < reps; i++) qkt_gemm(ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, beta, c, N);
        double dt = (now_s() - t0) / reps;
        if (dt < best) best = dt;
    }
    free(a), free(b), free(c);
    return flops / best * 1e-9;
}

/* The sgemm peak: best of `reps` single products C = A B of n x n matrices. */
static double sgemm_peak(int n, int reps) { return gemm_rate(false, false, n, n, n, 0, reps, 0); }

/* --gemm-shapes: the products of one training step of config bc as qkt_affine makes them
 * (forward x W^T, dX = dY W, dW += dY^T x) for each linear layer, on rows = the rows of
 * one replica's shard, on the thread team as set; a line each, then all the step's
 * products (every layer, every replica, one after another) at those rates. */
static void gemm_shapes(const bench_config *bc, int replicas, int threads) {
    int C = bc->C, rows = bc->B / replicas * bc->T;
    const struct {
        const char *name;
        int in, out, per_step; /* per_step: layers using it */
    } lin[] = {{"c_attn", C, 3 * C, bc->L}, {"attn.c_proj", C, C, bc->L}, {"c_fc", C, 4 * C, bc->L},
               {"mlp.c_proj", 4 * C, C, bc->L}, {"lm_head", C, bc->V, 1}};
    double total_flops = 0, total_s = 0;
    for (int l = 0; l < 5; l++)
        for (int op = 0; op < 3; op++) {
            int in = lin[l].in, out = lin[l].out, M, N, K;
            bool ta = op == 2, tb = op == 0;
            if (op == 0) M = rows, N = out, K = in;      /* y = x W^T (+ b: beta 1) */
            else if (op == 1) M = rows, N = in, K = out; /* dX = dY W */
            else M = out, N = in, K = rows;              /* dW += dY^T x */
            double g = gemm_rate(ta, tb, M, N, K, op == 1 ? 0 : 1, 5, 2e-2), f = 2.0 * M * N * K * lin[l].per_step * replicas;
            total_flops += f, total_s += f / (g * 1e9);
            printf("qkt gemm %s %s threads=%d M=%d N=%d K=%d gflops=%.1f isa=%s\n", lin[l].name,
                   op == 0 ? "forward" : op == 1 ? "dx" : "dw", threads, M, N, K, g, qkt_isa_name());
        }
    printf("qkt gemm step threads=%d ms=%.2f gflops=%.1f isa=%s\n", threads, total_s * 1e3, total_flops / total_s * 1e-9,
           qkt_isa_name());
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

static double bench_flops(const bench_config *c) {
    double B = c->B, T = c->T, C = c->C, L = c->L, V = c->V;
    return 6 * B * T * (12 * L * C * C + V * C) + 6 * B * L * T * T * C;
}

/* Times the training steps; fills the median step time (s) and the median CPU time of
 * the process per step (all threads: on a loaded machine, wall time minus waiting).
 * Returns 0, or -1 with a message. */
static int run_model(const bench_config *bc, int replicas, int warmup, int steps, double *median_s, double *median_cpu_s,
                     qkt_err *err) {
    qkt_gpt_config cfg = qkt_gpt_config_default();
    cfg.vocab_size = bc->V, cfg.block_size = bc->T, cfg.n_layer = bc->L, cfg.n_head = bc->NH, cfg.n_embd = bc->C;
    cfg.dropout = 0, cfg.bias = true;
    qkt_gpt g;
    if (qkt_gpt_init(&g, &cfg, err)) return -1;
    qkt_rng rng;
    qkt_rng_seed(&rng, 1337);
    qkt_gpt_init_weights(&g, &rng);
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    oc.weight_decay = 0.1;
    qkt_optim opt;
    qkt_optim_init(&opt, &g.params, &oc);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_dp dp;
    qkt_dp_init(&dp, &ctx, &g.params, replicas);
    size_t n = (size_t)bc->B * bc->T;
    int32_t *idx = malloc(n * sizeof *idx), *tgt = malloc(n * sizeof *tgt);
    double *times = malloc((size_t)steps * sizeof *times), *cpu = malloc((size_t)steps * sizeof *cpu);
    QKT_CHECK(idx && tgt && times && cpu, "out of memory");
    for (int s = 0; s < warmup + steps; s++) {
        /* A fresh random batch each step (drawn outside the timed region). */
        for (size_t i = 0; i < n; i++) idx[i] = (int32_t)qkt_rng_below(&rng, (uint32_t)bc->V);
        for (size_t i = 0; i < n; i++) tgt[i] = (int32_t)qkt_rng_below(&rng, (uint32_t)bc->V);
        double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        double loss = qkt_dp_forward_backward(&dp, &g, idx, tgt, bc->B, bc->T);
        qkt_optim_step(&opt, 1e-3);
        double t = now_s() - t0, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (!isfinite(loss)) {
            qkt_err_set(err, "loss is %g at step %d", loss, s);
            break;
        }
        if (s >= warmup) times[s - warmup] = t, cpu[s - warmup] = c;
    }
    *median_s = median(times, steps);
    *median_cpu_s = median(cpu, steps);
    free(times), free(cpu), free(idx), free(tgt);
    qkt_dp_free(&dp);
    qkt_ctx_free(&ctx);
    qkt_optim_free(&opt);
    qkt_gpt_free(&g);
    return err && err->msg[0] ? -1 : 0;
}

typedef struct {
    const char *config;
    bench_config sizes; /* the size flags; 0: the config's */
    int threads, replicas, steps, warmup, peak_n;
    double peak;
    bool want_peak, want_shapes;
} bench_args;
static const bench_args bench_defaults = {.replicas = 1, .steps = 10, .warmup = 3, .peak_n = 2048};
#define BENCH_MAX_VOCAB (1 << 20)
#define BENCH_MAX_STEPS 100000 /* --steps and --warmup */
#define BENCH_MIN_PEAK_N 64
#define BENCH_MAX_PEAK_N 16384
#define BENCH_MAX_PEAK 1e9     /* GFLOP/s */

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
        {"peak", QKT_FLAG_DOUBLE, &a->peak, "sgemm peak GFLOP/s for mfu (0 = measure it first)", 0, BENCH_MAX_PEAK, false, false},
    };
    int nf = (int)(sizeof flags / sizeof flags[0]);
    int rc = qkt_flags_parse("bench",
                             "Time qkt's steady-state GPT training steps (forward, backward, AdamW), or the sgemm peak.\n"
                             "qkt only: bench/compare.sh runs PyTorch's step (bench/torch_gpt.py) beside it.",
                             flags, nf, argc, argv, NULL, 0, NULL);
    if (!rc) rc = qkt_flags_threads("bench", flags, nf, &a->threads);
    return rc == 1 ? -1 : rc ? 2 : 0;
}

/* --config, then the size flags over it -> *bc. 0, or 2 after a one-line error. */
static int choose_config(const bench_args *a, bench_config *bc) {
    const bench_config *z = &a->sizes;
    bool custom = z->V || z->T || z->B || z->C || z->L || z->NH;
    *bc = configs[0];
    if (a->config) {
        int found = -1;
        for (int i = 0; i < n_configs; i++)
            if (!strcmp(a->config, configs[i].name)) found = i;
        if (found < 0) return fprintf(stderr, "qkt bench: --config '%s': expected %s\n", a->config, config_names()), 2;
        *bc = configs[found];
    } else if (!custom) {
        return fprintf(stderr, "qkt bench: --config: expected %s (or the model flags, or --sgemm-peak)\n", config_names()), 2;
    }
    if (custom) bc->name = "custom";
    if (z->V) bc->V = z->V;
    if (z->T) bc->T = z->T;
    if (z->B) bc->B = z->B;
    if (z->C) bc->C = z->C;
    if (z->L) bc->L = z->L;
    if (z->NH) bc->NH = z->NH;
    if (a->replicas > bc->B)
        return fprintf(stderr, "qkt bench: --replicas %d: expected at most the batch size %d\n", a->replicas, bc->B), 2;
    if (bc->C % bc->NH) return fprintf(stderr, "qkt bench: --n-head %d: expected a divisor of the width %d\n", bc->NH, bc->C), 2;
    return 0;
}

int qkt_cmd_bench(int argc, char **argv) {
    bench_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    qkt_set_threads(a.threads);
    int threads = qkt_get_threads();
    if (a.want_peak) {
        printf("qkt sgemm threads=%d n=%d gflops=%.1f isa=%s\n", threads, a.peak_n, sgemm_peak(a.peak_n, 5), qkt_isa_name());
        return 0;
    }
    bench_config bc;
    if ((rc = choose_config(&a, &bc))) return rc;
    if (a.want_shapes) {
        gemm_shapes(&bc, a.replicas, threads);
        return 0;
    }
    qkt_err err = {{0}};
    double t, cpu;
    if (run_model(&bc, a.replicas, a.warmup, a.steps, &t, &cpu, &err)) {
        fprintf(stderr, "qkt bench: %s\n", err.msg);
        return 1;
    }
    double rss = peak_rss_mb(); /* before the sgemm peak's matrices (3 n^2 floats) exist */
    double peak = a.peak > 0 ? a.peak : sgemm_peak(a.peak_n, 3);
    double flops = bench_flops(&bc);
    printf("qkt %s threads=%d ms_per_step=%.2f tokens_per_s=%.0f peak_rss_mb=%.1f mfu=%.3f isa=%s\n", bc.name, threads,
           t * 1e3, (double)bc.B * bc.T / t, rss, flops / t / (peak * 1e9), qkt_isa_name());
    const char *wait = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    fprintf(stderr,
            "qkt bench: V=%d T=%d B=%d C=%d L=%d NH=%d, replicas %d, %.3f GFLOP per step, sgemm peak %.1f GFLOP/s, "
            "cpu_ms_per_step=%.2f, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s\n",
            bc.V, bc.T, bc.B, bc.C, bc.L, bc.NH, a.replicas, flops * 1e-9, peak, cpu * 1e3, wait ? wait : "(unset)",
            spin ? spin : "(unset)");
    return 0;
}
