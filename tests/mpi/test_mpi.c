/* qkt under mpirun (docs/distributed.md), end to end on tiny models:
 *   - `mpirun -np 2` and `-np 3` of qkt train: every checkpoint tensor (parameters,
 *     AdamW moments, RNG states) and the log rows bit-identical to `--replicas 2` / `3`
 *     in one process (uneven shards, dropout on, several threads per rank);
 *   - --resume across MPI and --replicas with the same N: -np 3 paused, resumed in one
 *     process, resumed again under -np 3, ends on the straight --replicas 3 run's bits;
 *     resumed with another N it is refused naming both;
 *   - `mpirun -np 2 qkt ablate` on a small study: every cell file, metrics.csv and
 *     summary.csv byte-identical to a single-process run;
 *   - SIGTERM to one rank of qkt train: the whole job checkpoints and stops;
 *   - a rank killed (SIGKILL) while it runs a cell: the job fails, naming that cell; the
 *     rerun (-np 3) keeps the finished cells and completes the study, again identical.
 * Needs QKT_MPIEXEC (the launcher; tests/mpi.cmake passes it). Runs as root too. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

static char out[1 << 17];
static const char *tmp, *mpiexec;

#define TINY QKT_TEST_TINY_DATA " " QKT_TEST_TINY_MODEL " --batch-size 7 --dropout 0.1 --eval-batches 2 --eval-every 4"
#define MPIRUN_FLAGS "--allow-run-as-root --oversubscribe"

static int run(const char *args) { return qkt_test_qkt(tmp, NULL, out, sizeof out, "%s", args); }

static int mpirun(int np, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s " MPIRUN_FLAGS " -np %d %s %s", tmp, mpiexec, np, qkt_test_bin(), args);
    return qkt_test_run(cmd, out, sizeof out);
}

/* Every tensor byte-identical, the same metadata but the wall time. */
static void expect_same_ckpt(const char *a, const char *b, int line) {
    qkt_safetensors x, y;
    qkt_err err;
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s/ckpt.safetensors", tmp, a);
    snprintf(pb, sizeof pb, "%s/%s/ckpt.safetensors", tmp, b);
    if (qkt_safetensors_read(pa, &x, &err)) {
        EXPECT(0, "line %d: %s", line, err.msg);
        return;
    }
    if (qkt_safetensors_read(pb, &y, &err)) {
        EXPECT(0, "line %d: %s", line, err.msg);
        qkt_safetensors_free(&x);
        return;
    }
    EXPECT(x.n == y.n && x.n > 10, "line %d: %d vs %d tensors", line, x.n, y.n);
    int diff = 0;
    for (int i = 0; i < x.n; i++) {
        const qkt_st_tensor *u = &x.t[i], *v = qkt_safetensors_find(&y, u->name);
        if (!v || v->dtype != u->dtype || v->numel != u->numel || memcmp(u->data, v->data, u->end - u->begin))
            if (diff++ < 3) fprintf(stderr, "line %d: tensor %s differs between %s and %s\n", line, u->name, a, b);
    }
    EXPECT(diff == 0, "line %d: %d tensors differ (%s vs %s)", line, diff, a, b);
    EXPECT(qkt_safetensors_find(&x, "optim.m") && qkt_safetensors_find(&x, "rng.dropout"), "line %d: state missing", line);
    for (int i = 0; i < x.n_meta; i++) {
        if (!strcmp(x.meta[i].key, "elapsed_s") || !strcmp(x.meta[i].key, "crc32c_header")) continue;
        const char *w = qkt_safetensors_meta(&y, x.meta[i].key);
        EXPECT(w && !strcmp(w, x.meta[i].value), "line %d: metadata %s: %s vs %s", line, x.meta[i].key, x.meta[i].value,
               w ? w : "(absent)");
    }
    qkt_safetensors_free(&x);
    qkt_safetensors_free(&y);
}

static char *slurp(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/%s", tmp, dir, name);
    char *s = qkt_test_read_file(p, NULL);
    return s ? s : strdup("(missing)");
}

/* log.csv without its timing columns (tokens_per_s, elapsed_s). */
static char *log_core(const char *dir) {
    char *s = slurp(dir, "log.csv"), *o = malloc(strlen(s) + 1), *w = o;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        int commas = 0;
        for (size_t i = 0; i < n && commas < 6; i++)
            if ((commas += line[i] == ',') < 6) *w++ = line[i];
        *w++ = '\n';
        line += n + (nl ? 1 : 0);
    }
    *w = 0;
    free(s);
    return o;
}

static void expect_same_run(const char *a, const char *b, int line) {
    expect_same_ckpt(a, b, line);
    char *la = log_core(a), *lb = log_core(b);
    EXPECT(!strcmp(la, lb) && strlen(la) > 100, "line %d: log rows of %s and %s differ:\n%s\nvs\n%s", line, a, b, la, lb);
    free(la), free(lb);
}

static void test_train(void) {
    int rc = run("train " TINY " --steps 9 --replicas 2 --threads 1 --out rep2");
    EXPECT(rc == 0, "--replicas 2 exited %d: %s", rc, out);
    rc = mpirun(2, "train " TINY " --steps 9 --threads 2 --out mpi2");
    EXPECT(rc == 0 && strstr(out, "MPI 2 ranks") && strstr(out, "gradient sum"), "-np 2 exited %d: %s", rc, out);
    expect_same_run("rep2", "mpi2", __LINE__);
    char *js = slurp("mpi2", "train.json");
    EXPECT(strstr(js, "\"replicas\":\t2") != NULL, "-np 2's train.json lacks replicas 2: %s", js);
    free(js);

    rc = run("train " TINY " --steps 9 --replicas 3 --threads 2 --out rep3");
    EXPECT(rc == 0, "--replicas 3 exited %d: %s", rc, out);
    rc = mpirun(3, "train " TINY " --steps 9 --threads 1 --out mpi3");
    EXPECT(rc == 0, "-np 3 exited %d: %s", rc, out);
    expect_same_run("rep3", "mpi3", __LINE__);
    /* a variant with persistent state (sigma_reparam's u advances once per step, before
     * the shards) and the newer model options: -np 2 is --replicas 2 here too */
    rc = run("train " TINY " --attn-scale sigma_reparam --norm rmsnorm --mlp swiglu --pos rope --steps 6 --replicas 2 "
             "--threads 1 --out rep2s");
    EXPECT(rc == 0, "--replicas 2 sigma_reparam exited %d: %s", rc, out);
    rc = mpirun(2, "train " TINY " --attn-scale sigma_reparam --norm rmsnorm --mlp swiglu --pos rope --steps 6 --threads 1 "
               "--out mpi2s");
    EXPECT(rc == 0, "-np 2 sigma_reparam exited %d: %s", rc, out);
    expect_same_run("rep2s", "mpi2s", __LINE__);
    /* the other N gives other bits: the comparison above can tell */
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/rep2/ckpt.safetensors", tmp);
    snprintf(pb, sizeof pb, "%s/rep3/ckpt.safetensors", tmp);
    qkt_safetensors x, y;
    qkt_err err;
    if (!qkt_safetensors_read(pa, &x, &err) && !qkt_safetensors_read(pb, &y, &err)) {
        const qkt_st_tensor *u = qkt_safetensors_find(&x, "optim.m"), *v = qkt_safetensors_find(&y, "optim.m");
        EXPECT(u && v && memcmp(u->data, v->data, u->end - u->begin) != 0, "--replicas 2 and 3 gave the same moments");
        qkt_safetensors_free(&x), qkt_safetensors_free(&y);
    }

    /* resume across MPI and --replicas (N = 3): MPI, one process, MPI again */
    rc = mpirun(3, "train " TINY " --steps 9 --out mix --pause-at 3");
    EXPECT(rc == 0 && strstr(out, "paused after step 3"), "-np 3 --pause-at exited %d: %s", rc, out);
    rc = run("train --resume mix --pause-at 6 --threads 2");
    EXPECT(rc == 0 && strstr(out, "resuming mix at step 3") && strstr(out, "paused after step 6"), "one process exited %d: %s", rc, out);
    rc = mpirun(3, "train --resume mix");
    EXPECT(rc == 0 && strstr(out, "resuming mix at step 6") && strstr(out, "done"), "-np 3 --resume exited %d: %s", rc, out);
    expect_same_run("rep3", "mix", __LINE__);
    /* another N is refused, naming both */
    rc = run("train " TINY " --steps 9 --out other --pause-at 2 --replicas 3");
    rc = mpirun(2, "train --resume other");
    EXPECT(rc != 0 && strstr(out, "--replicas 3") && strstr(out, "2 ranks"), "-np 2 resuming a 3-replica run: (%d) %s", rc, out);
    rc = mpirun(2, "train " TINY " --steps 9 --replicas 3 --out other2");
    EXPECT(rc != 0 && strstr(out, "--replicas 3") && strstr(out, "2 ranks"), "-np 2 --replicas 3: (%d) %s", rc, out);
}

/* A small study: 20 cells (4 of them on the second task) of a few hundred steps on a 1-layer model. */
#define STUDY "ablate --preset quick --d-k 8 --seeds 2 --steps 400 --lr-steps 20 --lr-grid 3e-3,3e-2 --variants sqrt_dk,none " \
              "--task2-d-k 8 --lr-variants sqrt_dk --init-d-k 4,8 --growth-d-k 8 --n-layer 1 --seq-len 16 --batch-size 4 --eval-every 50 " \
              "--workers 1 --out runs"

/* Cell files, metrics.csv and summary.csv of two runs byte for byte. */
static void expect_same_study(const char *a, const char *b, int line) {
    char da[1024], db[1024];
    snprintf(da, sizeof da, "%s/runs/%s/cells", tmp, a);
    snprintf(db, sizeof db, "runs/%s/cells", b);
    DIR *d = opendir(da);
    int csv = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".csv")) continue;
        char pa[1200], pb[1200];
        snprintf(pa, sizeof pa, "runs/%s/cells/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", db, e->d_name);
        char *x = slurp(".", pa), *y = slurp(".", pb);
        EXPECT(!strcmp(x, y), "line %d: cell file %s differs between %s and %s", line, e->d_name, a, b);
        free(x), free(y);
        csv++;
    }
    if (d) closedir(d);
    EXPECT(csv == 21, "line %d: %d cell files in %s (20 cells and init_iid expected)", line, csv, da);
    const char *files[] = {"metrics.csv", "summary.csv"};
    for (int i = 0; i < 2; i++) {
        char pa[1200], pb[1200];
        snprintf(pa, sizeof pa, "runs/%s/%s", a, files[i]);
        snprintf(pb, sizeof pb, "runs/%s/%s", b, files[i]);
        char *x = slurp(".", pa), *y = slurp(".", pb);
        EXPECT(!strcmp(x, y) && strlen(x) > 1000, "line %d: %s differs between %s and %s", line, files[i], a, b);
        free(x), free(y);
    }
}

/* The pid of rank `rank`'s qkt `command` (" ablate ", " train ") with `tag` ("--name N",
 * "--out D") on its command line (its environment names the rank), started in this test's
 * directory (another copy of this test may run the same command elsewhere), or 0. */
static pid_t find_rank(int rank, const char *command, const char *tag) {
    char want[64], path[300], here[PATH_MAX], cwd[PATH_MAX];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    if (!realpath(tmp, here)) return 0;
    DIR *d = opendir("/proc");
    pid_t found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0) continue;
        size_t n;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        char *cmd = qkt_test_read_file(path, &n);
        bool ours = false;
        if (cmd) {
            for (size_t i = 0; i + 1 < n; i++)
                if (!cmd[i]) cmd[i] = ' ';
            ours = strstr(cmd, command) && strstr(cmd, tag) && !strstr(cmd, "mpirun") && !strstr(cmd, "_cell");
        }
        free(cmd);
        if (!ours) continue;
        snprintf(path, sizeof path, "/proc/%d/cwd", (int)pid);
        ssize_t k = readlink(path, cwd, sizeof cwd - 1);
        if (k <= 0 || (cwd[k] = 0, strcmp(cwd, here))) continue;
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        char *env = qkt_test_read_file(path, &n);
        for (size_t i = 0; env && i < n; i += strlen(env + i) + 1)
            if (!strcmp(env + i, want)) found = pid;
        free(env);
    }
    if (d) closedir(d);
    return found;
}

/* A `qkt _cell` child of pid: its cell id into id, or false. */
static bool running_cell(pid_t parent, char *id, size_t n) {
    DIR *d = opendir("/proc");
    bool found = false;
    char path[300];
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        int pid = atoi(e->d_name);
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        char *st = qkt_test_read_file(path, NULL);
        char *rp = st ? strrchr(st, ')') : NULL;
        int ppid = 0;
        if (rp) sscanf(rp + 2, "%*c %d", &ppid);
        free(st);
        if (ppid != parent) continue;
        size_t len;
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        char *cmd = qkt_test_read_file(path, &len);
        for (size_t i = 0; cmd && i < len; i += strlen(cmd + i) + 1)
            if (!strcmp(cmd + i, "--cell") && i + 6 < len) snprintf(id, n, "%s", cmd + i + 7), found = true;
        free(cmd);
    }
    if (d) closedir(d);
    return found;
}

static void test_ablate(void) {
    int rc = run(STUDY " --name single");
    EXPECT(rc == 0, "single-process study exited %d: %s", rc, out);
    rc = mpirun(2, STUDY " --name mpi");
    EXPECT(rc == 0 && strstr(out, "over 2 MPI ranks") && strstr(out, "on rank 1"), "-np 2 study exited %d: %s", rc, out);
    expect_same_study("single", "mpi", __LINE__);

    /* rank 1 killed while it runs a cell */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && exec %s " MPIRUN_FLAGS " -np 2 %s " STUDY " --name killed >killed.log 2>&1", tmp, mpiexec,
             qkt_test_bin());
    pid_t job = fork();
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    char cell[256] = "";
    pid_t r1 = 0;
    for (int i = 0; i < 1200 && !cell[0]; i++) { /* up to a minute on a loaded machine */
        usleep(50000);
        if (!r1) r1 = find_rank(1, " ablate ", "--name killed");
        if (r1 && running_cell(r1, cell, sizeof cell) && strncmp(cell, "train_", 6)) cell[0] = 0; /* a long one */
    }
    EXPECT(cell[0] != 0, "never saw rank 1 (pid %d) run a training cell", (int)r1);
    if (cell[0]) kill(r1, SIGKILL);
    int ws;
    waitpid(job, &ws, 0);
    char *log = slurp(".", "killed.log");
    EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) != 0, "the job with a killed rank ended with status %d", ws);
    char named[300];
    snprintf(named, sizeof named, "%s (rank 1", cell);
    EXPECT(cell[0] && strstr(log, named), "the lost cell %s is not named:\n%s", cell, log);
    free(log);
    rc = mpirun(3, STUDY " --name killed");
    EXPECT(rc == 0 && strstr(out, "already done, kept") && !strstr(out, "(0 already done"), "the rerun exited %d: %s", rc, out);
    expect_same_study("single", "killed", __LINE__);
}

/* SIGTERM to rank 1 alone of `mpirun -np 2 qkt train`: the whole job saves a checkpoint
 * and stops (non-zero exit, "checkpoint saved") within a step or so, rather than run on
 * to the end. */
static void test_train_signal(void) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && exec %s " MPIRUN_FLAGS " -np 2 %s train " TINY " --steps 100000 --threads 1 --out sig "
             ">sig.log 2>&1", tmp, mpiexec, qkt_test_bin());
    pid_t job = fork();
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    pid_t r1 = 0;
    char logp[1100];
    snprintf(logp, sizeof logp, "%s/sig/log.csv", tmp);
    for (int i = 0; i < 1200 && !(r1 && qkt_file_exists(logp)); i++) { /* up to a minute on a loaded machine */
        usleep(50000);
        if (!r1) r1 = find_rank(1, " train ", "--out sig");
    }
    usleep(300000); /* into the steps */
    EXPECT(r1 > 0, "never saw rank 1 of the train job");
    if (r1 > 0) kill(r1, SIGTERM);
    int ws = 0;
    pid_t done = 0;
    for (int i = 0; i < 600 && done == 0; i++) { /* 30 s: the 100000 steps take minutes */
        done = waitpid(job, &ws, WNOHANG);
        if (!done) usleep(50000);
    }
    if (!done) {
        EXPECT(0, "SIGTERM to rank 1: the job went on (killed after 30 s)");
        kill(job, SIGKILL);
        waitpid(job, &ws, 0);
    }
    char *log = slurp(".", "sig.log");
    EXPECT(done && WIFEXITED(ws) && WEXITSTATUS(ws) != 0 && strstr(log, "checkpoint saved"),
           "SIGTERM to rank 1: status %d:\n%s", ws, log);
    free(log);
}

int main(void) {
    mpiexec = getenv("QKT_MPIEXEC");
    if (!mpiexec || !*mpiexec) {
        printf("SKIP: QKT_MPIEXEC is not set (qkt built without MPI, or no mpirun found)\n");
        return 77;
    }
    tmp = qkt_test_tmpdir("mpi");
    test_train();
    test_train_signal();
    test_ablate();
    return qkt_test_finish();
}
