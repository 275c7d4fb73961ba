/* The library's messages reach a program's log hook and nothing reaches stderr: a small
 * sweep (one cell rerun, cells that fail), a bad QKT_THREADS, the default fatal report,
 * qkt_dist_abort through the fatal hook; a live hook gets status lines instead of one
 * line per cell. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_dist.h"
#include "qkt_sweep.h"
#include "qkt_test.h"

typedef struct {
    int n, n_status;
    char lines[64][512];
    qkt_log_level level[64];
} seen;

static void collect(qkt_log_level level, const char *msg, void *user) {
    seen *s = user;
    if (level == QKT_LOG_STATUS) s->n_status++;
    if (s->n < 64) s->level[s->n] = level, snprintf(s->lines[s->n++], 512, "%s", msg);
}

/* Index of the first line holding `what` at `level`, or -1. */
static int find(const seen *s, qkt_log_level level, const char *what) {
    for (int i = 0; i < s->n; i++)
        if (s->level[i] == level && strstr(s->lines[i], what)) return i;
    return -1;
}

static void dump(const seen *s) {
    for (int i = 0; i < s->n; i++) printf("  [%d] %s\n", s->level[i], s->lines[i]);
}

/* Two cells run by `exe`: b.csv is there but unsealed (rerun, a warning). */
static int sweep(const char *dir, const char *exe, bool verbose, qkt_sweep_result *res, qkt_err *err) {
    char path[512];
    snprintf(path, sizeof path, "%s/cells", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/cells/b.csv", dir);
    FILE *f = fopen(path, "w");
    if (f) fputs("run,value\nb,1\n", f), fclose(f);
    const char *ids[] = {"a", "b"};
    qkt_sweep s = {.exe = exe, .run_dir = dir, .workers = 1, .n_cells = 2, .cell_ids = ids, .verbose = verbose};
    return qkt_sweep_run(&s, res, err);
}

/* The plain hook: the sweep's lines, in order, each one line. */
static void test_sweep_lines(const char *tmp) {
    seen s = {0};
    qkt_log_fn prev = qkt_set_log_handler(collect, &s, false);
    EXPECT(!qkt_log_live(), "a hook set with live = false is not live");
    const char *dir = qkt_test_path(tmp, "plain");
    mkdir(dir, 0755);
    qkt_sweep_result res;
    qkt_err err;
    int rc = sweep(dir, "/bin/false", true, &res, &err);
    EXPECT(rc == -1 && res.failed == 2 && strstr(err.msg, "2 of 2 cells failed"), "rc %d failed %d: %s", rc, res.failed, err.msg);
    int rerun = find(&s, QKT_LOG_WARN, "cells/b.csv has no seal line"), plan = find(&s, QKT_LOG_INFO, "qkt: 2 cells (0 already done");
    int fail_a = find(&s, QKT_LOG_WARN, "qkt: cell a failed (exit status 1); see "), line_a = find(&s, QKT_LOG_INFO, "[1/2 cells] a FAILED");
    int fail_b = find(&s, QKT_LOG_WARN, "qkt: cell b failed"), line_b = find(&s, QKT_LOG_INFO, "[2/2 cells] b FAILED");
    EXPECT(rerun == 0 && plan == 1 && fail_a == 2 && line_a == 3 && fail_b == 4 && line_b == 5 && s.n == 6 && !s.n_status,
           "sweep lines %d %d %d %d %d %d of %d", rerun, plan, fail_a, line_a, fail_b, line_b, s.n);
    for (int i = 0; i < s.n; i++) EXPECT(!strchr(s.lines[i], '\n') && !strchr(s.lines[i], '\r'), "line %d: %s", i, s.lines[i]);
    if (qkt_test_failed) dump(&s);
    EXPECT(qkt_set_log_handler(prev, NULL, false) == collect, "qkt_set_log_handler returns the previous hook");
}

/* A live hook: a status line while a cell runs, no line per cell, a closing line. */
static void test_sweep_live(const char *tmp) {
    const char *exe = qkt_test_path(tmp, "slow_cell.sh");
    FILE *f = fopen(exe, "w");
    if (f) fputs("#!/bin/sh\necho 5 10 1.5 > \"$3/cells/$5.progress\"\nsleep 1.2\nexit 1\n", f), fclose(f); /* _cell --run DIR --cell ID */
    chmod(exe, 0755);
    seen s = {0};
    qkt_set_log_handler(collect, &s, true);
    EXPECT(qkt_log_live(), "a hook set with live = true is live");
    const char *dir = qkt_test_path(tmp, "live");
    mkdir(dir, 0755);
    qkt_sweep_result res;
    qkt_err err;
    sweep(dir, exe, true, &res, &err);
    EXPECT(res.failed == 2 && s.n_status >= 1, "failed %d, %d status lines", res.failed, s.n_status);
    EXPECT(find(&s, QKT_LOG_STATUS, "[0/2 cells] a loss 1.500 | ") >= 0, "a status line names the running cell and its loss");
    EXPECT(find(&s, QKT_LOG_INFO, "a FAILED") < 0 && find(&s, QKT_LOG_INFO, "[2/2 cells] finished in ") == s.n - 1,
           "live: no line per cell, the last says finished");
    if (qkt_test_failed) dump(&s);
    qkt_set_log_handler(NULL, NULL, false);
    EXPECT(!qkt_log_live(), "the default hook is not live");
}

/* In a child: what its hooks saw (written to fd w), and how it ended. */
static void on_fatal(qkt_fatal_kind kind, const char *msg, void *user) {
    char line[600];
    int n = snprintf(line, sizeof line, "fatal %d %s\n", (int)kind, msg);
    if (write(*(int *)user, line, (size_t)n) < 0) _exit(99);
    _exit(7);
}
static void to_fd(qkt_log_level level, const char *msg, void *user) {
    char line[600];
    int n = snprintf(line, sizeof line, "log %d %s\n", (int)level, msg);
    if (write(*(int *)user, line, (size_t)n) < 0) _exit(99);
}

static int child(int what, char *out, size_t out_n) {
    int p[2];
    if (pipe(p)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        static int fd;
        fd = p[1];
        qkt_set_log_handler(to_fd, &fd, false);
        if (what == 0) { /* the default fatal hook reports through the log, then aborts */
            QKT_CHECK(what == 1, "planted usage error %d", what);
        } else {
            qkt_set_fatal_handler(on_fatal, &fd);
            qkt_dist_abort(5);
        }
        _exit(0);
    }
    close(p[1]);
    size_t n = 0;
    for (ssize_t got; n + 1 < out_n && (got = read(p[0], out + n, out_n - 1 - n)) > 0;) n += (size_t)got;
    out[n] = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return st;
}

static void test_fatal(void) {
    char out[2048];
    int st = child(0, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "log %d qkt: usage error at ", (int)QKT_LOG_ERROR);
    EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && !strncmp(out, want, strlen(want)) && strstr(out, "planted usage error 0"),
           "default fatal hook: status %d, hook saw: %s", st, out);
    st = child(1, out, sizeof out);
    snprintf(want, sizeof want, "fatal %d the job was ended (status 5)\n", (int)QKT_FATAL_ABORT);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 7 && !strcmp(out, want), "qkt_dist_abort: status %d, hook saw: %s", st, out);
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("log");
    /* stderr into a file: the library must write nothing there */
    const char *err_path = qkt_test_path(tmp, "stderr");
    fflush(stderr);
    int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2), close(fd);

    seen s = {0};
    qkt_set_log_handler(collect, &s, false);
    setenv("QKT_THREADS", "lots", 1);
    qkt_get_threads(); /* the first use reads QKT_THREADS: a bad one is ignored with a warning */
    EXPECT(s.n == 1 && s.level[0] == QKT_LOG_WARN && strstr(s.lines[0], "QKT_THREADS 'lots'") && strstr(s.lines[0], "; ignored"),
           "QKT_THREADS warning: %d lines, %s", s.n, s.lines[0]);
    qkt_set_log_handler(NULL, NULL, false);

    test_sweep_lines(tmp);
    test_sweep_live(tmp);
    test_fatal();

    fflush(stderr);
    dup2(saved, 2), close(saved);
    size_t n = 0;
    char *text = qkt_test_read_file(err_path, &n);
    EXPECT(text && n == 0, "the library wrote to stderr:\n%s", text ? text : "(unreadable)");
    free(text);
    return qkt_test_finish();
}
