/* Runs independent sweep cells as separate processes, `workers` at a time, one
 * thread each (small models are cheaper side by side than threaded). A cell is done
 * when its result file cells/<id>.csv exists (written atomically by the cell) and ends
 * with its seal (qkt_cell_check), so an interrupted sweep resumes by skipping finished
 * cells and reruns a file that was cut short or edited. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "qkt_io.h"
#include "qkt_sweep.h"
#include "sweep_internal.h"

extern char **environ;

/* ---------------------------------------------------------------- the seal */
static size_t count_rows(const char *text, size_t n) {
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) rows += text[i] == '\n';
    return rows;
}

void qkt_cell_seal(qkt_buf *b) {
    size_t n = b->n;
    qkt_buf_printf(b, "#end rows=%zu crc32c=%08x\n", count_rows(b->s, n), (unsigned)qkt_crc32c(0, b->s, n));
}

int qkt_cell_check(const char *text, size_t n, size_t *body, char *why, size_t why_n) {
    char tmp[8];
    if (!why) why = tmp, why_n = sizeof tmp;
    if (n == 0 || text[n - 1] != '\n') return snprintf(why, why_n, "does not end with a complete line"), -1;
    size_t start = n - 1;
    while (start > 0 && text[start - 1] != '\n') start--;
    unsigned long rows, crc;
    char end;
    if (sscanf(text + start, "#end rows=%lu crc32c=%8lx%c", &rows, &crc, &end) != 3 || end != '\n')
        return snprintf(why, why_n, "has no seal line (cut short, or written by an older qkt)"), -1;
    size_t have = count_rows(text, start);
    if (have != rows) return snprintf(why, why_n, "holds %zu rows, its seal says %lu", have, rows), -1;
    if ((unsigned long)qkt_crc32c(0, text, start) != crc) return snprintf(why, why_n, "fails its checksum (edited or damaged)"), -1;
    if (body) *body = start;
    return 0;
}

int qkt_cell_rows_check(const char *body, size_t n, const char *id, char *why, size_t why_n) {
    char tmp[8];
    if (!why) why = tmp, why_n = sizeof tmp;
    if (n == 0) return snprintf(why, why_n, "holds no rows"), -1;
    size_t k = strlen(id);
    for (size_t i = 0; i < n;) {
        if (n - i <= k || memcmp(body + i, id, k) || body[i + k] != ',') {
            size_t e = i;
            while (e < n && body[e] != ',' && body[e] != '\n' && e - i < 80) e++;
            return snprintf(why, why_n, "holds a row of '%.*s', not of %s (another cell's file?)", (int)(e - i), body + i, id), -1;
        }
        const char *nl = memchr(body + i, '\n', n - i);
        i = nl ? (size_t)(nl - body) + 1 : n;
    }
    return 0;
}

bool qkt_cell_done(const char *csv_path, char *why, size_t why_n) { return qkt_cell_done_id(csv_path, NULL, why, why_n); }

bool qkt_cell_done_id(const char *csv_path, const char *id, char *why, size_t why_n) {
    if (why && why_n) why[0] = 0;
    if (!qkt_file_exists(csv_path)) return false;
    size_t n;
    qkt_err err;
    char *text = qkt_read_file(csv_path, &n, &err);
    if (!text) {
        if (why) snprintf(why, why_n, "%s", err.msg);
        return false;
    }
    size_t body;
    bool ok = qkt_cell_check(text, n, &body, why, why_n) == 0 && (!id || qkt_cell_rows_check(text, body, id, why, why_n) == 0);
    free(text);
    return ok;
}

void qkt_cell_paths(const char *run_dir, const char *id, char *csv, char *log, char *progress, size_t n) {
    if (csv) snprintf(csv, n, "%s/cells/%s.csv", run_dir, id);
    if (log) snprintf(log, n, "%s/cells/%s.log", run_dir, id);
    if (progress) snprintf(progress, n, "%s/cells/%s.progress", run_dir, id);
}

/* A cell in a child forked from this process (s->exe NULL): s->cell_fn there, its
 * refusal the log's last line. The child is the sweep's own process, so it ends here. */
static pid_t fork_cell(const qkt_sweep *s, const char *id, const char *log) {
    fflush(NULL); /* what the parent buffered is written once, by the parent */
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644), in = open("/dev/null", O_RDONLY);
    if (fd < 0 || in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    if (in > 2) close(in);
    signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL), signal(SIGHUP, SIG_DFL); /* the sweep's stop ends it */
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the parent killed outright: end with it */
    if (getppid() == 1) _exit(1);
#endif
    static qkt_err err;
    static char line[QKT_ERR_LEN + 256];
    if (s->cell_fn(s->run_dir, id, &err, s->cell_user) == 0) _exit(0);
    int n = snprintf(line, sizeof line, "qkt _cell %s: %s\n", id, err.msg);
    ssize_t w = write(fd, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1);
    (void)w; /* a log that cannot be written: the parent notes it (qkt__sweep_empty_log_note) */
    _exit(1);
}

static pid_t spawn_cell(const qkt_sweep *s, const char *id) {
    char log[1024], prog[1024];
    qkt_cell_paths(s->run_dir, id, NULL, log, prog, sizeof log);
    /* Both are rewritten whole: what is there goes first, so a FIFO in their place (nobody
     * reading it) cannot block an open for ever */
    (void)unlink(log), (void)unlink(prog);
    if (!s->exe) return fork_cell(s, id, log);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* One thread per cell: environment first so OpenMP and OpenBLAS read it at start. */
    int n_env = 0;
    while (environ[n_env]) n_env++;
    char **env = qkt_calloc((size_t)n_env + 5, sizeof *env), isa[64];
    int k = 0;
    for (int i = 0; i < n_env; i++)
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16) && strncmp(environ[i], "OPENBLAS_NUM_THREADS=", 21) &&
            strncmp(environ[i], "QKT_THREADS=", 12) && (!s->isa || strncmp(environ[i], "QKT_ISA=", 8)))
            env[k++] = environ[i];
    if (s->isa) snprintf(isa, sizeof isa, "QKT_ISA=%s", s->isa), env[k++] = isa;
    env[k++] = "OMP_NUM_THREADS=1";
    env[k++] = "OPENBLAS_NUM_THREADS=1";
    env[k++] = "QKT_THREADS=1";
    char *argv[] = {(char *)s->exe, "_cell", "--run", (char *)s->run_dir, "--cell", (char *)id, NULL};
    pid_t pid = -1;
    int rc = posix_spawn(&pid, s->exe, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    return rc == 0 ? pid : -1;
}

/* Reads "step total loss" from a cell's progress file. */
static bool read_progress(const qkt_sweep *s, const char *id, long *step, long *total, double *loss) {
    char path[1024];
    qkt_cell_paths(s->run_dir, id, NULL, NULL, path, sizeof path);
    qkt_err err;
    char *text = qkt_read_file(path, NULL, &err); /* refuses a FIFO there without blocking on it */
    bool ok = text && sscanf(text, "%ld %ld %lf", step, total, loss) == 3;
    free(text);
    return ok;
}

/* Which cells still have to run (no cells/<id>.csv yet) and their weights. */
static void sweep_plan(sweep_state *st) {
    if (st->s->mpi && qkt_dist_rank() > 0) return; /* rank 0 plans and hands the cells out */
    const qkt_sweep *s = st->s;
    char path[1024];
    for (int i = 0; i < s->n_cells; i++) {
        qkt_cell_paths(s->run_dir, s->cell_ids[i], path, NULL, NULL, sizeof path);
        st->weight[i] = s->cell_weights ? s->cell_weights[i] : 1;
        st->total_w += st->weight[i];
        char why[200];
        if (qkt_cell_done_id(path, s->rows_named ? s->cell_ids[i] : NULL, why, sizeof why)) {
            st->res->skipped++;
            st->done_w += st->weight[i];
        } else {
            if (why[0]) qkt_logf(QKT_LOG_WARN, "qkt: %s %s: rerunning the cell", path, why);
            st->todo[i] = true;
        }
    }
}

/* One status line (a live log hook): finished cells plus the done fraction of the
 * running ones (from their progress files), weighted, and the ETA from that rate. */
static void print_progress(const sweep_state *st, double t) {
    const qkt_sweep *s = st->s;
    double partial = 0, shown_loss = NAN;
    const char *shown = NULL;
    for (int i = 0; i < s->n_cells; i++) {
        long step, tot;
        double loss;
        if ((st->pids[i] > 0 || st->where[i] > 0) && read_progress(s, s->cell_ids[i], &step, &tot, &loss) && tot > 0) {
            partial += st->weight[i] * (double)step / tot;
            if (!shown) shown = s->cell_ids[i], shown_loss = loss;
        }
    }
    double frac = (st->done_w + partial - st->w_at_start) / (st->total_w - st->w_at_start);
    double eta = frac > 0.01 ? (t - st->t0) * (1 - frac) / frac : NAN;
    qkt_logf(QKT_LOG_STATUS, "[%d/%d cells] %s loss %.3f | %.0f s elapsed, ETA %s%.0f s", st->finished, s->n_cells,
             shown ? shown : "-", shown_loss, t - st->t0, isfinite(eta) ? "" : "~", isfinite(eta) ? eta : 0.0);
}

/* What to add when a failed cell's log is empty: a cell that could not write its log
 * (a full disk, a file-size limit) could not say why either, so the parent tries to
 * write the log itself and gives the error it gets. "" when the log has the reason. */
void qkt__sweep_empty_log_note(const char *log, int ws, char *why, size_t n) {
    struct stat sb;
    why[0] = 0;
    if (stat(log, &sb) == 0 && sb.st_size > 0) return;
    char line[160];
    int len = snprintf(line, sizeof line, "qkt: the cell ended (%s %d) without writing anything here\n",
                       WIFEXITED(ws) ? "exit status" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
    ssize_t w = fd >= 0 ? write(fd, line, (size_t)len) : -1;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && w == len) w = -1, e = errno;
    if (w == len) snprintf(why, n, " (its log was empty)");
    else snprintf(why, n, " (its log is empty and cannot be written: %s)", strerror(e));
}

/* Cell i's process ended with wait status ws: done if it exited 0 and wrote its csv. */
static void reap(sweep_state *st, int i, int ws) {
    const qkt_sweep *s = st->s;
    char path[1024];
    st->pids[i] = 0;
    st->finished++;
    st->done_w += st->weight[i];
    qkt_cell_paths(s->run_dir, s->cell_ids[i], path, NULL, NULL, sizeof path);
    bool ok = WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && qkt_cell_done_id(path, s->rows_named ? s->cell_ids[i] : NULL, NULL, 0);
    if (st->follower) { /* rank 0 counts and reports it */
        qkt__sweep_dist_reaped(st, i, ok, ws);
        return;
    }
    if (ok) {
        st->res->ran++;
    } else if (s->stop && *s->stop) { /* ended by the stop: not a failure, the rerun runs it */
        st->res->failed++;
        return;
    } else {
        st->res->failed++;
        char log[1024], why[200];
        qkt_cell_paths(s->run_dir, s->cell_ids[i], NULL, log, NULL, sizeof log);
        qkt__sweep_empty_log_note(log, ws, why, sizeof why);
        qkt_logf(QKT_LOG_WARN, "qkt: cell %s failed (%s %d); see %s%s", s->cell_ids[i],
                 WIFEXITED(ws) ? "exit status" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws), log, why);
    }
    if (s->verbose && !st->live)
        qkt_logf(QKT_LOG_INFO, "[%d/%d cells] %s %s (%.0f s elapsed)", st->finished, s->n_cells, s->cell_ids[i],
                 ok ? "done" : "FAILED", qkt_now_s() - st->t0);
}

/* The next cell for this process: the next unfinished one of the plan, or (a rank > 0
 * of an MPI sweep) the one rank 0 hands out; -1 when there is none left. */
static int take_cell(sweep_state *st) {
    if (st->follower) return qkt__sweep_dist_ask(st);
    while (st->next < st->s->n_cells && !st->todo[st->next]) st->next++;
    return st->next < st->s->n_cells ? st->next++ : -1;
}

int qkt_sweep_run(const qkt_sweep *s, qkt_sweep_result *res, qkt_err *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cells", s->run_dir);
    bool follower = s->mpi && qkt_dist_rank() > 0; /* must see rank 0's directory, not make its own */
    if (!follower && qkt_mkdirs(dir, err) != 0) return -1;
    memset(res, 0, sizeof *res);
    const int n = s->n_cells, workers = s->workers > 0 ? s->workers : 1;
    sweep_state st = {.s = s, .res = res, .pids = qkt_calloc((size_t)n + 1, sizeof(pid_t)),
                      .todo = qkt_calloc((size_t)n + 1, sizeof(bool)), .weight = qkt_calloc((size_t)n + 1, sizeof(double)),
                      .where = qkt_calloc((size_t)n + 1, sizeof(int)), .live = qkt_log_live()};
    st.dist = s->mpi && qkt_dist_size() > 1;
    st.follower = st.dist && qkt_dist_rank() > 0;
    sweep_plan(&st);
    if (st.dist && qkt__sweep_dist_start(&st, err)) {
        free(st.pids), free(st.todo), free(st.weight), free(st.where);
        return -1;
    }
    if (s->verbose)
        qkt_logf(QKT_LOG_INFO, "qkt: %d cells (%d already done, kept), %d at a time, one thread each%s", n, res->skipped, workers,
                 st.dist ? st.ranks_note : "");
    st.t0 = qkt_now_s(), st.w_at_start = st.done_w, st.finished = res->skipped;
    double last_print = 0;
    int running = 0;
    int stopped = 0;
    for (;;) {
        /* asked to stop (a signal, or rank 0 of an MPI sweep): end the running cells, wait for them */
        if (((s->stop && *s->stop) || st.stop_asked) && !stopped) {
            stopped = s->stop && *s->stop ? *s->stop : -1;
            for (int i = 0; i < n; i++)
                if (st.pids[i] > 0) kill(st.pids[i], SIGTERM);
            st.exhausted = true;
            if (st.dist) qkt__sweep_dist_stop(&st);
        }
        while (running < workers && !st.exhausted) {
            int i = take_cell(&st);
            if (i < 0) {
                st.exhausted = true;
                break;
            }
            st.pids[i] = spawn_cell(s, s->cell_ids[i]);
            if (st.pids[i] > 0) {
                running++;
            } else if (st.follower) {
                qkt__sweep_dist_reaped(&st, i, false, -1);
            } else {
                res->failed++;
                qkt_logf(QKT_LOG_WARN, "qkt: cannot start cell %s: %s", s->cell_ids[i], strerror(errno));
            }
        }
        if (st.dist) qkt__sweep_dist_serve(&st);
        if (running == 0) {
            if (st.exhausted && (!st.dist || qkt__sweep_dist_finished(&st))) break;
            usleep(100000); /* rank 0 of an MPI sweep: the other ranks still run cells */
            continue;
        }
        int ws;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid == 0) { /* all still running: show progress, poll again */
            const double t = qkt_now_s();
            if (st.live && s->verbose && t - last_print > 0.5) print_progress(&st, t), last_print = t;
            usleep(100000);
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++)
            if (st.pids[i] == pid) reap(&st, i, ws), running--;
    }
    if (s->verbose && st.live) qkt_logf(QKT_LOG_INFO, "[%d/%d cells] finished in %.0f s", st.finished, n, qkt_now_s() - st.t0);
    int lost = st.lost_cells;
    free(st.pids);
    free(st.todo);
    free(st.weight);
    free(st.where);
    if (lost) /* the message was set when the rank went: the rest is said below */
        return qkt_err_set(err, "%s", st.lost_msg.s ? st.lost_msg.s : "a rank was lost"), qkt_buf_free(&st.lost_msg), -1;
    qkt_buf_free(&st.lost_msg);
    if (stopped > 0)
        return qkt_err_set(err, "stopped by signal %d: the running cells were ended; %d cells are finished and kept",
                           stopped, res->skipped + res->ran);
    if (stopped) return qkt_err_set(err, "stopped by rank 0: the running cells were ended");
    return res->failed ? qkt_err_set(err, "%d of %d cells failed (logs in %s/cells)", res->failed, n, s->run_dir) : 0;
}
