/* qkt train, sample and step against what the world does to them: a second
 * writer in the run directory, saved state that was damaged or edited (a flipped bit,
 * the step, train.json, the text file, an RNG state, a garbage log row), long paths,
 * SIGHUP, a closed stderr, a file-size limit, a text file truncated under the run,
 * temp files of a killed run, Ctrl-C in a long validation, NaN weights, an output that
 * is an input, a subnormal flag value, a path that needs shell quoting. Each case
 * failed (or went unsaid) before the fix; the kill loop is test_train_kill.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"
#include "qkt_test_ckpt.h"

static char out[1 << 16];
static const char *tmp;

#define TINY_NOEVAL QKT_TEST_TINY_DATA " " QKT_TEST_TINY_MODEL " --batch-size 4 --dropout 0.1 --threads 1"
#define TINY TINY_NOEVAL " --eval-batches 2"

/* qkt with `args` (a shell word list) in the background, stdout+stderr into a pipe
 * (*fd); the pid is qkt's own (exec). No fixed-size command buffer: paths here are long. */
static pid_t spawn(const char *args, int *fd) {
    int p[2];
    if (pipe(p)) return -1;
    size_t n = strlen(qkt_test_bin()) + strlen(args) + 16;
    char *cmd = malloc(n);
    snprintf(cmd, n, "exec %s %s", qkt_test_bin(), args);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1), dup2(p[1], 2), close(p[0]), close(p[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    free(cmd);
    close(p[1]);
    *fd = p[0];
    return pid;
}

/* Reads the child's output to the end into out, waits; its exit status, 128+signal if
 * killed. A child still running after 60 s is killed (a run that spins for ever). */
static int finish(pid_t pid, int fd) {
    size_t n = 0;
    time_t t0 = time(NULL);
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, 1000);
        if (pr == 0) {
            if (time(NULL) - t0 > 60) {
                kill(pid, SIGKILL);
                fprintf(stderr, "a qkt child ran for over 60 s: killed\n");
            }
            continue;
        }
        ssize_t r = read(fd, out + n, sizeof out - 1 - n);
        if (r <= 0) break;
        n += (size_t)r;
        if (n > sizeof out - 4096) memmove(out, out + n - 8192, 8192), n = 8192;
    }
    out[n] = 0;
    close(fd);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* qkt with the printf-formatted arguments, to the end; output in out. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *args = NULL;
    if (vasprintf(&args, fmt, ap) < 0) args = NULL;
    va_end(ap);
    int fd;
    pid_t pid = spawn(args ? args : "", &fd);
    free(args);
    return finish(pid, fd);
}

/* Reads the child's output line by line until a line contains `what` (true) or EOF. */
static bool wait_for(int fd, const char *what) {
    char line[4096];
    size_t n = 0;
    for (char c; read(fd, &c, 1) == 1;) {
        if (n < sizeof line - 1) line[n++] = c;
        if (c == '\n') {
            line[n] = 0;
            if (strstr(line, what)) return true;
            n = 0;
        }
    }
    return false;
}

/* "a/b" in one of 8 rotating buffers (qkt_test_path's are too short for the long paths here). */
static const char *path(const char *a, const char *b) {
    static char buf[8][8192];
    static int k = 0;
    char *p = buf[k++ % 8];
    int n = snprintf(p, sizeof buf[0], "%s/%s", a, b);
    if (n < 0 || (size_t)n >= sizeof buf[0]) fprintf(stderr, "path(): %zu bytes is too long for the test\n", strlen(a)), abort();
    return p;
}

static void write_file(const char *p, const char *s, size_t n) {
    FILE *f = fopen(p, "wb");
    if (f) fwrite(s, 1, n, f), fclose(f);
}

/* Rewrites a checkpoint in place without checksums (as another tool would), after `edit`
 * changed the tensors or metadata in memory. */
static void rewrite(const char *ck, qkt_test_ckpt_edit edit) { qkt_test_ckpt_rewrite(ck, ck, false, edit, NULL); }

static void set_meta(qkt_safetensors *st, qkt_st_meta *m, const char *key, const char *value) {
    for (int i = 0; i < st->n_meta; i++)
        if (!strcmp(m[i].key, key)) m[i].value = value;
}
static void edit_step(qkt_safetensors *st, qkt_st_meta *m, uint8_t *d, void *u) { (void)d, (void)u, set_meta(st, m, "step", "28"); }
static void edit_rng(qkt_safetensors *st, qkt_st_meta *m, uint8_t *d, void *u) {
    (void)m, (void)u;
    memset(qkt_test_ckpt_tensor(st, d, "rng.data_train"), 0, 32);
}
static void edit_none(qkt_safetensors *st, qkt_st_meta *m, uint8_t *d, void *u) { (void)st, (void)m, (void)d, (void)u; }
/* element 1 of ln_f.weight := NaN, in the checkpoint's float type (F64 in a float64 build) */
static void edit_nan(qkt_safetensors *st, qkt_st_meta *m, uint8_t *d, void *u) {
    (void)m, (void)u;
    if (sizeof(qkt_real) == 8) {
        double nan = NAN;
        memcpy(qkt_test_ckpt_tensor(st, d, "transformer.ln_f.weight") + 8, &nan, 8);
    } else {
        float nan = NAN;
        memcpy(qkt_test_ckpt_tensor(st, d, "transformer.ln_f.weight") + 4, &nan, 4);
    }
}

/* ---------------------------------------------------------------- two writers */
static void test_two_writers(void) {
    const char *d = path(tmp, "two");
    int fd;
    char args[2048];
    snprintf(args, sizeof args, "train " TINY " --steps 100000 --eval-every 0 --log-every 1 --out %s", d);
    pid_t first = spawn(args, &fd);
    EXPECT(wait_for(fd, "step 2/"), "the first run never logged step 2");
    int rc = run("train " TINY " --steps 50 --out %s", d);
    char want[64];
    snprintf(want, sizeof want, "pid %d", (int)first);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "in use by another qkt process") && strstr(out, want),
           "second writer: (%d) %s", rc, out);
    rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, want), "resume while running: (%d) %s", rc, out);
    kill(first, SIGINT);
    rc = finish(first, fd);
    EXPECT(rc == 130, "the first run, interrupted: %d\n%s", rc, out);
    /* the lock died with it: the directory is free again (and no .lock is left) */
    EXPECT(!qkt_file_exists(path(d, ".lock")), "%s left behind", path(d, ".lock"));
    rc = run("train --resume %s --pause-at 1", d);
    EXPECT(rc == 2 && strstr(out, "--pause-at") && !strstr(out, "in use"), "(%d) %s", rc, out);

    /* started together: one runs, the other is refused (the lock or the winner's train.json) */
    const char *e = path(tmp, "together");
    snprintf(args, sizeof args, "train " TINY " --steps 30 --out %s", e);
    int f1, f2;
    pid_t p1 = spawn(args, &f1), p2 = spawn(args, &f2);
    int r1 = finish(p1, f1);
    char *o1 = strdup(out);
    int r2 = finish(p2, f2);
    EXPECT((r1 == 0 && r2 == 2) || (r1 == 2 && r2 == 0), "together: exits %d and %d:\n%s\n%s", r1, r2, o1, out);
    const char *refused = r1 == 2 ? o1 : out;
    EXPECT(strstr(refused, "in use by another qkt process") || strstr(refused, "already holds a run"), "refusal: %s", refused);
    rc = run("train --resume %s", e);
    EXPECT(rc == 0 && strstr(out, "finished already"), "the run that won is whole: (%d) %s", rc, out);
    free(o1);
}

/* ---------------------------------------------------------------- damaged or edited state */
static void fresh_paused(const char *d, const char *extra) {
    int rc = run("train " TINY " --steps 40 --eval-every 10 --pause-at 20 %s --out %s", extra, d);
    EXPECT(rc == 0 && strstr(out, "paused after step 20"), "(%d) %s", rc, out);
}

static void test_saved_state(void) {
    /* a flipped bit in a tensor's data */
    const char *d = path(tmp, "flip");
    fresh_paused(d, "");
    const char *ck = path(d, "ckpt.safetensors");
    size_t n;
    char *b = qkt_test_read_file(ck, &n);
    if (b) {
        b[n - 200] ^= 0x10; /* inside the last tensors' data */
        write_file(ck, b, n);
        free(b);
    }
    int rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "fails its checksum") && strstr(out, "ckpt.safetensors"), "flip, resume: (%d) %s", rc,
           out);
    rc = run("sample --ckpt %s --tokens 4", ck);
    EXPECT(rc == 2 && strstr(out, "fails its checksum"), "flip, sample: (%d) %s", rc, out);

    /* the metadata step edited: the header checksum, or without checksums the optimizer's step */
    d = path(tmp, "step");
    fresh_paused(d, "");
    ck = path(d, "ckpt.safetensors");
    b = qkt_test_read_file(ck, &n);
    char *at = b ? memmem(b, n, "\"step\":\"20\"", 11) : NULL;
    EXPECT(at != NULL, "no step in the header");
    if (at) {
        memcpy(at, "\"step\":\"28\"", 11);
        write_file(ck, b, n);
    }
    free(b);
    rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "header fails its checksum"), "step edited: (%d) %s", rc, out);
    fresh_paused(d = path(tmp, "step2"), "");
    rewrite(path(d, "ckpt.safetensors"), edit_step);
    rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "does not match the optimizer's step"), "step rewritten: (%d) %s", rc, out);

    /* an all-zero RNG state */
    fresh_paused(d = path(tmp, "rng"), "");
    rewrite(path(d, "ckpt.safetensors"), edit_rng);
    rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "rng.data_train") && strstr(out, "all zeros"), "zero rng: (%d) %s", rc, out);

    /* train.json edited: lr (refused) and steps (allowed, said) */
    fresh_paused(d = path(tmp, "json"), "");
    const char *js = path(d, "train.json");
    char *j = qkt_test_read_file(js, &n), *lr = j ? strstr(j, "\"lr\":") : NULL;
    EXPECT(lr != NULL, "no lr in train.json");
    if (lr) {
        char *orig = strdup(j), *e = strchr(lr, ',');
        char buf[8192];
        snprintf(buf, sizeof buf, "%.*s\"lr\":\t0.002%s", (int)(lr - j), j, e);
        write_file(js, buf, strlen(buf));
        rc = run("train --resume %s", d);
        EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "'lr'") && strstr(out, "train.json") && !strstr(out, "resuming"),
               "lr edited: (%d) %s", rc, out);
        char *st = strstr(orig, "\"steps\":");
        e = st ? strchr(st, ',') : NULL;
        snprintf(buf, sizeof buf, "%.*s\"steps\":\t30%s", st ? (int)(st - orig) : 0, orig, e ? e : "");
        write_file(js, buf, strlen(buf));
        rc = run("train --resume %s", d);
        EXPECT(rc == 0 && strstr(out, "note: steps changed on resume: 40 (checkpoint) -> 30") && strstr(out, "done: 30 steps"),
               "steps edited: (%d) %s", rc, out);
        free(orig);
    }
    free(j);

    /* the text file changed between pause and resume, same size and vocabulary */
    const char *txt = path(tmp, "text.txt");
    char text[6000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = "abcdefgh \n"[(i * 7 + i / 13) % 10];
    write_file(txt, text, sizeof text);
    d = path(tmp, "textrun");
    rc = run("train --data text:%s --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-batches 2 "
             "--threads 1 --steps 20 --pause-at 10 --out %s", txt, d);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    char t2 = text[100];
    text[100] = text[101], text[101] = t2;
    write_file(txt, text, sizeof text);
    rc = run("train --resume %s", d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "same size but other content"), "text changed: (%d) %s", rc, out);

    /* NaN weights: sample refuses them */
    fresh_paused(d = path(tmp, "nan"), "");
    rewrite(path(d, "ckpt.safetensors"), edit_nan);
    rc = run("sample --ckpt %s --tokens 4", path(d, "ckpt.safetensors"));
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "transformer.ln_f.weight") && strstr(out, "non-finite"), "NaN weights: (%d) %s", rc,
           out);
    /* a checkpoint without checksums (another tool's) still loads, with a note */
    fresh_paused(d = path(tmp, "nosum"), "");
    rewrite(path(d, "ckpt.safetensors"), edit_none);
    rc = run("sample --ckpt %s --tokens 4", path(d, "ckpt.safetensors"));
    EXPECT(rc == 0 && strstr(out, "note: ") && strstr(out, "no checksums"), "no checksums, sample: (%d) %s", rc, out);
    rc = run("train --resume %s", d);
    EXPECT(rc == 0 && strstr(out, "no checksums") && strstr(out, "done: 40 steps"), "no checksums, resume: (%d) %s", rc, out);
}

/* ---------------------------------------------------------------- logs */
static void test_logs(void) {
    const char *d = path(tmp, "log");
    fresh_paused(d, "");
    const char *lp = path(d, "log.csv");
    size_t n;
    char *s = qkt_test_read_file(lp, &n);
    /* row 8 becomes garbage: the rows after it are needed, so the resume is refused */
    char *r8 = s ? strstr(s, "\n8,") : NULL;
    EXPECT(r8 != NULL, "no row 8");
    if (r8) {
        r8[1] = 'x';
        write_file(lp, s, n);
        int rc = run("train --resume %s", d);
        EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "log.csv line 10 is not a log row") && !strstr(out, "resuming"),
               "garbage row: (%d) %s", rc, out);
        r8[1] = '8';
    }
    /* rows past the checkpoint and a torn last line are dropped, and that is said */
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s21,1,2,3,,,4,5\n22,1,2,3,,,4,5\n23,1,2", s ? s : "");
    write_file(lp, b.s, b.n);
    int rc = run("train --resume %s", d);
    EXPECT(rc == 0 && strstr(out, "discarded 2 rows from step 21 on") && strstr(out, "partial last line"), "(%d) %s", rc, out);
    qkt_buf_free(&b);
    free(s);
}

/* ---------------------------------------------------------------- paths */
static void test_long_paths(void) {
    char d[1400];
    int k = snprintf(d, sizeof d, "%s", tmp);
    while (k < 1150) k += snprintf(d + k, sizeof d - (size_t)k, "/%s", "a_rather_long_directory_name_for_qkt_runs");
    int rc = run("train " TINY " --steps 30 --eval-every 10 --pause-at 15 --out %s", d);
    EXPECT(rc == 0 && strstr(out, "ckpt.safetensors; continue with") && strstr(out, d), "long --out: (%d) %.300s", rc, out);
    EXPECT(qkt_file_exists(path(d, "ckpt.safetensors")), "no ckpt.safetensors under the long path");
    /* a message about a file under it quotes the whole path */
    char *lg = qkt_test_read_file(path(d, "log.csv"), NULL), *r3 = lg ? strstr(lg, "\n3,") : NULL;
    EXPECT(r3 != NULL, "no row 3 under the long path");
    if (r3) {
        r3[1] = '#';
        write_file(path(d, "log.csv"), lg, strlen(lg));
        rc = run("train --resume %s", d);
        char want[2048];
        snprintf(want, sizeof want, "%s line 5 is not a log row", path(d, "log.csv"));
        EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, want), "long path in a message: (%d) %.200s", rc, out);
        r3[1] = '3';
        write_file(path(d, "log.csv"), lg, strlen(lg));
    }
    free(lg);
    rc = run("train --resume %s", d);
    EXPECT(rc == 0 && strstr(out, "resuming") && strstr(out, "at step 15") && strstr(out, "done: 30 steps"), "long resume: (%d) %.300s",
           rc, out);
    char *log = qkt_test_read_file(path(d, "log.csv"), NULL);
    int rows = 0;
    for (char *p = log; p && *p; p++) rows += *p == '\n';
    EXPECT(rows == 32, "log.csv under the long path has %d lines, expected 32", rows);
    free(log);
    /* longer than PATH_MAX: refused up front */
    char *huge = malloc(5000);
    k = snprintf(huge, 5000, "%s", tmp);
    while (k < 4200) k += snprintf(huge + k, 5000 - (size_t)k, "/%s", "x123456789");
    rc = run("train " TINY " --steps 3 --out %s", huge);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "path too long"), "huge --out: (%d) %.300s", rc, out);
    free(huge);
    /* a path that needs quoting in the hint */
    const char *q = path(tmp, "it's a run");
    char qq[1024];
    snprintf(qq, sizeof qq, "\"%s\"", q);
    rc = run("train " TINY " --steps 20 --pause-at 5 --out %s", qq);
    char want[1100];
    snprintf(want, sizeof want, "qkt train --resume '%s/it'\\''s a run'", tmp);
    EXPECT(rc == 0 && strstr(out, want), "quoting: want %s in (%d) %s", want, rc, out);
}

/* ---------------------------------------------------------------- signals and faults */
static void test_signals(void) {
    char args[2048];
    int fd;
    /* SIGHUP: like SIGTERM */
    const char *d = path(tmp, "hup");
    snprintf(args, sizeof args, "train " TINY " --steps 100000 --eval-every 0 --log-every 1 --out %s", d);
    pid_t pid = spawn(args, &fd);
    EXPECT(wait_for(fd, "step 3/"), "never logged step 3");
    kill(pid, SIGHUP);
    int rc = finish(pid, fd);
    EXPECT(rc == 130 && strstr(out, "checkpoint saved") && qkt_file_exists(path(d, "ckpt.safetensors")), "SIGHUP: %d %s", rc, out);

    /* a second signal while the first waits for a step to end: exits at once. The step
     * (~0.27 s on one Zen 5 core with the own gemm; several times that under ASan, where
     * the resume below must still finish within finish()'s 60 s) must outlast the 60 ms
     * the two signals take */
    d = path(tmp, "twice");
    snprintf(args, sizeof args,
             "train --data mqar --n-layer 2 --n-head 4 --n-embd 256 --block-size 128 --batch-size 16 --eval-batches 1 "
             "--steps 1000 --threads 1 --log-every 1 --out %s", d);
    pid = spawn(args, &fd);
    EXPECT(wait_for(fd, "step 1/"), "never logged step 1");
    struct timespec ms30 = {0, 30 * 1000000};
    nanosleep(&ms30, NULL);
    kill(pid, SIGINT);
    nanosleep(&ms30, NULL);
    kill(pid, SIGTERM);
    rc = finish(pid, fd);
    EXPECT(rc == 130 && strstr(out, "second signal: exiting at once"), "two signals: %d %s", rc, out);
    rc = run("train --resume %s --pause-at 2", d);
    EXPECT(rc == 0 && strstr(out, "paused after step 2"), "resume after two signals: (%d) %s", rc, out);

    /* stderr closed under the run (piped to `head`): the run goes on to the end */
    d = path(tmp, "pipe");
    int p[2];
    EXPECT(pipe(p) == 0, "pipe");
    pid = fork();
    if (pid == 0) {
        dup2(p[1], 2), close(p[0]), close(p[1]);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        execl(qkt_test_bin(), "qkt", "train", "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "2", "--n-embd",
              "16", "--block-size", "32", "--batch-size", "4", "--eval-batches", "2", "--threads", "1", "--steps", "300",
              "--log-every", "1", "--out", d, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char c;
    EXPECT(read(p[0], &c, 1) == 1, "no output");
    close(p[0]); /* like `head -c 1` */
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "stderr closed: status %d (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    char *log = qkt_test_read_file(path(d, "log.csv"), NULL);
    EXPECT(log && strstr(log, "\n300,"), "stderr closed: the run did not finish");
    free(log);

    /* a file-size limit with SIGXFSZ at its default: a write error, said, no temp file */
    d = path(tmp, "fsize");
    pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        int errf = open(path(tmp, "fsize.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(errf, 2);
        struct rlimit rl = {6000, 6000};
        setrlimit(RLIMIT_FSIZE, &rl);
        signal(SIGXFSZ, SIG_DFL);
        execl(qkt_test_bin(), "qkt", "train", "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "2", "--n-embd",
              "16", "--block-size", "32", "--batch-size", "4", "--eval-batches", "2", "--threads", "1", "--steps", "10", "--out", d,
              (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    char *err = qkt_test_read_file(path(tmp, "fsize.err"), NULL);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1 && err && strstr(err, "File too large"), "ulimit -f: status %d, %s", st,
           err ? err : "");
    free(err);
    DIR *dh = opendir(d);
    int temps = 0;
    for (struct dirent *e; dh && (e = readdir(dh));) temps += strstr(e->d_name, ".tmp.") != NULL;
    if (dh) closedir(dh);
    EXPECT(temps == 0, "ulimit -f: %d temp files left", temps);

    /* a text file truncated while the run reads it */
    const char *txt = path(tmp, "shrink.txt");
    char text[20000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = "abcdefgh \n"[(i * 7 + i / 13) % 10];
    write_file(txt, text, sizeof text);
    d = path(tmp, "shrink");
    snprintf(args, sizeof args,
             "train --data text:%s --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-batches 2 --threads 1 "
             "--steps 300 --log-every 1 --out %s",
             txt, d);
    pid = spawn(args, &fd);
    EXPECT(wait_for(fd, "step 2/"), "never logged step 2");
    EXPECT(truncate(txt, 0) == 0, "truncate");
    rc = finish(pid, fd);
    EXPECT(rc == 0 && strstr(out, "done: 300 steps"), "text truncated: %d %.400s", rc, out);

    /* temp files of a killed run next to the checkpoint: removed at the next start, said */
    d = path(tmp, "stale");
    fresh_paused(d, "");
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, &st, 0);
    char stale[1024], other[1024];
    snprintf(stale, sizeof stale, "%s/ckpt.safetensors.tmp.%d.3", d, (int)dead);
    snprintf(other, sizeof other, "%s/notes.tmp.%d.3", d, (int)dead);
    write_file(stale, "partial", 7);
    write_file(other, "not ours", 8);
    rc = run("train --resume %s", d);
    EXPECT(rc == 0 && strstr(out, "removed temp files") && !qkt_file_exists(stale) && qkt_file_exists(other), "stale temps: (%d) %s",
           rc, out);

    /* Ctrl-C in a long validation: honoured at once; the interrupted row is redone on
     * resume, and the run equals one that was never interrupted */
    const char *ref = path(tmp, "val_ref");
    rc = run("train " TINY_NOEVAL " --steps 12 --eval-every 6 --eval-batches 3000 --out %s", ref);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    d = path(tmp, "val_int");
    snprintf(args, sizeof args, "train " TINY_NOEVAL " --steps 12 --eval-every 6 --eval-batches 3000 --log-every 1 --out %s", d);
    pid = spawn(args, &fd);
    EXPECT(wait_for(fd, "step 5/"), "never logged step 5");
    struct timespec t0, t1, settle = {0, 80 * 1000000}; /* step 6 takes ~1 ms, its validation ~1 s */
    nanosleep(&settle, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(pid, SIGINT);
    rc = finish(pid, fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    EXPECT(rc == 130 && strstr(out, "interrupted at step 6"), "SIGINT in validation: %d %s", rc, out);
    EXPECT(dt < 0.5, "SIGINT in validation took %.2f s to act", dt);
    rc = run("train --resume %s", d);
    EXPECT(rc == 0 && strstr(out, "done: 12 steps"), "(%d) %s", rc, out);
    char *la = qkt_test_read_file(path(ref, "log.csv"), NULL), *lb = qkt_test_read_file(path(d, "log.csv"), NULL);
    int same = 0, lines = 0;
    for (char *x = la, *y = lb; x && y && *x && *y; lines++) { /* the first 6 columns of each row */
        char *nx = strchr(x, '\n'), *ny = strchr(y, '\n');
        int cx = 0, cy = 0;
        char *ex = x, *ey = y;
        for (; ex < nx && cx < 6; ex++) cx += *ex == ',';
        for (; ey < ny && cy < 6; ey++) cy += *ey == ',';
        same += ex - x == ey - y && !memcmp(x, y, (size_t)(ex - x));
        x = nx + 1, y = ny + 1;
    }
    EXPECT(same == 14 && lines == 14, "logs after an interrupted validation: %d of %d lines the same:\n%s\nvs\n%s", same, lines, la, lb);
    free(la), free(lb);
}

/* ---------------------------------------------------------------- small things */
static void test_small(void) {
    const char *d = path(tmp, "small");
    fresh_paused(d, "");
    const char *ck = path(d, "ckpt.safetensors");
    /* qkt step --out onto its input, through a symlink and a relative path */
    const char *link = path(tmp, "link.safetensors");
    EXPECT(symlink(ck, link) == 0, "symlink");
    int rc = run("step --ckpt %s --batch %s --out %s", ck, ck, link);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "same file as --ckpt"), "step --out = --ckpt: (%d) %s", rc, out);
    rc = run("step --ckpt %s --batch %s --out %s/../small/ckpt.safetensors", link, ck, d);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "same file"), "step --out relative: (%d) %s", rc, out);
    EXPECT(qkt_file_exists(ck), "the checkpoint is gone");
    /* a subnormal temperature */
    rc = run("sample --ckpt %s --temperature 4e-320", ck);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "subnormal"), "temperature 4e-320: (%d) %s", rc, out);
}

int main(void) {
    tmp = qkt_test_tmpdir("rel");
    test_two_writers();
    test_saved_state();
    test_logs();
    test_long_paths();
    test_signals();
    test_small();
    return qkt_test_finish();
}
