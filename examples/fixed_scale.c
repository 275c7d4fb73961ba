/* A new fixed attention scale plugged into the model: s = 1 / d_k^alpha (alpha = 0.5 is
 * the standard, 1 is muP's 1/d_k). The model scales q.k by its variant's s times the fixed
 * multiplier attn_temp, so the variant sqrt_dk with attn_temp = d_k^(0.5 - alpha) gives
 * exactly 1/d_k^alpha. This trains alpha = 0.75 and 0.5 side by side on mqar and prints the
 * logit std at init and the final loss.
 * Build: cc fixed_scale.c $(pkg-config --cflags --libs qkt) -lm -o fixed_scale */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qkt.h"

static int run(double alpha, int steps) {
    qkt_train_config c = qkt_train_config_default();
    c.data = "mqar";
    c.model.n_layer = 2, c.model.n_head = 2, c.model.n_embd = 64, c.model.block_size = 32;
    c.model.attn_scale = QKT_ATTN_SQRT_DK;
    int d_k = c.model.n_embd / c.model.n_head;
    c.model.attn_temp = pow(d_k, 0.5 - alpha); /* 1/sqrt(d_k) * d_k^(0.5 - alpha) = d_k^-alpha */
    c.batch_size = 16, c.steps = steps, c.lr = 3e-3;
    qkt_trainer t;
    qkt_err err;
    if (qkt_trainer_init(&t, &c, &err) != 0) return fprintf(stderr, "fixed_scale: %s\n", err.msg), 2;
    int L = c.model.n_layer, H = c.model.n_head;
    qkt_attn_stats *heads = qkt_calloc((size_t)L * H, sizeof *heads);
    qkt_eval ev = {.heads = heads};
    qkt_trainer_eval(&t, 2, c.batch_size, &ev);
    double init_std = heads[0].logit_std;
    qkt_step_stats st = {0};
    for (int s = 0; s < steps; s++) qkt_trainer_step(&t, &st);
    qkt_trainer_eval(&t, 4, c.batch_size, &ev);
    printf("alpha %.2f: s = %.4f, logit std at init (layer 0, head 0) %.4f, final val loss %.4f\n", alpha,
           pow(d_k, -alpha), init_std, ev.loss);
    free(heads);
    qkt_trainer_free(&t);
    return st.finite ? 0 : 1;
}

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    return run(0.75, steps) || run(0.5, steps);
}
