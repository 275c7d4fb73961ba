/* The files of a `qkt train` run directory, so a run can be resumed from them alone:
 *   train.json        the full configuration (this struct, as JSON)
 *   log.csv           one row per step (QKT_TRAIN_LOG_HEADER), val columns on eval steps
 *   ckpt.safetensors  qkt_trainer_save's checkpoint */
#ifndef QKT_TRAIN_RUN_H
#define QKT_TRAIN_RUN_H
#include <stdint.h>

#include "qkt_trainer.h"

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
 * cadence): every check a user can fail, with the flag's name. Does not open the data.
 * train.json's keys are the flags' names with '_' for '-'. */
int qkt_train_run_validate(const qkt_train_run *r, qkt_err *err);
/* JSON object (malloc'd string) and back. Load checks every key's presence and type,
 * then validates; errors start with the file name. */
char *qkt_train_run_json(const qkt_train_run *r);
int qkt_train_run_load(const char *path, qkt_train_run *r, qkt_err *err);
/* The same from the JSON text (n bytes, need not be NUL-terminated); errors start with `label`. */
int qkt_train_run_parse(const char *text, size_t n, const char *label, qkt_train_run *r, qkt_err *err);

/* Keep the header and the rows with step <= `step` of log.csv (atomically); a missing
 * file becomes the header alone. A file with another header is an error. */
int qkt_train_log_truncate(const char *path, int64_t step, qkt_err *err);

#endif
