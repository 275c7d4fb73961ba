/* A study of a scale variant this program registers, in one call. The variant:
 *
 *   "half_sqrt_dk": s = 0.5 / sqrt(d_k), the standard scale halved (a cooler softmax).
 *
 * It is registered (qkt_attn_variant_register), named in the study's variant lists like a
 * built-in, and the whole study (checks, the run directory's lock, resume, every cell,
 * the report) is qkt_ablate_run_study. Its cells run in children forked from this
 * program, so the registered variant is there with them: no child-process protocol here.
 * Rerunning the same command resumes (finished cells are kept).
 *
 * Build: cc prog.c $(pkg-config --cflags --libs qkt) -o prog
 * Run:   ./prog [DIR] [STEPS]    (DIR default study_variant_runs, STEPS default 40);
 *        the report is DIR/half/report.md */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qkt.h"

static double half_scale(const qkt_attn_variant *v, int n_embd, int d_k) {
    (void)v, (void)n_embd;
    return 0.5 / sqrt((double)d_k);
}

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    const char *dir = argc > 1 ? argv[1] : "study_variant_runs";
    int steps = argc > 2 ? atoi(argv[2]) : 40;
    if (steps < 4) return fprintf(stderr, "study_variant: STEPS must be at least 4\n"), 2;
    qkt_err err;
    qkt_attn_variant v = {.name = "half_sqrt_dk", .summary = "0.5 / sqrt(d_k)", .scale = half_scale};
    qkt_attn_scale half;
    if (qkt_attn_variant_register(&v, &half, &err)) return fprintf(stderr, "study_variant: %s\n", err.msg), 1;

    /* The quick preset, made tiny: one d_k, two seeds, two learning rates, no second task. */
    qkt_ablate_cfg c;
    if (qkt_ablate_preset("quick", &c, &err)) return fprintf(stderr, "study_variant: %s\n", err.msg), 1;
    snprintf(c.name, sizeof c.name, "half");
    c.n_variants = 2, c.variants[0] = QKT_ATTN_SQRT_DK, c.variants[1] = half;
    c.n_lr_variants = 2, c.lr_variants[0] = QKT_ATTN_SQRT_DK, c.lr_variants[1] = half;
    c.run.tc.model.block_size = 16, c.run.tc.model.n_layer = 1, c.run.tc.batch_size = 8, c.run.tc.steps = steps;
    c.run.eval_every = steps / 2, c.lr_eval_every = steps / 2;
    c.seeds = 2, c.n_dk = 1, c.dks[0] = 8;
    c.task2[0] = 0, c.n_task2_dk = 0, c.start_dk = 0, c.task2_start_dk = 0;
    c.n_lr = 2, c.lrs[0] = 1e-3, c.lrs[1] = 1e-2, c.lr_steps = steps / 2, c.lr_dk = 8, c.lr_seeds = 1;
    c.n_init_dk = 2, c.init_dks[0] = 4, c.init_dks[1] = 8;
    c.n_growth_dk = 2, c.growth_dks[0] = 4, c.growth_dks[1] = 8;
    c.workers = 2;

    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s/%s", dir, c.name);
    qkt_ablate_study_opts opts = {.verbose = true}; /* cells forked from here (exe NULL), progress on stderr */
    if (qkt_ablate_run_study(&c, run_dir, &opts, &err)) return fprintf(stderr, "study_variant: %s\n", err.msg), 1;
    printf("%s/report.md\n", run_dir);
    return 0;
}
