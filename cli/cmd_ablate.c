/* qkt ablate: the sqrt(d_k) study. Flags -> a config (the preset plus the flags), then
 * the library: the resume check, the run (qkt_ablate_run) and the report. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "cli_mpi.h"
#include "cli.h"
#include "qkt_dist.h"
#include "qkt_data.h"
#include "flags.h"
#include "qkt_io.h"
#include "qkt_study.h"

/* "16,64" -> ints in [1, hi] (or positive numbers, or scale variants); -1 with a
 * message naming the flag. The ranges are qkt_ablate_validate's, so that a bad list
 * is reported by its flag rather than by its config.json field. */
static int parse_list(const char *flag, const char *s, int hi, int *ints, double *dbls, qkt_attn_scale *vars, int *n) {
    char buf[1024];
    if (strlen(s) >= sizeof buf) return fprintf(stderr, "qkt ablate: --%s: list too long\n", flag), -1;
    snprintf(buf, sizeof buf, "%s", s);
    /* clear the whole list so a shorter override leaves no stale values (configs are compared) */
    if (vars) memset(vars, 0, QKT_AB_MAX_LIST * sizeof *vars);
    if (ints) memset(ints, 0, QKT_AB_MAX_LIST * sizeof *ints);
    if (dbls) memset(dbls, 0, QKT_AB_MAX_LIST * sizeof *dbls);
    int k = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (k == QKT_AB_MAX_LIST) return fprintf(stderr, "qkt ablate: --%s: at most %d values\n", flag, QKT_AB_MAX_LIST), -1;
        char *end;
        if (vars) {
            char field[64];
            qkt_err err;
            snprintf(field, sizeof field, "--%s", flag);
            if (qkt_ablate_parse_variant(field, tok, &vars[k], &err)) return fprintf(stderr, "qkt ablate: %s\n", err.msg), -1;
        } else if (ints) {
            long v = strtol(tok, &end, 10);
            if (!*tok || *end || v <= 0 || v > hi)
                return fprintf(stderr, "qkt ablate: --%s '%s': expected a comma-separated list of integers in [1, %d]\n", flag, s, hi), -1;
            ints[k] = (int)v;
        } else {
            double v = strtod(tok, &end);
            if (*end || !(v > 0) || !isfinite(v))
                return fprintf(stderr, "qkt ablate: --%s '%s': expected a comma-separated list of positive numbers\n", flag, s), -1;
            dbls[k] = v;
        }
        k++;
    }
    if (!k) return fprintf(stderr, "qkt ablate: --%s: expected at least one value\n", flag), -1;
    int r = qkt_ablate_list_repeat(ints, dbls, vars, k); /* each value is a cell (or a column): once */
    if (r >= 0) {
        char v[64];
        if (ints) snprintf(v, sizeof v, "%d", ints[r]);
        else if (dbls) snprintf(v, sizeof v, "%g", dbls[r]);
        else snprintf(v, sizeof v, "%s", qkt_attn_scale_name(vars[r]));
        return fprintf(stderr, "qkt ablate: --%s '%s': the value %s is given twice (each value once)\n", flag, s, v), -1;
    }
    *n = k;
    return 0;
}

static int self_exe(char *buf, size_t n) {
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) return -1;
    buf[k] = 0;
    return 0;
}

/* The flags as given (0 / NULL = unset: the preset's value). */
typedef struct {
    const char *preset, *name, *out, *task, *task2, *task2_dks, *qk_init, *norm, *mlp, *pos, *variants, *dks, *lr_grid, *lr_variants, *init_dks, *growth_dks;
    int seq_len, seeds, steps, lr_steps, lr_dk, lr_eval_every, n_layer, n_head, batch, eval_every, workers;
    int warmup, eval_batches, growth_steps;
    double lr, qk_mult, temp, init_std, weight_decay, grad_clip, beta2, min_lr_frac, growth_lr;
    bool warmup_seen, weight_decay_seen, grad_clip_seen, min_lr_frac_seen;
    uint64_t seed;
    bool seed_seen, report_only;
} ablate_args;

/* `n` values of a list, comma-separated, into buf. */
static const char *join_ints(char *buf, size_t n, const int *v, int k) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%d", i ? "," : "", v[i]);
    return buf;
}
static const char *join_reals(char *buf, size_t n, const double *v, int k) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%g", i ? "," : "", v[i]);
    return buf;
}
static const char *join_variants(char *buf, size_t n, const qkt_attn_scale *v, int k) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? "," : "", qkt_attn_scale_name(v[i]));
    return buf;
}

/* The two presets' values of every setting, for --help (from the presets themselves, so
 * the help cannot drift from them). */
static void preset_table(char *out, size_t n) {
    qkt_ablate_cfg q, f;
    qkt_ablate_preset("quick", &q, NULL);
    qkt_ablate_preset("full", &f, NULL);
    char a[320], b[320];
    size_t o = (size_t)snprintf(out, n, "\nThe presets (flag: quick | full):\n");
#define ROW_I(flag, field) o += (size_t)snprintf(out + o, n - o, "  %-16s %d | %d\n", flag, q.field, f.field)
#define ROW_G(flag, field) o += (size_t)snprintf(out + o, n - o, "  %-16s %g | %g\n", flag, q.field, f.field)
#define ROW_S(flag, qs, fs) o += (size_t)snprintf(out + o, n - o, "  %-16s %s | %s\n", flag, qs, fs)
    ROW_S("task", q.task, f.task);
    o += (size_t)snprintf(out + o, n - o, "  %-16s %s | %s\n", "task2", q.task2[0] ? q.task2 : "none", f.task2[0] ? f.task2 : "none");
    ROW_S("variants", join_variants(a, sizeof a, q.variants, q.n_variants), join_variants(b, sizeof b, f.variants, f.n_variants));
    ROW_S("d-k", join_ints(a, sizeof a, q.dks, q.n_dk), join_ints(b, sizeof b, f.dks, f.n_dk));
    ROW_S("task2-d-k", join_ints(a, sizeof a, q.task2_dks, q.n_task2_dk), join_ints(b, sizeof b, f.task2_dks, f.n_task2_dk));
    ROW_I("seeds", seeds); ROW_I("steps", steps); ROW_I("seq-len", seq_len); ROW_I("n-layer", n_layer);
    ROW_I("n-head", n_head); ROW_I("batch-size", batch_size); ROW_I("eval-every", eval_every);
    ROW_I("eval-batches", eval_batches); ROW_G("lr", lr); ROW_I("warmup", warmup); ROW_G("min-lr-frac", min_lr_frac);
    ROW_G("weight-decay", weight_decay); ROW_G("grad-clip", grad_clip); ROW_G("beta2", beta2);
    ROW_G("init-std", init_std); ROW_S("qk-init", qkt_qk_init_name(q.qk_init), qkt_qk_init_name(f.qk_init));
    ROW_G("qk-init-mult", qk_init_mult); ROW_G("attn-temp", attn_temp);
    ROW_S("lr-grid", join_reals(a, sizeof a, q.lrs, q.n_lr), join_reals(b, sizeof b, f.lrs, f.n_lr));
    ROW_S("lr-variants", join_variants(a, sizeof a, q.lr_variants, q.n_lr_variants),
          join_variants(b, sizeof b, f.lr_variants, f.n_lr_variants));
    ROW_I("lr-steps", lr_steps); ROW_I("lr-d-k", lr_dk); ROW_I("lr-eval-every", lr_eval_every);
    ROW_S("init-d-k", join_ints(a, sizeof a, q.init_dks, q.n_init_dk), join_ints(b, sizeof b, f.init_dks, f.n_init_dk));
    ROW_S("growth-d-k", join_ints(a, sizeof a, q.growth_dks, q.n_growth_dk), join_ints(b, sizeof b, f.growth_dks, f.n_growth_dk));
    ROW_I("growth-steps", growth_steps); ROW_G("growth-lr", growth_lr);
    o += (size_t)snprintf(out + o, n - o, "  %-16s %llu | %llu", "seed", (unsigned long long)q.seed, (unsigned long long)f.seed);
#undef ROW_I
#undef ROW_G
#undef ROW_S
}

/* 0 parsed, 1 --help printed, 2 a bad flag (printed). */
static int parse_args(int argc, char **argv, ablate_args *a) {
    *a = (ablate_args){.preset = "quick", .out = "runs"};
    char names[256], variants_help[320];
    snprintf(variants_help, sizeof variants_help, "scale variants to train, comma-separated: %s",
             qkt_study_variant_list(names, sizeof names));
    qkt_flag flags[] = {
        {"preset", QKT_FLAG_STRING, &a->preset, "quick (minutes on 2 cores) or full", 1, 0, false, false},
        {"name", QKT_FLAG_STRING, &a->name, "run name: results go to OUT/NAME (default: the preset)", 1, 0, false, false},
        {"out", QKT_FLAG_STRING, &a->out, "directory holding runs", 1, 0, false, false},
        {"task", QKT_FLAG_STRING, &a->task, "data spec of the synthetic task (default mqar)", 1, 0, false, false},
        {"task2", QKT_FLAG_STRING, &a->task2, "second task, trained like --task at --task2-d-k (part 2c; 'none' = skip)", 1, 0, false, false},
        {"task2-d-k", QKT_FLAG_STRING, &a->task2_dks, "key widths d_k of the second task, comma-separated", 1, 0, false, false},
        {"seq-len", QKT_FLAG_INT, &a->seq_len, "sequence length T (= block size)", 2, 4096, true, false},
        {"variants", QKT_FLAG_STRING, &a->variants, variants_help, 1, 0, false, false},
        {"d-k", QKT_FLAG_STRING, &a->dks, "key widths d_k to train, comma-separated", 1, 0, false, false},
        {"seeds", QKT_FLAG_INT, &a->seeds, "seeds per training cell", 1, 100, true, false},
        {"steps", QKT_FLAG_INT, &a->steps, "training steps per cell", 1, 1e8, true, false},
        {"lr", QKT_FLAG_DOUBLE, &a->lr, "learning rate of the training ablation", 1, 0, true, false},
        {"lr-grid", QKT_FLAG_STRING, &a->lr_grid, "learning rates of the sensitivity sweep, comma-separated", 1, 0, false, false},
        {"lr-variants", QKT_FLAG_STRING, &a->lr_variants, "variants of the sensitivity sweep (as --variants)", 1, 0, false, false},
        {"lr-steps", QKT_FLAG_INT, &a->lr_steps, "steps per sensitivity run", 1, 1e8, true, false},
        {"lr-d-k", QKT_FLAG_INT, &a->lr_dk, "d_k of the sensitivity sweep", 1, 1024, true, false},
        {"lr-eval-every", QKT_FLAG_INT, &a->lr_eval_every, "steps between evaluations of the sensitivity runs", 1, 1e8, true, false},
        {"init-d-k", QKT_FLAG_STRING, &a->init_dks, "d_k values measured at init", 1, 0, false, false},
        {"growth-d-k", QKT_FLAG_STRING, &a->growth_dks, "d_k values of the logit-growth check", 1, 0, false, false},
        {"n-layer", QKT_FLAG_INT, &a->n_layer, "layers", 1, 64, true, false},
        {"n-head", QKT_FLAG_INT, &a->n_head, "heads (d_model = n_head * d_k)", 1, 64, true, false},
        {"batch-size", QKT_FLAG_INT, &a->batch, "batch size", 1, 1 << 16, true, false},
        {"eval-every", QKT_FLAG_INT, &a->eval_every, "steps between evaluations", 1, 1e8, true, false},
        {"eval-batches", QKT_FLAG_INT, &a->eval_batches, "batches per evaluation", 1, 1e6, true, false},
        {"warmup", QKT_FLAG_INT, &a->warmup, "linear LR warmup steps (0 = none)", 0, 1e8, false, false},
        {"min-lr-frac", QKT_FLAG_DOUBLE, &a->min_lr_frac, "the cosine schedule's final LR as a fraction of --lr (0 .. 1)", 0, 1, false, false},
        {"weight-decay", QKT_FLAG_DOUBLE, &a->weight_decay, "AdamW weight decay on the 2-D weights (0 = none)", 0, 1e6, false, false},
        {"grad-clip", QKT_FLAG_DOUBLE, &a->grad_clip, "clip the global gradient norm to this (0 = off)", 0, 1e12, false, false},
        {"beta2", QKT_FLAG_DOUBLE, &a->beta2, "AdamW beta2, in (0, 1)", 1, 0, true, false},
        {"growth-steps", QKT_FLAG_INT, &a->growth_steps, "steps of the logit-growth check", 1, 1e8, true, false},
        {"growth-lr", QKT_FLAG_DOUBLE, &a->growth_lr, "learning rate of the logit-growth check", 1, 0, true, false},
        {"qk-init-mult", QKT_FLAG_DOUBLE, &a->qk_mult, "multiplier on the W_q, W_k init std", 1, 0, true, false},
        {"init-std", QKT_FLAG_DOUBLE, &a->init_std, "std of the weight init (GPT-2: 0.02)", 1, 0, true, false},
        {"norm", QKT_FLAG_STRING, &a->norm, "the trained models' norm: layernorm or rmsnorm (qkt train --help)", 1, 0, false, false},
        {"mlp", QKT_FLAG_STRING, &a->mlp, "the trained models' MLP: gelu or swiglu", 1, 0, false, false},
        {"pos", QKT_FLAG_STRING, &a->pos, "the trained models' positions: learned, rope, alibi or none", 1, 0, false, false},
        {"qk-init", QKT_FLAG_STRING, &a->qk_init, "W_q, W_k init: gpt2 (N(0, init-std^2)) or unit (std 1/sqrt(d_model): unit-variance q, k at every width)", 1, 0, false, false},
        {"attn-temp", QKT_FLAG_DOUBLE, &a->temp, "fixed multiplier on every variant's logits", 1, 0, true, false},
        {"seed", QKT_FLAG_U64, &a->seed, "base seed", 1, 0, false, false},
        {"workers", QKT_FLAG_INT, &a->workers, "cells run side by side (default: cores; under mpirun, per rank: cores / ranks on the host)", 1, 256, true, false},
        {"report-only", QKT_FLAG_BOOL, &a->report_only, "only rebuild the report from finished cells", 1, 0, false, false},
    };
    int nf = (int)(sizeof flags / sizeof flags[0]);
    static char summary[4096];
    size_t o = (size_t)snprintf(summary, sizeof summary, "%s",
                                "The sqrt(d_k) study: init measurements, training ablation, LR sensitivity, logit growth.\n"
                                "Unset flags take the preset's values. Writes OUT/NAME/{config.json,metrics.csv,summary.csv,*.png,report.md};\n"
                                "rerunning the same command resumes (finished cells are kept). mpirun -np N qkt ablate spreads\n"
                                "the cells over N processes or hosts (docs/distributed.md).\n");
    preset_table(summary + o, sizeof summary - o);
    int rc = qkt_flags_parse("ablate", summary, flags, nf, argc, argv, NULL, 0, NULL);
    a->seed_seen = qkt_flag_seen(flags, nf, "seed");
    a->warmup_seen = qkt_flag_seen(flags, nf, "warmup");
    a->weight_decay_seen = qkt_flag_seen(flags, nf, "weight-decay");
    a->grad_clip_seen = qkt_flag_seen(flags, nf, "grad-clip");
    a->min_lr_frac_seen = qkt_flag_seen(flags, nf, "min-lr-frac");
    return rc;
}

/* The command as typed, minus --workers (a machine setting, not part of the study) and
 * --report-only (report.md's "Reproduce:" line must rerun the study). */
static void command_line(int argc, char **argv, qkt_ablate_cfg *c) {
    size_t k = (size_t)snprintf(c->command, sizeof c->command, "qkt ablate");
    for (int i = 1; i < argc && k < sizeof c->command; i++) {
        if (!strcmp(argv[i], "--workers")) { i++; continue; }
        if (!strncmp(argv[i], "--workers=", 10) || !strncmp(argv[i], "--report-only", 13)) continue;
        k += (size_t)snprintf(c->command + k, sizeof c->command - k, " %s", argv[i]);
    }
}

/* The preset with the flags on top; 0, or 2 after a one-line message naming the flag. */
static int build_config(const ablate_args *a, qkt_ablate_cfg *c) {
    qkt_err err;
    if (qkt_ablate_preset(a->preset, c, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    if (a->name && (strchr(a->name, '/') || strlen(a->name) >= sizeof c->name))
        return fprintf(stderr, "qkt ablate: --name '%s': expected a name without '/' of at most %zu characters\n", a->name, sizeof c->name - 1), 2;
    if (a->task && strlen(a->task) >= sizeof c->task) return fprintf(stderr, "qkt ablate: --task: spec too long (at most %zu characters)\n", sizeof c->task - 1), 2;
    if (a->name) snprintf(c->name, sizeof c->name, "%s", a->name);
    if (a->task) snprintf(c->task, sizeof c->task, "%s", a->task);
    if (a->task2 && strlen(a->task2) >= sizeof c->task2) return fprintf(stderr, "qkt ablate: --task2: spec too long (at most %zu characters)\n", sizeof c->task2 - 1), 2;
    if (a->task2) snprintf(c->task2, sizeof c->task2, "%s", strcmp(a->task2, "none") ? a->task2 : "");
    if (!c->task2[0]) c->n_task2_dk = 0, memset(c->task2_dks, 0, sizeof c->task2_dks);
    if (a->task2_dks && !c->task2[0]) return fprintf(stderr, "qkt ablate: --task2-d-k: no second task (--task2 none)\n"), 2;
    if (a->task2_dks && parse_list("task2-d-k", a->task2_dks, 1024, c->task2_dks, NULL, NULL, &c->n_task2_dk)) return 2;
    if (a->variants && parse_list("variants", a->variants, 0, NULL, NULL, c->variants, &c->n_variants)) return 2;
    if (a->lr_variants && parse_list("lr-variants", a->lr_variants, 0, NULL, NULL, c->lr_variants, &c->n_lr_variants)) return 2;
    if (a->dks && parse_list("d-k", a->dks, 1024, c->dks, NULL, NULL, &c->n_dk)) return 2;
    if (a->init_dks && parse_list("init-d-k", a->init_dks, 4096, c->init_dks, NULL, NULL, &c->n_init_dk)) return 2;
    if (a->growth_dks && parse_list("growth-d-k", a->growth_dks, 1024, c->growth_dks, NULL, NULL, &c->n_growth_dk)) return 2;
    if (a->lr_grid && parse_list("lr-grid", a->lr_grid, 0, NULL, c->lrs, NULL, &c->n_lr)) return 2;
    if (a->seq_len) c->seq_len = a->seq_len;
    if (a->seeds) c->seeds = a->seeds;
    if (a->steps) c->steps = a->steps;
    if (a->lr > 0) c->lr = a->lr;
    if (a->lr_steps) c->lr_steps = a->lr_steps;
    if (a->lr_dk) c->lr_dk = a->lr_dk;
    if (a->lr_eval_every) c->lr_eval_every = a->lr_eval_every;
    if (a->n_layer) c->n_layer = a->n_layer;
    if (a->n_head) c->n_head = a->n_head;
    if (a->batch) c->batch_size = a->batch;
    if (a->eval_every) c->eval_every = a->eval_every;
    if (a->eval_batches) c->eval_batches = a->eval_batches;
    if (a->warmup_seen) c->warmup = a->warmup;
    if (a->min_lr_frac_seen) c->min_lr_frac = a->min_lr_frac;
    if (a->weight_decay_seen) c->weight_decay = a->weight_decay;
    if (a->grad_clip_seen) c->grad_clip = a->grad_clip;
    if (a->beta2 > 0) c->beta2 = a->beta2;
    if (a->growth_steps) c->growth_steps = a->growth_steps;
    if (a->growth_lr > 0) c->growth_lr = a->growth_lr;
    if (a->qk_mult > 0) c->qk_init_mult = a->qk_mult;
    if (a->init_std > 0) c->init_std = a->init_std;
    if (a->temp > 0) c->attn_temp = a->temp;
    if (a->qk_init && qkt_qk_init_parse(a->qk_init, &c->qk_init, NULL) != 0)
        return fprintf(stderr, "qkt ablate: --qk-init '%s': expected gpt2 or unit\n", a->qk_init), 2;
    if (a->norm && qkt_norm_parse(a->norm, &c->norm, &err)) return fprintf(stderr, "qkt ablate: --norm: %s\n", err.msg), 2;
    if (a->mlp && qkt_mlp_parse(a->mlp, &c->mlp, &err)) return fprintf(stderr, "qkt ablate: --mlp: %s\n", err.msg), 2;
    if (a->pos && qkt_pos_parse(a->pos, &c->pos, &err)) return fprintf(stderr, "qkt ablate: --pos: %s\n", err.msg), 2;
    if (a->seed_seen) c->seed = a->seed;
    /* default: the cores, shared by the MPI ranks on this host (one host: a rank each) */
    c->workers = a->workers ? a->workers : (int)sysconf(_SC_NPROCESSORS_ONLN) / qkt_dist_local_size();
    if (c->workers < 1) c->workers = 1;
    if (qkt_ablate_validate(c, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    /* The task must open before any work (the cells would all fail otherwise). */
    qkt_data *probe;
    qkt_data_opts dop = {.seq_len = c->seq_len, .seed = c->seed};
    if (qkt_data_open(&probe, c->task, &dop, &err) != 0) return fprintf(stderr, "qkt ablate: --task: %s\n", err.msg), 2;
    qkt_data_free(probe);
    if (c->task2[0]) {
        if (qkt_data_open(&probe, c->task2, &dop, &err) != 0) return fprintf(stderr, "qkt ablate: --task2: %s\n", err.msg), 2;
        qkt_data_free(probe);
    }
    return 0;
}

/* The study in dir, locked: resume check, config, cells, report. Exit status. */
static int run_study(const ablate_args *a, qkt_ablate_cfg *c, const char *dir);

/* SIGINT, SIGTERM or SIGHUP (an ssh session dropped): the sweep ends its running cells
 * and waits for them, so nothing keeps writing after qkt ablate exits; finished cells are
 * kept for the rerun; a signal the parent left ignored (nohup's SIGHUP) stays ignored.
 * (Killed with SIGKILL, the cells notice their parent's end: cmd_cell.c.) */
static volatile sig_atomic_t g_stop;
static void on_stop(int sig) { g_stop = sig; }

static void catch_stops(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_stop; /* no SA_RESTART: the sweep's waits return and see the flag */
    sigemptyset(&sa.sa_mask);
    qkt_cli_sigaction(SIGINT, &sa);
    qkt_cli_sigaction(SIGTERM, &sa);
    qkt_cli_sigaction(SIGHUP, &sa);
    signal(SIGPIPE, SIG_IGN); /* stderr piped to a reader that left: keep going */
}

/* The run directory, locked for this process's life (one writer). */
static int lock_run(const char *dir, const char *out, qkt_lock *lk) {
    qkt_err err;
    if (qkt_mkdirs(dir, &err) != 0) return fprintf(stderr, "qkt ablate: --out %s: %s\n", out, err.msg), 2;
    if (qkt_dir_lock(lk, dir, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    return 0;
}

/* Flags, config and the run directory's path: -1 to go on, else the exit status. */
static int setup(int argc, char **argv, ablate_args *a, qkt_ablate_cfg *c, char *dir, size_t n) {
    int rc = parse_args(argc, argv, a);
    if (rc) return rc == 1 ? 0 : 2;
    if (build_config(a, c)) return 2;
    command_line(argc, argv, c);
    qkt_err err;
    if (snprintf(dir, n, "%s/%s", a->out, c->name) >= (int)n) /* longer than QKT_ABLATE_MAX_DIR too */
        return fprintf(stderr, "qkt ablate: --out: run directory %.60s...: its path is too long (at most %d bytes)\n", dir,
                       QKT_ABLATE_MAX_DIR), 2;
    if (qkt_ablate_check_dir(dir, &err) != 0) return fprintf(stderr, "qkt ablate: --out: %s\n", err.msg), 2;
    return -1;
}

/* In an MPI job (mpirun -np N qkt ablate) every rank parses the same flags; rank 0 holds
 * the run directory's lock, runs part 1, hands out the cells and writes the report, and
 * the others run cells (qkt_ablate_run). Ranks > 0 print nothing of their own. */
static int ablate(int argc, char **argv) {
    ablate_args a;
    qkt_ablate_cfg c;
    char dir[1024];
    const bool lead = qkt_dist_rank() == 0;
    int quiet = qkt_cli_mute();
    /* setup's -1 (go on) is 0 to the agreement, so any rank's exit status wins */
    int rc = qkt_dist_agree(setup(argc, argv, &a, &c, dir, sizeof dir) + 1) - 1;
    qkt_lock lk = {.fd = -1};
    bool go = rc < 0; /* else --help (0) or a bad flag (2) */
    if (go) rc = qkt_dist_agree(lead ? lock_run(dir, a.out, &lk) : 0), go = rc == 0;
    qkt_cli_unmute(quiet);
    if (!go) return rc;
    catch_stops();
    rc = run_study(&a, &c, dir);
    qkt_dir_unlock(&lk);
    return rc;
}

int qkt_cmd_ablate(int argc, char **argv) {
    qkt_err err;
    if (qkt_dist_init(&argc, &argv, &err)) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    int rc = ablate(argc, argv);
    qkt_dist_finalize();
    return rc;
}

static int run_study(const ablate_args *a, qkt_ablate_cfg *c, const char *dir) {
    qkt_err err;
    const bool lead = qkt_dist_rank() == 0;
    int rc = 0;
    bool resuming = false;
    if (lead && qkt_ablate_check_resume(dir, c, &resuming, &err) != 0) rc = (fprintf(stderr, "qkt ablate: %s\n", err.msg), 2);
    if (!rc && resuming) fprintf(stderr, "qkt ablate: resuming %s (finished cells are kept)\n", dir);
    if (lead && !rc && qkt_ablate_start(dir, c, &err) != 0) /* before any work, like a bad flag */
        rc = (fprintf(stderr, "qkt ablate: --out %s: %s\n", a->out, err.msg), 2);
    if ((rc = qkt_dist_agree(rc)) != 0) return rc;
    time_t t0 = time(NULL);
    if (!a->report_only) {
        char exe[1024];
        if (self_exe(exe, sizeof exe) != 0) rc = (fprintf(stderr, "qkt ablate: cannot find the qkt program (/proc/self/exe)\n"), 1);
        if ((rc = qkt_dist_agree(rc)) != 0) return rc;
        rc = qkt_ablate_run(dir, exe, lead, &g_stop, &err);
        if (rc && lead) fprintf(stderr, "qkt ablate: %s\n", err.msg);
        if (rc) return g_stop ? 130 : 1;
    }
    if (!lead) return 0; /* rank 0 writes metrics.csv, summary.csv, the plots and the report */
    char ids[1024];
    int seeds, missing = a->report_only ? qkt_ablate_missing(dir, c, ids, sizeof ids, &seeds) : 0;
    if (missing)
        fprintf(stderr, "qkt ablate: warning: %d planned cell%s missing or unfinished (%s); report.md says so and uses the seeds "
                        "present (as few as %d of %d); run without --report-only to compute them\n",
                missing, missing == 1 ? " is" : "s are", ids, seeds, c->seeds);
    if (qkt_ablate_report(dir, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
    fprintf(stderr, "qkt ablate: done in %.0f s: %s/report.md\n", difftime(time(NULL), t0), dir);
    printf("%s/report.md\n", dir);
    return 0;
}
