/* The files of a `qkt train` run directory, so a run can be resumed from them alone:
 *   train.json        the full configuration (this struct, as JSON)
 *   log.csv           one row per step (QKT_TRAIN_LOG_HEADER), val columns on eval steps
 *   ckpt.safetensors  qkt_trainer_save's checkpoint */
#ifndef QKT_TRAIN_RUN_H
#define QKT_TRAIN_RUN_H
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "qkt_io.h"
#include "qkt_trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QKT_TRAIN_MAX_EVAL_BATCHES (1 << 20)

#define QKT_TRAIN_LOG_HEADER "step,loss,lr,grad_norm,val_loss,val_acc,tokens_per_s,elapsed_s\n"

typedef struct qkt_train_run {
    qkt_train_config tc; /* tc.data points at data[] */
    char data[4096];
    int eval_every;      /* 0 = only before the first and after the last step */
    int eval_batches;
    int ckpt_every;      /* 0 = only at the end (and on an interruption) */
} qkt_train_run;

/* Defaults: qkt_train_config_default() (QKT_TRAIN_AUTO fields left for the caller to
 * resolve), data mqar, eval every 100 steps over 20 batches, checkpoint every 500. */
void qkt_train_run_default(qkt_train_run *r);
/* qkt_train_config_validate, then the run's own fields (only AdamW; eval and checkpoint
 * cadence): every check a user can fail, naming the call and the field as
 * qkt_train_config_validate does. Does not open the data.
 * train.json's keys are the flags' names with '_' for '-'. */
int qkt_train_run_validate(const qkt_train_run *r, qkt_err *err);
/* JSON object (malloc'd string) and back. Load checks every key's presence and type,
 * then validates; errors start with the file name. */
char *qkt_train_run_json(const qkt_train_run *r);
int qkt_train_run_load(const char *path, qkt_train_run *r, qkt_err *err);
/* The same from the JSON text (n bytes, need not be NUL-terminated); errors start with `label`. */
int qkt_train_run_parse(const char *text, size_t n, const char *label, qkt_train_run *r, qkt_err *err);

/* What qkt_train_log_truncate kept and discarded, for the caller to say. */
typedef struct qkt_log_cut {
    int64_t last_kept;     /* step of the last row kept, -1: none */
    int64_t dropped;       /* complete lines discarded (the rows after `step`) */
    int64_t dropped_first; /* the step of the first of them */
    bool torn;             /* a partial last line (a write cut short) was discarded too */
} qkt_log_cut;
/* Keep the header and the rows with step <= `step` of log.csv (atomically); a missing
 * file becomes the header alone. Every row kept must be a log row (steps 0, 1, 2, ...
 * in order; 8 columns of number characters as qkt writes them, at most 40 bytes each):
 * anything else (a NUL or 0xff byte, a '\r', a letter, ...) is an error naming the file
 * and the line, the file unchanged, as is a file with another header. Only a last line
 * without its newline is discarded as torn; nothing is dropped in silence: `cut` (may be
 * NULL) says what went. */
int qkt_train_log_truncate(const char *path, int64_t step, qkt_log_cut *cut, qkt_err *err);
/* The same checks with nothing written: for a run that is complete (its log is its record). */
int qkt_train_log_check(const char *path, int64_t step, qkt_log_cut *cut, qkt_err *err);

/* ---------------------------------------------------------------- a session
 * Training a run directory, as `qkt train` does (train_session.c):
 *   qkt_session_open   data, model, the directory, and when resuming the checkpoint's state
 *   qkt_session_begin  train.json written, log.csv cut to the checkpoint's step, opened
 *   qkt_session_run    validation at step 0, then steps with their validation and
 *                      checkpoint cadence until done, paused, stopped or failed
 *   qkt_session_close  always, after a successful or failed open
 * A resumed run continues bit-identically. Nothing is printed: results are statuses,
 * err and the struct's fields. */
typedef struct qkt_session {
    qkt_train_run run;    /* the config (run.tc.data points at run.data; text paths made absolute) */
    qkt_trainer t;
    char *dir, *p_json, *p_log, *p_ckpt; /* allocated */
    qkt_lock lock;        /* DIR/.lock, held from open to close: one writer per directory */
    qkt_buf notes;        /* lines for the user (what open and begin changed or discarded:
                             stale temp files, log rows, settings changed on resume) */
    char *pending;        /* "step,loss,lr,grad_norm": a row whose validation a stop cut
                             short; redone first by the next run (checkpoint "log_pending") */
    FILE *log;
    int64_t last_ckpt;    /* step of the last checkpoint saved or resumed from; -1: none */
    bool busy;            /* inside busy_step's computation (0: the validation before training):
                             what a process that exits in it (--detect-anomaly) reports */
    int64_t busy_step;
    double elapsed0;      /* training time of the sessions before (from the checkpoint) */
    double elapsed_s;     /* all training time, when qkt_session_run returned */
    double val_loss;      /* the last validation loss (NAN before any) */
    qkt_step_stats last;  /* the last step's stats */
} qkt_session;

typedef enum {
    QKT_SESSION_OK = 0,
    QKT_SESSION_ERR_CONFIG, /* qkt_train_run_validate refused the run */
    QKT_SESSION_ERR_DATA,   /* the data spec (or the model it sizes) was refused */
    QKT_SESSION_ERR_EXISTS, /* a new run's directory holds a run already (train.json) */
    QKT_SESSION_ERR_DIR,    /* the directory or one of its files cannot be written, or its path is too long */
    QKT_SESSION_ERR_CKPT,   /* resuming: the checkpoint is unreadable, damaged or not this run's */
    QKT_SESSION_ERR_LOCKED, /* another process holds the directory's lock (err names its pid) */
} qkt_session_status;

/* Opens run directory `dir` for run r (its QKT_TRAIN_AUTO fields are resolved here): a
 * new run (resume false) needs a directory without train.json (it is created if
 * missing); resume true restores dir/ckpt.safetensors if there is one (else from step
 * 0). The directory is locked (qkt_dir_lock) until qkt_session_close, and temp files
 * of killed writers are removed. Resuming, the checkpoint's record of the run must
 * match r except steps, lr_decay_steps, eval_every, eval_batches and ckpt_every (each change is put
 * in s->notes). On an error err says why; close the session either way. */
qkt_session_status qkt_session_open(qkt_session *s, const qkt_train_run *r, const char *dir, bool resume, qkt_err *err);
/* Writes train.json, cuts log.csv to the rows up to the restored step (a fresh run: the
 * header alone; what is discarded goes in s->notes) and opens it for appending. 0, or
 * -1 with err naming the file. */
int qkt_session_begin(qkt_session *s, qkt_err *err);

/* Reported after the validation before training (st NULL) and after every step that
 * went into log.csv with a finite loss. */
typedef struct qkt_session_progress {
    int64_t step;              /* steps done */
    const qkt_step_stats *st;  /* the step's stats, or NULL */
    const qkt_eval *ev;        /* the validation after the step, or NULL */
    double tokens_per_s;       /* at the mean step time (an EMA; log.csv has each step's) */
    double elapsed_s, eta_s;
} qkt_session_progress;

typedef struct qkt_session_opts {
    int64_t pause_at;                  /* > 0: after this step (if not the last) save and pause */
    const volatile sig_atomic_t *stop; /* non-zero (a signal handler sets it): finish the step (a
                                          validation in flight stops between batches), save, stop */
    void (*on_progress)(const qkt_session *s, const qkt_session_progress *p, void *user);
    void *user;
} qkt_session_opts;

typedef enum {
    QKT_SESSION_DONE,        /* every step done; checkpoint saved */
    QKT_SESSION_PAUSED,      /* after opts.pause_at; checkpoint saved */
    QKT_SESSION_STOPPED,     /* *opts.stop was set; checkpoint saved */
    QKT_SESSION_NONFINITE,   /* s->last has a non-finite loss or gradient norm: not applied, not saved */
    QKT_SESSION_LOG_FAILED,  /* log.csv could not be written (err) */
    QKT_SESSION_CKPT_FAILED, /* the checkpoint could not be written (err); the previous one is intact */
} qkt_session_end;

/* Trains from the current step: the validation before training when at step 0, then
 * steps; validation every run.eval_every steps and after the last, a checkpoint every
 * run.ckpt_every steps, after the last, on a pause and on a stop. opts may be NULL. */
qkt_session_end qkt_session_run(qkt_session *s, const qkt_session_opts *opts, qkt_err *err);
void qkt_session_close(qkt_session *s);

#ifdef __cplusplus
}
#endif
#endif
