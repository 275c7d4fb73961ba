/* A `qkt train` session (qkt_train_run.h): the run directory's files around the
 * trainer, and the training loop with its validation and checkpoint cadence, pause and
 * stop. The CLI adds flags and printing; a program can drive a run the same way. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "qkt_dist.h"
#include "qkt_io.h"
#include "qkt_json.h"
#include "qkt_train_fields.h"
#include "qkt_train_run.h"
#include "train_internal.h"

/* text:PATH,val_frac=F with PATH made absolute, so a resume works from any directory.
 * Symbolic links are not resolved: the run names the file as the user did (a file later
 * replaced by a link to a copy is the same path; its content is checked by its size and
 * checksum on resume). Left as it is when the result would not fit. */
static void absolute_text_spec(const char *spec, char *out, size_t n) {
    if (strlen(spec) < n) memmove(out, spec, strlen(spec) + 1);
    const char *opt = strstr(spec, ",val_frac=");
    if (strncmp(spec, "text:", 5) || !opt) return;
    while (strstr(opt + 1, ",val_frac=")) opt = strstr(opt + 1, ",val_frac=");
    size_t pl = (size_t)(opt - spec - 5);
    char *path = qkt_malloc(pl + 1);
    memcpy(path, spec + 5, pl), path[pl] = 0;
    char *real = NULL;
    if (path[0] == '/') {
        real = qkt_strdup(path);
    } else {
        char *cwd = getcwd(NULL, 0);
        const char *rel = path;
        while (!strncmp(rel, "./", 2)) rel += 2;
        if (cwd) real = qkt_malloc(strlen(cwd) + strlen(rel) + 2), sprintf(real, "%s/%s", cwd, rel);
        free(cwd);
    }
    if (real && 5 + strlen(real) + strlen(opt) < n) {
        char *buf = qkt_malloc(5 + strlen(real) + strlen(opt) + 1);
        strcpy(buf, "text:"), strcat(buf, real), strcat(buf, opt);
        memcpy(out, buf, strlen(buf) + 1);
        free(buf);
    }
    free(real);
    free(path);
}

/* The longest name the files of a run directory get: "/ckpt.safetensors.tmp.<pid>.<n>". */
#define DIR_ROOM 64

static int set_paths(qkt_session *s, const char *dir, qkt_err *err) {
    if (!*dir) return qkt_err_set(err, "an empty path");
    if (qkt_check_path_len(dir, DIR_ROOM, err)) return -1;
    s->dir = qkt_strdup(dir);
    s->p_json = qkt_path_join(dir, "train.json");
    s->p_log = qkt_path_join(dir, "log.csv");
    s->p_ckpt = qkt_path_join(dir, "ckpt.safetensors");
    return 0;
}

/* The settings a resumed run may change (QKT_FIELD_RESUME; said in s->notes); any other is refused. */
static bool changeable(const char *key) {
    const qkt_train_field *f = qkt_train_field_find(key);
    return f && !strcmp(f->name, key) && (f->where & QKT_FIELD_RESUME);
}

/* "steps, lr_decay_steps, eval_every, eval_batches and ckpt_every": the QKT_FIELD_RESUME fields. */
static const char *changeable_list(char *buf, size_t n) {
    int k = 0, total = 0;
    for (int i = 0; i < qkt_train_field_count(); i++) total += (qkt_train_field_at(i)->where & QKT_FIELD_RESUME) != 0;
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < qkt_train_field_count() && o < n; i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if (!(f->where & QKT_FIELD_RESUME)) continue;
        o += (size_t)snprintf(buf + o, n - o, "%s%s", k == 0 ? "" : k == total - 1 ? " and " : ", ", f->name);
        k++;
    }
    return buf;
}

/* The checkpoint's record of the run (metadata "run", train.json's JSON) against s->run. */
static int check_run_record(qkt_session *s, const qkt_checkpoint *ck, qkt_err *err) {
    const char *rec = qkt_checkpoint_meta(ck, "run");
    if (!rec) {
        qkt_buf_printf(&s->notes, "%s has no record of the run's settings (written by an older qkt): train.json is taken "
                                  "as it is\n", ck->path);
        return 0;
    }
    char *now_s = qkt_train_run_json(&s->run);
    qkt_err e2;
    cJSON *then = qkt_json_parse(rec, strlen(rec), "metadata 'run'", &e2), *now = cJSON_Parse(now_s);
    free(now_s);
    int rc = 0;
    if (!cJSON_IsObject(then))
        rc = qkt_err_set(err, "checkpoint %s: its record of the run (%s) is not a JSON object", ck->path,
                         then ? "metadata 'run'" : e2.msg);
    for (const cJSON *a = rc ? NULL : then->child; a && !rc; a = a->next) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(now, a->string);
        if (b && cJSON_Compare(a, b, true)) continue;
        char *va = cJSON_PrintUnformatted(a), *vb = b ? cJSON_PrintUnformatted(b) : NULL;
        char list[256];
        if (b && changeable(a->string))
            qkt_buf_printf(&s->notes, "%s changed on resume: %s (checkpoint) -> %s\n", a->string, va, vb);
        else
            rc = qkt_err_set(err, "%s: '%s' is %.200s but the checkpoint %s was trained with %.200s; only %s may change on resume",
                             s->p_json, a->string, vb ? vb : "missing", ck->path, va, changeable_list(list, sizeof list));
        cJSON_free(va);
        if (vb) cJSON_free(vb);
    }
    cJSON_Delete(then);
    cJSON_Delete(now);
    return rc;
}

/* The checkpoint's training state into s->t, and its step, time and pending row. */
static int restore(qkt_session *s, qkt_err *err) {
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(s->p_ckpt, &ck, err)) return -1;
    if (!ck.st.checksummed)
        qkt_buf_printf(&s->notes, "%s has no checksums (written by an older qkt or another tool): its tensors are not verified\n",
                       s->p_ckpt);
    int rc = qkt_trainer_restore(&s->t, &ck, err);
    if (!rc) rc = check_run_record(s, &ck, err);
    const char *el = qkt_checkpoint_meta(&ck, "elapsed_s");
    if (el) s->elapsed0 = strtod(el, NULL);
    const char *pend = qkt_checkpoint_meta(&ck, "log_pending");
    if (!rc && pend) {
        char *end;
        long long st = strtoll(pend, &end, 10);
        if (st != s->t.step || st < 1 || *end != ',')
            rc = qkt_err_set(err, "checkpoint %s: metadata log_pending '%.64s' is not a row of step %lld", s->p_ckpt, pend,
                             (long long)s->t.step);
        else
            s->pending = qkt_strdup(pend);
    }
    qkt_checkpoint_close(&ck);
    if (rc) return -1;
    s->last_ckpt = s->t.step;
    return 0;
}

/* The run's trainer: data and model (validates the data spec against the block size). */
qkt_session_status qkt__session_open_trainer(qkt_session *s, qkt_err *err) {
    qkt_train_config_resolve(&s->run.tc);
    if (qkt__train_run_check(&s->run, err)) return qkt__err_call(err, "qkt_session_open"), QKT_SESSION_ERR_CONFIG;
    if (qkt__trainer_init_valid(&s->t, &s->run.tc, err)) return QKT_SESSION_ERR_DATA;
    absolute_text_spec(qkt_data_spec(s->t.data), s->run.data, sizeof s->run.data);
    s->run.tc.model.vocab_size = s->t.gpt.cfg.vocab_size;
    return QKT_SESSION_OK;
}

/* The directory, its lock and files, and when resuming the checkpoint's state. */
qkt_session_status qkt__session_open_dir(qkt_session *s, const char *dir, bool resume, qkt_err *err) {
    /* The directory, before any training: unwritable paths fail here. */
    if (set_paths(s, dir, err)) return QKT_SESSION_ERR_DIR;
    if (qkt_mkdirs(dir, err)) return QKT_SESSION_ERR_DIR;
    /* One writer: from here on nobody else works in dir (two starts race to the lock;
     * the loser sees the winner's train.json or is refused here). */
    if (qkt_dir_lock(&s->lock, dir, err)) return QKT_SESSION_ERR_LOCKED;
    if (!resume && qkt_file_exists(s->p_json)) {
        qkt_err_set(err, "%s already holds a run (train.json)", dir);
        return QKT_SESSION_ERR_EXISTS;
    }
    if (qkt_check_replaceable(s->p_ckpt, err) || qkt_check_replaceable(s->p_log, err) || qkt_check_replaceable(s->p_json, err))
        return QKT_SESSION_ERR_DIR;
    /* A new run writes over nothing: a checkpoint or log with no train.json beside it (removed,
     * or another program's files) is not this run's to replace. */
    const char *held = resume ? NULL : qkt_file_exists(s->p_ckpt) ? s->p_ckpt : qkt_file_exists(s->p_log) ? s->p_log : NULL;
    if (held) {
        qkt_err_set(err, "it holds %s but no train.json, so no run qkt can continue: a new run does not write over it "
                    "(move it away or pick another directory)", held);
        return QKT_SESSION_ERR_DIR;
    }
    const char *files[] = {s->p_ckpt, s->p_log, s->p_json};
    qkt_buf gone = {0};
    for (int i = 0; i < 3; i++)
        if (qkt_remove_stale_temps(files[i], &gone, err) < 0) return qkt_buf_free(&gone), QKT_SESSION_ERR_DIR;
    if (gone.n) qkt_buf_printf(&s->notes, "removed temp files left in %s by a killed run: %s\n", dir, gone.s);
    qkt_buf_free(&gone);
    if (resume && qkt_file_exists(s->p_ckpt) && restore(s, err)) return QKT_SESSION_ERR_CKPT;
    return QKT_SESSION_OK;
}

qkt_session_status qkt_session_open(qkt_session *s, const qkt_train_run *r, const char *dir, bool resume, qkt_err *err) {
    memset(s, 0, sizeof *s);
    s->lock.fd = -1;
    s->run = *r;
    s->run.tc.data = s->run.data;
    s->last_ckpt = -1;
    s->val_loss = NAN;
    if (qkt_dist_size() > 1) return qkt__session_open_dist(s, dir, resume, err); /* an MPI job: session_dist.c */
    qkt_session_status st = qkt__session_open_trainer(s, err);
    return st ? st : qkt__session_open_dir(s, dir, resume, err);
}

static int write_json(const qkt_session *s, qkt_err *err) {
    char *json = qkt_train_run_json(&s->run);
    int rc = qkt_write_atomic(s->p_json, json, strlen(json), err);
    free(json);
    return rc;
}

static int begin_here(qkt_session *s, qkt_err *err) {
    /* A new run's train.json comes before its log: killed between the two, the directory
     * holds a run to resume, never a log without train.json (which a new run refuses as
     * another's). A resumed run's is rewritten after the log's checks pass. */
    bool fresh = !qkt_file_exists(s->p_json);
    if (fresh && write_json(s, err)) return -1;
    /* the rows to keep: from step 0 the validation row 0 is redone, so it goes too, as
     * does a row whose validation was cut short (s->pending) */
    int64_t keep = s->t.step ? s->t.step - (s->pending != NULL) : -1;
    qkt_log_cut cut;
    if (qkt_train_log_truncate(s->p_log, keep, &cut, err)) return -1;
    if (cut.dropped && cut.dropped_first >= 0)
        qkt_buf_printf(&s->notes, "%s: discarded %lld row%s from step %lld on (after step %lld, where the run continues)\n",
                       s->p_log, (long long)cut.dropped, cut.dropped > 1 ? "s" : "", (long long)cut.dropped_first,
                       (long long)keep);
    else if (cut.dropped)
        qkt_buf_printf(&s->notes, "%s: discarded %lld line%s after step %lld, where the run continues\n", s->p_log,
                       (long long)cut.dropped, cut.dropped > 1 ? "s" : "", (long long)keep);
    if (cut.torn) qkt_buf_printf(&s->notes, "%s: discarded a partial last line (a write cut short)\n", s->p_log);
    if (cut.last_kept < keep)
        qkt_buf_printf(&s->notes, "%s has rows up to step %lld only; the rows of steps %lld-%lld are missing\n", s->p_log,
                       (long long)cut.last_kept, (long long)cut.last_kept + 1, (long long)keep);
    if (!fresh && write_json(s, err)) return -1;
    if (!(s->log = fopen(s->p_log, "a"))) return qkt_err_set(err, "%s: cannot open: %s", s->p_log, strerror(errno));
    return 0;
}

/* In an MPI job rank 0 writes the files; every rank learns whether it could. */
int qkt_session_begin(qkt_session *s, qkt_err *err) {
    int rc = qkt_dist_rank() == 0 ? begin_here(s, err) : 0;
    if (qkt_dist_size() > 1) {
        qkt_dist_bcast(&rc, sizeof rc, 0);
        if (rc && qkt_dist_rank() > 0) qkt_err_set(err, "rank 0 could not start the run's files (it says why)");
    }
    return rc;
}

void qkt_session_close(qkt_session *s) {
    if (s->log) fclose(s->log);
    s->log = NULL;
    s->busy = false;
    qkt_trainer_free(&s->t);
    qkt_dir_unlock(&s->lock);
    qkt_buf_free(&s->notes);
    free(s->dir), free(s->p_json), free(s->p_log), free(s->p_ckpt), free(s->pending);
    s->dir = s->p_json = s->p_log = s->p_ckpt = s->pending = NULL;
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

/* This process's stop flag, or (rank 0 of an MPI job) another rank's: the job stops as one. */
static bool stop_asked(const qkt_session_opts *o) { return (o->stop && *o->stop) || qkt__session_peer_stop(); }

/* The validation before the first step: log row 0. */
static void validate_first(qkt_session *s, const qkt_session_opts *o, double t0) {
    qkt_eval ev = {0};
    s->busy = true, s->busy_step = 0;
    qkt_trainer_eval(&s->t, s->run.eval_batches, s->run.tc.batch_size, &ev);
    s->busy = false;
    if (ev.interrupted) return; /* stopped: the next run redoes it (it starts at step 0) */
    s->val_loss = ev.loss;
    log_row(s->log, 0, NULL, &ev, 0, qkt_now_s() - t0);
    qkt_session_progress p = {.step = 0, .ev = &ev, .elapsed_s = qkt_now_s() - t0};
    if (o->on_progress) o->on_progress(s, &p, o->user);
}

/* One step, its validation when due, its log row. ema: the mean step time so far. Returns
 * 0, or -1 with the reason to end the run in *end. */
static int train_step(qkt_session *s, const qkt_session_opts *o, double t0, double *ema, qkt_session_end *end, qkt_err *err) {
    const qkt_train_run *r = &s->run;
    int64_t steps = r->tc.steps;
    qkt_step_stats *st = &s->last;
    double ts = qkt_now_s();
    s->busy = true, s->busy_step = s->t.step + 1;
    qkt__session_lead(QKT__SESSION_STEP); /* an MPI job: the other ranks step with us */
    qkt_trainer_step(&s->t, st);
    double dt = qkt_now_s() - ts;
    int64_t step = s->t.step;
    *ema = *ema ? 0.9 * *ema + 0.1 * dt : dt;
    qkt_eval ev = {0};
    bool do_eval = st->finite && ((r->eval_every && step % r->eval_every == 0) || step == steps);
    if (do_eval) qkt_trainer_eval(&s->t, r->eval_batches, r->tc.batch_size, &ev);
    s->busy = false;
    if (do_eval && ev.interrupted) { /* a stop cut the validation short: its row is redone on resume */
        qkt_buf row = {0};
        qkt_buf_printf(&row, "%lld,%.9g,%.9g,%.9g", (long long)step, st->loss, st->lr, st->grad_norm);
        s->pending = row.s;
        return 0;
    }
    if (do_eval) s->val_loss = ev.loss;
    double tokens = (double)r->tc.batch_size * s->t.T;
    log_row(s->log, step, st, do_eval ? &ev : NULL, tokens / dt, qkt_now_s() - t0);
    if (fflush(s->log) || ferror(s->log)) { /* a full disk: stop rather than lose rows */
        qkt_err_set(err, "%s: write failed: %s", s->p_log, strerror(errno));
        *end = QKT_SESSION_LOG_FAILED;
        return -1;
    }
    if (!st->finite) {
        *end = QKT_SESSION_NONFINITE;
        return -1;
    }
    qkt_session_progress p = {step, st, do_eval ? &ev : NULL, tokens / *ema, qkt_now_s() - t0, *ema * (double)(steps - step)};
    if (o->on_progress) o->on_progress(s, &p, o->user);
    return 0;
}

/* The row of a step whose validation was cut short (s->pending): the validation again
 * (the same batches: the val stream is reset) and the row. 0, -1 when stopped again
 * (the checkpoint still holds it), or -1 with *end set. */
static int finish_pending(qkt_session *s, const qkt_session_opts *o, double t0, qkt_session_end *end, qkt_err *err) {
    qkt_step_stats st = {.finite = true};
    long long step;
    if (sscanf(s->pending, "%lld,%lf,%lf,%lf", &step, &st.loss, &st.lr, &st.grad_norm) != 4) st.loss = st.lr = st.grad_norm = NAN;
    qkt_eval ev = {0};
    s->busy = true, s->busy_step = step;
    qkt_trainer_eval(&s->t, s->run.eval_batches, s->run.tc.batch_size, &ev);
    s->busy = false;
    if (ev.interrupted) return -1;
    s->val_loss = ev.loss;
    /* the step's numbers exactly as the interrupted run would have printed them */
    fprintf(s->log, "%s,%.9g,%.9g,,%.3f\n", s->pending, ev.loss, ev.acc, qkt_now_s() - t0);
    if (fflush(s->log) || ferror(s->log)) {
        qkt_err_set(err, "%s: write failed: %s", s->p_log, strerror(errno));
        *end = QKT_SESSION_LOG_FAILED;
        return -1;
    }
    free(s->pending);
    s->pending = NULL;
    qkt_session_progress p = {step, &st, &ev, 0, qkt_now_s() - t0, NAN};
    if (o->on_progress) o->on_progress(s, &p, o->user);
    return 0;
}

static int save(qkt_session *s, double t0, qkt_err *err) {
    char el[32];
    snprintf(el, sizeof el, "%.3f", qkt_now_s() - t0);
    char *run = qkt_train_run_json(&s->run);
    cJSON_Minify(run);
    qkt_st_meta meta[3] = {{"elapsed_s", el}, {"run", run}};
    int n = 2;
    if (s->pending) meta[n++] = (qkt_st_meta){"log_pending", s->pending};
    int rc = qkt_trainer_save(&s->t, s->p_ckpt, meta, n, err);
    free(run);
    if (rc) return -1;
    s->last_ckpt = s->t.step;
    return 0;
}

static qkt_session_end run_here(qkt_session *s, const qkt_session_opts *opts, qkt_err *err) {
    static const qkt_session_opts none = {0};
    const qkt_session_opts *o = opts ? opts : &none;
    const qkt_train_run *r = &s->run;
    int64_t steps = r->tc.steps;
    double t0 = qkt_now_s() - s->elapsed0, ema = 0;
    qkt_session_end end = QKT_SESSION_DONE;
    s->t.stop = o->stop;
    bool had_pending = s->pending != NULL;
    if (had_pending && finish_pending(s, o, t0, &end, err)) {
        if (end != QKT_SESSION_DONE) return end;
        s->elapsed_s = qkt_now_s() - t0;
        return QKT_SESSION_STOPPED; /* stopped again: the checkpoint still has the pending row */
    }
    if (had_pending && s->t.step >= steps && save(s, t0, err))
        return QKT_SESSION_CKPT_FAILED; /* the run's last row was the pending one: its checkpoint without it */
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
    s->elapsed_s = qkt_now_s() - t0;
    return stop_asked(o) ? QKT_SESSION_STOPPED : paused ? QKT_SESSION_PAUSED : QKT_SESSION_DONE;
}

/* In an MPI job rank 0 runs the loop (validation, log, checkpoints: all its own) and
 * leads the other ranks step by step (session_dist.c); they end as it ends. */
qkt_session_end qkt_session_run(qkt_session *s, const qkt_session_opts *opts, qkt_err *err) {
    if (qkt_dist_rank() > 0) return qkt__session_follow(s, opts ? opts->stop : NULL, err);
    qkt_session_end end = run_here(s, opts, err);
    qkt__session_lead(QKT__SESSION_END_BASE + (int)end);
    return end;
}
