/* qkt train: train a GPT on a text file or a synthetic task (nanoGPT's flag names are
 * aliases: nanogpt_aliases.c). Writes OUT/train.json, OUT/log.csv and OUT/ckpt.safetensors; --resume OUT
 * continues bit-identically. Faults: a non-finite loss or gradient norm stops the run
 * (exit 1) keeping the last good checkpoint; SIGINT/SIGTERM/SIGHUP finish the step, save
 * and exit 130 (a second one exits at once). The run itself is the library's qkt_session (qkt_train_run.h); this
 * file parses the flags and prints. Under mpirun every rank runs this command; rank 0
 * speaks for the job (docs/distributed.md). */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_mpi.h"
#include "nanogpt_aliases.h"
#include "cli.h"
#include "qkt_dist.h"
#include "flags.h"
#include "qkt_io.h"
#include "qkt_train_run.h"

#define CMD "qkt train"

static volatile sig_atomic_t g_stop; /* the signal that asked us to stop, or 0 */
/* The first SIGINT/SIGTERM/SIGHUP asks for a checkpoint; a second (any of them) exits at
 * once: the last checkpoint is intact and a temp file of a write in flight is removed by
 * the next start in the directory. */
static void on_signal(int sig) {
    if (g_stop) {
        static const char msg[] = "\n" CMD ": second signal: exiting at once; the last checkpoint is intact\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(130);
    }
    g_stop = sig;
}

/* Static: --detect-anomaly's atexit handler reads it after the command returned too. */
static qkt_session g_session;

/* --detect-anomaly: autograd prints the op and exits inside the step; this adds the
 * step and the checkpoint that is left (exit() runs atexit handlers). */
static void anomaly_note(void) {
    const qkt_session *s = &g_session;
    if (!s->busy) return;
    qkt_cli_err(CMD ": stopped by --detect-anomaly in step %lld%s; ", (long long)s->busy_step,
                s->busy_step ? "" : " (the validation before training)");
    if (s->last_ckpt >= 0) qkt_cli_err("last good checkpoint: %s (step %lld)\n", s->p_ckpt, (long long)s->last_ckpt);
    else qkt_cli_err("no checkpoint was saved before it\n");
}

static const char *fmt_dur(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e8) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
    return buf;
}

typedef struct {
    qkt_train_run r;
    const char *out;
    int log_every;
    long long pause_at;
    bool tty, anomaly, resuming, steps_given; /* steps_given: --resume DIR --steps N */
    double last_print; /* of the terminal's progress line */
} run_opts;

/* QKT_THREADS, when --threads is not given (qkt_threads_env); -1 + message if bad. */
static int threads_from_env(int *threads) {
    qkt_err err;
    if (qkt_threads_env(threads, &err) >= 0) return 0;
    qkt_cli_err(CMD ": %s\n", err.msg);
    return -1;
}

/* --resume DIR: the run's settings come from its train.json; flags that would change
 * them are refused, except --steps (a longer run; one below the checkpoint's step is
 * refused when the checkpoint is opened). Returns 0, or the exit status. */
static int load_resumed(const qkt_flag *f, int nf, const char *resume, run_opts *o) {
    static const char *const ok[] = {"resume", "steps", "threads", "log-every", "detect-anomaly", "pause-at"};
    int64_t steps = o->r.tc.steps; /* --steps, when given */
    for (int i = 0; i < nf; i++) {
        bool allowed = false;
        for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) allowed |= !strcmp(f[i].name, ok[k]);
        if (f[i].seen && !allowed)
            return qkt_cli_err(CMD ": --%s cannot be combined with --resume (the run's settings are in %s/train.json)\n",
                               f[i].name, resume), 2;
    }
    qkt_err err;
    if (qkt_check_path_len(resume, 64, &err)) return qkt_cli_err(CMD ": --resume %s\n", err.msg), 2;
    if (qkt_dist_rank() > 0) { /* an MPI job: the run comes from rank 0, which reads train.json */
        o->out = resume, o->resuming = true;
        return 0;
    }
    char *path = qkt_path_join(resume, "train.json");
    int rc = 0;
    if (!qkt_file_exists(path))
        rc = (qkt_cli_err(CMD ": --resume %s: no train.json there (not a qkt train run directory)\n", resume), 2);
    else if (qkt_train_run_load(path, &o->r, &err))
        rc = (qkt_cli_err(CMD ": --resume: %s\n", err.msg), 2);
    free(path);
    if (rc) return rc;
    if (qkt_flag_seen(f, nf, "steps")) o->r.tc.steps = steps, o->steps_given = true;
    o->out = resume, o->resuming = true;
    return 0;
}

/* A --pause-at past the run's last step would never pause: refused, naming both. At the
 * last step it is the end of the run (the session pauses only before it). A resumed MPI
 * job's other ranks have not read train.json: rank 0 speaks for them. */
static int check_pause_at(const run_opts *o) {
    long long steps = o->r.tc.steps;
    if (o->pause_at <= steps || (o->resuming && qkt_dist_rank() > 0)) return 0;
    return qkt_cli_err(CMD ": --pause-at %lld: past the run's last step, --steps %lld\n", o->pause_at, steps), 2;
}

/* `s` quoted for a POSIX shell when it needs it: 'it'\''s'. Allocated. */
static char *shell_quote(const char *s) {
    bool plain = *s != 0;
    for (const char *p = s; *p && plain; p++) plain = strchr("/._-+,:=@%", *p) || (*p >= '0' && *p <= '9') ||
                                                   ((*p | 32) >= 'a' && (*p | 32) <= 'z');
    if (plain) return qkt_strdup(s);
    qkt_buf b = {0};
    qkt_buf_printf(&b, "'");
    for (const char *p = s; *p; p++) qkt_buf_printf(&b, *p == '\'' ? "'\\''" : "%c", *p);
    qkt_buf_printf(&b, "'");
    return b.s;
}

/* A new run: --data is required; the rest is the library's to check (qkt_session_open
 * resolves the auto fields and validates the run once). */
static int finish_new(const qkt_flag *f, int nf, const char *out, run_opts *o) {
    if (!qkt_flag_seen(f, nf, "data"))
        return qkt_cli_err(CMD ": --data is required (text:PATH or a task such as mqar; see qkt data --help)\n"), 2;
    o->out = out;
    return 0;
}

/* Under mpirun -np N (docs/distributed.md): a new run's --replicas is N unless given
 * (the ranks are the replicas), and without --threads or QKT_THREADS each rank takes
 * its share of the host's cores rather than all of them (--threads 0: all of them). */
static void mpi_defaults(const qkt_flag *f, int nf, int *threads, qkt_train_config *c) {
    if (qkt_dist_size() < 2) return;
    if (!qkt_flag_seen(f, nf, "replicas")) c->replicas = qkt_dist_size();
    if (*threads == 0 && !qkt_flag_seen(f, nf, "threads")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        *threads = cores / qkt_dist_local_size() > 1 ? (int)(cores / qkt_dist_local_size()) : 1;
    }
}

/* Flags -> run_opts (or the resumed run's train.json). Returns 0, -1 after --help, or
 * the exit status. The configuration's flags come from the field table
 * (qkt_train_fields.h) and write into a default run (qkt_train_run_default), so their
 * defaults, ranges and names are the library's; the command's own follow them.
 * --flags-markdown prints them as docs/train.md's table. */
static int parse(int argc, char **argv, run_opts *o) {
    qkt_train_run *r = &o->r;
    qkt_train_run_default(r);
    qkt_train_config *c = &r->tc;
    const char *out = "out", *resume = NULL;
    int threads = 0, log_every = 10, pause_at = 0;
    bool anomaly = false, markdown = false;
    qkt_flag f[64];
    int nf = qkt_flags_from_fields(f, 48, r);
    const qkt_flag own[] = {
        {"out", QKT_FLAG_STRING, &out, "run directory: train.json, log.csv, ckpt.safetensors", 1, 0, false, false},
        {"resume", QKT_FLAG_STRING, &resume, "continue the run in this directory (its train.json holds the config; with --steps N: to N steps)", 1, 0, false, false},
        {"threads", QKT_FLAG_INT, &threads, "threads (0 = all cores; default env QKT_THREADS or all)", 0, QKT_FLAGS_MAX_THREADS, false, false},
        {"log-every", QKT_FLAG_INT, &log_every, "steps between printed lines (log.csv gets every step)", 1, INT_MAX, true, false},
        {"pause-at", QKT_FLAG_INT, &pause_at, "save and exit after this step, to be continued with --resume (at most --steps, where the run ends anyway)", 1, INT_MAX, true, false},
        {"detect-anomaly", QKT_FLAG_BOOL, &anomaly, "check every op's output; name the first op and layer giving NaN/Inf", 1, 0, false, false},
        {"flags-markdown", QKT_FLAG_BOOL, &markdown, "print these flags as a Markdown table (docs/train.md's) and exit", 1, 0, false, false},
    };
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) f[nf++] = own[i];
    int rc = qkt_nanogpt_parse("Train a GPT (AdamW, warmup + cosine) on text or a synthetic task; nanoGPT's names work too.\n"
                               "Writes OUT/train.json, OUT/log.csv (every step) and OUT/ckpt.safetensors (model, optimizer,\n"
                               "RNG state, vocabulary). Ctrl-C saves and exits 130; --resume OUT continues bit-identically.\n"
                               "mpirun -np N qkt train: data-parallel over N processes or hosts, the bits of --replicas N\n"
                               "(docs/distributed.md).",
                               f, nf, argc, argv, r);
    if (rc) return rc == 1 ? -1 : 2;
    if (markdown) return qkt_flags_markdown(f, nf), -1;
    o->log_every = log_every, o->anomaly = anomaly, o->pause_at = pause_at;
    if (!qkt_flag_seen(f, nf, "threads") && threads_from_env(&threads)) return 2;
    mpi_defaults(f, nf, &threads, c);
    qkt_set_threads(threads);
    rc = resume ? load_resumed(f, nf, resume, o) : finish_new(f, nf, out, o);
    return rc ? rc : check_pause_at(o);
}

/* Opens the run directory (a resumed run's checkpoint too) and starts its files.
 * Returns -1 to go on and train, or the exit status after one line. */
static int open_run(const run_opts *o, qkt_session *s) {
    const char *flag = o->resuming ? "resume" : "out";
    qkt_err err;
    switch (qkt_session_open(s, &o->r, o->out, o->resuming, &err)) {
    case QKT_SESSION_OK: break;
    case QKT_SESSION_ERR_CONFIG: return qkt_cli_err(CMD ": %s\n", err.msg), 2;
    case QKT_SESSION_ERR_DATA: return qkt_cli_err(CMD ": --data %s: %s\n", o->r.data, err.msg), 2;
    case QKT_SESSION_ERR_EXISTS:
        return qkt_cli_err(CMD ": --out %s already holds a run (train.json); continue it with --resume %s or pick another --out\n",
                           o->out, o->out), 2;
    case QKT_SESSION_ERR_DIR: return qkt_cli_err(CMD ": --%s %s: %s\n", flag, o->out, err.msg), 2;
    case QKT_SESSION_ERR_CKPT: return qkt_cli_err(CMD ": --resume %s: %s\n", o->out, err.msg), 2; /* a --steps below its step too */
    case QKT_SESSION_ERR_LOCKED: return qkt_cli_err(CMD ": --%s %s\n", flag, err.msg), 2;
    }
    long long step = s->t.step, steps = s->run.tc.steps;
    if (s->last_ckpt >= 0) {
        if (o->pause_at && o->pause_at <= step)
            return qkt_cli_err(CMD ": --pause-at %lld: the run is at step %lld already\n", o->pause_at, step), 2;
        if (step >= steps && !s->pending) {
            if (qkt_train_log_check(s->p_log, step, NULL, &err)) return qkt_cli_err(CMD ": --%s %s: %s\n", flag, o->out, err.msg), 2;
            return qkt_cli_err(CMD ": %s finished already (step %lld of %lld); nothing to do\n", o->out, step, steps), 0;
        }
    }
    /* everything that can refuse the run comes before the first line about it */
    if (qkt_session_begin(s, &err)) return qkt_cli_err(CMD ": --%s %s: %s\n", flag, o->out, err.msg), 2;
    for (char *line = s->notes.s, *nl; line && (nl = strchr(line, '\n')); line = nl + 1)
        qkt_cli_err(CMD ": note: %.*s\n", (int)(nl - line), line);
    if (s->last_ckpt >= 0) qkt_cli_err(CMD ": resuming %s at step %lld of %lld\n", o->out, step, steps);
    else if (o->resuming) qkt_cli_err(CMD ": %s has no checkpoint yet; starting from step 0\n", o->out);
    return -1;
}

/* The step-0 line, then a terminal's \r progress line (a line of its own per validation)
 * or, off a terminal, a plain line every --log-every steps and per validation. */
static void print_progress(const qkt_session *s, const qkt_session_progress *p, void *user) {
    run_opts *o = user;
    const qkt_step_stats *st = p->st;
    const qkt_eval *ev = p->ev;
    long long step = p->step, steps = s->run.tc.steps;
    char d1[32], d2[32];
    if (!st) {
        qkt_cli_err("step 0: val loss %.4f acc %.3f (%s, %" PRId64 " params, %s)\n", ev->loss, ev->acc,
                    qkt_data_name(s->t.data), s->t.gpt.params.size, s->run.data);
    } else if (o->tty && (qkt_now_s() - o->last_print > 0.1 || ev || step == steps)) {
        o->last_print = qkt_now_s();
        fprintf(stderr, "\r\033[Kstep %lld/%lld | loss %.4f | val %.4f | %.0f tok/s | ETA %s", step, steps, st->loss, s->val_loss,
                p->tokens_per_s, fmt_dur(p->eta_s, d1, sizeof d1));
        if (ev) qkt_cli_err("\n");
    } else if (!o->tty && (step % o->log_every == 0 || ev || step == steps)) {
        qkt_cli_err("step %lld/%lld loss %.4f lr %.3g norm %.3g", step, steps, st->loss, st->lr, st->grad_norm);
        if (ev) qkt_cli_err(" | val loss %.4f acc %.3f", ev->loss, ev->acc);
        qkt_cli_err(" | %.0f tok/s | %s elapsed, ETA %s\n", p->tokens_per_s, fmt_dur(p->elapsed_s, d1, sizeof d1),
                    fmt_dur(p->eta_s, d2, sizeof d2));
    }
}

/* The last line of a run, by how it ended; returns the exit status. */
static int report_end(const run_opts *o, const qkt_session *s, qkt_session_end end, const qkt_err *err) {
    long long step = s->t.step, last = s->last_ckpt;
    char d1[32];
    char *q = shell_quote(o->out);
    if (end != QKT_SESSION_STOPPED && end != QKT_SESSION_PAUSED) free(q), q = NULL;
    if (o->tty && end != QKT_SESSION_PAUSED && end != QKT_SESSION_DONE) qkt_cli_err("\n");
    switch (end) {
    case QKT_SESSION_LOG_FAILED:
        qkt_cli_err(CMD ": %s; stopped at step %lld. ", err->msg, step);
        if (last >= 0) qkt_cli_err("Last checkpoint: %s (step %lld); free space and continue with --resume %s\n", s->p_ckpt, last, o->out);
        else qkt_cli_err("No checkpoint was saved before it\n");
        return 1;
    case QKT_SESSION_NONFINITE: /* fabs: print nan, not -nan */
        qkt_cli_err(CMD ": non-finite %s (loss %g, grad norm %g) at step %lld; stopped without saving it. ",
                    isfinite(s->last.loss) ? "gradient norm" : "loss", fabs(s->last.loss), fabs(s->last.grad_norm), step);
        if (last >= 0) qkt_cli_err("Last good checkpoint: %s (step %lld)\n", s->p_ckpt, last);
        else qkt_cli_err("No checkpoint was saved before it (--ckpt-every %d)\n", s->run.ckpt_every);
        return 1;
    case QKT_SESSION_CKPT_FAILED:
        qkt_cli_err(CMD ": %s; stopped at step %lld", err->msg, step);
        if (last >= 0) qkt_cli_err(" (the previous checkpoint, step %lld, is intact: --resume %s)", last, o->out);
        qkt_cli_err("\n");
        return 1;
    case QKT_SESSION_STOPPED:
        qkt_cli_err(CMD ": %s at step %lld: checkpoint saved to %s; continue with: qkt train --resume %s\n",
                    g_stop == SIGINT ? "interrupted" : g_stop == SIGHUP ? "hung up" : "terminated", step, s->p_ckpt, q);
        free(q);
        return 130;
    case QKT_SESSION_PAUSED:
        qkt_cli_err(CMD ": paused after step %lld (--pause-at): checkpoint saved to %s; continue with: qkt train --resume %s\n",
                    step, s->p_ckpt, q);
        free(q);
        return 0;
    case QKT_SESSION_DONE:
        qkt_cli_err(CMD ": done: %lld steps in %s, val loss %.4f; %s\n", step, fmt_dur(s->elapsed_s, d1, sizeof d1), s->val_loss,
                    s->p_ckpt);
        return 0;
    }
    return 1;
}

/* Signals only set a flag: the step in flight finishes first (a validation in flight
 * stops between batches). SIGHUP (the terminal closed) is a stop like SIGTERM, unless
 * the parent left it ignored (nohup): qkt_cli_sigaction keeps what was ignored. SIGPIPE
 * is ignored: a closed stderr (piped to `head`) must not kill training; the prints
 * fail and the run goes on. SIGXFSZ is ignored by main(): a file-size limit is a
 * write error (EFBIG) like a full disk. */
static int train(run_opts *o, qkt_session *s) {
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT), sigaddset(&sa.sa_mask, SIGTERM), sigaddset(&sa.sa_mask, SIGHUP);
    qkt_cli_sigaction(SIGINT, &sa);
    qkt_cli_sigaction(SIGTERM, &sa);
    qkt_cli_sigaction(SIGHUP, &sa);
    signal(SIGPIPE, SIG_IGN);
    s->t.ctx.detect_anomaly = o->anomaly;
    if (o->anomaly) atexit(anomaly_note);
    qkt_session_opts so = {.pause_at = o->pause_at, .stop = &g_stop, .on_progress = print_progress, .user = o};
    qkt_err err = {{0}};
    qkt_session_end end = qkt_session_run(s, &so, &err);
    int quiet = qkt_cli_mute(); /* rank 0 of an MPI job says how the run ended */
    int rc = report_end(o, s, end, &err);
    qkt_cli_unmute(quiet);
    return rc;
}

/* Rank 0 of an MPI job: what the gradient sum cost (docs/distributed.md, bench/mpi_scaling.sh). */
static void mpi_note(const qkt_session *s) {
    qkt_dist_stats st;
    qkt_dist_get_stats(&st);
    if (qkt_dist_size() < 2 || qkt_dist_rank() || !st.sums) return;
    double mb = (double)s->t.gpt.params.size * sizeof(qkt_real) / 1e6;
    qkt_cli_err(CMD ": MPI %d ranks x %d threads, %lld steps: gradient sum %.3f ms/step (%.3f MB of gradients), "
                "waiting for the slowest rank %.3f ms/step\n", qkt_dist_size(), qkt_get_threads(), (long long)st.sums,
                1e3 * st.sum_s / (double)st.sums, mb, 1e3 * st.wait_s / (double)st.sums);
}

static int train_cmd(int argc, char **argv) {
    run_opts o = {0};
    int quiet = qkt_cli_mute();
    int mine = parse(argc, argv, &o), rc = qkt_dist_agree(mine);
    if (rc && !mine && qkt_dist_rank() == 0) /* the same flags everywhere: another rank's environment differs */
        qkt_cli_err(CMD ": another MPI rank refused the run's settings (its environment, e.g. QKT_THREADS, differs)\n");
    if (rc) return qkt_cli_unmute(quiet), rc < 0 ? 0 : rc;
    o.tty = isatty(STDERR_FILENO);
    rc = open_run(&o, &g_session);
    qkt_cli_unmute(quiet);
    if (rc < 0) {
        rc = train(&o, &g_session);
        mpi_note(&g_session);
    }
    qkt_session_close(&g_session);
    return rc;
}

/* Under an MPI launcher the command joins the job first (qkt_dist_init): data-parallel
 * over the ranks. */
int qkt_cmd_train(int argc, char **argv) {
    qkt_err err;
    if (qkt_dist_init(&argc, &argv, &err)) return qkt_cli_err(CMD ": %s\n", err.msg), 2;
    int rc = train_cmd(argc, argv);
    qkt_dist_finalize();
    return rc;
}
