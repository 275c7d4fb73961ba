/* Private to train/: the pieces of a session and a trainer that an MPI job runs
 * differently (trainer_dist.c, session_dist.c). */
#ifndef QKT_TRAIN_INTERNAL_H
#define QKT_TRAIN_INTERNAL_H
#include "qkt_train_run.h"
#include "qkt_trainer.h"

/* Zeroes the grads, runs this rank's shard of the batch in t->idx / t->tgt, leaves the
 * replica-ordered sum of every rank's grads in params.grad; returns the batch loss.
 * qkt_trainer_step calls it when t->ranks > 1. */
double qkt__trainer_dist_forward_backward(qkt_trainer *t, int B);

/* qkt_session_open's two halves (train_session.c): the trainer from s->run, then the
 * directory (lock, files, the checkpoint when resuming). */
qkt_session_status qkt__session_open_trainer(qkt_session *s, qkt_err *err);
qkt_session_status qkt__session_open_dir(qkt_session *s, const char *dir, bool resume, qkt_err *err);

/* An MPI job (session_dist.c): every rank builds the trainer from rank 0's run, rank 0
 * alone opens the directory, the ranks agree on the status (the first failing rank's,
 * its message prefixed with its rank) and take rank 0's state. */
qkt_session_status qkt__session_open_dist(qkt_session *s, const char *dir, bool resume, qkt_err *err);
/* Rank 0 tells the other ranks what comes: a step, or the end with its qkt_session_end
 * (QKT__SESSION_END_BASE + end); first every rank tells all whether it was asked to stop
 * (an int each: a signal to any rank stops the job at the next step boundary). Nothing
 * in a single process. */
enum { QKT__SESSION_STEP = 1, QKT__SESSION_END_BASE = 16 };
void qkt__session_lead(int what);
/* Rank 0: a rank > 0 was asked to stop (its stop flag, seen at a qkt__session_lead). */
bool qkt__session_peer_stop(void);
/* Ranks > 0: step when rank 0 steps, until it ends; returns its end. stop: this rank's
 * stop flag (may be NULL), passed on to rank 0 at every step. */
qkt_session_end qkt__session_follow(qkt_session *s, const volatile sig_atomic_t *stop, qkt_err *err);

/* The table's defaults of the fields of r outside r->tc (train_fields.c). */
void qkt__train_run_fields_default(qkt_train_run *r);
/* qkt_train_config_validate and qkt_train_run_validate without the call's name (a public
 * call that validates adds its own: qkt__err_call). */
int qkt__train_config_check(const qkt_train_config *c, qkt_err *err);
int qkt__train_run_check(const qkt_train_run *r, qkt_err *err);
/* qkt_trainer_init of a config already resolved and validated (the session validates it
 * once, with the run's own fields). */
int qkt__trainer_init_valid(qkt_trainer *t, const qkt_train_config *c, qkt_err *err);

#endif
