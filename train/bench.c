/* qkt bench's measurements: the trainer's step timed on random tokens, its analytic FLOPs,
 * and the rate of single products (docs/performance.md). */
#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "qkt_trainer.h"
#include "train_internal.h"

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

qkt_train_config qkt_bench_config_default(void) {
    qkt_train_config c = qkt_train_config_default();
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    c.data = NULL;
    c.model.dropout = 0, c.model.bias = true;
    c.optim = QKT_OPTIM_ADAMW, c.schedule = QKT_SCHED_CONSTANT, c.lr = 1e-3, c.warmup_steps = 0;
    c.weight_decay = 0.1, c.beta1 = oc.beta1, c.beta2 = oc.beta2, c.grad_clip = 0;
    return c;
}

double qkt_train_step_flops(const qkt_train_config *c) {
    const qkt_gpt_config *m = &c->model;
    double B = c->batch_size, T = m->block_size, C = m->n_embd, L = m->n_layer, V = m->vocab_size;
    return 6 * B * T * (12 * L * C * C + V * C) + 6 * B * L * T * T * C;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int qkt_bench_steps(const qkt_train_config *c, int warmup, int steps, qkt_bench_stats *st, qkt_err *err) {
    QKT_CHECK(!c->data && warmup >= 0 && steps >= 1, "qkt_bench_steps: data %s, warmup %d, steps %d (expected no data, "
              "warmup >= 0, steps >= 1)", c->data ? c->data : "NULL", warmup, steps);
    qkt_train_config cfg = *c;
    cfg.steps = (int64_t)warmup + steps; /* the schedule's length */
    qkt_train_config_resolve(&cfg);
    if (qkt__train_config_check(&cfg, err)) return qkt__err_call(err, "qkt_bench_steps");
    qkt_trainer t;
    if (qkt__trainer_init_valid(&t, &cfg, err)) return -1;
    int V = t.cfg.model.vocab_size;
    size_t n = (size_t)t.cfg.batch_size * t.T;
    qkt_rng rng;
    qkt_rng_seed(&rng, c->seed);
    double *times = qkt_malloc((size_t)steps * sizeof *times), *cpu = qkt_malloc((size_t)steps * sizeof *cpu);
    int rc = 0;
    for (int s = 0; s < warmup + steps && !rc; s++) {
        /* A fresh random batch each step (drawn outside the timed region). */
        for (size_t i = 0; i < n; i++) t.idx[i] = (int32_t)qkt_rng_below(&rng, (uint32_t)V);
        for (size_t i = 0; i < n; i++) t.tgt[i] = (int32_t)qkt_rng_below(&rng, (uint32_t)V);
        qkt_step_stats ss;
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        qkt_trainer_step(&t, &ss);
        double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (!isfinite(ss.loss)) rc = qkt_err_set(err, "loss is %g at step %d", ss.loss, s);
        else if (!ss.finite) rc = qkt_err_set(err, "grad norm is %g at step %d", ss.grad_norm, s);
        else if (s >= warmup) times[s - warmup] = dt, cpu[s - warmup] = dc;
    }
    if (!rc) {
        st->step_s = median(times, steps);
        st->cpu_s = median(cpu, steps);
        st->flops = qkt_train_step_flops(&t.cfg);
    }
    free(times), free(cpu);
    qkt_trainer_free(&t);
    if (!rc) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        st->peak_rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
    }
    return rc;
}

void qkt_bench_step_products(const qkt_train_config *c, qkt_bench_product out[QKT_BENCH_PRODUCTS]) {
    const qkt_gpt_config *m = &c->model;
    int C = m->n_embd, L = m->n_layer, rows = c->batch_size / c->replicas * m->block_size;
    const struct {
        const char *name;
        int in, out, per_step;
    } lin[] = {{"c_attn", C, 3 * C, L}, {"attn.c_proj", C, C, L}, {"c_fc", C, 4 * C, L}, {"mlp.c_proj", 4 * C, C, L},
               {"lm_head", C, m->vocab_size, 1}};
    static const char *const ops[] = {"forward", "dx", "dw"};
    int k = 0;
    for (int l = 0; l < 5; l++)
        for (int op = 0; op < 3; op++, k++) {
            qkt_bench_product *p = &out[k];
            int in = lin[l].in, o = lin[l].out;
            *p = (qkt_bench_product){.layer = lin[l].name, .op = ops[op], .ta = op == 2, .tb = op == 0,
                                     .beta = op == 1 ? 0 : 1, .per_step = lin[l].per_step};
            if (op == 0) p->M = rows, p->N = o, p->K = in;      /* y = x W^T (+ b: beta 1) */
            else if (op == 1) p->M = rows, p->N = in, p->K = o; /* dX = dY W */
            else p->M = o, p->N = in, p->K = rows;              /* dW += dY^T x */
        }
}

/* The best of `timings` timings on the clock id (wall or the process's CPU time). */
static double gemm_rate(clockid_t clock, bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s) {
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    qkt_real *a = qkt_malloc(na * sizeof *a), *b = qkt_malloc(nb * sizeof *b), *c = qkt_malloc(nc * sizeof *c);
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
        double t0 = clock_s(clock);
        for (int i = 0; i < reps; i++) qkt_gemm(ta, tb, M, N, K, 1, a, ta ? M : K, b, tb ? K : N, beta, c, N);
        double dt = (clock_s(clock) - t0) / reps;
        if (dt < best) best = dt;
    }
    free(a), free(b), free(c);
    return flops / best * 1e-9;
}

double qkt_bench_gemm_rate(bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s) {
    return gemm_rate(CLOCK_MONOTONIC, ta, tb, M, N, K, beta, timings, batch_s);
}

double qkt_bench_gemm_rate_cpu(bool ta, bool tb, int M, int N, int K, qkt_real beta, int timings, double batch_s) {
    return gemm_rate(CLOCK_PROCESS_CPUTIME_ID, ta, tb, M, N, K, beta, timings, batch_s);
}
