/* A sweep over the ranks of an MPI job (qkt_sweep.mpi; `mpirun -np N qkt ablate`).
 * Every rank runs cells side by side on its own cores as a single process does; rank 0
 * also hands the cells out, one at a time, to whichever rank has a free slot (the plan's
 * order, so the cells finish in about the same order as in one process). A cell is the
 * same `qkt _cell` process writing the same sealed file wherever it runs, so the study's
 * files do not depend on N; the run directory must be on a filesystem every host sees.
 *
 * Messages (qkt_dist, bytes): a rank r > 0 sends rank 0 an up_msg: ASK (a slot is free),
 * DONE (a cell ended, ok or not), BYE (nothing left here) and ALIVE every ALIVE_S;
 * rank 0 answers ASK with a cell index or -1, and may send STOP. A rank that is silent
 * for LOST_S (or, once stopping, STOP_WAIT_S) is lost: its running cells are named and
 * counted as failed, and the job ends loudly (qkt_dist_set_broken). Under mpirun a rank
 * that dies takes the job down at once: rank 0, stopped by it, names the cells that
 * were running elsewhere. Either way the rerun (any N) runs exactly the unfinished cells. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "sweep_internal.h"

enum { TAG_UP = 101, TAG_CELL = 102, TAG_STOP = 103 };
enum { UP_ASK = 1, UP_DONE, UP_BYE, UP_ALIVE };
#define ALIVE_S 2.0
#define LOST_S 60.0
#define STOP_WAIT_S 10.0
#define HOST_LEN 64

typedef struct {
    int kind, cell, ok, ws;
} up_msg;

/* What rank 0 knows of each rank. */
typedef struct sweep_peer {
    double last;   /* when it last said anything */
    bool bye, gone;
    char host[HOST_LEN];
} sweep_peer;

/* What every rank checks at the start. */
typedef struct {
    int n;
    uint32_t ids_crc;
    int sees_dir;
    int workers;
    char host[HOST_LEN];
} start_info;

int qkt__sweep_dist_start(sweep_state *st, qkt_err *err) {
    const qkt_sweep *s = st->s;
    const int me = qkt_dist_rank(), N = qkt_dist_size();
    qkt_dist_barrier(); /* rank 0 has made RUN/cells */
    start_info mine = {s->n_cells, 0, 1, s->workers, ""};
    for (int i = 0; i < s->n_cells; i++) mine.ids_crc = qkt_crc32c(mine.ids_crc, s->cell_ids[i], strlen(s->cell_ids[i]) + 1);
    char cells[1100];
    snprintf(cells, sizeof cells, "%s/cells", s->run_dir);
    struct stat sb;
    mine.sees_dir = stat(cells, &sb) == 0 && S_ISDIR(sb.st_mode);
    snprintf(mine.host, sizeof mine.host, "%s", qkt_dist_host());
    start_info *all = qkt_malloc((size_t)N * sizeof *all);
    qkt_dist_allgather(&mine, all, sizeof mine);
    int rc = 0, slots = 0;
    for (int r = 0; r < N && !rc; r++) {
        slots += all[r].workers;
        if (!all[r].sees_dir)
            rc = qkt_err_set(err, "rank %d (host %s) does not see %s: an MPI sweep needs the run directory on a filesystem every "
                                  "host shares (docs/distributed.md)", r, all[r].host, cells);
        else if (all[r].n != all[0].n || all[r].ids_crc != all[0].ids_crc)
            rc = qkt_err_set(err, "rank %d (host %s) planned other cells (%d) than rank 0 (%d): not the same study", r, all[r].host,
                             all[r].n, all[0].n);
    }
    if (!rc && me == 0) {
        st->peers = qkt_calloc((size_t)N, sizeof *st->peers);
        double t = qkt_now_s();
        for (int r = 0; r < N; r++) st->peers[r].last = t, memcpy(st->peers[r].host, all[r].host, HOST_LEN);
        st->stopped_at = 0;
    }
    snprintf(st->ranks_note, sizeof st->ranks_note, ", over %d MPI ranks (%d at a time in all)", N, slots);
    st->last_alive = qkt_now_s();
    free(all);
    return rc;
}

/* ---------------------------------------------------------------- a rank > 0 */
static void up(int kind, int cell, int ok, int ws) {
    up_msg m = {kind, cell, ok, ws};
    qkt_dist_send(&m, sizeof m, 0, TAG_UP);
}

int qkt__sweep_dist_ask(sweep_state *st) {
    up(UP_ASK, -1, 0, 0);
    int cell = -1;
    qkt_dist_recv(&cell, sizeof cell, 0, TAG_CELL);
    st->last_alive = qkt_now_s();
    QKT_CHECK(cell >= -1 && cell < st->s->n_cells, "sweep: rank 0 handed out cell %d of %d", cell, st->s->n_cells);
    return cell;
}

void qkt__sweep_dist_reaped(sweep_state *st, int i, bool ok, int ws) {
    up(UP_DONE, i, ok, ws);
    st->last_alive = qkt_now_s();
}

/* ---------------------------------------------------------------- rank 0 */
static void report_lost(sweep_state *st, int r, const char *why) {
    const qkt_sweep *s = st->s;
    sweep_peer *p = &st->peers[r];
    p->gone = true;
    qkt_dist_set_broken();
    qkt_buf cells = {0};
    int k = 0;
    for (int i = 0; i < s->n_cells; i++) {
        if (st->where[i] != r) continue;
        qkt_buf_printf(&cells, "%s%s", k++ ? ", " : "", s->cell_ids[i]);
        st->where[i] = 0;
        st->finished++;
        st->done_w += st->weight[i];
        st->res->failed++;
    }
    st->lost_cells += k ? k : 1;
    qkt_buf_printf(&st->lost_msg, "%sMPI rank %d (host %s) %s: %s%s", st->lost_msg.n ? "; " : "", r, p->host, why,
                   k ? "lost cells " : "it ran no cell", k ? cells.s : "");
    qkt_logf(QKT_LOG_WARN, "qkt: MPI rank %d (host %s) %s: lost cell%s %s", r, p->host, why,
             k == 1 ? "" : "s", k ? cells.s : "(none running)");
    qkt_buf_free(&cells);
}

static int next_todo(sweep_state *st) {
    if (st->exhausted) return -1;
    while (st->next < st->s->n_cells && !st->todo[st->next]) st->next++;
    return st->next < st->s->n_cells ? st->next++ : -1;
}

static void handle(sweep_state *st, int r, const up_msg *m) {
    const qkt_sweep *s = st->s;
    if (m->kind == UP_ASK) {
        int cell = next_todo(st);
        if (cell >= 0) st->where[cell] = r;
        qkt_dist_send(&cell, sizeof cell, r, TAG_CELL);
    } else if (m->kind == UP_DONE) {
        QKT_CHECK(m->cell >= 0 && m->cell < s->n_cells, "sweep: rank %d finished cell %d of %d", r, m->cell, s->n_cells);
        st->where[m->cell] = 0;
        st->finished++;
        st->done_w += st->weight[m->cell];
        if (m->ok) {
            st->res->ran++;
        } else {
            st->res->failed++;
            char log[1024];
            qkt_cell_paths(s->run_dir, s->cell_ids[m->cell], NULL, log, NULL, sizeof log);
            if (!st->stopped_at) { /* a stop's casualties are said once, by qkt__sweep_dist_stop */
                int ws = m->ws;
                if (ws < 0) qkt_logf(QKT_LOG_WARN, "qkt: cell %s: rank %d (host %s) could not start it", s->cell_ids[m->cell], r,
                                     st->peers[r].host);
                else {
                    char why[200]; /* the log is on the shared run directory: rank 0 sees it too */
                    qkt__sweep_empty_log_note(log, ws, why, sizeof why);
                    qkt_logf(QKT_LOG_WARN, "qkt: cell %s failed on rank %d (host %s) (%s %d); see %s%s",
                             s->cell_ids[m->cell], r, st->peers[r].host, WIFEXITED(ws) ? "exit status" : "signal",
                             WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), log, why);
                }
            }
        }
        if (s->verbose && !st->live)
            qkt_logf(QKT_LOG_INFO, "[%d/%d cells] %s %s on rank %d (%.0f s elapsed)", st->finished, s->n_cells, s->cell_ids[m->cell],
                     m->ok ? "done" : "FAILED", r, qkt_now_s() - st->t0);
    } else if (m->kind == UP_BYE) {
        st->peers[r].bye = true;
    }
}

void qkt__sweep_dist_serve(sweep_state *st) {
    const int N = qkt_dist_size();
    double t = qkt_now_s();
    if (st->follower) {
        if (qkt_dist_probe(0, TAG_STOP)) {
            int x;
            qkt_dist_recv(&x, sizeof x, 0, TAG_STOP);
            st->stop_asked = true;
        }
        if (t - st->last_alive > ALIVE_S) up(UP_ALIVE, -1, 0, 0), st->last_alive = t;
        return;
    }
    for (int r = 1; r < N; r++) {
        sweep_peer *p = &st->peers[r];
        while (!p->gone && qkt_dist_probe(r, TAG_UP)) {
            up_msg m;
            qkt_dist_recv(&m, sizeof m, r, TAG_UP);
            p->last = t;
            handle(st, r, &m);
        }
        if (p->gone || p->bye) continue;
        if (st->stopped_at && t - st->stopped_at > STOP_WAIT_S && t - p->last > STOP_WAIT_S)
            report_lost(st, r, "did not answer the stop");
        else if (t - p->last > LOST_S) {
            char why[64];
            snprintf(why, sizeof why, "went silent (no word for %.0f s)", LOST_S);
            report_lost(st, r, why);
        }
    }
}

void qkt__sweep_dist_stop(sweep_state *st) {
    if (st->follower) return;
    const qkt_sweep *s = st->s;
    const int N = qkt_dist_size();
    st->stopped_at = qkt_now_s();
    for (int r = 1; r < N; r++)
        if (!st->peers[r].gone && !st->peers[r].bye) {
            int x = 0;
            qkt_dist_send(&x, sizeof x, r, TAG_STOP);
        }
    /* Said at once: under mpirun a stop often means a rank died, and the job may be
     * killed before the others answer. */
    qkt_buf b = {0};
    for (int i = 0; i < s->n_cells; i++)
        if (st->where[i] > 0) qkt_buf_printf(&b, "%s%s (rank %d, %s)", b.n ? ", " : "", s->cell_ids[i], st->where[i], st->peers[st->where[i]].host);
    if (b.n)
        qkt_logf(QKT_LOG_WARN, "qkt: stopping (under mpirun also how a rank's death ends the job): cells running on other MPI "
                               "ranks, lost unless finished, rerun (any -np) to complete them: %s", b.s);
    qkt_buf_free(&b);
}

bool qkt__sweep_dist_finished(sweep_state *st) {
    if (st->follower) {
        up(UP_BYE, -1, 0, 0);
        return true;
    }
    for (int r = 1; r < qkt_dist_size(); r++)
        if (!st->peers[r].bye && !st->peers[r].gone) return false;
    free(st->peers);
    st->peers = NULL;
    return true;
}
