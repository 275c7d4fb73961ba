/* qkt ablate as a hostile user meets it (the study's half of test_train_reliability):
 *   - two `qkt ablate` on one run directory: the second is refused (exit 2) naming the pid;
 *   - the study's parent stopped by pid (SIGTERM, SIGHUP) ends its cells and waits for
 *     them (exit 130, no cell left running); killed with SIGKILL, the cells end too;
 *     the rerun finishes, with the metrics of a run never interrupted;
 *   - a cell file cut at a row boundary is not taken as finished: `qkt plot` names it,
 *     and the rerun recomputes that cell (same metrics as before).
 * About 90 s on 2 cores: label "slow" (tests/cli.cmake), which CI runs. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_test.h"

static const char *tmp;
static char out[1 << 15];

/* A study that runs for a few seconds: 2 variants x 1 d_k x 2 seeds, cells side by side. */
#define STUDY "ablate --preset quick --d-k 8 --seeds 2 --steps 400 --lr-steps 30 --variants sqrt_dk,none --workers 2"

/* Number of `qkt _cell` processes working in run directory dir. */
static int cells_running(const char *dir) {
    char cmd[2048], buf[256];
    snprintf(cmd, sizeof cmd, "pgrep -f -c -- '[_]cell --run %s' || true", dir);
    qkt_test_run(cmd, buf, sizeof buf);
    return atoi(buf);
}

static char *metrics(const char *run) { return qkt_test_read_file(qkt_test_path(run, "metrics.csv"), NULL); }

static void test_two_writers(void) {
    /* The first holds the directory for its life; the second starts while it runs. */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s " STUDY " --out %s --name two >/dev/null 2>&1 & sleep 1; %s " STUDY " --out %s --name two 2>&1; echo \"second=$?\"; wait",
             qkt_test_bin(), tmp, qkt_test_bin(), tmp);
    qkt_test_run(cmd, out, sizeof out);
    EXPECT(strstr(out, "second=2") && strstr(out, "is in use by another qkt process (pid "), "two writers: %s", out);
    /* The first finished its study undisturbed. */
    char *m = metrics(qkt_test_path(tmp, "two"));
    EXPECT(m && strlen(m) > 1000, "the first run's metrics.csv is missing");
    free(m);
}

/* Stops a running study with `sig` after `after` seconds; returns its exit status. */
static int stop_study(const char *name, int sig, double after) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s " STUDY " --out %s --name %s >%s/%s.log 2>&1 & p=$!; sleep %g; kill -%d $p; wait $p; echo \"status=$?\"",
             qkt_test_bin(), tmp, name, tmp, name, after, sig);
    qkt_test_run(cmd, out, sizeof out);
    char *s = strstr(out, "status=");
    return s ? atoi(s + 7) : -1;
}

static void test_stops(const char *straight) {
    const int sigs[3] = {SIGTERM, SIGHUP, SIGKILL};
    const char *names[3] = {"term", "hup", "kill"};
    for (int k = 0; k < 3; k++) {
        int st = stop_study(names[k], sigs[k], 2.0);
        const char *dir = qkt_test_path(tmp, names[k]);
        if (sigs[k] == SIGKILL) {
            EXPECT(st == 128 + SIGKILL, "SIGKILL: status %d", st);
            usleep(500000); /* the cells get SIGTERM from the kernel when their parent dies */
        } else {
            EXPECT(st == 130, "signal %d: exit status %d (130 expected)", sigs[k], st);
        }
        EXPECT(cells_running(dir) == 0, "signal %d: %d cells still running after the study ended", sigs[k], cells_running(dir));
        /* The rerun completes the study; its metrics are those of a run never stopped. */
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s " STUDY " --out %s --name %s 2>&1", qkt_test_bin(), tmp, names[k]);
        int rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 0, "rerun after signal %d: %d %s", sigs[k], rc, out);
        char *m = metrics(dir);
        EXPECT(m && straight && !strcmp(m, straight), "signal %d: the resumed study's metrics.csv differs from a straight run's", sigs[k]);
        free(m);
    }
}

/* A kill loop: one study interrupted again and again at different moments (some during
 * part 1 or a cell's atomic write), by every signal, then finished: same metrics. */
static void test_kill_loop(const char *straight) {
    const struct { double after; int sig; } hits[] = {{0.3, SIGINT}, {1.1, SIGHUP}, {0.2, SIGKILL}, {1.7, SIGTERM}, {0.7, SIGKILL},
                                                      {2.3, SIGINT}};
    const char *dir = qkt_test_path(tmp, "loop");
    for (size_t i = 0; i < sizeof hits / sizeof hits[0]; i++) {
        int st = stop_study("loop", hits[i].sig, hits[i].after);
        EXPECT(st == 0 || st == 130 || (hits[i].sig == SIGKILL && st == 128 + SIGKILL), "round %zu, signal %d: status %d", i,
               hits[i].sig, st);
        usleep(300000);
        EXPECT(cells_running(dir) == 0, "round %zu: cells still running", i);
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s " STUDY " --out %s --name loop 2>&1", qkt_test_bin(), tmp);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "the kill loop's final run: %d %s", rc, out);
    char *m = metrics(dir);
    EXPECT(m && straight && !strcmp(m, straight), "after the kill loop metrics.csv differs from a straight run's");
    free(m);
}

static void test_cut_cell(const char *straight) {
    const char *dir = qkt_test_path(tmp, "two");
    const char *cell = qkt_test_path(qkt_test_path(dir, "cells"), "train_none_dk8_s1.csv");
    size_t n;
    char *text = qkt_test_read_file(cell, &n);
    EXPECT(text != NULL, "no %s", cell);
    if (!text) return;
    /* Cut at a row boundary: the first half of the rows, as a copy stopped midway would leave. */
    char *cut = text + n / 2;
    while (cut > text && cut[-1] != '\n') cut--;
    FILE *f = fopen(cell, "wb");
    fwrite(text, 1, (size_t)(cut - text), f);
    fclose(f);
    free(text);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s plot %s 2>&1", qkt_test_bin(), dir);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 1 && strstr(out, "train_none_dk8_s1.csv has no seal line") && !strstr(out, "metrics.csv: line"),
           "qkt plot on a cut cell file: %d %s", rc, out);
    /* A temp file a killed cell left mid-write (its pid no longer runs): removed by the rerun. */
    const char *stale = qkt_test_path(qkt_test_path(dir, "cells"), "train_none_dk8_s0.csv.tmp.4000000.1");
    f = fopen(stale, "wb");
    fputs("half a cell", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s " STUDY " --out %s --name two 2>&1", qkt_test_bin(), tmp);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "train_none_dk8_s1.csv has no seal line") && strstr(out, "rerunning the cell"),
           "rerun with a cut cell: %d %s", rc, out);
    EXPECT(!qkt_file_exists(stale) && strstr(out, "removed temp files of stopped cells: train_none_dk8_s0.csv.tmp.4000000.1"),
           "stale temp file: %s", out);
    char *m = metrics(dir);
    EXPECT(m && straight && !strcmp(m, straight), "the recomputed cell changed metrics.csv");
    free(m);
}

int main(void) {
    tmp = qkt_test_tmpdir("ablate-faults");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s " STUDY " --out %s --name straight 2>&1", qkt_test_bin(), tmp);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "straight run: %d %s", rc, out);
    char *straight = metrics(qkt_test_path(tmp, "straight"));
    test_two_writers();
    test_stops(straight);
    test_kill_loop(straight);
    test_cut_cell(straight);
    free(straight);
    return qkt_test_finish();
}
