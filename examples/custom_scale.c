/* A scale variant the qkt CLI does not have, registered by this program and then used
 * through the library's own code paths, the ones `qkt train` and `qkt ablate` run:
 *
 *   "qk_rmsnorm": per head, q and k are RMS-normalised (no mean subtraction, RMSNorm) with
 *   a learned gain of d_k channels shared by the heads (init 1), then s = 1/sqrt(d_k).
 *
 * 1. registers it (qkt_attn_variant_register): its tensors, their init, its forward;
 * 2. trains it in a run directory with the training session (as `qkt train`), pausing
 *    halfway and resuming; the checkpoint's metadata names the variant;
 * 3. reloads the checkpoint (qkt_gpt_open) and checks the weights are the trainer's;
 * 4. runs a tiny study (as `qkt ablate`) on sqrt_dk, power:0.75 and qk_rmsnorm in one
 *    call (qkt_ablate_run_study): its cells run in children forked from this program, so
 *    the registered variant is there with them.
 *
 * Build: cc custom_scale.c $(pkg-config --cflags --libs qkt) -lm -o custom_scale
 * Run:   ./custom_scale [DIR] [STEPS]    (DIR default custom_scale_runs, STEPS default 40) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qkt.h"

/* ---------------------------------------------------------------- the variant */
static void rms_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    (void)c;
    int d = a->n_embd / a->n_head;
    qkt_attn_param(a, p, "q_gain", 1, (int[]){d}, 0); /* a->vp[0]: <layer>.attn.q_gain (d_k) */
    qkt_attn_param(a, p, "k_gain", 1, (int[]){d}, 0); /* a->vp[1] */
}

static void rms_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *rng) {
    (void)a, (void)i, (void)rng;
    for (int64_t j = 0; j < t->size; j++) t->data[j] = 1;
}

/* (B, T, C) -> RMSNorm over each head's d_k channels -> (B, T, C) */
static qkt_tensor *head_rms(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *gain, int H) {
    int B = x->shape[0], T = x->shape[1], C = x->shape[2];
    qkt_tensor *x4 = qkt_reshape(ctx, x, 4, (int[]){B, T, H, C / H});
    return qkt_reshape(ctx, qkt_rmsnorm(ctx, x4, gain, 1e-6), 3, (int[]){B, T, C});
}

static void rms_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) {
    qkt_attn_split(ctx, a, qkt_attn_project(ctx, a, io->x), io); /* io->q, io->k, io->v (B, T, C) */
    io->q = head_rms(ctx, io->q, a->vp[0], a->n_head);
    io->k = head_rms(ctx, io->k, a->vp[1], a->n_head);
}

static int register_variant(void) {
    qkt_attn_variant v = {.name = "qk_rmsnorm", .summary = "RMSNorm(d_k) on q and k, then 1/sqrt(d_k)",
                          .add = rms_add, .init = rms_init, .forward = rms_forward}; /* scale NULL: 1/sqrt(d_k) */
    qkt_err err;
    if (qkt_attn_variant_register(&v, NULL, &err)) return fprintf(stderr, "custom_scale: %s\n", err.msg), -1;
    return 0;
}

/* ---------------------------------------------------------------- 2, 3: train, resume, reload */
static int train(const char *dir, int steps) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    qkt_err err;
    snprintf(r.data, sizeof r.data, "mqar");
    r.tc.model.n_layer = 2, r.tc.model.n_head = 2, r.tc.model.n_embd = 32, r.tc.model.block_size = 32;
    r.tc.batch_size = 8, r.tc.steps = steps, r.tc.lr = 3e-3;
    r.eval_every = steps / 2, r.eval_batches = 2;
    if (qkt_attn_scale_parse("qk_rmsnorm", &r.tc.model.attn_scale, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    char run_dir[1024], ckpt[1100];
    snprintf(run_dir, sizeof run_dir, "%s/train", dir);
    for (int resume = 0; resume < 2; resume++) { /* pause at half, then resume: as qkt train --resume */
        qkt_session s;
        qkt_session_status st = qkt_session_open(&s, &r, run_dir, resume, &err);
        if (st != QKT_SESSION_OK || qkt_session_begin(&s, &err)) {
            fprintf(stderr, "custom_scale: %s%s\n", err.msg, st == QKT_SESSION_ERR_EXISTS ? " (give a new DIR)" : "");
            qkt_session_close(&s);
            return 1;
        }
        qkt_session_opts o = {.pause_at = resume ? 0 : steps / 2};
        qkt_session_end e = qkt_session_run(&s, &o, &err);
        printf("train qk_rmsnorm: %s at step %lld, val loss %.4f\n", e == QKT_SESSION_PAUSED ? "paused" : "done",
               (long long)s.t.step, s.val_loss);
        bool ok = e == (resume ? QKT_SESSION_DONE : QKT_SESSION_PAUSED);
        if (!ok) fprintf(stderr, "custom_scale: training ended with status %d: %s\n", (int)e, err.msg);
        if (ok && resume) { /* 3: the checkpoint reloads as a model of this variant, with the trainer's weights */
            snprintf(ckpt, sizeof ckpt, "%s/ckpt.safetensors", run_dir);
            qkt_gpt g;
            if (qkt_gpt_open(ckpt, &g, &err)) {
                fprintf(stderr, "custom_scale: %s\n", err.msg);
                ok = false;
            } else {
                ok = g.params.size == s.t.gpt.params.size &&
                     !memcmp(g.params.data, s.t.gpt.params.data, (size_t)g.params.size * sizeof(qkt_real));
                printf("reloaded %s: attn_scale %s, %lld values, %s the trainer's\n", ckpt, qkt_attn_scale_name(g.cfg.attn_scale),
                       (long long)g.params.size, ok ? "equal to" : "DIFFERENT FROM");
                qkt_gpt_free(&g);
            }
        }
        qkt_session_close(&s);
        if (!ok) return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- 4: a tiny study */
static int study(const char *dir, int steps) {
    qkt_ablate_cfg c;
    qkt_err err;
    if (qkt_ablate_preset("quick", &c, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    snprintf(c.name, sizeof c.name, "study");
    const char *names[] = {"sqrt_dk", "power:0.75", "qk_rmsnorm"};
    c.n_variants = 3;
    for (int i = 0; i < 3; i++)
        if (qkt_ablate_parse_variant("variants", names[i], &c.variants[i], &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    c.n_lr_variants = 2, c.lr_variants[0] = c.variants[0], c.lr_variants[1] = c.variants[2];
    c.run.tc.model.block_size = 16, c.run.tc.model.n_layer = 1, c.run.tc.batch_size = 8, c.seeds = 2, c.run.tc.steps = steps;
    c.run.eval_every = steps / 2;
    c.n_dk = 1, c.dks[0] = 8;
    c.n_lr = 2, c.lrs[0] = 1e-3, c.lrs[1] = 1e-2, c.lr_steps = steps / 2, c.lr_dk = 8;
    c.n_init_dk = 2, c.init_dks[0] = 4, c.init_dks[1] = 8;
    c.n_growth_dk = 2, c.growth_dks[0] = 4, c.growth_dks[1] = 8;
    c.workers = 2;
    char run_dir[1024];
    snprintf(run_dir, sizeof run_dir, "%s/%s", dir, c.name);
    if (qkt_ablate_run_study(&c, run_dir, NULL, &err)) return fprintf(stderr, "custom_scale: study: %s\n", err.msg), 1;
    printf("study of sqrt_dk, power:0.75, qk_rmsnorm: %s/report.md\n", run_dir);
    return 0;
}

int main(int argc, char **argv) {
    qkt_thread_env_reexec(argv); /* OpenMP threads that sleep when idle (docs/library.md) */
    if (register_variant()) return 1;
    const char *dir = argc > 1 ? argv[1] : "custom_scale_runs";
    int steps = argc > 2 ? atoi(argv[2]) : 40;
    if (steps < 4) return fprintf(stderr, "custom_scale: STEPS must be at least 4\n"), 2;
    qkt_err err;
    if (qkt_mkdirs(dir, &err)) return fprintf(stderr, "custom_scale: %s\n", err.msg), 1;
    return train(dir, steps) || study(dir, steps);
}
