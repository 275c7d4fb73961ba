/* qkt step: one forward and backward of a GPT checkpoint on a batch, gradients out.
 * This is the hook for checking qkt against another framework (tests/torch/). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flags.h"
#include "qkt_gpt_io.h"
#include "qkt_io.h"
#include "qkt_optim.h"

#define MAX_LR 10 /* an AdamW step moves each weight by about lr: beyond this only overflow */

typedef struct {
    const char *ckpt, *batch, *out, *params_out;
    int threads;
    uint64_t seed;
    double adamw_lr, clip;
    qkt_optim_config oc;
} step_args;

/* Flags -> a. Returns 0, -1 after --help, or 2 after a one-line error. */
/* The smallest normal qkt_real: an eps below it is 0 or subnormal in the update. */
static double real_min(void) { return sizeof(qkt_real) == sizeof(float) ? FLT_MIN : DBL_MIN; }

static int parse(int argc, char **argv, step_args *a) {
    *a = (step_args){.oc = qkt_optim_defaults(QKT_OPTIM_ADAMW)}; /* torch.optim.AdamW's defaults */
    qkt_flag flags[] = {
        {"ckpt", QKT_FLAG_STRING, &a->ckpt, "model checkpoint (.safetensors with the config in __metadata__)", 1, 0, false, false},
        {"batch", QKT_FLAG_STRING, &a->batch, "batch: safetensors with 'idx' and 'targets', int32 (B, T) (see above)", 1, 0, false, false},
        {"out", QKT_FLAG_STRING, &a->out, "output: scalar 'loss' and every parameter's gradient under its name", 1, 0, false, false},
        {"threads", QKT_FLAG_INT, &a->threads, "threads (0 = all cores; default env QKT_THREADS, else all cores)", 0, QKT_FLAGS_MAX_THREADS, false, false},
        {"seed", QKT_FLAG_U64, &a->seed, "seed of the dropout draws (only if the config has dropout; default 0)", 1, 0, false, false},
        {"adamw-lr", QKT_FLAG_DOUBLE, &a->adamw_lr, "then apply one AdamW step (fresh state) with this lr ...", 0, MAX_LR, true, false},
        {"params-out", QKT_FLAG_STRING, &a->params_out, "... and write the updated model here (a checkpoint)", 1, 0, false, false},
        {"weight-decay", QKT_FLAG_DOUBLE, &a->oc.weight_decay, "AdamW decoupled weight decay on the 2-D weights (torch's; qkt train: 0.1)", 0, 1e300, false, false},
        {"beta1", QKT_FLAG_DOUBLE, &a->oc.beta1, "AdamW beta1", 0, QKT_FLAGS_BELOW_ONE, false, false},
        {"beta2", QKT_FLAG_DOUBLE, &a->oc.beta2, "AdamW beta2 (torch's; qkt train: 0.95)", 0, QKT_FLAGS_BELOW_ONE, false, false},
        {"eps", QKT_FLAG_DOUBLE, &a->oc.eps, "AdamW eps", 1, 0, true, false},
        {"grad-clip", QKT_FLAG_DOUBLE, &a->clip, "clip the global gradient norm before the step (0 = off)", 0, 1e300, false, false},
    };
    int n_flags = (int)(sizeof flags / sizeof flags[0]);
    int rc = qkt_flags_parse("step", "One forward and backward of a GPT checkpoint on a batch; writes the loss and every\n"
                                     "parameter's gradient (safetensors), for checks against other frameworks.\n"
                                     "--batch is a safetensors file with two tensors, 'idx' (inputs) and 'targets', both (B, T)\n"
                                     "with T <= the model's block_size, int32 (any integer dtype is read, e.g. torch's int64);\n"
                                     "idx in [0, vocab), targets in [0, vocab) or -1 (ignored). The loss is the mean over the\n"
                                     "counted targets. --adamw-lr with --params-out then applies one AdamW step from fresh\n"
                                     "state with torch.optim.AdamW's defaults (weight decay 0.01, betas 0.9/0.999, eps 1e-8;\n"
                                     "qkt train's are 0.1 and 0.9/0.95) on the 2-D weights.",
                             flags, n_flags, argc, argv, NULL, 0, NULL);
    if (!rc) rc = qkt_flags_threads("step", flags, n_flags, &a->threads);
    if (rc) return rc == 1 ? -1 : 2;
    for (int i = 0; i < 3; i++) /* ckpt, batch, out */
        if (!flags[i].seen) return qkt_cli_err("qkt step: --%s is required (run 'qkt step --help')\n", flags[i].name), 2;
    if (qkt_flag_seen(flags, n_flags, "adamw-lr") != qkt_flag_seen(flags, n_flags, "params-out"))
        return qkt_cli_err("qkt step: --adamw-lr and --params-out go together (one AdamW step, then the updated model)\n"), 2;
    if (a->oc.eps < real_min()) /* as a float32 it would be 0 or subnormal: denom 0, a step of inf */
        return qkt_cli_err("qkt step: --eps %g: expected a positive number >= %g (it is stored as the model's float)\n", a->oc.eps,
                           real_min()), 2;
    return 0;
}

int qkt_cmd_step(int argc, char **argv) {
    step_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    qkt_set_threads(a.threads);
    qkt_err err = {{0}};
    /* Outputs that cannot be written are refused before any work (exit 2). */
    if (qkt_check_output(a.out, &err)) return qkt_cli_err("qkt step: --out: %s\n", err.msg), 2;
    if (a.params_out && qkt_check_output(a.params_out, &err)) return qkt_cli_err("qkt step: --params-out: %s\n", err.msg), 2;
    /* An output that is an input would replace it (and with --params-out --out the grads
     * would be overwritten by the model): compared by device and inode. */
    const struct { const char *flag, *path; } io[] = {{"ckpt", a.ckpt}, {"batch", a.batch}, {"out", a.out}, {"params-out", a.params_out}};
    for (int i = 2; i < 4; i++)
        for (int j = 0; j < i; j++)
            if (io[i].path && io[j].path && (qkt_same_file(io[i].path, io[j].path) || !strcmp(io[i].path, io[j].path)))
                return qkt_cli_err("qkt step: --%s %s is the same file as --%s %s: pick another output\n", io[i].flag,
                                   io[i].path, io[j].flag, io[j].path), 2;
    qkt_gpt g;
    /* Unusable input files are refused like bad flags (exit 2); a failed write is exit 1. */
    if (qkt_gpt_open(a.ckpt, &g, &err)) return qkt_cli_err("qkt step: --ckpt: %s\n", err.msg), 2;
    int32_t *idx, *tgt;
    int B, T;
    if (qkt_gpt_batch_read(a.batch, &g.cfg, &idx, &tgt, &B, &T, &err)) {
        qkt_cli_err("qkt step: --batch: %s\n", err.msg);
        qkt_gpt_free(&g);
        return 2;
    }
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, a.seed);
    int n_counted;
    qkt_real loss = qkt_gpt_loss_grads(&ctx, &g, idx, tgt, B, T, &n_counted);
    rc = qkt_gpt_grads_write(a.out, &g, loss, n_counted, &err);
    if (rc) qkt_cli_err("qkt step: %s\n", err.msg);
    else printf("loss %.9g over %d positions (B %d, T %d); %d gradients -> %s\n", (double)loss, n_counted, B, T,
                g.params.n, a.out);
    if (!rc && a.params_out) {
        /* torch: clip_grad_norm_(params, clip); AdamW(lr, betas, eps, wd on the 2-D weights).step() */
        double norm = qkt_gpt_update_once(&g, &a.oc, a.adamw_lr, a.clip);
        qkt_checkpoint from; /* its text vocabulary and data spec go along: the model still samples text */
        rc = qkt_checkpoint_open(a.ckpt, &from, &err);
        if (!rc) {
            rc = qkt_gpt_save_tokens_of(a.params_out, &g, &from, &err);
            qkt_checkpoint_close(&from);
        }
        if (rc) qkt_cli_err("qkt step: %s\n", err.msg);
        else printf("grad norm %.9g; one AdamW step (lr %g, wd %g) -> %s\n", norm, a.adamw_lr, a.oc.weight_decay, a.params_out);
    }
    free(idx), free(tgt);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    return rc ? 1 : 0;
}
