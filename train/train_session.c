/* A `qkt train` session (qkt_train_run.h): the run directory's files around the
 * trainer, and the training loop with its validation and checkpoint cadence, pause and
 * stop. The CLI adds flags and printing; a program can drive a run the same way. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qkt_io.h"
#include "qkt_train_run.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

static int set_paths(qkt_session *s, const char *dir, qkt_err *err) {
    if (strlen(dir) >= sizeof s->dir) return qkt_err_set(err, "path too long (%zu bytes)", strlen(dir));
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->p_json, sizeof s->p_json, "%s/train.json", dir);
    snprintf(s->p_log, sizeof s->p_log, "%s/log.csv", dir);
    snprintf(s->p_ckpt, sizeof s->p_ckpt, "%s/ckpt.safetensors", dir);
    return 0;
}

/* The checkpoint's training state into s->t, and its step and time. */
static int restore(qkt_session *s, qkt_err *err) {
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(s->p_ckpt, &ck, err)) return -1;
    int rc = qkt_trainer_restore(&s->t, &ck, err);
    const char *el = qkt_checkpoint_meta(&ck, "elapsed_s");
    if (el) s->elapsed0 = strtod(el, NULL);
    qkt_checkpoint_close(&ck);
    if (rc) return -1;
    s->last_ckpt = s->t.step;
    return 0;
}

qkt_session_status qkt_session_open(qkt_session *s, const qkt_train_run *r, const char *dir, bool resume, qkt_err *err) {
    memset(s, 0, sizeof *s);
    s->run = *r;
    s->run.tc.data = s->run.data;
    s->last_ckpt = -1;
    s->val_loss = NAN;
    qkt_train_config_resolve(&s->run.tc);
    if (qkt_train_run_validate(&s->run, err)) return QKT_SESSION_ERR_CONFIG;
    /* Data and model (validates the data spec against the block size). */
    if (qkt_trainer_init(&s->t, &s->run.tc, err)) return QKT_SESSION_ERR_DATA;
    absolute_text_spec(qkt_data_spec(s->t.data), s->run.data, sizeof s->run.data);
    s->run.tc.model.vocab_size = s->t.gpt.cfg.vocab_size;
    /* The directory, before any training: unwritable paths fail here. */
    if (set_paths(s, dir, err)) return QKT_SESSION_ERR_DIR;
    if (!resume && qkt_file_exists(s->p_json)) {
        qkt_err_set(err, "%s already holds a run (train.json)", dir);
        return QKT_SESSION_ERR_EXISTS;
    }
    if (qkt_mkdirs(dir, err) || qkt_check_replaceable(s->p_ckpt, err) || qkt_check_replaceable(s->p_log, err) ||
        qkt_check_replaceable(s->p_json, err))
        return QKT_SESSION_ERR_DIR;
    if (resume && qkt_file_exists(s->p_ckpt) && restore(s, err)) return QKT_SESSION_ERR_CKPT;
    return QKT_SESSION_OK;
}

int qkt_session_begin(qkt_session *s, qkt_err *err) {
    char *json = qkt_train_run_json(&s->run);
    int rc = qkt_write_atomic(s->p_json, json, strlen(json), err);
    free(json);
    /* from step 0 the validation row 0 is redone, so it goes too */
    if (!rc) rc = qkt_train_log_truncate(s->p_log, s->t.step ? s->t.step : -1, err);
    if (rc) return -1;
    if (!(s->log = fopen(s->p_log, "a"))) return qkt_err_set(err, "%s: cannot open: %s", s->p_log, strerror(errno));
    return 0;
}

void qkt_session_close(qkt_session *s) {
    if (s->log) fclose(s->log);
    s->log = NULL;
    s->busy = false;
    qkt_trainer_free(&s->t);
}

/* ---------------------------------------------------------------- the loop */
/* One log.csv row (QKT_TRAIN_LOG_HEADER); st NULL for row 0, ev NULL between validations. */
static void log_row(FILE *f, long long step, const qkt_step_stats *st, const qkt_eval *ev, double tok_s, double elapsed) {
    if (st) fprintf(f, "%lld,%.9g,%.9g,%.9g,", step, st->loss, st->lr, st->grad_norm);
    else fprintf(f, "%lld,,,,", step);
    if (ev) fprintf(f, "%.9g,%.9g,", ev->loss, ev->acc);
    else fprintf(f, ",,");
    if (tok_s > 0) fprintf(f, "%.1f,%.3f\n", tok_s, elapsed);
    else fprintf(f, ",%.3f\n", elapsed);
}

static bool stop_asked(const qkt_session_opts *o) { return o->stop && *o->stop; }

/* The validation before the first step: log row 0. */
static void validate_first(qkt_session *s, const qkt_session_opts *o, double t0) {
    qkt_eval ev = {0};
    s->busy = true, s->busy_step = 0;
    qkt_trainer_eval(&s->t, s->run.eval_batches, s->run.tc.batch_size, &ev);
    s->busy = false;
    s->val_loss = ev.loss;
    log_row(s->log, 0, NULL, &ev, 0, now_s() - t0);
    qkt_session_progress p = {.step = 0, .ev = &ev, .elapsed_s = now_s() - t0};
    if (o->on_progress) o->on_progress(s, &p, o->user);
}

/* One step, its validation when due, its log row. ema: the mean step time so far. Returns
 * 0, or -1 with the reason to end the run in *end. */
static int train_step(qkt_session *s, const qkt_session_opts *o, double t0, double *ema, qkt_session_end *end, qkt_err *err) {
    const qkt_train_run *r = &s->run;
    int64_t steps = r->tc.steps;
    qkt_step_stats *st = &s->last;
    double ts = now_s();
    s->busy = true, s->busy_step = s->t.step + 1;
    qkt_trainer_step(&s->t, st);
    double dt = now_s() - ts;
    int64_t step = s->t.step;
    *ema = *ema ? 0.9 * *ema + 0.1 * dt : dt;
    qkt_eval ev = {0};
    bool do_eval = st->finite && ((r->eval_every && step % r->eval_every == 0) || step == steps);
    if (do_eval) qkt_trainer_eval(&s->t, r->eval_batches, r->tc.batch_size, &ev), s->val_loss = ev.loss;
    s->busy = false;
    double tokens = (double)r->tc.batch_size * s->t.T;
    log_row(s->log, step, st, do_eval ? &ev : NULL, tokens / dt, now_s() - t0);
    if (fflush(s->log) || ferror(s->log)) { /* a full disk: stop rather than lose rows */
        qkt_err_set(err, "%s: write failed: %s", s->p_log, strerror(errno));
        *end = QKT_SESSION_LOG_FAILED;
        return -1;
    }
    if (!st->finite) {
        *end = QKT_SESSION_NONFINITE;
        return -1;
    }
    qkt_session_progress p = {step, st, do_eval ? &ev : NULL, tokens / *ema, now_s() - t0, *ema * (double)(steps - step)};
    if (o->on_progress) o->on_progress(s, &p, o->user);
    return 0;
}

static int save(qkt_session *s, double t0, qkt_err *err) {
    char el[32];
    snprintf(el, sizeof el, "%.3f", now_s() - t0);
    qkt_st_meta meta[] = {{"elapsed_s", el}};
    if (qkt_trainer_save(&s->t, s->p_ckpt, meta, 1, err)) return -1;
    s->last_ckpt = s->t.step;
    return 0;
}

qkt_session_end qkt_session_run(qkt_session *s, const qkt_session_opts *opts, qkt_err *err) {
    static const qkt_session_opts none = {0};
    const qkt_session_opts *o = opts ? opts : &none;
    const qkt_train_run *r = &s->run;
    int64_t steps = r->tc.steps;
    double t0 = now_s() - s->elapsed0, ema = 0;
    qkt_session_end end = QKT_SESSION_DONE;
    if (s->t.step == 0) validate_first(s, o, t0);
    bool paused = false;
    while (s->t.step < steps && !stop_asked(o) && !paused) {
        if (train_step(s, o, t0, &ema, &end, err)) return end;
        int64_t step = s->t.step;
        paused = step == o->pause_at && step < steps;
        bool due = (r->ckpt_every && step % r->ckpt_every == 0) || step == steps;
        if ((due || stop_asked(o) || paused) && save(s, t0, err)) return QKT_SESSION_CKPT_FAILED;
    }
    /* stopped before the first step (during the validation before it): save that state */
    if (stop_asked(o) && s->last_ckpt != s->t.step && save(s, t0, err)) return QKT_SESSION_CKPT_FAILED;
    s->elapsed_s = now_s() - t0;
    return stop_asked(o) ? QKT_SESSION_STOPPED : paused ? QKT_SESSION_PAUSED : QKT_SESSION_DONE;
}
