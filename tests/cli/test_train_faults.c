/* qkt train when the disk fills up midway: the file-size limit (RLIMIT_FSIZE, with
 * SIGXFSZ ignored, so a write past it fails with EFBIG like ENOSPC would) stands in for
 * a full disk without privileges. Two cases:
 *   - log.csv cannot grow: the run stops with one line naming log.csv and the last
 *     checkpoint, rather than dropping rows;
 *   - a checkpoint cannot be written (the limit is lowered on the running child): one
 *     line, the previous checkpoint intact, no temp file left.
 * After each, `qkt train --resume` without the limit finishes the run, bit-identical to
 * a run that never failed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

static const char *tmp;
static char out[1 << 16];

/* A very small model (checkpoint ~20 KB, 40 in float64) so that log.csv outgrows it in a few hundred steps. */
#define SMALL "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "1", "--n-embd", "8", "--block-size", "32", \
              "--batch-size", "2", "--eval-batches", "1", "--eval-every", "0", "--threads", "1"

/* Runs qkt train with a file-size limit (0 = none); stdout+stderr into out. */
static int run_limited(const char *const *args, rlim_t fsize) {
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1), dup2(fd[1], 2), close(fd[0]), close(fd[1]);
        if (fsize) {
            struct rlimit rl = {fsize, fsize};
            setrlimit(RLIMIT_FSIZE, &rl);
            signal(SIGXFSZ, SIG_IGN); /* inherited by exec: writes past the limit fail with EFBIG */
        }
        execv(qkt_test_bin(), (char *const *)args);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0; /* keep reading to the end (the child must never block), keeping the tail */
    for (ssize_t r; (r = read(fd[0], out + n, sizeof out - 1 - n)) > 0;) {
        n += (size_t)r;
        if (n > sizeof out - 4096) memmove(out, out + n - 8192, 8192), n = 8192;
    }
    out[n] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long long file_size(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* Only train.json, log.csv and ckpt.safetensors: no temp file left behind. */
static int stray_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.' && strcmp(e->d_name, "train.json") && strcmp(e->d_name, "log.csv") &&
             strcmp(e->d_name, "ckpt.safetensors");
    if (d) closedir(d);
    return n;
}

/* Same tensors (byte for byte) and the same log rows without the timing columns. */
static void expect_same_run(const char *a, const char *b, int line) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/ckpt.safetensors", a);
    snprintf(pb, sizeof pb, "%s/ckpt.safetensors", b);
    qkt_safetensors x, y;
    qkt_err err;
    if (qkt_safetensors_read(pa, &x, &err) || qkt_safetensors_read(pb, &y, &err)) {
        EXPECT(0, "line %d: %s", line, err.msg);
        return;
    }
    int diff = x.n != y.n;
    for (int i = 0; i < x.n && !diff; i++) {
        const qkt_st_tensor *u = &x.t[i], *v = qkt_safetensors_find(&y, u->name);
        diff += !v || v->end - v->begin != u->end - u->begin || memcmp(u->data, v->data, u->end - u->begin);
    }
    EXPECT(diff == 0 && x.n > 10, "line %d: checkpoints %s and %s differ", line, pa, pb);
    qkt_safetensors_free(&x), qkt_safetensors_free(&y);
    char *log[2];
    for (int k = 0; k < 2; k++) {
        snprintf(pa, sizeof pa, "%s/log.csv", k ? b : a);
        char *s = qkt_read_file(pa, NULL, &err), *w = s;
        for (char *p = s; p && *p;) { /* keep the first 6 columns of each row */
            int commas = 0;
            for (; *p && *p != '\n'; p++) {
                commas += *p == ',';
                if (commas < 6) *w++ = *p;
            }
            if (*p) *w++ = *p++;
        }
        if (w) *w = 0;
        log[k] = s ? s : strdup("");
    }
    EXPECT(!strcmp(log[0], log[1]) && strlen(log[0]) > 100, "line %d: log rows of %s and %s differ", line, a, b);
    free(log[0]), free(log[1]);
}

static void resume_and_compare(const char *dir, const char *ref) {
    const char *args[] = {"qkt", "train", "--resume", dir, NULL};
    int rc = run_limited(args, 0);
    EXPECT(rc == 0 && strstr(out, "resuming"), "resume of %s: exit %d:\n%s", dir, rc, out);
    expect_same_run(ref, dir, __LINE__);
}

int main(void) {
    tmp = qkt_test_tmpdir("faults");
    char ref[512], full[512], ck[512];
    snprintf(ref, sizeof ref, "%s/ref", tmp);
    snprintf(full, sizeof full, "%s/logfull", tmp);
    snprintf(ck, sizeof ck, "%s/ckfull", tmp);

    const char *a_ref[] = {"qkt", "train", SMALL, "--steps", "1500", "--ckpt-every", "50", "--out", ref, NULL};
    int rc = run_limited(a_ref, 0);
    EXPECT(rc == 0, "reference run: exit %d:\n%s", rc, out);
    long long ck_size = file_size(ref, "ckpt.safetensors"), log_size = file_size(ref, "log.csv");
    EXPECT(ck_size > 0 && log_size > ck_size + 8192, "sizes: checkpoint %lld, log %lld: the log must outgrow the checkpoint",
           ck_size, log_size);

    /* 1. log.csv hits the limit (checkpoints, smaller, still fit) */
    const char *a_full[] = {"qkt", "train", SMALL, "--steps", "1500", "--ckpt-every", "50", "--out", full, NULL};
    rc = run_limited(a_full, (rlim_t)(ck_size + 4096));
    const char *msg = strstr(out, "qkt train: ");
    EXPECT(rc == 1 && msg && qkt_test_one_line(msg) && strstr(msg, "log.csv: write failed") && strstr(msg, "Last checkpoint: ") &&
               strstr(msg, "--resume"),
           "log full: exit %d:\n%s", rc, out);
    EXPECT(stray_files(full) == 0, "%d stray files in %s", stray_files(full), full);
    resume_and_compare(full, ref);

    /* 2. the limit drops below the checkpoint's size while the run goes on: the next
     * checkpoint fails (log.csv, still small, is unaffected) */
    int fd[2];
    EXPECT(pipe(fd) == 0, "pipe");
    fcntl(fd[0], F_SETPIPE_SZ, 4096); /* the child cannot run far ahead of our reading */
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1), dup2(fd[1], 2), close(fd[0]), close(fd[1]);
        signal(SIGXFSZ, SIG_IGN);
        const char *a_ck[] = {"qkt", "train", SMALL, "--steps", "1500", "--ckpt-every", "2", "--log-every", "1", "--out", ck, NULL};
        execv(qkt_test_bin(), (char *const *)a_ck);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[512];
    bool seen = false;
    while (!seen && fgets(line, sizeof line, f)) seen = strstr(line, "step 5/") != NULL;
    EXPECT(seen, "the child never logged step 5");
    struct rlimit rl = {(rlim_t)(ck_size / 2), (rlim_t)(ck_size / 2)};
    EXPECT(prlimit(pid, RLIMIT_FSIZE, &rl, NULL) == 0, "prlimit");
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        if (n + strlen(line) < sizeof out) strcpy(out + n, line), n += strlen(line);
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    msg = strstr(out, "qkt train: ");
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1 && msg && qkt_test_one_line(msg) && strstr(msg, "ckpt.safetensors") &&
               strstr(msg, "is intact") && strstr(msg, "--resume"),
           "checkpoint write failed: status %d:\n%s", st, out);
    const char *p = msg ? strstr(msg, "previous checkpoint, step ") : NULL;
    long long kept = p ? atoll(p + strlen("previous checkpoint, step ")) : -1;
    char path[600];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", ck);
    qkt_safetensors s;
    qkt_err err;
    EXPECT(qkt_safetensors_read(path, &s, &err) == 0, "the kept checkpoint: %s", err.msg);
    const char *step = qkt_safetensors_meta(&s, "step");
    EXPECT(step && atoll(step) == kept && kept >= 2 && kept % 2 == 0, "kept checkpoint at step %s, message says %lld", step ? step : "?",
           kept);
    qkt_safetensors_free(&s);
    EXPECT(stray_files(ck) == 0, "%d stray files in %s (a temp file left behind?)", stray_files(ck), ck);
    resume_and_compare(ck, ref);
    return qkt_test_finish();
}
