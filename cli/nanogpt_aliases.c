/* nanoGPT's train.py names for qkt train (nanogpt_aliases.h). One table: the parser
 * takes the aliases (the configuration's from the field table, train_fields.def), --help
 * lists them with how each differs, docs/train.md copies it.
 * Semantics checked against karpathy/nanoGPT's train.py:
 *  - max_iters: its loop runs iterations 0..max_iters, max_iters + 1 optimizer steps, the
 *    last after its final evaluation and checkpoint; qkt runs exactly --steps.
 *  - warmup: lr * (it + 1) / (warmup_iters + 1), qkt's formula (optim/schedule.c).
 *  - cosine: min_lr (absolute, as qkt's --min-lr) at iteration lr_decay_iters, then flat;
 *    qkt's --lr-decay-steps X reaches --min-lr at step X - 1, one step earlier, as with
 *    max_iters and --steps.
 *  - weight decay on the parameters with dim >= 2 (embeddings and Linear weights): qkt's.
 *  - eval_iters batches of train and of val, drawn afresh; qkt validates on
 *    --eval-batches fixed val batches. bias defaults to False there, true in qkt. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "nanogpt_aliases.h"

#define CMD "qkt train"

/* The aliases of the command's own flags; the configuration's come from the field
 * table's `alias` column (train_fields.def). */
static const qkt_flag_alias own_aliases[] = {
    {"log_interval", "log-every", NULL},
    {"out_dir", "out", "qkt refuses a directory that holds a run (continue it with --resume)"},
};
#define N_OWN ((int)(sizeof own_aliases / sizeof *own_aliases))

/* The table's aliases, then the command's own. Returns the count. */
static int make_aliases(qkt_flag_alias *a, int cap) {
    int n = 0;
    for (int i = 0; i < qkt_train_field_count() && n < cap; i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if (f->alias && f->flag) a[n++] = (qkt_flag_alias){f->alias, f->flag, f->alias_note};
    }
    for (int i = 0; i < N_OWN && n < cap; i++) a[n++] = own_aliases[i];
    return n;
}

/* The nanoGPT settings without a qkt flag: parsed as strings, acted on in apply(). */
typedef struct {
    const char *bias, *decay_lr, *device, *compile, *dataset, *init_from, *dtype;
    int grad_accum;
} extras;

static qkt_flag *flag_get(qkt_flag *flags, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(flags[i].name, name)) return &flags[i];
    return NULL;
}

/* True/False (Python's spelling, or true/false/1/0) -> *b; 2 after one line. */
static int want_bool(const char *name, const char *v, bool *b) {
    if (!qkt_flag_bool_parse(v, b)) return 0;
    qkt_cli_err(CMD ": --%s '%s': expected True or False\n", name, v);
    return 2;
}

/* The extras the user gave -> run / the flags; 0 or 2 after one line. */
static int apply(const extras *x, const qkt_flag *ex, int n_ex, qkt_flag *flags, int n_flags, qkt_train_run *run) {
    for (int i = 0; i < n_ex; i++)
        if (ex[i].seen && qkt_flag_seen(flags, n_flags, "resume"))
            return qkt_cli_err(CMD ": --%s cannot be combined with --resume (the run's settings are in its train.json)\n",
                               ex[i].name), 2;
    bool b;
    if (qkt_flag_seen(ex, n_ex, "bias")) {
        if (want_bool("bias", x->bias, &b)) return 2;
        run->tc.model.bias = b;
    }
    if (qkt_flag_seen(ex, n_ex, "decay_lr")) {
        if (want_bool("decay_lr", x->decay_lr, &b)) return 2;
        qkt_flag *s = flag_get(flags, n_flags, "schedule");
        if (s->seen)
            return qkt_cli_err(CMD ": --decay_lr and --schedule both given: give one (decay_lr False is --schedule constant)\n"), 2;
        run->tc.schedule = b ? QKT_SCHED_COSINE : QKT_SCHED_CONSTANT;
        s->seen = true;
    }
    if (qkt_flag_seen(ex, n_ex, "device") && strcasecmp(x->device, "cpu"))
        return qkt_cli_err(CMD ": --device %s: qkt trains on the CPU (give cpu or leave it out)\n", x->device), 2;
    if (qkt_flag_seen(ex, n_ex, "compile") && want_bool("compile", x->compile, &b)) return 2;
    if (x->grad_accum > 1)
        return qkt_cli_err(CMD ": --gradient_accumulation_steps %d: qkt has no gradient accumulation; give --batch_size "
                           "%d x the micro-batch (the same mean gradient in one step)\n", x->grad_accum, x->grad_accum), 2;
    if (qkt_flag_seen(ex, n_ex, "dataset"))
        return qkt_cli_err(CMD ": --dataset %s: qkt reads the text itself, no prepare.py: give --data text:PATH (or a task, "
                           "qkt data --help)\n", x->dataset), 2;
    if (qkt_flag_seen(ex, n_ex, "init_from") && strcmp(x->init_from, "scratch"))
        return qkt_cli_err(CMD ": --init_from %s: %s\n", x->init_from,
                           !strcmp(x->init_from, "resume") ? "continue a run with --resume OUT_DIR"
                                                           : "qkt starts from scratch only (it loads no GPT-2 weights)"), 2;
    const char *real = sizeof(qkt_real) == 4 ? "float32" : "float64";
    if (qkt_flag_seen(ex, n_ex, "dtype") && strcmp(x->dtype, real))
        return qkt_cli_err(CMD ": --dtype %s: this build computes in %s (a -DQKT_DOUBLE=ON build in float64)\n", x->dtype,
                           real), 2;
    return 0;
}

int qkt_nanogpt_parse(const char *summary, qkt_flag *flags, int n_flags, int argc, char **argv, qkt_train_run *run) {
    extras x = {.grad_accum = 1};
    qkt_flag_alias aliases[64];
    qkt_flag ex[] = {
        {"decay_lr", QKT_FLAG_STRING, &x.decay_lr, "True: --schedule cosine; False: --schedule constant", 1, 0, false, false},
        {"bias", QKT_FLAG_STRING, &x.bias, "True/False: biases in Linear and LayerNorm (qkt's default True, nanoGPT's False)", 1, 0,
         false, false},
        {"device", QKT_FLAG_STRING, &x.device, "cpu only", 1, 0, false, false},
        {"dtype", QKT_FLAG_STRING, &x.dtype, "float32 (float64 in a -DQKT_DOUBLE=ON build)", 1, 0, false, false},
        {"compile", QKT_FLAG_STRING, &x.compile, "True/False: no effect (qkt is compiled C)", 1, 0, false, false},
        {"gradient_accumulation_steps", QKT_FLAG_INT, &x.grad_accum, "1 only (give --batch_size the full batch)", 1, INT_MAX,
         true, false},
        {"init_from", QKT_FLAG_STRING, &x.init_from, "scratch only (resume: --resume OUT_DIR)", 1, 0, false, false},
        {"dataset", QKT_FLAG_STRING, &x.dataset, "refused: give --data text:PATH", 1, 0, false, false},
    };
    int n_ex = (int)(sizeof ex / sizeof *ex);
    const qkt_flag_more more = {
        .title = "nanoGPT's train.py names work too, as --name=X or --name X (--dropout, --beta1, --beta2, --seed\n"
                 "are spelled the same in both):",
        .aliases = aliases,
        .n_aliases = make_aliases(aliases, (int)(sizeof aliases / sizeof *aliases)),
        .extra = ex,
        .n_extra = n_ex,
    };
    int rc = qkt_flags_parse_more("train", summary, flags, n_flags, &more, argc, argv, NULL, 0, NULL);
    if (rc) return rc;
    return apply(&x, ex, n_ex, flags, n_flags, run);
}
