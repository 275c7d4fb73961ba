/* A `qkt train` session in an MPI job (`mpirun -np N qkt train ...`): the trainer runs
 * data-parallel over the ranks (trainer_dist.c), rank 0 owns the run directory (lock,
 * train.json, log.csv, validation, checkpoints: written atomically as in one process)
 * and leads; the other ranks only step. Every rank holds the same parameters and
 * optimizer state after every step, so any rank's would do; rank 0's is the one saved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_dist.h"
#include "qkt_train_run.h"
#include "train_internal.h"

static volatile sig_atomic_t g_peer_stop; /* rank 0: the stop signal a rank > 0 got, or 0 */

/* A rank's status after opening, with its message, for the agreement. */
typedef struct {
    int status;
    char msg[1000];
} rank_status;

qkt_session_status qkt__session_open_dist(qkt_session *s, const char *dir, bool resume, qkt_err *err) {
    const int me = qkt_dist_rank(), n = qkt_dist_size();
    /* Rank 0's run: resuming, the others may not see its train.json (another host). The
     * struct is plain data but for tc.data, which points into it. */
    g_peer_stop = 0; /* a new session: no rank has asked yet */
    qkt_dist_bcast(&s->run, sizeof s->run, 0);
    s->run.tc.data = s->run.data;
    qkt_session_status st = qkt__session_open_trainer(s, err);
    if (!st && qkt_trainer_distribute(&s->t, err)) st = QKT_SESSION_ERR_CONFIG;
    if (!st && me == 0) st = qkt__session_open_dir(s, dir, resume, err);
    rank_status mine = {(int)st, ""}, *all = qkt_malloc((size_t)n * sizeof *all);
    if (st) snprintf(mine.msg, sizeof mine.msg, "%.990s", err->msg);
    qkt_dist_allgather(&mine, all, sizeof mine);
    st = QKT_SESSION_OK;
    for (int r = 0; r < n && !st; r++) {
        if (!all[r].status) continue;
        st = (qkt_session_status)all[r].status;
        if (r == 0) qkt_err_set(err, "%s", all[r].msg);
        else qkt_err_set(err, "rank %d of %d: %s", r, n, all[r].msg);
    }
    free(all);
    if (st) return st;
    /* The checkpoint rank 0 restored (or the same fresh init everywhere), and what the
     * caller reads to decide whether to train at all. */
    qkt_trainer_share_state(&s->t, 0);
    struct {
        int64_t last_ckpt;
        int has_pending;
        char pending[512];
    } b = {s->last_ckpt, s->pending != NULL, ""};
    if (s->pending) snprintf(b.pending, sizeof b.pending, "%.500s", s->pending);
    qkt_dist_bcast(&b, sizeof b, 0);
    s->last_ckpt = b.last_ckpt;
    if (me > 0 && b.has_pending) s->pending = qkt_strdup(b.pending);
    return QKT_SESSION_OK;
}

/* Every rank's stop flag to every rank (an int each): the first non-zero one, or 0. */
static int stops_of_all(const volatile sig_atomic_t *stop) {
    static int *all, cap; /* grown once: no allocation per step */
    int n = qkt_dist_size(), mine = stop ? (int)*stop : 0, any = 0;
    if (n > cap) all = qkt_realloc(all, (size_t)n * sizeof *all), cap = n;
    qkt_dist_allgather(&mine, all, sizeof mine);
    for (int r = 0; r < n && !any; r++) any = all[r];
    return any;
}

void qkt__session_lead(int what) {
    if (qkt_dist_size() <= 1) return;
    int peer = stops_of_all(NULL); /* rank 0's own flag it reads itself */
    if (peer) g_peer_stop = peer;
    qkt_dist_bcast(&what, sizeof what, 0);
}

bool qkt__session_peer_stop(void) { return g_peer_stop != 0; }

qkt_session_end qkt__session_follow(qkt_session *s, const volatile sig_atomic_t *stop, qkt_err *err) {
    for (;;) {
        int what = 0;
        stops_of_all(stop);
        qkt_dist_bcast(&what, sizeof what, 0);
        if (what == QKT__SESSION_STEP) {
            qkt_trainer_step(&s->t, &s->last);
            continue;
        }
        qkt_session_end end = (qkt_session_end)(what - QKT__SESSION_END_BASE);
        if (end == QKT_SESSION_LOG_FAILED || end == QKT_SESSION_CKPT_FAILED)
            qkt_err_set(err, "rank 0 could not write the run's files (it says why)");
        return end;
    }
}
