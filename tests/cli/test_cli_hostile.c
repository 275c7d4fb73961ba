/* qkt against a hostile user or machine, one case per function: a damaged byte in
 * log.csv, closed stdout/stderr, signals the parent ignored (nohup), non-finite models
 * given to sample and step, duplicate list values, a params-out file's vocabulary, and
 * the wording of a few refusals. Each case failed (or went unsaid) before its fix. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
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

#define TINY "--data mqar:n_pairs=4,n_queries=4 --n-layer 1 --n-head 2 --n-embd 16 --block-size 32 --batch-size 4 --threads 1 " \
             "--eval-batches 2"

/* `qkt <args>` (printf-formatted) through the shell, stdout+stderr in out; exit status. */
static int qkt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int qkt(const char *fmt, ...) {
    char args[3000], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", qkt_test_bin(), args);
    return qkt_test_run(cmd, out, sizeof out);
}

static bool one_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == 0 && nl > s;
}

/* Every line of log.csv after the header is a row (starts with a digit). */
static bool log_rows_only(const char *dir) {
    char *s = qkt_test_read_file(qkt_test_path(dir, "log.csv"), NULL);
    bool ok = s && !strncmp(s, "step,", 5);
    for (char *p = s ? strchr(s, '\n') : NULL; ok && p && p[1]; p = strchr(p + 1, '\n')) ok = p[1] >= '0' && p[1] <= '9';
    free(s);
    return ok;
}

/* A NUL byte in row 5 of a paused run's log.csv: the resume refuses naming the file and
 * the line, and the file keeps all its rows (it used to drop rows 5-20 as "a torn last line"). */
static void log_nul_byte(void) {
    const char *d = qkt_test_path(tmp, "nul");
    int rc = qkt("train " TINY " --steps 24 --eval-every 5 --out %s --pause-at 20", d);
    EXPECT(rc == 0 || rc == 130, "paused run: exit %d: %s", rc, out);
    const char *lp = qkt_test_path(d, "log.csv");
    size_t n = 0;
    char *s = qkt_test_read_file(lp, &n);
    char *row5 = s ? strstr(s, "\n5,") : NULL;
    EXPECT(row5 != NULL, "no row 5 in %s", lp);
    if (!row5) return free(s);
    row5[3] = 0;
    FILE *f = fopen(lp, "wb");
    if (f) fwrite(s, 1, n, f), fclose(f);
    rc = qkt("train --resume %s", d);
    EXPECT(rc == 2 && strstr(out, "log.csv line 7 is not a log row ('5,\\x00") && one_line(out), "resume: exit %d: %s", rc, out);
    size_t n2 = 0;
    char *s2 = qkt_test_read_file(lp, &n2);
    EXPECT(s2 && n2 == n && !memcmp(s, s2, n), "log.csv changed by a refused resume (%zu -> %zu bytes)", n, n2);
    free(s), free(s2);
}

/* stdout and stderr closed: the run's files must not take fds 1 and 2 (progress lines
 * used to go into log.csv, and the resume was refused). */
static void closed_std_fds(void) {
    const char *d = qkt_test_path(tmp, "closed");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s train " TINY " --steps 6 --eval-every 2 --pause-at 3 --out %s >&- 2>&-", qkt_test_bin(), d);
    int rc = system(cmd);
    EXPECT(WIFEXITED(rc) && (WEXITSTATUS(rc) == 0 || WEXITSTATUS(rc) == 130), "closed fds: status %d", rc);
    EXPECT(log_rows_only(d), "log.csv holds more than its rows");
    rc = qkt("train --resume %s", d);
    EXPECT(rc == 0 && log_rows_only(d), "resume after the closed-fd run: exit %d: %s", rc, out);
}

/* Starts qkt with SIGHUP ignored (as nohup does), output to /dev/null; pid. */
static pid_t start_nohup(const char *const *argv) {
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGHUP, SIG_IGN);
        FILE *n = freopen("/dev/null", "w", stdout);
        n = n ? freopen("/dev/null", "w", stderr) : NULL;
        (void)n;
        execv(qkt_test_bin(), (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* SIGHUP to a qkt started under nohup, once `file` exists: it must go on (it used to
 * replace nohup's SIG_IGN with its stop handler and exit 130). The run is far too long to
 * end by itself, so no machine is fast enough to make the case pass without the signal
 * arriving: it must still run a second after the SIGHUP (a wrongly handled SIGHUP stops it
 * at the next step, milliseconds away), and then SIGTERM stops it the usual way (130). */
static void nohup_case(const char *what, const char *const *argv, const char *file) {
    pid_t pid = start_nohup(argv);
    int st = 0;
    bool started = false;
    for (int i = 0; i < 600 && !(started = qkt_file_exists(file)); i++) usleep(50000);
    EXPECT(started, "%s: %s never appeared", what, file);
    kill(pid, SIGHUP);
    bool alive = true;
    for (int i = 0; i < 20 && alive; i++) usleep(50000), alive = waitpid(pid, &st, WNOHANG) == 0;
    EXPECT(alive, "%s under nohup, SIGHUP: it stopped (status %d, exit %d)", what, st, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    if (!alive) return;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s under nohup, SIGTERM after SIGHUP: status %d (exit %d)", what, st,
           WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void nohup_train(void) {
    const char *d = qkt_test_path(tmp, "nohup");
    char dir[1024], log[1100];
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(log, sizeof log, "%s/log.csv", dir);
    const char *argv[] = {"qkt", "train", "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "2", "--n-embd",
                          "32", "--block-size", "32", "--batch-size", "8", "--threads", "1", "--eval-batches", "2", "--steps",
                          "10000000", "--out", dir, NULL};
    nohup_case("qkt train", argv, log);
}

static void nohup_ablate(void) {
    const char *d = qkt_test_path(tmp, "nohup_ablate");
    char dir[1024], cfg[1100];
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(cfg, sizeof cfg, "%s/h/config.json", dir);
    const char *argv[] = {"qkt", "ablate", "--variants", "sqrt_dk", "--d-k", "8", "--seeds", "1", "--steps", "10000000", "--lr-grid",
                          "0.001", "--lr-variants", "sqrt_dk", "--lr-steps", "2", "--init-d-k", "4", "--growth-d-k", "8",
                          "--task2", "none", "--workers", "1", "--name", "h", "--out", dir, NULL};
    nohup_case("qkt ablate", argv, cfg);
}

/* What set_tensor plants: every value of tensor `name` := v, in the checkpoint's float type. */
typedef struct {
    const char *name;
    double v;
} fill;
static void fill_tensor(qkt_safetensors *st, qkt_st_meta *m, uint8_t *d, void *user) {
    (void)m;
    const fill *f = user;
    for (int i = 0; i < st->n; i++) {
        const qkt_st_tensor *t = &st->t[i];
        if (strcmp(t->name, f->name)) continue;
        uint8_t *p = qkt_test_ckpt_tensor(st, d, f->name);
        float vf = (float)f->v;
        if (t->dtype == QKT_ST_F32)
            for (size_t k = 0; k < (t->end - t->begin) / 4; k++) memcpy(p + 4 * k, &vf, 4);
        if (t->dtype == QKT_ST_F64)
            for (size_t k = 0; k < (t->end - t->begin) / 8; k++) memcpy(p + 8 * k, &f->v, 8);
    }
}
/* A copy of checkpoint `src` at `dst` with every value of `name` set to v (F32 or F64, as
 * the file holds it), checksummed like qkt's own (so the only thing wrong with it is the model). */
static void set_tensor(const char *src, const char *dst, const char *name, double v) {
    fill f = {name, v};
    qkt_test_ckpt_rewrite(src, dst, true, fill_tensor, &f);
}

/* A batch for qkt step: idx and targets (1, 8) in [0, 4). */
static void write_batch(const char *path) {
    int32_t idx[8] = {0, 1, 2, 3, 0, 1, 2, 3}, tgt[8] = {1, 2, 3, 0, 1, 2, 3, 0};
    qkt_st_write w[2] = {{"idx", QKT_ST_I32, 2, {1, 8}, idx}, {"targets", QKT_ST_I32, 2, {1, 8}, tgt}};
    qkt_err err;
    EXPECT(qkt_safetensors_write(path, w, 2, NULL, 0, &err) == 0, "%s", err.msg);
}

/* A text model through qkt step --params-out keeps its vocabulary (sample prints text);
 * a model whose logits overflow (finite weights, ln_f.weight = 3e38) is refused by
 * sample (one line, nothing on stdout, non-zero) and by step (nothing written); an
 * AdamW lr that can only overflow is refused; a step that makes weights non-finite
 * writes no model. */
static void nonfinite_and_vocab(void) {
    const char *txt = qkt_test_path(tmp, "t.txt"), *d = qkt_test_path(tmp, "textrun");
    FILE *f = fopen(txt, "w");
    for (int i = 0; f && i < 200; i++) fputs("hello world, the lowly wold\n", f);
    if (f) fclose(f);
    int rc = qkt("train --data text:%s --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-batches 1 "
                 "--threads 1 --steps 3 --out %s", txt, d);
    EXPECT(rc == 0, "text run: exit %d: %s", rc, out);
    char ck[1100], batch[1100], g[1100], p[1100], bad[1100];
    snprintf(ck, sizeof ck, "%s/ckpt.safetensors", d);
    snprintf(batch, sizeof batch, "%s/batch.safetensors", tmp);
    snprintf(g, sizeof g, "%s/grads.safetensors", tmp);
    snprintf(p, sizeof p, "%s/params.safetensors", tmp);
    snprintf(bad, sizeof bad, "%s/bad.safetensors", tmp);
    write_batch(batch);

    rc = qkt("step --ckpt %s --batch %s --out %s --adamw-lr 0.001 --params-out %s", ck, batch, g, p);
    EXPECT(rc == 0, "step: exit %d: %s", rc, out);
    rc = qkt("sample --ckpt %s --prompt hel --tokens 5 --temperature 0", p);
    EXPECT(rc == 0 && !strncmp(out, "hel", 3) && strlen(out) == 9, "sample from --params-out: exit %d: '%s'", rc, out);

    rc = qkt("step --ckpt %s --batch %s --out %s --adamw-lr 1e39 --params-out %s.2", ck, batch, g, p);
    EXPECT(rc == 2 && one_line(out) && strstr(out, "--adamw-lr"), "--adamw-lr 1e39: exit %d: %s", rc, out);
    remove(p);
    /* lr 10 x weight decay 1e300 overflows float32 weights; float64's range holds them (no flag
     * value overflows one step there: the overflowing checkpoint below covers that build) */
    if (sizeof(qkt_real) == 4) {
        rc = qkt("step --ckpt %s --batch %s --out %s --adamw-lr 10 --weight-decay 1e300 --params-out %s", ck, batch, g, p);
        EXPECT(rc != 0 && strstr(out, "non-finite") && !qkt_file_exists(p), "a step to Inf weights: exit %d: %s", rc, out);
    }

    /* finite weights whose products overflow the float type: the logits turn Inf/NaN */
    set_tensor(ck, bad, "transformer.ln_f.weight", sizeof(qkt_real) == 4 ? 3e38 : 1.7e308);
    char so[1100];
    snprintf(so, sizeof so, "%s/sample.out", tmp);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "{ %s sample --ckpt %s --tokens 20 >%s; }", qkt_test_bin(), bad, so); /* stderr to out */
    rc = qkt_test_run(cmd, out, sizeof out);
    char *printed = qkt_test_read_file(so, NULL);
    EXPECT(rc != 0 && one_line(out) && strstr(out, "not finite") && printed && !printed[0],
           "sample, overflowing logits: exit %d: %s; stdout '%s'", rc, out, printed ? printed : "(none)");
    free(printed);
    remove(g);
    rc = qkt("step --ckpt %s --batch %s --out %s", bad, batch, g);
    EXPECT(rc != 0 && one_line(out) && strstr(out, "not finite") && !qkt_file_exists(g), "step, overflowing logits: exit %d: %s", rc,
           out);
}

/* The text file of a paused run replaced by a symbolic link to a byte-identical copy: the
 * resume goes on (the content is what identifies the data); a link to other content is
 * refused naming the path train.json has, not the link's target. */
static void symlinked_data(void) {
    const char *txt = qkt_test_path(tmp, "s.txt"), *copy = qkt_test_path(tmp, "s_copy.txt"), *other = qkt_test_path(tmp, "s_other.txt");
    const char *d = qkt_test_path(tmp, "linkrun");
    char t[1100], c[1100], o[1100], dir[1100];
    snprintf(t, sizeof t, "%s", txt), snprintf(c, sizeof c, "%s", copy), snprintf(o, sizeof o, "%s", other), snprintf(dir, sizeof dir, "%s", d);
    FILE *f = fopen(t, "w"), *g = fopen(c, "w"), *h = fopen(o, "w");
    for (int i = 0; f && g && h && i < 200; i++) fputs("a stitch in time saves nine\n", f), fputs("a stitch in time saves nine\n", g),
                                                  fputs(i == 7 ? "a stitch in tine saves nine\n" : "a stitch in time saves nine\n", h);
    if (f) fclose(f);
    if (g) fclose(g);
    if (h) fclose(h);
    const char *args = "--n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-batches 1 --threads 1";
    int rc = qkt("train --data text:%s %s --steps 6 --pause-at 3 --out %s", t, args, dir);
    EXPECT(rc == 0 || rc == 130, "text run: exit %d: %s", rc, out);
    EXPECT(remove(t) == 0 && symlink(o, t) == 0, "cannot link %s", t);
    rc = qkt("train --resume %s", dir);
    EXPECT(rc == 2 && one_line(out) && strstr(out, t) && !strstr(out, "s_other.txt"), "link to other content: exit %d: %s", rc, out);
    EXPECT(remove(t) == 0 && symlink(c, t) == 0, "cannot link %s", t);
    rc = qkt("train --resume %s", dir);
    EXPECT(rc == 0 && !strstr(out, "s_copy.txt"), "link to an identical copy: exit %d: %s", rc, out);
}

/* A disk that fills up under qkt ablate: the running qkt's
 * file-size limit drops to 0 once part 1 is written (prlimit; SIGXFSZ is ignored by qkt, so a write fails with
 * EFBIG as with ENOSPC), which the cells it starts inherit: they can write neither their
 * results nor their logs. Every "cell failed" line must carry the error text (it used to
 * say only "see X.log", an empty file). */
static void full_disk_ablate(void) {
    const char *d = qkt_test_path(tmp, "full");
    char dir[1024], cfg[1100];
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(cfg, sizeof cfg, "%s/f/cells/init_iid.csv", dir); /* part 1, written by qkt ablate itself */
    const char *argv[] = {"qkt", "ablate", "--variants", "sqrt_dk,none", "--d-k", "8", "--seeds", "2", "--steps", "40", "--lr-grid",
                          "0.001", "--lr-variants", "sqrt_dk", "--lr-steps", "2", "--init-d-k", "4", "--growth-d-k", "8",
                          "--task2", "none", "--workers", "1", "--name", "f", "--out", dir, NULL};
    int fd[2];
    if (pipe(fd)) return;
    pid_t pid = fork();
    if (pid == 0) { /* output into a pipe: no file size limits a pipe */
        dup2(fd[1], 1), dup2(fd[1], 2), close(fd[0]), close(fd[1]);
        execv(qkt_test_bin(), (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    for (int i = 0; i < 60000 && !qkt_file_exists(cfg); i++) usleep(1000);
    struct rlimit zero = {0, 0};
    EXPECT(prlimit(pid, RLIMIT_FSIZE, &zero, NULL) == 0, "prlimit: %s", strerror(errno));
    char *text = calloc(1, 1 << 16);
    size_t n = 0;
    for (ssize_t r; (r = read(fd[0], text + n, (1 << 16) - 1 - n)) > 0;) n += (size_t)r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    int failed = 0, said = 0;
    for (char *p = strstr(text, "qkt: cell "); p; p = strstr(p + 1, "qkt: cell ")) {
        char *nl = strchr(p, '\n');
        failed++;
        said += nl && memmem(p, (size_t)(nl - p), "File too large", 14) != NULL;
    }
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) != 0 && failed > 0 && said == failed,
           "full disk: status %d, %d cells failed, %d of them say why:\n%s", st, failed, said, text ? text : "");
    free(text);
}

/* Every list flag of qkt ablate refuses a value given twice, naming the flag and the value. */
static void duplicate_lists(void) {
    static const char *const cases[][3] = {
        {"--d-k 8,16,8", "--d-k", "value 8 is"},        {"--lr-grid 0.003,3e-3", "--lr-grid", "value 0.003 is"},
        {"--variants sqrt_dk,none,sqrt_dk", "--variants", "sqrt_dk is"}, {"--lr-variants none,none", "--lr-variants", "none is"},
        {"--init-d-k 4,4", "--init-d-k", "4 is"},       {"--growth-d-k 8,8", "--growth-d-k", "8 is"},
        {"--task2-d-k 16,16", "--task2-d-k", "16 is"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = qkt("ablate %s --name dup%zu --out %s", cases[i][0], i, tmp);
        EXPECT(rc == 2 && one_line(out) && strstr(out, cases[i][1]) && strstr(out, cases[i][2]) && strstr(out, "twice"),
               "%s: exit %d: %s", cases[i][0], rc, out);
    }
}

/* Refusals that name the right thing and say what is accepted. */
static void messages(void) {
    int rc = qkt("train --data mqar --pos rope --n-embd 30 --n-head 2 --out %s/rope", tmp);
    EXPECT(rc == 2 && one_line(out) && strstr(out, "--pos rope") && strstr(out, "--n-embd") && !strstr(out, "--data"),
           "rope, odd d_k: exit %d: %s", rc, out);
    rc = qkt("train --data mqar --attn-scale POWER:0.5 --out %s/upper", tmp);
    EXPECT(rc == 2 && one_line(out) && strstr(out, "unknown name 'POWER'") && strstr(out, "power:ALPHA"), "POWER:0.5: exit %d: %s",
           rc, out);
    rc = qkt("train --data mqar --attn-scale power:1e-320 --out %s/tiny", tmp);
    EXPECT(rc == 2 && one_line(out) && strstr(out, "magnitude 2.225e-308 .. 1.798e+308"), "power:1e-320: exit %d: %s", rc, out);
    rc = qkt("ablate --variants power:1e-320 --name tiny --out %s", tmp);
    EXPECT(rc == 2 && one_line(out) && strstr(out, "--variants") && strstr(out, "magnitude"), "ablate power:1e-320: exit %d: %s", rc,
           out);
}

int main(void) {
    tmp = qkt_test_tmpdir("hostile");
    log_nul_byte();
    closed_std_fds();
    nohup_train();
    nohup_ablate();
    nonfinite_and_vocab();
    duplicate_lists();
    symlinked_data();
    full_disk_ablate();
    messages();
    return qkt_test_finish();
}
