/* qkt train: train a GPT on a text file or a synthetic task, with nanoGPT's flag
 * names. Writes OUT/train.json, OUT/log.csv and OUT/ckpt.safetensors; --resume OUT
 * continues bit-identically. Faults: a non-finite loss or gradient norm stops the run
 * (exit 1) keeping the last good checkpoint; SIGINT/SIGTERM finish the step, save and
 * exit 130. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "qkt_cli.h"
#include "qkt_flags.h"
#include "qkt_io.h"
#include "qkt_train_run.h"

#define CMD "qkt train"

static volatile sig_atomic_t g_stop; /* the signal that asked us to stop, or 0 */
static void on_signal(int sig) { g_stop = sig; }

/* --detect-anomaly: autograd prints the op and exits inside the step; this adds the
 * step and the checkpoint that is left (exit() runs atexit handlers). */
static struct {
    int active;
    long long step, ckpt_step;
    char ckpt[1200];
} g_anomaly;
static void anomaly_note(void) {
    if (!g_anomaly.active) return;
    fprintf(stderr, CMD ": stopped by --detect-anomaly in step %lld%s; ", g_anomaly.step,
            g_anomaly.step ? "" : " (the validation before training)");
    if (g_anomaly.ckpt_step >= 0) fprintf(stderr, "last good checkpoint: %s (step %lld)\n", g_anomaly.ckpt, g_anomaly.ckpt_step);
    else fprintf(stderr, "no checkpoint was saved before it\n");
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *fmt_dur(double s, char *buf, size_t n) {
    if (!(s >= 0) || s > 1e8) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
    return buf;
}

/* text:PATH,val_frac=F with PATH made absolute, so a resume works from any directory. */
static void absolute_text_spec(const char *spec, char *out, size_t n) {
    snprintf(out, n, "%s", spec);
    const char *opt = strstr(spec, ",val_frac=");
    if (strncmp(spec, "text:", 5) || !opt) return;
    while (strstr(opt + 1, ",val_frac=")) opt = strstr(opt + 1, ",val_frac=");
    char path[4096], real[PATH_MAX];
    snprintf(path, sizeof path, "%.*s", (int)(opt - spec - 5), spec + 5);
    char buf[8192];
    if (realpath(path, real) && snprintf(buf, sizeof buf, "text:%s%s", real, opt) < (int)n) memcpy(out, buf, strlen(buf) + 1);
}

typedef struct {
    qkt_train_run r;
    const char *out;
    int log_every;
    long long pause_at;
    bool tty, anomaly, resuming;
} run_opts;

/* QKT_THREADS, when --threads is not given: 0 or the thread count; -1 + message if bad. */
static int threads_from_env(int *threads) {
    const char *e = getenv("QKT_THREADS");
    if (!e || !*e) return 0;
    char *end;
    long v = strtol(e, &end, 10);
    if (*end || v < 0 || v > QKT_FLAGS_MAX_THREADS) {
        fprintf(stderr, CMD ": QKT_THREADS '%s': expected an integer in [0, %d]\n", e, QKT_FLAGS_MAX_THREADS);
        return -1;
    }
    *threads = (int)v;
    return 0;
}

/* Flags -> run_opts (or the resumed run's train.json). Returns 0, or the exit status.
 * The flags write into a default run (qkt_train_run_default), so their defaults and
 * ranges are the library's. */
static int parse(int argc, char **argv, run_opts *o) {
    qkt_train_run *r = &o->r;
    qkt_train_run_default(r);
    qkt_train_config *c = &r->tc;
    qkt_gpt_config *m = &c->model;
    const char *scale = qkt_attn_scale_name(m->attn_scale), *sched = qkt_sched_kind_name(c->schedule);
    const char *data = NULL, *out = "out", *resume = NULL;
    int threads = 0, log_every = 10, pause_at = 0;
    bool anomaly = false;
    qkt_flag f[] = {
        {"data", QKT_FLAG_STRING, &data, "data: text:PATH[,val_frac=F] or a synthetic task (qkt data --help)", 1, 0, false, false},
        {"out", QKT_FLAG_STRING, &out, "run directory: train.json, log.csv, ckpt.safetensors", 1, 0, false, false},
        {"resume", QKT_FLAG_STRING, &resume, "continue the run in this directory (its train.json holds the config)", 1, 0, false, false},
        {"n-layer", QKT_FLAG_INT, &m->n_layer, "transformer blocks", 1, QKT_TRAIN_MAX_N_LAYER, true, false},
        {"n-head", QKT_FLAG_INT, &m->n_head, "attention heads (d_k = n-embd / n-head)", 1, QKT_TRAIN_MAX_N_HEAD, true, false},
        {"n-embd", QKT_FLAG_INT, &m->n_embd, "model width C", 1, QKT_TRAIN_MAX_N_EMBD, true, false},
        {"block-size", QKT_FLAG_INT, &m->block_size, "context length T", 1, QKT_TRAIN_MAX_BLOCK_SIZE, true, false},
        {"batch-size", QKT_FLAG_INT, &c->batch_size, "sequences per step", 1, QKT_TRAIN_MAX_BATCH_SIZE, true, false},
        {"replicas", QKT_FLAG_INT, &c->replicas, "data-parallel batch shards per step, side by side on the threads (results depend on it, not on --threads)", 1, QKT_DP_MAX, true, false},
        {"steps", QKT_FLAG_I64, &c->steps, "optimizer steps", 1, QKT_TRAIN_MAX_STEPS, true, false},
        {"lr", QKT_FLAG_DOUBLE, &c->lr, "peak learning rate (AdamW)", 1, 0, true, false},
        {"min-lr", QKT_FLAG_DOUBLE, &c->min_lr, "cosine floor (default lr/10)", 0, 1e300, false, false},
        {"weight-decay", QKT_FLAG_DOUBLE, &c->weight_decay, "AdamW decoupled weight decay (2-D weights only)", 0, 1e300, false, false},
        {"beta1", QKT_FLAG_DOUBLE, &c->beta1, "AdamW beta1", 0, QKT_FLAGS_BELOW_ONE, false, false},
        {"beta2", QKT_FLAG_DOUBLE, &c->beta2, "AdamW beta2", 0, QKT_FLAGS_BELOW_ONE, false, false},
        {"warmup-steps", QKT_FLAG_I64, &c->warmup_steps, "linear warmup steps (default min(100, steps/10))", 0, QKT_TRAIN_MAX_STEPS, false, false},
        {"schedule", QKT_FLAG_STRING, &sched, "learning rate after warmup: cosine (to min-lr) or constant", 1, 0, false, false},
        {"grad-clip", QKT_FLAG_DOUBLE, &c->grad_clip, "clip the global gradient norm (0 = off)", 0, 1e300, false, false},
        {"attn-scale", QKT_FLAG_STRING, &scale, "sqrt_dk, none, dk, sqrt_dmodel, learned or qk_layernorm", 1, 0, false, false},
        {"attn-temp", QKT_FLAG_DOUBLE, &m->attn_temp, "fixed multiplier on the attention logits", 1, 0, true, false},
        {"qk-init-mult", QKT_FLAG_DOUBLE, &m->qk_init_mult, "multiplier on the W_q, W_k init std", 0, 1e300, false, false},
        {"dropout", QKT_FLAG_DOUBLE, &m->dropout, "dropout probability in [0, 1)", 0, QKT_FLAGS_BELOW_ONE, false, false},
        {"seed", QKT_FLAG_U64, &c->seed, "seed of the init, data and dropout streams", 1, 0, false, false},
        {"threads", QKT_FLAG_INT, &threads, "threads (0 = all cores; default env QKT_THREADS or all)", 0, QKT_FLAGS_MAX_THREADS, false, false},
        {"eval-every", QKT_FLAG_INT, &r->eval_every, "steps between validations (0 = first and last only)", 0, INT_MAX, false, false},
        {"eval-batches", QKT_FLAG_INT, &r->eval_batches, "validation batches (the same ones every time)", 1, QKT_TRAIN_MAX_EVAL_BATCHES, true, false},
        {"ckpt-every", QKT_FLAG_INT, &r->ckpt_every, "steps between checkpoints (0 = at the end only)", 0, INT_MAX, false, false},
        {"log-every", QKT_FLAG_INT, &log_every, "steps between printed lines (log.csv gets every step)", 1, INT_MAX, true, false},
        {"pause-at", QKT_FLAG_INT, &pause_at, "save and exit after this step, to be continued with --resume", 1, INT_MAX, true, false},
        {"detect-anomaly", QKT_FLAG_BOOL, &anomaly, "check every op's output; name the first op and layer giving NaN/Inf", 1, 0, false, false},
    };
    int nf = (int)(sizeof f / sizeof *f);
    int rc = qkt_flags_parse("train",
                             "Train a GPT (AdamW, warmup + cosine) on text or a synthetic task; nanoGPT's flag names.\n"
                             "Writes OUT/train.json, OUT/log.csv (every step) and OUT/ckpt.safetensors (model, optimizer,\n"
                             "RNG state, vocabulary). Ctrl-C saves and exits 130; --resume OUT continues bit-identically.",
                             f, nf, argc, argv, NULL, 0, NULL);
    if (rc) return rc == 1 ? -1 : 2;
    o->log_every = log_every, o->anomaly = anomaly, o->pause_at = pause_at;
    if (!qkt_flag_seen(f, nf, "threads") && threads_from_env(&threads)) return 2;
    qkt_set_threads(threads);
    qkt_err err;
    if (resume) {
        /* The run's settings come from its train.json: refuse flags that would change them. */
        static const char *const ok[] = {"resume", "threads", "log-every", "detect-anomaly", "pause-at"};
        for (int i = 0; i < nf; i++) {
            bool allowed = false;
            for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) allowed |= !strcmp(f[i].name, ok[k]);
            if (f[i].seen && !allowed)
                return fprintf(stderr, CMD ": --%s cannot be combined with --resume (the run's settings are in %s/train.json)\n",
                               f[i].name, resume), 2;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/train.json", resume);
        if (!qkt_file_exists(path))
            return fprintf(stderr, CMD ": --resume %s: no train.json there (not a qkt train run directory)\n", resume), 2;
        if (qkt_train_run_load(path, r, &err)) return fprintf(stderr, CMD ": --resume: %s\n", err.msg), 2;
        o->out = resume, o->resuming = true;
        return 0;
    }
    if (!data) return fprintf(stderr, CMD ": --data is required (text:PATH or a task such as mqar; see qkt data --help)\n"), 2;
    if (strlen(data) >= sizeof r->data) return fprintf(stderr, CMD ": --data: spec too long\n"), 2;
    snprintf(r->data, sizeof r->data, "%s", data);
    if (qkt_attn_scale_parse(scale, &m->attn_scale, &err)) return fprintf(stderr, CMD ": --attn-scale: %s\n", err.msg), 2;
    if (qkt_sched_kind_parse(sched, &c->schedule, &err)) return fprintf(stderr, CMD ": --schedule: %s\n", err.msg), 2;
    qkt_train_config_resolve(c);
    if (qkt_train_run_validate(r, &err)) return fprintf(stderr, CMD ": %s\n", err.msg), 2;
    o->out = out;
    return 0;
}

static void log_row(FILE *f, long long step, const qkt_step_stats *st, const qkt_eval *ev, double tok_s, double elapsed) {
    if (st) fprintf(f, "%lld,%.9g,%.9g,%.9g,", step, st->loss, st->lr, st->grad_norm);
    else fprintf(f, "%lld,,,,", step);
    if (ev) fprintf(f, "%.9g,%.9g,", ev->loss, ev->acc);
    else fprintf(f, ",,");
    if (tok_s > 0) fprintf(f, "%.1f,%.3f\n", tok_s, elapsed);
    else fprintf(f, ",%.3f\n", elapsed);
}

int qkt_cmd_train(int argc, char **argv) {
    run_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    qkt_train_run *r = &o.r;
    bool resuming = o.resuming;
    o.tty = isatty(STDERR_FILENO);
    char p_json[1200], p_log[1200], p_ckpt[1200];
    snprintf(p_json, sizeof p_json, "%s/train.json", o.out);
    snprintf(p_log, sizeof p_log, "%s/log.csv", o.out);
    snprintf(p_ckpt, sizeof p_ckpt, "%s/ckpt.safetensors", o.out);
    qkt_err err;

    /* Data and model (validates the data spec against the block size). */
    qkt_trainer t;
    if (qkt_trainer_init(&t, &r->tc, &err)) return fprintf(stderr, CMD ": --data %s: %s\n", r->data, err.msg), 2;
    absolute_text_spec(qkt_data_spec(t.data), r->data, sizeof r->data);
    r->tc.model.vocab_size = t.gpt.cfg.vocab_size;

    /* The run directory, before any training: unwritable paths fail here. */
    int exit_code = 2;
    FILE *log = NULL;
    double elapsed0 = 0;
    long long last_ckpt = -1;
    if (!resuming && qkt_file_exists(p_json)) {
        fprintf(stderr, CMD ": --out %s already holds a run (train.json); continue it with --resume %s or pick another --out\n",
                o.out, o.out);
        goto done;
    }
    if (qkt_mkdirs(o.out, &err) || qkt_check_replaceable(p_ckpt, &err) || qkt_check_replaceable(p_log, &err) ||
        qkt_check_replaceable(p_json, &err)) {
        fprintf(stderr, CMD ": --%s %s: %s\n", resuming ? "resume" : "out", o.out, err.msg);
        goto done;
    }
    if (resuming && qkt_file_exists(p_ckpt)) {
        qkt_checkpoint ck;
        if (qkt_checkpoint_open(p_ckpt, &ck, &err) == 0) {
            rc = qkt_trainer_restore(&t, &ck, &err);
            const char *el = qkt_checkpoint_meta(&ck, "elapsed_s");
            if (el) elapsed0 = strtod(el, NULL);
            qkt_checkpoint_close(&ck);
        } else {
            rc = -1;
        }
        if (rc) {
            fprintf(stderr, CMD ": --resume: %s\n", err.msg);
            goto done;
        }
        last_ckpt = t.step;
        if (o.pause_at && o.pause_at <= t.step) {
            fprintf(stderr, CMD ": --pause-at %lld: the run is at step %lld already\n", o.pause_at, (long long)t.step);
            goto done;
        }
        if (t.step >= r->tc.steps) {
            fprintf(stderr, CMD ": %s finished already (step %lld of %lld); nothing to do\n", o.out, (long long)t.step,
                    (long long)r->tc.steps);
            exit_code = 0;
            goto done;
        }
        fprintf(stderr, CMD ": resuming %s at step %lld of %lld\n", o.out, (long long)t.step, (long long)r->tc.steps);
    } else if (resuming) {
        fprintf(stderr, CMD ": %s has no checkpoint yet; starting from step 0\n", o.out);
    }
    char *json = qkt_train_run_json(r);
    rc = qkt_write_atomic(p_json, json, strlen(json), &err);
    free(json);
    /* from step 0 the validation row 0 is redone, so it goes too */
    if (!rc) rc = qkt_train_log_truncate(p_log, t.step ? t.step : -1, &err);
    if (rc || !(log = fopen(p_log, "a"))) {
        if (!rc) qkt_err_set(&err, "%s: cannot open: %s", p_log, strerror(errno));
        fprintf(stderr, CMD ": --%s %s: %s\n", resuming ? "resume" : "out", o.out, err.msg);
        goto done;
    }

    /* Training. Signals only set a flag: the step in flight finishes first. */
    exit_code = 1;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second Ctrl-C kills at once (the last checkpoint stays) */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    t.ctx.detect_anomaly = o.anomaly;
    if (o.anomaly) {
        snprintf(g_anomaly.ckpt, sizeof g_anomaly.ckpt, "%s", p_ckpt);
        atexit(anomaly_note);
    }
    const qkt_train_config *c = &r->tc;
    int64_t tokens_per_step = (int64_t)c->batch_size * t.T;
    double t0 = now_s() - elapsed0, step_ema = 0, last_print = 0, val = NAN;
    char el_s[32], step_s[32], d1[32], d2[32];
    qkt_st_meta meta[] = {{"elapsed_s", el_s}};
    if (!resuming || t.step == 0) {
        qkt_eval ev = {0};
        g_anomaly.active = o.anomaly, g_anomaly.step = 0, g_anomaly.ckpt_step = last_ckpt;
        qkt_trainer_eval(&t, r->eval_batches, c->batch_size, &ev);
        g_anomaly.active = 0;
        val = ev.loss;
        log_row(log, 0, NULL, &ev, 0, now_s() - t0);
        fprintf(stderr, "step 0: val loss %.4f acc %.3f (%s, %" PRId64 " params, %s)\n", ev.loss, ev.acc, qkt_data_name(t.data),
                t.gpt.params.size, r->data);
    }
    bool paused = false;
    while (t.step < c->steps && !g_stop && !paused) {
        double ts = now_s();
        qkt_step_stats st;
        g_anomaly.active = o.anomaly, g_anomaly.step = t.step + 1, g_anomaly.ckpt_step = last_ckpt;
        qkt_trainer_step(&t, &st);
        double dt = now_s() - ts;
        long long s = t.step;
        step_ema = step_ema ? 0.9 * step_ema + 0.1 * dt : dt;
        qkt_eval ev = {0};
        bool do_eval = st.finite && ((r->eval_every && s % r->eval_every == 0) || s == c->steps);
        if (do_eval) qkt_trainer_eval(&t, r->eval_batches, c->batch_size, &ev), val = ev.loss;
        g_anomaly.active = 0;
        log_row(log, s, &st, do_eval ? &ev : NULL, (double)tokens_per_step / dt, now_s() - t0);
        if (fflush(log) || ferror(log)) { /* a full disk: stop rather than lose rows */
            if (o.tty) fprintf(stderr, "\n");
            fprintf(stderr, CMD ": %s: write failed: %s; stopped at step %lld. ", p_log, strerror(errno), s);
            if (last_ckpt >= 0) fprintf(stderr, "Last checkpoint: %s (step %lld); free space and continue with --resume %s\n", p_ckpt, last_ckpt, o.out);
            else fprintf(stderr, "No checkpoint was saved before it\n");
            goto done;
        }
        if (!st.finite) {
            if (o.tty) fprintf(stderr, "\n");
            /* fabs: print nan, not -nan */
            fprintf(stderr, CMD ": non-finite %s (loss %g, grad norm %g) at step %lld; stopped without saving it. ",
                    isfinite(st.loss) ? "gradient norm" : "loss", fabs(st.loss), fabs(st.grad_norm), s);
            if (last_ckpt >= 0) fprintf(stderr, "Last good checkpoint: %s (step %lld)\n", p_ckpt, last_ckpt);
            else fprintf(stderr, "No checkpoint was saved before it (--ckpt-every %d)\n", r->ckpt_every);
            goto done;
        }
        double eta = step_ema * (double)(c->steps - s);
        if (o.tty && (now_s() - last_print > 0.1 || do_eval || s == c->steps)) {
            last_print = now_s();
            fprintf(stderr, "\r\033[Kstep %lld/%lld | loss %.4f | val %.4f | %.0f tok/s | ETA %s", s, (long long)c->steps, st.loss,
                    val, (double)tokens_per_step / step_ema, fmt_dur(eta, d1, sizeof d1));
            if (do_eval) fprintf(stderr, "\n");
        } else if (!o.tty && (s % o.log_every == 0 || do_eval || s == c->steps)) {
            fprintf(stderr, "step %lld/%lld loss %.4f lr %.3g norm %.3g", s, (long long)c->steps, st.loss, st.lr, st.grad_norm);
            if (do_eval) fprintf(stderr, " | val loss %.4f acc %.3f", ev.loss, ev.acc);
            fprintf(stderr, " | %.0f tok/s | %s elapsed, ETA %s\n", (double)tokens_per_step / step_ema,
                    fmt_dur(now_s() - t0, d1, sizeof d1), fmt_dur(eta, d2, sizeof d2));
        }
        paused = s == o.pause_at && s < c->steps;
        if ((r->ckpt_every && s % r->ckpt_every == 0) || s == c->steps || g_stop || paused) {
            snprintf(el_s, sizeof el_s, "%.3f", now_s() - t0);
            if (qkt_trainer_save(&t, p_ckpt, meta, 1, &err)) {
                if (o.tty) fprintf(stderr, "\n");
                fprintf(stderr, CMD ": %s; stopped at step %lld", err.msg, s);
                if (last_ckpt >= 0) fprintf(stderr, " (the previous checkpoint, step %lld, is intact: --resume %s)", last_ckpt, o.out);
                fprintf(stderr, "\n");
                goto done;
            }
            last_ckpt = s;
        }
    }
    if (g_stop && last_ckpt != t.step) { /* stopped before the first step (during the step-0 validation) */
        snprintf(el_s, sizeof el_s, "%.3f", now_s() - t0);
        if (qkt_trainer_save(&t, p_ckpt, meta, 1, &err)) {
            fprintf(stderr, CMD ": %s\n", err.msg);
            goto done;
        }
        last_ckpt = t.step;
    }
    snprintf(step_s, sizeof step_s, "%lld", (long long)t.step);
    if (g_stop) {
        if (o.tty) fprintf(stderr, "\n");
        fprintf(stderr, CMD ": %s at step %s: checkpoint saved to %s; continue with: qkt train --resume %s\n",
                g_stop == SIGINT ? "interrupted" : "terminated", step_s, p_ckpt, o.out);
        exit_code = 130;
    } else if (paused) {
        fprintf(stderr, CMD ": paused after step %s (--pause-at): checkpoint saved to %s; continue with: qkt train --resume %s\n",
                step_s, p_ckpt, o.out);
        exit_code = 0;
    } else {
        fprintf(stderr, CMD ": done: %s steps in %s, val loss %.4f; %s\n", step_s, fmt_dur(now_s() - t0, d1, sizeof d1), val,
                p_ckpt);
        exit_code = 0;
    }
done:
    if (log) fclose(log);
    qkt_trainer_free(&t);
    return exit_code;
}
