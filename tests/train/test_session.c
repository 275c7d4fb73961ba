/* qkt_session, the library side of `qkt train`, driven as a program would: a run
 * paused and resumed equals a straight run bit for bit (checkpoint tensors, log rows
 * apart from timing), a stop request saves and reports STOPPED, each open error has its
 * status, and progress is reported once per logged step plus the step-0 validation. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_train_run.h"
#include "qkt_test.h"

static const char *tmp;

static qkt_train_run tiny_run(void) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    snprintf(r.data, sizeof r.data, "%s", "mqar:n_pairs=4,n_queries=4");
    qkt_gpt_config *m = &r.tc.model;
    m->n_layer = 1, m->n_head = 2, m->n_embd = 16, m->block_size = 32, m->dropout = 0.1;
    r.tc.batch_size = 4, r.tc.steps = 12;
    r.eval_every = 4, r.eval_batches = 2, r.ckpt_every = 5;
    return r;
}

typedef struct {
    int calls, evals;
    int64_t last_step;
} counter;

static void count(const qkt_session *s, const qkt_session_progress *p, void *user) {
    counter *c = user;
    (void)s;
    c->calls++, c->evals += p->ev != NULL, c->last_step = p->step;
}

/* Opens dir (new or resumed), begins, runs with opts; returns the end status. */
static qkt_session_end run_in(const char *dir, bool resume, const qkt_session_opts *o, qkt_session *s) {
    qkt_train_run r = tiny_run();
    qkt_err err = {{0}};
    qkt_session_status st = qkt_session_open(s, &r, dir, resume, &err);
    EXPECT(st == QKT_SESSION_OK, "open %s: %d %s", dir, (int)st, err.msg);
    EXPECT(qkt_session_begin(s, &err) == 0, "begin %s: %s", dir, err.msg);
    return qkt_session_run(s, o, &err);
}

/* Tensor bytes and metadata other than elapsed_s equal. */
static bool same_ckpt(const char *a, const char *b) {
    qkt_safetensors x, y;
    qkt_err err;
    if (qkt_safetensors_read(a, &x, &err)) return false;
    if (qkt_safetensors_read(b, &y, &err)) return qkt_safetensors_free(&x), false;
    bool same = x.n == y.n && x.n_meta == y.n_meta;
    for (int i = 0; same && i < x.n; i++) {
        const qkt_st_tensor *u = &x.t[i], *v = qkt_safetensors_find(&y, u->name);
        same = v && v->numel == u->numel && !memcmp(u->data, v->data, u->end - u->begin);
    }
    for (int i = 0; same && i < x.n_meta; i++) {
        const char *w = qkt_safetensors_meta(&y, x.meta[i].key);
        same = w && (!strcmp(x.meta[i].key, "elapsed_s") || !strcmp(w, x.meta[i].value));
    }
    qkt_safetensors_free(&x), qkt_safetensors_free(&y);
    return same;
}

/* log.csv without the two timing columns */
static char *log_sans_timing(const char *dir) {
    char *s = qkt_test_read_file(qkt_test_path(dir, "log.csv"), NULL);
    if (!s) return NULL;
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        int commas = 0;
        for (size_t i = 0; i < n; i++) {
            if (line[i] == ',' && ++commas == 6) break;
            *w++ = line[i];
        }
        *w++ = '\n';
        line += n + (nl ? 1 : 0);
    }
    *w = 0;
    return s;
}

static void test_pause_resume(void) {
    char straight[512], paused[512];
    snprintf(straight, sizeof straight, "%s/straight", tmp);
    snprintf(paused, sizeof paused, "%s/paused", tmp);
    qkt_session s;
    counter c = {0};
    qkt_session_opts o = {.on_progress = count, .user = &c};
    EXPECT(run_in(straight, false, &o, &s) == QKT_SESSION_DONE, "straight run");
    EXPECT(s.t.step == 12 && s.last_ckpt == 12 && s.val_loss == s.val_loss, "step %lld, ckpt %lld", (long long)s.t.step,
           (long long)s.last_ckpt);
    qkt_session_close(&s);
    EXPECT(c.calls == 13 && c.evals == 4 && c.last_step == 12, "progress: %d calls, %d evals, last %lld", c.calls, c.evals,
           (long long)c.last_step);

    qkt_session_opts op = {.pause_at = 7};
    EXPECT(run_in(paused, false, &op, &s) == QKT_SESSION_PAUSED, "pause");
    EXPECT(s.t.step == 7 && s.last_ckpt == 7, "paused at %lld", (long long)s.t.step);
    qkt_session_close(&s);
    EXPECT(run_in(paused, true, NULL, &s) == QKT_SESSION_DONE, "resume");
    qkt_session_close(&s);
    EXPECT(same_ckpt(qkt_test_path(straight, "ckpt.safetensors"), qkt_test_path(paused, "ckpt.safetensors")),
           "paused + resumed checkpoint differs from the straight run's");
    char *a = log_sans_timing(straight), *b = log_sans_timing(paused);
    EXPECT(a && b && !strcmp(a, b), "log.csv differs:\n%s\nvs\n%s", a ? a : "", b ? b : "");
    free(a), free(b);

    /* a finished run resumes at its last step; a second new run in the directory is refused */
    qkt_train_run r = tiny_run();
    qkt_err err = {{0}};
    EXPECT(qkt_session_open(&s, &r, straight, true, &err) == QKT_SESSION_OK && s.t.step == 12 && s.last_ckpt == 12, "%s",
           err.msg);
    qkt_session_close(&s);
    EXPECT(qkt_session_open(&s, &r, straight, false, &err) == QKT_SESSION_ERR_EXISTS && strstr(err.msg, "train.json"), "%s",
           err.msg);
    qkt_session_close(&s);
}

static void test_stop_and_errors(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/stopped", tmp);
    static volatile sig_atomic_t stop = SIGINT; /* asked before the first step */
    qkt_session s;
    qkt_session_opts o = {.stop = &stop};
    EXPECT(run_in(dir, false, &o, &s) == QKT_SESSION_STOPPED, "stop");
    EXPECT(s.t.step == 0 && s.last_ckpt == 0 && qkt_file_exists(qkt_test_path(dir, "ckpt.safetensors")), "stopped at %lld",
           (long long)s.t.step);
    qkt_session_close(&s);

    qkt_train_run r = tiny_run();
    qkt_err err = {{0}};
    snprintf(r.data, sizeof r.data, "%s", "nosuchtask");
    EXPECT(qkt_session_open(&s, &r, dir, true, &err) == QKT_SESSION_ERR_DATA, "%s", err.msg);
    qkt_session_close(&s);
    r = tiny_run();
    r.tc.model.n_embd = 15;
    EXPECT(qkt_session_open(&s, &r, dir, true, &err) == QKT_SESSION_ERR_CONFIG &&
               !strcmp(err.msg, "qkt_session_open: n_embd 15 is not divisible by n_head 2"), "%s", err.msg);
    qkt_session_close(&s);
    r = tiny_run();
    EXPECT(qkt_session_open(&s, &r, "/proc/qkt-session", false, &err) == QKT_SESSION_ERR_DIR, "%s", err.msg);
    qkt_session_close(&s);
    r = tiny_run();
    r.tc.model.n_layer = 2; /* not the checkpoint's model */
    EXPECT(qkt_session_open(&s, &r, dir, true, &err) == QKT_SESSION_ERR_CKPT && strstr(err.msg, "n_layer"), "%s", err.msg);
    qkt_session_close(&s);
}

/* The lock (one session per directory) and the run record (a setting changed on
 * resume is refused, or said for the ones that may change). (A stop inside a
 * validation: test_train_reliability.) */
static void test_lock_record(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/locked", tmp);
    qkt_session a, b;
    qkt_train_run r = tiny_run();
    qkt_err err = {{0}};
    qkt_session_opts op = {.pause_at = 4};
    EXPECT(run_in(dir, false, &op, &a) == QKT_SESSION_PAUSED, "pause");
    char want[64];
    snprintf(want, sizeof want, "pid %d", (int)getpid());
    EXPECT(qkt_session_open(&b, &r, dir, true, &err) == QKT_SESSION_ERR_LOCKED && strstr(err.msg, want), "%s", err.msg);
    qkt_session_close(&b);
    qkt_session_close(&a);
    EXPECT(!qkt_file_exists(qkt_test_path(dir, ".lock")), "the lock file stays after close");
    r.tc.lr = 2e-3;
    EXPECT(qkt_session_open(&b, &r, dir, true, &err) == QKT_SESSION_ERR_CKPT && strstr(err.msg, "'lr'"), "%s", err.msg);
    qkt_session_close(&b);
    r = tiny_run();
    r.tc.steps = 13;
    EXPECT(qkt_session_open(&b, &r, dir, true, &err) == QKT_SESSION_OK && b.notes.s && strstr(b.notes.s, "steps changed on resume"),
           "%s / %s", err.msg, b.notes.s ? b.notes.s : "(no notes)");
    qkt_session_close(&b);
}

int main(void) {
    tmp = qkt_test_tmpdir("session");
    qkt_set_threads(1);
    test_pause_resume();
    test_stop_and_errors();
    test_lock_record();
    return qkt_test_finish();
}
