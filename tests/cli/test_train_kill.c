/* The kill loop: `qkt train` is started, then hit after a random delay by SIGINT,
 * SIGTERM, SIGHUP, SIGKILL or two signals in a row, again and again, each time resumed
 * (a checkpoint every step, so many signals land inside a checkpoint write; SIGKILL
 * leaves temp files and torn log rows behind). The run that finally completes must
 * equal an uninterrupted one bit for bit: every checkpoint tensor and every log row
 * apart from the timing columns. After some kills one byte of a log.csv row before the
 * checkpoint's step is damaged (a NUL, 0xff, '\r', a space or a letter): the resume
 * must refuse (exit 2) and leave the file unchanged; the byte is then restored (a row
 * kept damaged, or rows dropped, would also show in the final comparison). The seed of
 * the schedule is printed; QKT_KILL_SEED
 * replays one, QKT_KILL_ROUNDS sets the number of rounds (default 2 of 12 signals each;
 * .ci/run runs more). */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

#define ARGS "--data", "mqar:n_pairs=4,n_queries=4", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "32", \
             "--batch-size", "4", "--dropout", "0.1", "--eval-batches", "2", "--eval-every", "7", "--ckpt-every", "1",        \
             "--steps", "400", "--threads", "1"

/* Starts qkt (stdout and stderr to /dev/null); returns the pid. */
static pid_t start(const char *const *argv) {
    pid_t pid = fork();
    if (pid == 0) {
        FILE *n = freopen("/dev/null", "w", stdout);
        n = n ? freopen("/dev/null", "w", stderr) : NULL;
        (void)n;
        execv(qkt_test_bin(), (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid) {
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The log rows without the timing columns. */
static char *log_core(const char *dir) {
    qkt_err err;
    char *p = qkt_path_join(dir, "log.csv");
    char *s = qkt_read_file(p, NULL, &err), *w = s;
    free(p);
    for (char *q = s; q && *q;) {
        int commas = 0;
        for (; *q && *q != '\n'; q++) {
            commas += *q == ',';
            if (commas < 6) *w++ = *q;
        }
        if (*q) *w++ = *q++;
    }
    if (w) *w = 0;
    return s ? s : strdup("");
}

static int same_run(const char *a, const char *b) {
    char *pa = qkt_path_join(a, "ckpt.safetensors"), *pb = qkt_path_join(b, "ckpt.safetensors");
    qkt_safetensors x, y;
    qkt_err err;
    int ok = 0;
    if (qkt_safetensors_read(pa, &x, &err) == 0) {
        if (qkt_safetensors_read(pb, &y, &err) == 0) {
            ok = x.n == y.n && x.n > 10 && x.checksummed && y.checksummed;
            for (int i = 0; i < x.n && ok; i++) {
                const qkt_st_tensor *u = &x.t[i], *v = qkt_safetensors_find(&y, u->name);
                ok = v && v->end - v->begin == u->end - u->begin && !memcmp(u->data, v->data, u->end - u->begin);
                if (!ok) fprintf(stderr, "tensor %s differs\n", u->name);
            }
            qkt_safetensors_free(&y);
        } else {
            fprintf(stderr, "%s\n", err.msg);
        }
        qkt_safetensors_free(&x);
    } else {
        fprintf(stderr, "%s\n", err.msg);
    }
    char *la = log_core(a), *lb = log_core(b);
    if (strcmp(la, lb)) fprintf(stderr, "log rows differ:\n%s\nvs\n%s\n", la, lb), ok = 0;
    free(la), free(lb), free(pa), free(pb);
    return ok;
}

/* The step of dir's checkpoint, or -1. */
static long long ckpt_step(const char *dir) {
    char *p = qkt_path_join(dir, "ckpt.safetensors");
    qkt_safetensors st;
    qkt_err err;
    long long step = -1;
    if (qkt_file_exists(p) && qkt_safetensors_read(p, &st, &err) == 0) {
        const char *v = qkt_safetensors_meta(&st, "step");
        step = v ? atoll(v) : -1;
        qkt_safetensors_free(&st);
    }
    free(p);
    return step;
}

/* One byte of a row of dir/log.csv with a step below `below` set to a damaging value:
 * the resume must refuse. Its offset (the original byte in *orig), or -1. */
static long damage_log(const char *dir, long long below, qkt_rng *r, char *orig) {
    static const char bad[] = {0, (char)0xff, '\r', ' ', 'x'};
    char *p = qkt_path_join(dir, "log.csv");
    size_t n = 0;
    char *s = qkt_test_read_file(p, &n);
    long at = -1;
    size_t row_end = 0; /* the end of the last row with a step below `below` */
    for (char *q = s ? strchr(s, '\n') : NULL; q && q + 1 < s + n; q = strchr(q + 1, '\n')) {
        char *nl = strchr(q + 1, '\n');
        if (!nl || atoll(q + 1) >= below) break;
        row_end = (size_t)(nl + 1 - s);
    }
    char *first = s ? strchr(s, '\n') : NULL;
    if (first && row_end > (size_t)(first + 1 - s)) {
        size_t from = (size_t)(first + 1 - s);
        at = (long)(from + qkt_rng_u64(r) % (row_end - from));
        *orig = s[at];
        char b = bad[qkt_rng_u64(r) % sizeof bad];
        if (b == *orig) b = 'x';
        FILE *f = fopen(p, "r+b");
        if (f) fseek(f, at, SEEK_SET), fputc((unsigned char)b, f), fclose(f);
    }
    free(s), free(p);
    return at;
}

/* A resume of dir with one damaged byte in log.csv: refused (exit 2), the file unchanged;
 * the byte restored after. Returns 1 when a damage was tried. */
static int damaged_resume(const char *dir, qkt_rng *r, int round) {
    long long step = ckpt_step(dir);
    if (step < 2) return 0;
    char orig = 0;
    long at = damage_log(dir, step, r, &orig);
    if (at < 0) return 0;
    char *lp = qkt_path_join(dir, "log.csv"), pause[32];
    size_t n0 = 0, n1 = 0;
    char *before = qkt_test_read_file(lp, &n0);
    snprintf(pause, sizeof pause, "%lld", step + 1);
    const char *a[] = {"qkt", "train", "--resume", dir, "--pause-at", pause, NULL};
    int rc = wait_status(start(a));
    char *after = qkt_test_read_file(lp, &n1);
    EXPECT(rc == 2 && before && after && n0 == n1 && !memcmp(before, after, n0),
           "round %d: log.csv with byte %ld damaged (step %lld checkpointed): exit %d, file %s", round, at, step, rc,
           before && after && n0 == n1 && !memcmp(before, after, n0) ? "unchanged" : "changed");
    FILE *f = fopen(lp, "r+b");
    if (f) fseek(f, at, SEEK_SET), fputc((unsigned char)orig, f), fclose(f);
    free(before), free(after), free(lp);
    return 1;
}

/* No temp file of ours left in dir. */
static int temp_files(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("kill");
    const char *env = getenv("QKT_KILL_SEED"), *rounds_env = getenv("QKT_KILL_ROUNDS");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16;
    int rounds = rounds_env ? atoi(rounds_env) : 2;
    printf("kill loop: seed %llu (QKT_KILL_SEED replays it), %d rounds\n", (unsigned long long)seed, rounds);
    fflush(stdout); /* before any fork */
    qkt_rng r;
    qkt_rng_seed(&r, seed);

    char *ref = qkt_path_join(tmp, "ref");
    const char *a_ref[] = {"qkt", "train", ARGS, "--out", ref, NULL};
    int rc = wait_status(start(a_ref));
    EXPECT(rc == 0, "reference run: exit %d", rc);

    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGKILL, 0 /* two in a row */};
    for (int round = 0; round < rounds; round++) {
        char name[32];
        snprintf(name, sizeof name, "run%d", round);
        char *dir = qkt_path_join(tmp, name), *json = qkt_path_join(dir, "train.json");
        const char *a_new[] = {"qkt", "train", ARGS, "--out", dir, NULL};
        const char *a_res[] = {"qkt", "train", "--resume", dir, NULL};
        int kills = 0, done = 0, bad = 0, stopped = 0, killed = 0, damaged = 0;
        for (int k = 0; k < 12 && !done; k++) {
            pid_t pid = start(qkt_file_exists(json) ? a_res : a_new);
            struct timespec ts = {0, (long)(1000000 * (2 + qkt_rng_u64(&r) % 300))}; /* 2-300 ms of a ~1 s run */
            nanosleep(&ts, NULL);
            int sig = sigs[qkt_rng_u64(&r) % 5];
            if (sig) kill(pid, sig);
            else kill(pid, SIGINT), kill(pid, SIGTERM);
            rc = wait_status(pid);
            kills++;
            /* 0: it finished first; 130: stopped (checkpoint) or a second signal; 128+n:
             * killed (SIGKILL, or a signal before the handlers were installed) */
            done = rc == 0;
            stopped += rc == 130, killed += rc > 128 && rc != 130;
            if (rc != 0 && rc != 130 && rc <= 128) bad++, fprintf(stderr, "round %d kill %d: exit %d\n", round, k, rc);
            if (!done && qkt_rng_u64(&r) % 3 == 0) damaged += damaged_resume(dir, &r, round);
        }
        printf("round %d: %d signals: %d stops with a checkpoint, %d kills, %d damaged log.csv refused%s\n", round, kills, stopped,
               killed, damaged, done ? ", then it finished first" : "");
        fflush(stdout);
        const char *const *last = qkt_file_exists(json) ? a_res : a_new;
        rc = wait_status(start(last)); /* to the end, undisturbed (or "finished already") */
        EXPECT(rc == 0 && bad == 0, "round %d: final exit %d, %d unexpected exits", round, rc, bad);
        EXPECT(same_run(ref, dir), "round %d (%d signals): the run differs from the uninterrupted one (seed %llu)", round, kills,
               (unsigned long long)seed);
        EXPECT(temp_files(dir) == 0, "round %d: temp files left in %s", round, dir);
        free(dir), free(json);
    }

    /* started together, many times: always exactly one writer */
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "together%d", i);
        char *dir = qkt_path_join(tmp, name);
        const char *a[] = {"qkt", "train", ARGS, "--out", dir, NULL};
        pid_t p1 = start(a), p2 = start(a);
        int r1 = wait_status(p1), r2 = wait_status(p2);
        EXPECT((r1 == 0 && r2 == 2) || (r1 == 2 && r2 == 0), "together %d: exits %d and %d", i, r1, r2);
        EXPECT(same_run(ref, dir), "together %d: the run differs from the reference", i);
        free(dir);
    }
    free(ref);
    return qkt_test_finish();
}
