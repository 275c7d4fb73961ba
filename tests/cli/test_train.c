/* qkt train and qkt sample end to end on tiny models: bit-identical resume (pause and
 * SIGINT), non-finite detection, unwritable outputs, bad flags, sampling from text. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

static char out[1 << 16];
static const char *tmp;

/* A tiny model on mqar: 1 layer, C 16, T 32, batch 4; dropout on, so the dropout
 * stream is part of what must resume exactly. */
#define TINY_MODEL QKT_TEST_TINY_DATA " " QKT_TEST_TINY_MODEL " --batch-size 4 --dropout 0.1 --eval-batches 2"
#define TINY TINY_MODEL " --threads 1"

static int run(const char *args) { return qkt_test_qkt(NULL, NULL, out, sizeof out, "%s", args); }

/* Every tensor (parameters, optimizer moments, RNG states) byte-identical, and the
 * same metadata apart from the wall time. */
static void expect_same_ckpt(const char *a, const char *b, int line) {
    qkt_safetensors x, y;
    qkt_err err;
    if (qkt_safetensors_read(a, &x, &err) || qkt_safetensors_read(b, &y, &err)) {
        EXPECT(0, "line %d: %s", line, err.msg);
        return;
    }
    EXPECT(x.n == y.n && x.n > 10, "line %d: %d vs %d tensors", line, x.n, y.n);
    int diff = 0;
    for (int i = 0; i < x.n; i++) {
        const qkt_st_tensor *u = &x.t[i], *v = qkt_safetensors_find(&y, u->name);
        if (!v || v->dtype != u->dtype || v->numel != u->numel || memcmp(u->data, v->data, u->end - u->begin)) {
            if (diff++ < 3) fprintf(stderr, "line %d: tensor %s differs between %s and %s\n", line, u->name, a, b);
        }
    }
    EXPECT(diff == 0, "line %d: %d tensors differ", line, diff);
    EXPECT(qkt_safetensors_find(&x, "optim.m") && qkt_safetensors_find(&x, "rng.dropout"), "line %d: state missing", line);
    for (int i = 0; i < x.n_meta; i++) {
        if (!strcmp(x.meta[i].key, "elapsed_s")) continue;
        const char *w = qkt_safetensors_meta(&y, x.meta[i].key);
        EXPECT(w && !strcmp(w, x.meta[i].value), "line %d: metadata %s: %s vs %s", line, x.meta[i].key, x.meta[i].value,
               w ? w : "(absent)");
    }
    qkt_safetensors_free(&x);
    qkt_safetensors_free(&y);
}

/* log.csv without the timing columns (tokens_per_s, elapsed_s). */
static char *log_core(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/log.csv", dir);
    qkt_err err;
    char *s = qkt_read_file(path, NULL, &err);
    if (!s) return strdup("");
    char *o = malloc(strlen(s) + 1), *w = o;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        int commas = 0;
        for (size_t i = 0; i < n && commas < 6; i++) {
            if (line[i] == ',') commas++;
            if (commas < 6) *w++ = line[i];
        }
        *w++ = '\n';
        line += n + (nl ? 1 : 0);
    }
    *w = 0;
    free(s);
    return o;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void expect_same_run(const char *a, const char *b, int n_rows, int line) {
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/ckpt.safetensors", a);
    snprintf(pb, sizeof pb, "%s/ckpt.safetensors", b);
    expect_same_ckpt(pa, pb, line);
    char *la = log_core(a), *lb = log_core(b);
    EXPECT(!strcmp(la, lb), "line %d: log rows differ:\n%s\nvs\n%s", line, la, lb);
    EXPECT(count_lines(la) == n_rows + 1, "line %d: %d log lines, expected %d", line, count_lines(la), n_rows + 1);
    free(la), free(lb);
}

/* The scale variants with their own tensors or state, and the model options, resume
 * bit-identically too: sigma_reparam's power-iteration vectors (checkpointed buffers, one
 * per Linear; with 2 replicas on 2 threads, resumed on 1), sigma_qk's, cosine's temperatures, a power:ALPHA named
 * on the command line, and --norm rmsnorm --mlp swiglu --pos rope|alibi on mqar and on a
 * text file. */
static void test_resume_variants(void) {
    char text[600];
    snprintf(text, sizeof text, "%s/resume_text.txt", tmp);
    qkt_buf tb = {0};
    for (int i = 0; i < 300; i++) qkt_buf_printf(&tb, "the cat sat on the mat %d. ", i % 7);
    qkt_err err;
    EXPECT(qkt_write_atomic(text, tb.s, tb.n, &err) == 0, "%s", err.msg);
    qkt_buf_free(&tb);
    char text_run[1024];
    snprintf(text_run, sizeof text_run,
             "--data text:%s " QKT_TEST_TINY_MODEL " --batch-size 4 --dropout 0.1 --eval-batches 2 "
             "--norm rmsnorm --mlp swiglu --pos rope --attn-scale cosine", text);
    const char *v[] = {TINY_MODEL " --attn-scale sigma_reparam --replicas 2", TINY_MODEL " --attn-scale cosine",
                       TINY_MODEL " --attn-scale power:0.75",
                       TINY_MODEL " --norm rmsnorm --mlp swiglu --pos rope --attn-scale cosine",
                       TINY_MODEL " --norm rmsnorm --pos alibi --attn-scale sigma_qk", text_run};
    for (int i = 0; i < (int)(sizeof v / sizeof *v); i++) {
        char args[3000], a[512], b[512];
        snprintf(a, sizeof a, "%s/var%d_straight", tmp, i);
        snprintf(b, sizeof b, "%s/var%d_paused", tmp, i);
        snprintf(args, sizeof args, "train %s --threads 1 --steps 12 --eval-every 4 --out %s", v[i], a);
        int rc = run(args);
        EXPECT(rc == 0, "%s: straight run exited %d: %s", v[i], rc, out);
        snprintf(args, sizeof args, "train %s --threads 2 --steps 12 --eval-every 4 --out %s --pause-at 6", v[i], b);
        rc = run(args);
        EXPECT(rc == 0 && strstr(out, "paused after step 6"), "%s: pause exited %d: %s", v[i], rc, out);
        snprintf(args, sizeof args, "train --resume %s --threads 1", b);
        rc = run(args);
        EXPECT(rc == 0 && strstr(out, "done"), "%s: resume exited %d: %s", v[i], rc, out);
        expect_same_run(a, b, 13, __LINE__);
    }
    /* the options are in the checkpoint and in train.json */
    char path[600];
    snprintf(path, sizeof path, "%s/var3_paused/ckpt.safetensors", tmp);
    qkt_checkpoint ck;
    EXPECT(qkt_checkpoint_open(path, &ck, &err) == 0, "%s", err.msg);
    EXPECT(!strcmp(qkt_checkpoint_meta(&ck, "norm"), "rmsnorm") && !strcmp(qkt_checkpoint_meta(&ck, "mlp"), "swiglu") &&
               !strcmp(qkt_checkpoint_meta(&ck, "pos"), "rope") && !strcmp(qkt_checkpoint_meta(&ck, "attn_scale"), "cosine"),
           "checkpoint metadata of the options");
    EXPECT(!qkt_safetensors_find(&ck.st, "transformer.wpe.weight") && !qkt_safetensors_find(&ck.st, "transformer.ln_f.bias"),
           "rope + rmsnorm: no wpe, no norm biases");
    qkt_checkpoint_close(&ck);
    const char *bad[] = {"--norm batchnorm", "--mlp relu", "--pos sinusoidal", "--pos rope --n-head 16"};
    for (int i = 0; i < 4; i++) {
        char args[2048];
        snprintf(args, sizeof args, "train " TINY_MODEL " --steps 2 %s --out %s/bad_opt%d", bad[i], tmp, i);
        int rc = run(args);
        EXPECT(rc == 2 && qkt_test_one_line(out), "'%s': exit %d: %s", bad[i], rc, out);
    }
}

static void test_resume(void) {
    char args[2048];
    snprintf(args, sizeof args, "train " TINY " --steps 20 --eval-every 5 --out %s/straight", tmp);
    int rc = run(args);
    EXPECT(rc == 0, "straight run exited %d: %s", rc, out);
    snprintf(args, sizeof args, "train " TINY " --steps 20 --eval-every 5 --out %s/paused --pause-at 10", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "paused after step 10"), "pause exited %d: %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s/paused", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "resuming") && strstr(out, "done"), "resume exited %d: %s", rc, out);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/straight", tmp);
    snprintf(b, sizeof b, "%s/paused", tmp);
    expect_same_run(a, b, 21, __LINE__); /* rows: step 0 (validation) .. 20 */
    /* a run without a checkpoint yet (killed hard before the first one) restarts from step 0 */
    snprintf(args, sizeof args, "train " TINY " --steps 20 --eval-every 5 --out %s/nockpt --pause-at 4", tmp);
    rc = run(args);
    snprintf(args, sizeof args, "%s/nockpt/ckpt.safetensors", tmp);
    EXPECT(rc == 0 && remove(args) == 0, "(%d) %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s/nockpt --pause-at 20", tmp); /* at the last step: the end of the run */
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "no checkpoint yet") && strstr(out, "done"), "(%d) %s", rc, out);
    snprintf(b, sizeof b, "%s/nockpt", tmp);
    expect_same_run(a, b, 21, __LINE__);
    snprintf(b, sizeof b, "%s/paused", tmp);
    /* a finished run resumes to nothing; changing a setting on resume is refused */
    rc = run(strcat(strcpy(args, "train --resume "), b));
    EXPECT(rc == 0 && strstr(out, "finished already"), "(%d) %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s --lr 0.1", b);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--lr"), "(%d) %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s --replicas 2", b);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--replicas"), "(%d) %s", rc, out);
    /* data-parallel replicas: a run on 2 threads paused and resumed on 1 ends where the
     * straight 1-thread run does (replicas, not threads, decide the sums) */
    snprintf(args, sizeof args, "train " TINY_MODEL " --replicas 2 --threads 1 --steps 20 --eval-every 5 --out %s/rep_straight", tmp);
    rc = run(args);
    EXPECT(rc == 0, "replicas straight run exited %d: %s", rc, out);
    snprintf(args, sizeof args, "train " TINY_MODEL " --replicas 2 --threads 2 --steps 20 --eval-every 5 --out %s/rep_paused --pause-at 10", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "paused after step 10"), "replicas pause exited %d: %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s/rep_paused --threads 1", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "done"), "replicas resume exited %d: %s", rc, out);
    snprintf(a, sizeof a, "%s/rep_straight", tmp);
    snprintf(b, sizeof b, "%s/rep_paused", tmp);
    expect_same_run(a, b, 21, __LINE__);
    snprintf(args, sizeof args, "%s/rep_straight/train.json", tmp);
    size_t n;
    char *js = qkt_read_file(args, &n, NULL);
    EXPECT(js && strstr(js, "\"replicas\":\t2"), "train.json lacks replicas: %s", js ? js : "(unreadable)");
    free(js);
    snprintf(b, sizeof b, "%s/paused", tmp);
    /* a fresh run into a directory that holds one is refused */
    snprintf(args, sizeof args, "train " TINY " --steps 20 --out %s", b);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--out") && strstr(out, "--resume"), "(%d) %s", rc, out);
}

/* The lr column of log.csv's row for `step` (as written), or "" */
static void log_lr(const char *dir, int step, char *lr, size_t n) {
    char path[1024], want[32];
    snprintf(path, sizeof path, "%s/log.csv", dir);
    snprintf(want, sizeof want, "\n%d,", step);
    char *s = qkt_read_file(path, NULL, NULL), *row = s ? strstr(s, want) : NULL;
    lr[0] = 0;
    if (row) sscanf(row + strlen(want), "%*[^,],%31[^,]", lr);
    (void)n;
    free(s);
}

/* --lr-decay-steps ends the cosine before --steps; a finished run continued with
 * --resume DIR --steps N ends bit-identical to a run started with N when its schedule
 * does not follow --steps (--lr-decay-steps given); without it, the run keeps the decay
 * over its first --steps (train.json's lr_decay_steps). */
static void test_resume_longer(void) {
    char args[2048], a[512], b[512], lr[32];
    /* min-lr (1e-4) from the 15th step on, though the run has 20 */
    snprintf(args, sizeof args, "train " TINY " --steps 20 --lr-decay-steps 15 --eval-every 5 --out %s/decay_straight", tmp);
    int rc = run(args);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    snprintf(a, sizeof a, "%s/decay_straight", tmp);
    for (int step = 15; step <= 20; step += 5) {
        log_lr(a, step, lr, sizeof lr);
        EXPECT(!strcmp(lr, "0.0001"), "--lr-decay-steps 15: step %d lr '%s', want 0.0001", step, lr);
    }
    log_lr(a, 14, lr, sizeof lr);
    EXPECT(lr[0] && strcmp(lr, "0.0001"), "--lr-decay-steps 15: step 14 lr '%s' is the floor already", lr);
    /* 10 steps (mid-cosine), finished, then continued to 20; the first run's last step is
     * one --eval-every validates anyway, so log.csv matches too */
    snprintf(args, sizeof args, "train " TINY " --steps 10 --lr-decay-steps 15 --eval-every 5 --out %s/decay_more", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "done: 10 steps"), "(%d) %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s/decay_more --steps 9", tmp);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "past the run's last step 9"), "a --steps below the run's step: (%d) %s", rc, out);
    snprintf(args, sizeof args, "train --resume %s/decay_more --steps 20", tmp);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "resuming") && strstr(out, "done: 20 steps"), "(%d) %s", rc, out);
    snprintf(b, sizeof b, "%s/decay_more", tmp);
    expect_same_run(a, b, 21, __LINE__);
    /* without --lr-decay-steps: the decay stays over the first 10 steps */
    snprintf(args, sizeof args, "train " TINY " --steps 10 --eval-every 5 --out %s/auto_more", tmp);
    rc = run(args);
    snprintf(args, sizeof args, "train --resume %s/auto_more --steps 20", tmp);
    rc |= run(args);
    snprintf(args, sizeof args, "train " TINY " --steps 20 --lr-decay-steps 10 --eval-every 5 --out %s/auto_straight", tmp);
    rc |= run(args);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    snprintf(a, sizeof a, "%s/auto_straight", tmp);
    snprintf(b, sizeof b, "%s/auto_more", tmp);
    expect_same_run(a, b, 21, __LINE__);
}

/* SIGINT from the test to a child qkt after it has logged 3 steps. The child writes a
 * line per step to a pipe of one page that we stop reading: it cannot run far ahead
 * (nor finish) before the signal arrives, whatever the machine's load. */
static void test_signal(int sig, const char *name) {
    char dir[512], steps[] = "150";
    snprintf(dir, sizeof dir, "%s/sig_%s", tmp, name);
    int fd[2];
    EXPECT(pipe(fd) == 0, "pipe");
    fcntl(fd[0], F_SETPIPE_SZ, 4096);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2), dup2(fd[1], 1);
        close(fd[0]), close(fd[1]);
        execl(qkt_test_bin(), "qkt", "train", "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
              "--block-size", "32", "--batch-size", "4", "--dropout", "0.1", "--eval-batches", "2", "--threads", "1",
              "--steps", steps, "--eval-every", "25", "--ckpt-every", "40", "--log-every", "1", "--out", dir, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[512];
    bool seen = false;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "step 3/")) {
            seen = true;
            break;
        }
    EXPECT(seen, "the child never logged step 3");
    kill(pid, sig);
    char rest[8192] = "";
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        if (n + strlen(line) < sizeof rest) strcpy(rest + n, line), n += strlen(line);
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s: child status %d, output tail:\n%s", name, st, rest);
    EXPECT(strstr(rest, "checkpoint saved") && strstr(rest, "--resume"), "%s: %s", name, rest);
    char args[2048];
    snprintf(args, sizeof args, "train --resume %s", dir);
    int rc = run(args);
    EXPECT(rc == 0, "resume after %s exited %d: %s", name, rc, out);
    char ref[512];
    snprintf(ref, sizeof ref, "%s/sig_ref", tmp);
    if (!qkt_file_exists(ref)) {
        snprintf(args, sizeof args, "train " TINY " --steps %s --eval-every 25 --ckpt-every 40 --out %s", steps, ref);
        rc = run(args);
        EXPECT(rc == 0, "reference run exited %d: %s", rc, out);
    }
    expect_same_run(ref, dir, 151, __LINE__);
}

static void test_nonfinite(void) {
    /* lr 1e6 with weight decay: p *= 1 - lr wd each step, so |p| grows 1e5x per step */
    char args[2048], path[1024];
    const char *blow = "--lr 1e6 --weight-decay 0.1 --warmup-steps 0 --schedule constant --steps 50 --ckpt-every 2 --eval-every 0";
    snprintf(args, sizeof args, "train " TINY " %s --out %s/nan", blow, tmp);
    int rc = run(args);
    const char *msg = strstr(out, "qkt train: non-finite");
    EXPECT(rc == 1 && msg && qkt_test_one_line(msg) && strstr(msg, "at step") && strstr(msg, "Last good checkpoint") &&
               strstr(msg, "/nan/ckpt.safetensors"),
           "(%d) %s", rc, out);
    long long bad = msg ? atoll(strstr(msg, "at step") + 8) : -1;
    snprintf(path, sizeof path, "%s/nan/ckpt.safetensors", tmp);
    qkt_safetensors st;
    qkt_err err;
    EXPECT(qkt_safetensors_read(path, &st, &err) == 0, "%s", err.msg);
    const char *step = qkt_safetensors_meta(&st, "step");
    EXPECT(step && atoll(step) < bad && atoll(step) % 2 == 0, "checkpoint step %s, failure at %lld", step ? step : "?", bad);
    int nonfinite = 0;
    for (int i = 0; i < st.n; i++) {
        const qkt_st_tensor *t = &st.t[i];
        if (t->dtype != QKT_ST_F32 && t->dtype != QKT_ST_F64) continue;
        qkt_real *v = malloc((size_t)t->numel * sizeof *v);
        qkt_st_tensor_to_real(t, v, t->numel, path, NULL);
        for (int64_t k = 0; k < t->numel; k++) nonfinite += !isfinite(v[k]);
        free(v);
    }
    EXPECT(nonfinite == 0, "the kept checkpoint has %d non-finite values", nonfinite);
    qkt_safetensors_free(&st);

    /* --detect-anomaly names the op, its layer, and the step */
    snprintf(args, sizeof args, "train " TINY " %s --out %s/anomaly --detect-anomaly", blow, tmp);
    rc = run(args);
#ifndef QKT_DOUBLE
    EXPECT(rc == 3 && strstr(out, "anomaly: op ") && strstr(out, " in h.0") && strstr(out, "--detect-anomaly in step") &&
               strstr(out, "last good checkpoint"),
           "(%d) %s", rc, out);
#else
    /* float64 values stay finite up to 1e308, so this run explodes for ~20-30 steps, and
     * which non-finite value comes first depends on the kernels' rounding: the gradient
     * norm (the ordinary non-finite check) or an overflowing attention logit (inf - inf,
     * named by the anomaly check). Either way the run must stop with its cause named. */
    bool by_norm = rc == 1 && strstr(out, "non-finite gradient norm");
    bool by_anomaly = rc == 3 && strstr(out, "anomaly: op ") && strstr(out, " in h.0") && strstr(out, "--detect-anomaly in step");
    EXPECT(by_norm || by_anomaly, "(%d) %s", rc, out);
#endif
    /* an infinite init (1e300 x the W_q, W_k std) trips it in the first op of validation */
    snprintf(args, sizeof args, "train " TINY " --steps 5 --qk-init-mult 1e300 --out %s/anomaly0 --detect-anomaly", tmp);
    rc = run(args);
    EXPECT(rc == 3 && strstr(out, "anomaly: op ") && strstr(out, " in h.0") &&
               strstr(out, "in step 0 (the validation before training); no checkpoint was saved before it"),
           "(%d) %s", rc, out);
}

static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_outputs(void) {
    char args[2048], dir[512];
    snprintf(args, sizeof args, "train " TINY " --steps 3 --out /proc/qkt");
    int rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--out /proc/qkt"), "(%d) %s", rc, out);
    /* the checkpoint path is a directory: refused before any training, nothing written */
    snprintf(dir, sizeof dir, "%s/ckdir", tmp);
    snprintf(args, sizeof args, "%s/ckpt.safetensors", dir);
    qkt_err err;
    EXPECT(qkt_mkdirs(args, &err) == 0, "%s", err.msg);
    snprintf(args, sizeof args, "train " TINY " --steps 3 --out %s", dir);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "not a regular file"), "(%d) %s", rc, out);
    EXPECT(dir_entries(dir) == 1, "%s holds %d entries after the failure (expected only the directory)", dir, dir_entries(dir));
}

static void test_bad_flags(void) {
    const struct {
        const char *args, *flag;
    } bad[] = {
        {"train --data mqar --n-embd 50 --n-head 3", "--n-embd"},
        {"train --data mqar --n-layer 0", "--n-layer"},
        {"train --data mqar --n-head -2", "--n-head"},
        {"train --data mqar --block-size x", "--block-size"},
        {"train --data mqar --batch-size", "--batch-size"},
        {"train --data mqar --lr 0", "--lr"},
        {"train --data mqar --lr -1e-3", "--lr"},
        {"train --data mqar --lr nan", "--lr"},
        {"train --data mqar --min-lr 1 --lr 0.1", "--min-lr"},
        {"train --data mqar --weight-decay -1", "--weight-decay"},
        {"train --data mqar --steps 0", "--steps"},
        {"train --data mqar --steps 10 --warmup-steps 11", "--warmup-steps"},
        {"train --data mqar --attn-scale cube", "--attn-scale"},
        {"train --data mqar --attn-temp 0", "--attn-temp"},
        {"train --data mqar --dropout 1", "--dropout"},
        {"train --data mqar --grad-clip -1", "--grad-clip"},
        {"train --data mqar --schedule linear", "--schedule"},
        {"train --data nosuchtask", "--data"},
        {"train --data text:/nonexistent/file.txt", "--data"},
        {"train --data sort:len=40 --block-size 16", "--data"},
        {"train --data mqar --threads -1", "--threads"},
        {"train --data mqar --replicas 0", "--replicas"},
        {"train --data mqar --replicas 65", "--replicas"},
        {"train --data mqar --batch-size 4 --replicas 5", "--replicas"},
        {"train --data mqar --eval-batches 0", "--eval-batches"},
        {"train --data mqar --seed -5", "--seed"},
        {"train --data mqar --frobnicate 1", "--frobnicate"},
        {"train --n-layer 2", "--data"},
        {"train --resume /nonexistent/run", "--resume"},
        {"sample", "--ckpt"},
        {"sample --ckpt x --tokens 0", "--tokens"},
        {"sample --ckpt x --temperature -1", "--temperature"},
        {"sample --ckpt x --top-k -3", "--top-k"},
    };
    int n = (int)(sizeof bad / sizeof *bad);
    for (int i = 0; i < n; i++) {
        int rc = run(bad[i].args);
        EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, bad[i].flag), "'qkt %s': exit %d, output:\n%s", bad[i].args, rc, out);
    }
    /* the library's check, in the flags' spelling and without the call's name (qkt_set_names) */
    int rc = run("train --data mqar --n-embd 15 --n-head 5 --pos rope");
    EXPECT(rc == 2 && strstr(out, "--pos rope needs an even d_k = --n-embd / --n-head, got 15 / 5 = 3") && !strstr(out, "n_embd") &&
               !strstr(out, "qkt_"), "exit %d: %s", rc, out);
}

static void test_sample(void) {
    /* a text whose vocabulary is small and known */
    char text[1024], args[2048], path[600];
    snprintf(text, sizeof text, "%s/abc.txt", tmp);
    qkt_buf b = {0};
    for (int i = 0; i < 400; i++) qkt_buf_printf(&b, "abc cab bca %s", i % 5 == 4 ? "\n" : "");
    qkt_err err;
    EXPECT(qkt_write_atomic(text, b.s, b.n, &err) == 0, "%s", err.msg);
    qkt_buf_free(&b);
    snprintf(args, sizeof args,
             "train --data text:%s --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --steps 30 --threads 1 "
             "--eval-batches 2 --out %s/text",
             text, tmp);
    int rc = run(args);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    snprintf(path, sizeof path, "%s/text/ckpt.safetensors", tmp);
    snprintf(args, sizeof args, "sample --ckpt %s --prompt 'cab ' --tokens 60 --seed 3 --threads 1", path);
    rc = run(args);
    EXPECT(rc == 0 && !strncmp(out, "cab ", 4), "(%d) %s", rc, out);
    size_t len = strlen(out);
    EXPECT(len == 4 + 60 + 1 || (len == 4 + 60 && out[len - 1] == '\n'), "sample printed %zu bytes: '%s'", len, out);
    bool in_vocab = true;
    for (size_t i = 0; i < len; i++) in_vocab &= strchr("abc \n", out[i]) != NULL;
    EXPECT(in_vocab, "sample has characters outside the vocabulary: '%s'", out);
    snprintf(args, sizeof args, "sample --ckpt %s --prompt 'abz'", path);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--prompt") && strstr(out, "'z'"), "(%d) %s", rc, out);
    /* a run whose text file changed since its checkpoint is not resumed silently */
    snprintf(args, sizeof args,
             "train --data text:%s --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --steps 6 --threads 1 "
             "--eval-batches 2 --out %s/text2 --pause-at 3",
             text, tmp);
    rc = run(args);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    FILE *f = fopen(text, "a");
    if (f) fputs("xyz\n", f), fclose(f);
    snprintf(args, sizeof args, "train --resume %s/text2", tmp);
    rc = run(args);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "vocabulary differs"), "(%d) %s", rc, out);
}

int main(void) {
    tmp = qkt_test_tmpdir("train");
    test_bad_flags();
    test_resume();
    test_resume_variants();
    test_resume_longer();
    test_signal(SIGINT, "int");
    test_signal(SIGTERM, "term");
    test_nonfinite();
    test_outputs();
    test_sample();
    return qkt_test_finish();
}
