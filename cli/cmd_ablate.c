/* qkt ablate: the sqrt(d_k) study. Flags -> a config (the preset plus the flags), then
 * the library's one call (qkt_ablate_run_study: lock, resume check, run, report). */
#include <ctype.h>
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

static int self_exe(char *buf, size_t n) {
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) return -1;
    buf[k] = 0;
    return 0;
}

/* The study's own settings with a flag: the flag, its config.json key, its help. Given,
 * they are set by their key (qkt_ablate_set) over the preset's values. */
static const struct {
    const char *flag, *key, *help;
} own[] = {
    {"task2", "task2", "second task, trained like --task at --task2-d-k (part 2c; 'none' = skip)"},
    {"task2-d-k", "task2_d_k", "key widths d_k of the second task, comma-separated"},
    {"variants", "variants", NULL}, /* help: the variants' names (parse_args) */
    {"d-k", "d_k", "key widths d_k to train, comma-separated"},
    {"seeds", "seeds", "seeds per training cell"},
    {"lr-grid", "lr_grid", "learning rates of the sensitivity sweep, comma-separated"},
    {"lr-variants", "lr_variants", "variants of the sensitivity sweep (as --variants)"},
    {"lr-steps", "lr_steps", "steps per sensitivity run"},
    {"lr-d-k", "lr_dk", "d_k of the sensitivity sweep"},
    {"lr-eval-every", "lr_eval_every", "steps between evaluations of the sensitivity runs"},
    {"lr-eval-dense", "lr_eval_dense", "the sensitivity runs are also evaluated at every step up to this one (0 = none)"},
    {"final-eval-seqs", "final_eval_seqs", "validation sequences of every cell's final evaluation (the verdicts'; the same for every cell)"},
    {"lr-seeds", "lr_seeds", "seeds per learning rate and variant of the sensitivity sweep"},
    {"start-d-k", "start_d_k", "d_k of the 2x2 of scale form x start (sqrt_dk and none from each other's start; 0 = none)"},
    {"task2-start-d-k", "task2_start_d_k", "d_k of the same 2x2 on the second task (0 = none)"},
    {"init-d-k", "init_d_k", "d_k values measured at init"},
    {"growth-d-k", "growth_d_k", "d_k values of the logit-growth check"},
    {"min-lr-frac", "min_lr_frac", "the cosine schedule's final LR as a fraction of --lr (0 .. 1)"},
    {"growth-steps", "growth_steps", "steps of the logit-growth check"},
    {"growth-lr", "growth_lr", "learning rate of the logit-growth check"},
    {"robust-seeds", "robust_seeds", "robustness reruns: the verdict-carrying cells again with these study seeds, comma-separated"},
    {"robust-isa", "robust_isa", "robustness rerun with its cells on this kernel path (their QKT_ISA; qkt version names the widest)"},
    {"workers", "workers", "cells run side by side (default: cores; under mpirun, per rank: cores / ranks on the host)"},
};
#define N_OWN ((int)(sizeof own / sizeof *own))
#define MAX_FLAGS 96

/* The flags as given: the model and training ones (the field table's, qkt_ablate_fields)
 * into `run`, the study's own as text. */
typedef struct {
    const char *preset, *name, *out;
    const char *own[N_OWN];
    qkt_train_run run;
    qkt_train_field fields[64];
    int n_fields;
    qkt_flag flags[MAX_FLAGS];
    int n_flags;
    bool report_only, plan;
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
#define ROW_I(flag, field) o += (size_t)snprintf(out + o, n - o, "  %-16s %d | %d\n", flag, (int)q.field, (int)f.field)
#define ROW_G(flag, field) o += (size_t)snprintf(out + o, n - o, "  %-16s %g | %g\n", flag, q.field, f.field)
#define ROW_S(flag, qs, fs) o += (size_t)snprintf(out + o, n - o, "  %-16s %s | %s\n", flag, qs, fs)
    ROW_S("task", q.run.data, f.run.data);
    o += (size_t)snprintf(out + o, n - o, "  %-16s %s | %s\n", "task2", q.task2[0] ? q.task2 : "none", f.task2[0] ? f.task2 : "none");
    ROW_S("variants", join_variants(a, sizeof a, q.variants, q.n_variants), join_variants(b, sizeof b, f.variants, f.n_variants));
    ROW_S("d-k", join_ints(a, sizeof a, q.dks, q.n_dk), join_ints(b, sizeof b, f.dks, f.n_dk));
    ROW_S("task2-d-k", join_ints(a, sizeof a, q.task2_dks, q.n_task2_dk), join_ints(b, sizeof b, f.task2_dks, f.n_task2_dk));
    ROW_I("seeds", seeds); ROW_I("steps", run.tc.steps); ROW_I("seq-len", run.tc.model.block_size); ROW_I("n-layer", run.tc.model.n_layer);
    ROW_I("n-head", run.tc.model.n_head); ROW_I("batch-size", run.tc.batch_size); ROW_I("eval-every", run.eval_every);
    ROW_I("eval-batches", run.eval_batches); ROW_I("final-eval-seqs", final_eval_seqs); ROW_G("lr", run.tc.lr); ROW_I("warmup", run.tc.warmup_steps); ROW_G("min-lr-frac", min_lr_frac);
    ROW_G("weight-decay", run.tc.weight_decay); ROW_G("grad-clip", run.tc.grad_clip); ROW_G("beta2", run.tc.beta2);
    ROW_G("init-std", run.tc.model.init_std); ROW_S("qk-init", qkt_qk_init_name(q.run.tc.model.qk_init), qkt_qk_init_name(f.run.tc.model.qk_init));
    ROW_G("qk-init-mult", run.tc.model.qk_init_mult); ROW_G("attn-temp", run.tc.model.attn_temp);
    ROW_S("lr-grid", join_reals(a, sizeof a, q.lrs, q.n_lr), join_reals(b, sizeof b, f.lrs, f.n_lr));
    ROW_S("lr-variants", join_variants(a, sizeof a, q.lr_variants, q.n_lr_variants),
          join_variants(b, sizeof b, f.lr_variants, f.n_lr_variants));
    ROW_I("lr-steps", lr_steps); ROW_I("lr-d-k", lr_dk); ROW_I("lr-eval-every", lr_eval_every); ROW_I("lr-eval-dense", lr_eval_dense); ROW_I("lr-seeds", lr_seeds);
    ROW_I("start-d-k", start_dk); ROW_I("task2-start-d-k", task2_start_dk);
    ROW_S("init-d-k", join_ints(a, sizeof a, q.init_dks, q.n_init_dk), join_ints(b, sizeof b, f.init_dks, f.n_init_dk));
    ROW_S("growth-d-k", join_ints(a, sizeof a, q.growth_dks, q.n_growth_dk), join_ints(b, sizeof b, f.growth_dks, f.n_growth_dk));
    ROW_I("growth-steps", growth_steps); ROW_G("growth-lr", growth_lr);
    o += (size_t)snprintf(out + o, n - o, "  %-16s %llu | %llu", "seed", (unsigned long long)q.run.tc.seed, (unsigned long long)f.run.tc.seed);
#undef ROW_I
#undef ROW_G
#undef ROW_S
}

/* 0 parsed, 1 --help printed, 2 a bad flag (printed). The model and training flags are
 * the field table's (qkt_ablate_fields: the study's spellings and limits), with the quick
 * preset's values as the defaults --help shows. */
static int parse_args(int argc, char **argv, ablate_args *a) {
    memset(a, 0, sizeof *a);
    a->preset = "quick", a->out = "runs";
    static qkt_ablate_cfg quick;
    qkt_ablate_preset("quick", &quick, NULL);
    a->run = quick.run;
    a->run.tc.data = a->run.data;
    a->n_fields = qkt_ablate_fields(a->fields, 64);
    char names[256];
    static char variants_help[320];
    snprintf(variants_help, sizeof variants_help, "scale variants to train, comma-separated: %s",
             qkt_study_variant_list(names, sizeof names));
    qkt_flag *f = a->flags;
    int nf = 0;
    f[nf++] = (qkt_flag){"preset", QKT_FLAG_STRING, &a->preset, "quick (minutes on 2 cores) or full", 1, 0, false, false};
    f[nf++] = (qkt_flag){"name", QKT_FLAG_STRING, &a->name, "run name: results go to OUT/NAME (default: the preset)", 1, 0, false, false};
    f[nf++] = (qkt_flag){"out", QKT_FLAG_STRING, &a->out, "directory holding runs", 1, 0, false, false};
    nf += qkt_flags_from_table(f + nf, MAX_FLAGS - nf - N_OWN - 2, &a->run, a->fields, a->n_fields);
    for (int i = 0; i < N_OWN; i++)
        f[nf++] = (qkt_flag){own[i].flag, QKT_FLAG_STRING, &a->own[i], own[i].help ? own[i].help : variants_help, 1, 0, false, false};
    f[nf++] = (qkt_flag){"report-only", QKT_FLAG_BOOL, &a->report_only, "only rebuild the report from finished cells", 1, 0, false, false};
    f[nf++] = (qkt_flag){"plan", QKT_FLAG_BOOL, &a->plan, "print the planned cells per part and exit (nothing is run or written)", 1, 0, false, false};
    a->n_flags = nf;
    static char summary[4096];
    size_t o = (size_t)snprintf(summary, sizeof summary, "%s",
                                "The sqrt(d_k) study: init measurements, training ablation, LR sensitivity, logit growth.\n"
                                "Unset flags take the preset's values. Writes OUT/NAME/{config.json,metrics.csv,summary.csv,\n"
                                "*.png,report.md,report.html}; rerunning the same command resumes (finished cells are kept).\n"
                                "mpirun -np N qkt ablate spreads the cells over N processes or hosts (docs/distributed.md).\n");
    preset_table(summary + o, sizeof summary - o);
    return qkt_flags_parse("ablate", summary, f, nf, argc, argv, NULL, 0, NULL);
}

/* A library message naming a config.json key, with the flag's spelling instead. */
static int bad_setting(const char *flag, const char *key, const qkt_err *err) {
    size_t k = strlen(key);
    if (!strncmp(err->msg, key, k)) qkt_cli_err("qkt ablate: --%s%s\n", flag, err->msg + k);
    else qkt_cli_err("qkt ablate: --%s: %s\n", flag, err->msg);
    return 2;
}

/* " arg" onto the command at *k, in single quotes unless it is made of characters no shell
 * reads specially (an out path with a space, a name with '$(...)'); ' itself as '\''. */
static void append_arg(qkt_ablate_cfg *c, size_t *k, const char *arg) {
    bool plain = *arg != 0;
    for (const char *p = arg; plain && *p; p++) plain = isalnum((unsigned char)*p) || strchr("_./:=,+@%-", *p);
    char q[3000];
    size_t n = 0;
    if (!plain) {
        q[n++] = '\'';
        for (const char *p = arg; *p && n + 6 < sizeof q; p++)
            if (*p == '\'') memcpy(q + n, "'\\''", 4), n += 4;
            else q[n++] = *p;
        q[n++] = '\'';
    }
    q[n] = 0;
    if (*k < sizeof c->command) *k += (size_t)snprintf(c->command + *k, sizeof c->command - *k, " %s", plain ? arg : q);
}

/* The command as typed (each argument as the shell needs it), minus --workers (a machine
 * setting, not part of the study) and --report-only (report.md's "Reproduce:" line must
 * rerun the study). */
static void command_line(int argc, char **argv, qkt_ablate_cfg *c) {
    size_t k = (size_t)snprintf(c->command, sizeof c->command, "qkt ablate");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--workers")) { i++; continue; }
        if (!strncmp(argv[i], "--workers=", 10) || !strncmp(argv[i], "--report-only", 13)) continue;
        append_arg(c, &k, argv[i]);
    }
}

/* The preset with the flags on top; 0, or 2 after a one-line message naming the flag. */
static int build_config(const ablate_args *a, qkt_ablate_cfg *c) {
    qkt_err err;
    if (qkt_ablate_preset(a->preset, c, &err) != 0) return qkt_cli_err("qkt ablate: %s\n", err.msg), 2;
    bool plain = a->name && strcmp(a->name, ".") && strcmp(a->name, "..") && !strchr(a->name, '/');
    for (const char *p = a->name; plain && *p; p++) plain = (unsigned char)*p >= 0x20 && *p != 0x7f; /* no newline, no escape */
    if (a->name && (!plain || strlen(a->name) >= sizeof c->name))
        return qkt_cli_err("qkt ablate: --name: expected a name without '/', control characters, '.' or '..', of at most %zu "
                           "characters\n", sizeof c->name - 1), 2;
    if (a->name) snprintf(c->name, sizeof c->name, "%s", a->name);
    for (int i = 0; i < a->n_fields; i++) /* the model and training flags given */
        if (qkt_flag_seen(a->flags, a->n_flags, a->fields[i].flag)) qkt_train_field_copy(&a->fields[i], &c->run, &a->run);
    c->run.tc.data = c->run.data;
    for (int i = 0; i < N_OWN; i++) {
        const char *v = a->own[i];
        if (!v || !strcmp(own[i].key, "workers")) continue;
        if (!strcmp(own[i].key, "task2") && !strcmp(v, "none")) v = ""; /* no second task */
        if (!strcmp(own[i].key, "task2_d_k") && !c->task2[0])
            return qkt_cli_err("qkt ablate: --task2-d-k: no second task (--task2 none)\n"), 2;
        if (qkt_ablate_set(c, own[i].key, v, &err)) return bad_setting(own[i].flag, own[i].key, &err);
        if (!strcmp(own[i].key, "task2") && !c->task2[0]) c->n_task2_dk = 0, memset(c->task2_dks, 0, sizeof c->task2_dks);
    }
    const char *workers = a->own[N_OWN - 1];
    if (workers && qkt_ablate_set(c, "workers", workers, &err)) return bad_setting("workers", "workers", &err);
    /* default: the cores, shared by the MPI ranks on this host (one host: a rank each) */
    if (!workers) c->workers = (int)sysconf(_SC_NPROCESSORS_ONLN) / qkt_dist_local_size();
    if (c->workers < 1) c->workers = 1;
    if (qkt_ablate_validate(c, &err) != 0) return qkt_cli_err("qkt ablate: %s\n", err.msg), 2;
    if (c->robust_isa[0] && qkt_isa_check(c->robust_isa, &err) != 0) /* a path this CPU runs, and not the study's own */
        return qkt_cli_err("qkt ablate: --robust-isa: %s\n", err.msg), 2;
    if (c->robust_isa[0] && !strcmp(c->robust_isa, qkt_isa_name()))
        return qkt_cli_err("qkt ablate: --robust-isa %s: the study's cells run on %s already (QKT_ISA or this CPU's widest path); "
                           "name another path\n", c->robust_isa, c->robust_isa), 2;
    /* The tasks must open before any work (the cells would all fail otherwise): "task: ..." */
    if (qkt_ablate_check_tasks(c, &err) != 0) return qkt_cli_err("qkt ablate: --%s\n", err.msg), 2;
    return 0;
}

/* The study in dir (qkt_ablate_run_study), then what it cost. Exit status. */
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

/* --plan: "N cells: init N, train N, ..." on stdout (the kinds in qkt_cell_kind order). */
static int print_plan(const qkt_ablate_cfg *c) {
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan), per[QKT_CELL_START2 + 1] = {0};
    for (int i = 0; i < n; i++) per[plan[i].kind]++;
    printf("%d cells:", n);
    for (int k = 0; k <= QKT_CELL_START2; k++) printf("%s %s %d", k ? "," : "", qkt_cell_kind_name((qkt_cell_kind)k), per[k]);
    printf("\n");
    free(plan);
    static qkt_ablate_rerun r; /* the reruns: each plans the same cells */
    for (int k = 0; k < qkt_ablate_reruns(c); k++) {
        qkt_ablate_rerun_get(c, k, &r);
        n = qkt_ablate_plan(&r.cfg, &plan);
        printf("robustness rerun %s: %d cells (robust/%s/)\n", r.title, n, r.label);
        free(plan);
    }
    return 0;
}

/* Flags, config and the run directory's path: -1 to go on, else the exit status. */
static int setup(int argc, char **argv, ablate_args *a, qkt_ablate_cfg *c, char *dir, size_t n) {
    int rc = parse_args(argc, argv, a);
    if (rc) return rc == 1 ? 0 : 2;
    if (build_config(a, c)) return 2;
    if (a->plan) return print_plan(c);
    command_line(argc, argv, c);
    qkt_err err;
    if (snprintf(dir, n, "%s/%s", a->out, c->name) >= (int)n) /* longer than QKT_ABLATE_MAX_DIR too */
        return qkt_cli_err("qkt ablate: --out: run directory %.60s...: its path is too long (at most %d bytes)\n", dir,
                           QKT_ABLATE_MAX_DIR), 2;
    if (qkt_ablate_check_dir(dir, &err) != 0) return qkt_cli_err("qkt ablate: --out: %s\n", err.msg), 2;
    return -1;
}

/* In an MPI job (mpirun -np N qkt ablate) every rank parses the same flags; rank 0 holds
 * the run directory's lock, runs part 1, hands out the cells and writes the report, and
 * the others run cells (qkt_ablate_run). Ranks > 0 print nothing of their own. */
static int ablate(int argc, char **argv) {
    ablate_args a;
    qkt_ablate_cfg c;
    char dir[1024];
    int quiet = qkt_cli_mute();
    /* setup's -1 (go on) is 0 to the agreement, so any rank's exit status wins */
    int rc = qkt_dist_agree(setup(argc, argv, &a, &c, dir, sizeof dir) + 1) - 1;
    qkt_cli_unmute(quiet);
    if (rc >= 0) return rc; /* --help (0) or a bad flag (2) */
    catch_stops();
    return run_study(&a, &c, dir);
}

int qkt_cmd_ablate(int argc, char **argv) {
    qkt_err err;
    if (qkt_dist_init(&argc, &argv, &err)) return qkt_cli_err("qkt ablate: %s\n", err.msg), 2;
    int rc = ablate(argc, argv);
    qkt_dist_finalize();
    return rc;
}

static int run_study(const ablate_args *a, qkt_ablate_cfg *c, const char *dir) {
    qkt_err err;
    const bool lead = qkt_dist_rank() == 0;
    char exe[1024];
    int rc = self_exe(exe, sizeof exe) != 0 ? (qkt_cli_err("qkt ablate: cannot find the qkt program (/proc/self/exe)\n"), 1) : 0;
    if ((rc = qkt_dist_agree(rc)) != 0) return rc;
    time_t t0 = time(NULL);
    qkt_ablate_study_opts o = {exe, lead, a->report_only, &g_stop};
    qkt_ablate_status st = qkt_ablate_run_study(c, dir, &o, &err);
    if (st == QKT_ABLATE_ERR_DIR && lead) qkt_cli_err("qkt ablate: --out %s: %s\n", a->out, err.msg);
    else if (st && lead) qkt_cli_err("qkt ablate: %s\n", err.msg);
    if (st == QKT_ABLATE_STOPPED) return 130;
    if (st) return st == QKT_ABLATE_ERR_RUN || st == QKT_ABLATE_ERR_REPORT ? 1 : 2;
    if (!lead) return 0; /* rank 0 writes metrics.csv, summary.csv, the plots and the report */
    char ids[1024];
    int seeds, missing = a->report_only ? qkt_ablate_missing(dir, c, ids, sizeof ids, &seeds) : 0;
    if (missing)
        qkt_cli_err("qkt ablate: warning: %d planned cell%s missing or unfinished (%s); report.md says so and uses the seeds "
                    "present (as few as %d of %d); run without --report-only to compute them\n",
                    missing, missing == 1 ? " is" : "s are", ids, seeds, c->seeds);
    qkt_ablate_efficiency e;
    char eff[1200];
    if (qkt_ablate_efficiency_read(dir, c, &e, &err) == 0) qkt_ablate_efficiency_text(&e, eff, sizeof eff);
    else snprintf(eff, sizeof eff, "efficiency unknown: %.1100s", err.msg);
    qkt_cli_err("qkt ablate: %s\n", eff);
    qkt_cli_err("qkt ablate: done in %.0f s: %s/report.md\n", difftime(time(NULL), t0), dir);
    printf("%s/report.md\n", dir);
    return 0;
}
