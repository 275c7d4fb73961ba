/* A tiny GPT trained on mqar (multi-query associative recall) through the library's
 * trainer, logging the loss and, at each evaluation, the attention entropy of every layer.
 * Usage: tiny_gpt [steps] [threads]   (QKT_THREADS works too)
 * Build: cc tiny_gpt.c $(pkg-config --cflags --libs qkt) -o tiny_gpt */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "qkt.h"

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    qkt_train_config c = qkt_train_config_default();
    c.data = "mqar";
    c.model.n_layer = 2, c.model.n_head = 4, c.model.n_embd = 64, c.model.block_size = 64;
    c.batch_size = 16;
    c.steps = argc > 1 ? atoi(argv[1]) : 200;
    c.lr = 3e-3;
    if (argc > 2) qkt_set_threads(atoi(argv[2]));

    qkt_trainer t;
    qkt_err err;
    if (qkt_trainer_init(&t, &c, &err) != 0) return fprintf(stderr, "tiny_gpt: %s\n", err.msg), 2;
    int L = c.model.n_layer, H = c.model.n_head;
    qkt_attn_stats *heads = qkt_calloc((size_t)L * H, sizeof *heads);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t s = 0; s < c.steps; s++) {
        qkt_step_stats st;
        qkt_trainer_step(&t, &st);
        if (!st.finite) return fprintf(stderr, "tiny_gpt: non-finite loss at step %lld\n", (long long)s), 1;
        if (s % 50 == 0 || s == c.steps - 1) {
            qkt_eval ev = {.heads = heads};
            qkt_trainer_eval(&t, 4, c.batch_size, &ev);
            printf("step %4lld  loss %.4f  val %.4f  acc %.3f  entropy/layer", (long long)s, st.loss, ev.loss, ev.acc);
            for (int l = 0; l < L; l++) {
                double e = 0;
                for (int h = 0; h < H; h++) e += heads[l * H + h].norm_entropy / H;
                printf(" %.3f", e);
            }
            printf("\n");
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / (double)c.steps;
    printf("%.2f ms/step (including the evaluations), %d threads\n", ms, qkt_get_threads());
    free(heads);
    qkt_trainer_free(&t);
    return 0;
}
