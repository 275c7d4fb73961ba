/* qkt bench's library half: a trainer fed the caller's batches steps exactly like one
 * that draws them from its data, the timed steps (stats, refusals, a diverging run), the
 * step's products against the FLOP formula, and the gemm rate. */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"
#include "qkt_trainer.h"

static qkt_train_config small_config(void) {
    qkt_train_config c = qkt_train_config_default();
    c.model.n_layer = 2, c.model.n_head = 2, c.model.n_embd = 16, c.model.block_size = 16;
    c.model.dropout = 0.1; /* the dropout stream must advance the same way too */
    c.batch_size = 4, c.steps = 5, c.seed = 3;
    return c;
}

/* The trainer with data "mqar" and the one without data, fed the same batches from a copy
 * of that data source: the same losses, norms and parameters, bit for bit. */
static void test_caller_batches(void) {
    qkt_err err = {{0}};
    qkt_train_config a = small_config(), b = small_config();
    a.data = "mqar";
    b.data = NULL, b.model.vocab_size = 32; /* mqar's default vocabulary */
    qkt_trainer ta, tb;
    EXPECT(qkt_trainer_init(&ta, &a, &err) == 0, "init with data: %s", err.msg);
    EXPECT(qkt_trainer_init(&tb, &b, &err) == 0, "init without data: %s", err.msg);
    EXPECT(tb.data == NULL && tb.T == 16 && tb.gpt.cfg.vocab_size == 32, "no-data trainer: T %d, V %d", tb.T,
           tb.gpt.cfg.vocab_size);
    EXPECT(ta.gpt.params.size == tb.gpt.params.size, "parameter counts %lld, %lld", (long long)ta.gpt.params.size,
           (long long)tb.gpt.params.size);
    qkt_data *d;
    qkt_data_opts o = {.seq_len = a.model.block_size, .seed = a.seed};
    EXPECT(qkt_data_open(&d, "mqar", &o, &err) == 0, "%s", err.msg);
    for (int s = 0; s < 4; s++) {
        qkt_data_batch(d, QKT_SPLIT_TRAIN, b.batch_size, tb.idx, tb.tgt, NULL);
        qkt_step_stats sa, sb;
        qkt_trainer_step(&ta, &sa);
        qkt_trainer_step(&tb, &sb);
        EXPECT(!memcmp(ta.idx, tb.idx, (size_t)b.batch_size * 16 * sizeof *ta.idx), "step %d: other batch", s);
        EXPECT(sa.finite && sb.finite && sa.loss == sb.loss && sa.grad_norm == sb.grad_norm && sa.lr == sb.lr,
               "step %d: loss %.9g / %.9g, norm %.9g / %.9g", s, sa.loss, sb.loss, sa.grad_norm, sb.grad_norm);
    }
    EXPECT(!memcmp(ta.gpt.params.data, tb.gpt.params.data, (size_t)ta.gpt.params.size * sizeof(qkt_real)),
           "parameters differ after 4 steps");
    EXPECT(tb.step == 4, "step count %lld", (long long)tb.step);
    qkt_data_free(d);
    qkt_trainer_free(&ta);
    qkt_trainer_free(&tb);
}

static qkt_train_config bench_config(int V, int T, int B, int C, int L, int NH, int replicas) {
    qkt_train_config c = qkt_bench_config_default();
    c.model.vocab_size = V, c.model.block_size = T, c.model.n_embd = C, c.model.n_layer = L, c.model.n_head = NH;
    c.batch_size = B, c.replicas = replicas;
    return c;
}

static void test_flops_and_products(void) {
    qkt_train_config tiny = bench_config(65, 64, 16, 64, 2, 4, 1);
    /* 6 B T (12 L C^2 + V C) + 6 B L T^2 C, by hand: 629538816 + 50331648 */
    EXPECT(qkt_train_step_flops(&tiny) == 679870464.0, "tiny: %.0f FLOPs", qkt_train_step_flops(&tiny));

    int V = 11, T = 8, B = 4, C = 16, L = 3, R = 2;
    qkt_train_config c = bench_config(V, T, B, C, L, 2, R);
    qkt_bench_product p[QKT_BENCH_PRODUCTS];
    qkt_bench_step_products(&c, p);
    double sum = 0;
    for (int i = 0; i < QKT_BENCH_PRODUCTS; i++) sum += 2.0 * p[i].M * p[i].N * p[i].K * p[i].per_step * R;
    double attention = 6.0 * B * L * T * T * C;
    EXPECT(sum == qkt_train_step_flops(&c) - attention, "products %.0f FLOPs, formula %.0f", sum,
           qkt_train_step_flops(&c) - attention);
    /* rows = B / R * T = 16: c_fc's forward, lm_head's dw as `qkt bench --gemm-shapes` prints them */
    EXPECT(!strcmp(p[6].layer, "c_fc") && !strcmp(p[6].op, "forward") && p[6].M == 16 && p[6].N == 64 && p[6].K == 16 &&
               !p[6].ta && p[6].tb && p[6].beta == 1 && p[6].per_step == L,
           "c_fc forward: %s %s M=%d N=%d K=%d", p[6].layer, p[6].op, p[6].M, p[6].N, p[6].K);
    EXPECT(!strcmp(p[14].layer, "lm_head") && !strcmp(p[14].op, "dw") && p[14].M == V && p[14].N == C && p[14].K == 16 &&
               p[14].ta && !p[14].tb && p[14].per_step == 1,
           "lm_head dw: %s %s M=%d N=%d K=%d", p[14].layer, p[14].op, p[14].M, p[14].N, p[14].K);
    EXPECT(!strcmp(p[4].op, "dx") && p[4].beta == 0 && !p[4].ta && !p[4].tb, "dX = dY W overwrites");

    double g = qkt_bench_gemm_rate(false, false, 32, 32, 32, 0, 2, 0);
    EXPECT(g > 0 && isfinite(g), "gemm rate %g GFLOP/s", g);
    g = qkt_bench_gemm_rate(true, false, 16, 8, 24, 1, 2, 1e-3);
    EXPECT(g > 0 && isfinite(g), "batched gemm rate %g GFLOP/s", g);
}

static void test_bench_steps(void) {
    qkt_err err = {{0}};
    qkt_bench_stats st = {0};
    qkt_train_config c = bench_config(11, 8, 4, 16, 1, 2, 1);
    EXPECT(qkt_bench_steps(&c, 1, 3, &st, &err) == 0, "bench: %s", err.msg);
    EXPECT(st.step_s > 0 && st.step_s < 60 && st.cpu_s >= 0 && st.peak_rss_mb > 0 && st.flops == qkt_train_step_flops(&c),
           "stats: step %g s, cpu %g s, rss %g MB, %g FLOPs", st.step_s, st.cpu_s, st.peak_rss_mb, st.flops);
    c.replicas = 2;
    EXPECT(qkt_bench_steps(&c, 0, 2, &st, &err) == 0, "two replicas: %s", err.msg);

    c = bench_config(11, 8, 4, 30, 1, 4, 1);
    EXPECT(qkt_bench_steps(&c, 0, 1, &st, &err) == -1 && !strcmp(err.msg, "qkt_bench_steps: n_embd 30 is not divisible by n_head 4"),
           "bad config: %s", err.msg);
    /* a learning rate that blows the weights up: a later step's loss or grad norm is not finite
     * (the step after the blow-up in float32; float64's range holds one step longer) */
    c = bench_config(11, 8, 4, 16, 1, 2, 1);
    c.lr = 1e30;
    const char *at = sizeof(qkt_real) == 4 ? "at step 1" : "at step 2";
    EXPECT(qkt_bench_steps(&c, 0, 3, &st, &err) == -1 && strstr(err.msg, " is ") && strstr(err.msg, at),
           "diverging run (want %s): %s", at, err.msg);
}

int main(void) {
    qkt_set_threads(1);
    test_caller_batches();
    test_flops_and_products();
    test_bench_steps();
    return qkt_test_finish();
}
