/* Bad invocations of every subcommand, table-driven: each must exit with its code
 * (2: refused before any work, a bad flag or an unusable input file), print exactly
 * one line on stderr naming the flag or file, nothing on stdout, leave the working
 * directory as it was, and never crash or hang. Runs in a temp dir holding the
 * fixtures: empty, random, truncated and lying files, a directory, a FIFO, a tiny
 * trained checkpoint and copies of it whose config does not match its tensors. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"
#include "qkt_test_ckpt.h"

static char out_buf[1 << 16], err_buf[1 << 16], qkt_bin[4096];

/* Runs qkt with space-separated args (none may contain a space), cwd = the temp dir.
 * Returns the exit status, or 128 + signal (a crash, or SIGALRM for a hang). */
static int run_qkt(const char *args) {
    char buf[2048], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", args);
    argv[argc++] = qkt_bin;
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " ")) argv[argc++] = tok;
    argv[argc] = NULL;
    char fo[] = "/tmp/qkt-cli-out-XXXXXX", fe[] = "/tmp/qkt-cli-err-XXXXXX";
    int o = mkstemp(fo), e = mkstemp(fe);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(o, 1), dup2(e, 2);
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        alarm(60); /* survives exec: a hang (e.g. a FIFO opened for reading) is killed */
        setenv("QKT_THREADS", "1", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ssize_t n = pread(o, out_buf, sizeof out_buf - 1, 0);
    out_buf[n > 0 ? n : 0] = 0;
    n = pread(e, err_buf, sizeof err_buf - 1, 0);
    err_buf[n > 0 ? n : 0] = 0;
    close(o), close(e), unlink(fo), unlink(fe);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Every path under dir (recursively), sorted, one per line: the "no partial state" check. */
static void list_tree(const char *dir, qkt_buf *b) {
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", dir, name);
            struct stat sb;
            lstat(p, &sb);
            qkt_buf_printf(b, "%s %lld\n", p, S_ISREG(sb.st_mode) ? (long long)sb.st_size : -1LL);
            if (S_ISDIR(sb.st_mode)) list_tree(p, b);
        }
        free(ents[i]);
    }
    free(ents);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    EXPECT(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "cannot write fixture %s", path);
}

static void write_batch(const char *path, int B, int T, int32_t tok) {
    int32_t *x = malloc((size_t)B * T * sizeof *x);
    for (int i = 0; i < B * T; i++) x[i] = tok + i % 8;
    qkt_st_write w[] = {{"idx", QKT_ST_I32, 2, {B, T}, x}, {"targets", QKT_ST_I32, 2, {B, T}, x}};
    qkt_err err;
    EXPECT(qkt_safetensors_write(path, w, 2, NULL, 0, &err) == 0, "%s", err.msg);
    free(x);
}

static void copy_file(const char *src, const char *dst) {
    qkt_err err;
    size_t n;
    char *s = qkt_read_file(src, &n, &err);
    EXPECT(s != NULL, "%s", err.msg);
    if (s) write_bytes(dst, s, n);
    free(s);
}

/* dst = src with its first `from` replaced by `to` (a damaged copy of a valid file) */
static void copy_edited(const char *src, const char *dst, const char *from, const char *to) {
    qkt_err err;
    size_t n;
    char *s = qkt_read_file(src, &n, &err), *at = s ? strstr(s, from) : NULL;
    EXPECT(at != NULL, "%s: '%s' not found", src, from);
    if (!at) {
        free(s);
        return;
    }
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    write_bytes(dst, b.s, b.n);
    qkt_buf_free(&b);
    free(s);
}

#define TINY QKT_TEST_TINY_MODEL " --batch-size 4 --eval-batches 2 --threads 1"
#define MQ QKT_TEST_TINY_DATA

/* The fixtures, all inside the temp dir (the cwd of every run). */
/* optim.v[0] = -1 in the checkpoint's dtype (qkt_test_ckpt_edit) */
static void negative_v(qkt_safetensors *st, qkt_st_meta *meta, uint8_t *data, void *user) {
    (void)meta, (void)user;
    const qkt_st_tensor *t = qkt_safetensors_find(st, "optim.v");
    uint8_t *v = qkt_test_ckpt_tensor(st, data, "optim.v");
    EXPECT(t && v && (t->dtype == QKT_ST_F32 || t->dtype == QKT_ST_F64), "optim.v (F32 or F64) in the checkpoint");
    float f = -1;
    double d = -1;
    if (t && v) t->dtype == QKT_ST_F64 ? memcpy(v, &d, sizeof d) : memcpy(v, &f, sizeof f);
}

static void make_fixtures(void) {
    qkt_err err;
    write_bytes("empty", "", 0);
    uint8_t rnd[3000];
    qkt_rng r;
    qkt_rng_seed(&r, 7);
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)qkt_rng_u64(&r);
    write_bytes("random.bin", rnd, sizeof rnd);
    write_bytes("short.txt", "hello\n", 6);
    write_bytes("t.txt", "the quick brown fox jumps over the lazy dog\n" "the quick brown fox jumps over the lazy dog\n"
                         "the quick brown fox jumps over the lazy dog\n", 132);
    EXPECT(mkdir("adir", 0755) == 0, "mkdir adir");
    EXPECT(mkfifo("fifo", 0644) == 0, "mkfifo: %s", strerror(errno));
    EXPECT(run_qkt("train " MQ " " TINY " --steps 2 --out r1") == 0, "fixture run r1: %s", err_buf);
    EXPECT(run_qkt("train " MQ " --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --eval-batches 2 "
                   "--threads 1 --steps 4 --pause-at 2 --out r2") == 0,
           "fixture run r2: %s", err_buf);
    copy_file("r1/ckpt.safetensors", "good.st");
    EXPECT(mkdir("orphan", 0755) == 0 && mkdir("orphanlog", 0755) == 0, "mkdir orphan");
    copy_file("r1/ckpt.safetensors", "orphan/ckpt.safetensors");
    copy_file("r1/log.csv", "orphanlog/log.csv");
    size_t n;
    char *ck = qkt_read_file("good.st", &n, &err);
    if (ck) write_bytes("trunc.st", ck, n / 2);
    free(ck);
    static const char *const wide[] = {"n_embd", "32"}, *const deep[] = {"n_layer", "2"}, *const vocab[] = {"vocab_size", "65"};
    static const char *const huge[] = {"n_embd", "65536", "n_layer", "1024", "n_head", "1", "vocab_size", "65536", "block_size", "46340"};
    static const char *const noscale[] = {"attn_scale", NULL}, *const badscale[] = {"attn_scale", "cube"};
    qkt_test_ckpt_rewrite_meta("good.st", "wide.st", NULL, wide, 2);
    qkt_test_ckpt_rewrite_meta("good.st", "deep.st", NULL, deep, 2);
    qkt_test_ckpt_rewrite_meta("good.st", "vocab.st", NULL, vocab, 2);
    qkt_test_ckpt_rewrite_meta("good.st", "huge.st", NULL, huge, 10);
    qkt_test_ckpt_rewrite_meta("good.st", "noscale.st", NULL, noscale, 2);
    qkt_test_ckpt_rewrite_meta("good.st", "badscale.st", NULL, badscale, 2);
    qkt_test_ckpt_rewrite_meta("good.st", "nofc.st", "transformer.h.0.mlp.c_fc.weight", NULL, 0);
    write_batch("batch.st", 2, 8, 3);
    write_batch("long.st", 1, 33, 0);  /* T 33 > the model's block_size 32 */
    write_batch("oov.st", 1, 8, 60);   /* tokens 60..67: past the vocabulary of 64 */
    /* train --resume directories: damaged train.json, another model's checkpoint, a random checkpoint */
    EXPECT(mkdir("badjson", 0755) == 0 && mkdir("emptyjson", 0755) == 0 && mkdir("mixed", 0755) == 0 &&
               mkdir("randckpt", 0755) == 0 && mkdir("wrongfmt", 0755) == 0,
           "mkdir");
    write_bytes("badjson/train.json", "{\"format\": \"qkt-train-1\", ", 26);
    write_bytes("emptyjson/train.json", "", 0);
    write_bytes("wrongfmt/train.json", "[1, 2, 3]\n", 10);
    copy_file("r2/train.json", "mixed/train.json");
    copy_file("r1/ckpt.safetensors", "mixed/ckpt.safetensors");
    copy_file("r1/train.json", "randckpt/train.json");
    /* an unchecksummed checkpoint (read with a note) whose first Adam second moment is -1 */
    EXPECT(mkdir("negv", 0755) == 0, "mkdir negv");
    copy_file("r1/train.json", "negv/train.json");
    copy_file("r1/log.csv", "negv/log.csv");
    qkt_test_ckpt_rewrite("r1/ckpt.safetensors", "negv/ckpt.safetensors", false, negative_v, NULL);
    EXPECT(mkdir("badeps", 0755) == 0 && mkdir("rep0", 0755) == 0 && mkdir("repbig", 0755) == 0, "mkdir");
    copy_edited("r1/train.json", "badeps/train.json", "\"ln_eps\":\t1e-05", "\"ln_eps\":\t0");
    copy_edited("r1/train.json", "rep0/train.json", "\"replicas\":\t1", "\"replicas\":\t0");
    copy_edited("r1/train.json", "repbig/train.json", "\"replicas\":\t1", "\"replicas\":\t64");
    write_bytes("randckpt/ckpt.safetensors", rnd, sizeof rnd);
    /* ablate run directories: a damaged config.json, and a valid one without cells */
    EXPECT(qkt_mkdirs("runs/damaged", &err) == 0 && qkt_mkdirs("runs/nocells", &err) == 0, "%s", err.msg);
    write_bytes("runs/damaged/config.json", "{\"name\": 3}", 11);
    qkt_ablate_cfg ac;
    EXPECT(qkt_ablate_preset("quick", &ac, &err) == 0 && qkt_ablate_save_config("runs/nocells", &ac, &err) == 0, "%s", err.msg);
    write_bytes("afile", "x", 1);
}

typedef struct {
    const char *args;
    int code;          /* expected exit status */
    const char *want;  /* must appear in the one stderr line: the flag or the file */
    const char *want2; /* and this too, if set */
} bad_case;

static const bad_case cases[] = {
    /* top level */
    {"", 2, "no command", NULL},
    {"frobnicate", 2, "'frobnicate'", NULL},
    {"--frob", 2, "'--frob'", NULL},
    /* version */
    {"version --frob", 2, "--frob", NULL},
    {"version extra", 2, "'extra'", NULL},
    /* data */
    {"data --show mqar --count abc", 2, "--count", NULL},
    {"data --show mqar --seq-len -4", 2, "--seq-len", NULL},
    {"data --show mqar:vocab=0", 2, "vocab=0", NULL},
    {"data --show induction:len=9999999", 2, "len=9999999", NULL},
    {"data --show text:empty", 2, "'empty'", "empty"},
    {"data --show text:fifo", 2, "'fifo'", "not a regular file"},
    {"data --show text:short.txt", 2, "'short.txt'", "too short"},
    {"data --show text:t.txt,val_frac=0", 2, "val_frac", NULL},
    /* ablate */
    {"ablate --frob", 2, "--frob", NULL},
    {"ablate --preset huge", 2, "--preset", NULL},
    {"ablate --variants sqrt_dk,cube", 2, "--variants", "'cube'"},
    {"ablate --lr-variants none,SQRT_DK", 2, "--lr-variants", "'SQRT_DK'"},
    {"ablate --seq-len 1", 2, "--seq-len", NULL},
    {"ablate --lr 0", 2, "--lr", NULL},
    {"ablate --lr -0.1", 2, "--lr", NULL},
    {"ablate --lr-grid 0.1,-3", 2, "--lr-grid", NULL},
    {"ablate --d-k 16,0", 2, "--d-k", NULL},
    {"ablate --d-k 4096", 2, "--d-k", NULL},
    {"ablate --init-d-k 8,x", 2, "--init-d-k", NULL},
    {"ablate --n-head", 2, "--n-head", NULL},
    {"ablate --n-layer 0", 2, "--n-layer", NULL},
    {"ablate --steps 1e3", 2, "--steps", NULL},
    {"ablate --batch-size -8", 2, "--batch-size", NULL},
    {"ablate --task nosuch", 2, "--task", "'nosuch'"},
    {"ablate --task sort:len=40 --seq-len 16", 2, "--task", "seq_len"},
    {"ablate --name a/b", 2, "--name", NULL},
    {"ablate --seed -1", 2, "--seed", NULL},
    {"ablate --workers 0", 2, "--workers", NULL},
    {"ablate --report-only=maybe", 2, "--report-only", NULL},
    {"ablate --out /proc/qkt", 2, "--out", "/proc/qkt"},
    {"ablate --out afile", 2, "--out", "afile"},
    {"ablate --out runs --name damaged", 2, "runs/damaged/config.json", NULL},
    {"ablate --out runs --name nostudy --report-only", 2, "runs/nostudy holds no study", "without --report-only"},
    {"ablate --out runs --name nocells --report-only", 2, "a run with a different configuration", "qkt plot runs/nocells rebuilds"},
    /* plot */
    {"plot", 2, "run directory", NULL},
    {"plot runs/a runs/b", 2, "runs/a: not a directory", NULL}, /* several runs: qkt train runs */
    {"plot --frob", 2, "--frob", NULL},
    {"plot nonexistent", 2, "nonexistent/config.json", NULL},
    {"plot adir", 2, "adir/config.json", NULL},
    {"plot runs/damaged", 2, "runs/damaged/config.json", NULL},
    {"plot runs/nocells", 2, "runs/nocells/cells", NULL},
    /* step */
    {"step", 2, "--ckpt", NULL},
    {"step --ckpt good.st --batch batch.st", 2, "--out", NULL},
    {"step --ckpt good.st --batch batch.st --out g.st --adamw-lr 0.1", 2, "--params-out", NULL},
    {"step --ckpt good.st --batch batch.st --out g.st --eps 0", 2, "--eps", NULL},
    {"step --ckpt good.st --batch batch.st --out g.st --beta1 1", 2, "--beta1", NULL},
    {"step --ckpt good.st --batch batch.st --out g.st --threads x", 2, "--threads", NULL},
    {"step --ckpt empty --batch batch.st --out g.st", 2, "--ckpt", "empty"},
    {"step --ckpt random.bin --batch batch.st --out g.st", 2, "--ckpt", "random.bin"},
    {"step --ckpt trunc.st --batch batch.st --out g.st", 2, "--ckpt", "trunc.st"},
    {"step --ckpt adir --batch batch.st --out g.st", 2, "--ckpt", "adir"},
    {"step --ckpt fifo --batch batch.st --out g.st", 2, "--ckpt", "fifo"},
    {"step --ckpt nonexistent.st --batch batch.st --out g.st", 2, "--ckpt", "nonexistent.st"},
    {"step --ckpt wide.st --batch batch.st --out g.st", 2, "--ckpt", "wide.st"},
    {"step --ckpt deep.st --batch batch.st --out g.st", 2, "--ckpt", "deep.st"},
    {"step --ckpt vocab.st --batch batch.st --out g.st", 2, "--ckpt", "vocab.st"},
    {"step --ckpt huge.st --batch batch.st --out g.st", 2, "--ckpt", "huge.st"},
    {"step --ckpt nofc.st --batch batch.st --out g.st", 2, "--ckpt", "nofc.st"},
    {"step --ckpt batch.st --batch batch.st --out g.st", 2, "--ckpt", "batch.st"},
    {"step --ckpt good.st --batch good.st --out g.st", 2, "--batch", "good.st"},
    {"step --ckpt good.st --batch batch.st --out nodir/g.st", 2, "--out", "nodir"},
    {"step --ckpt good.st --batch batch.st --out adir", 2, "--out", "adir"},
    {"step --ckpt good.st --batch batch.st --out good.st/x", 2, "--out", "good.st"},
    {"step --ckpt good.st --batch batch.st --out g.st --adamw-lr 0.1 --params-out nodir/p.st", 2, "--params-out", "nodir"},
    {"step --ckpt good.st --batch empty --out g.st", 2, "--batch", "empty"},
    {"step --ckpt good.st --batch random.bin --out g.st", 2, "--batch", "random.bin"},
    {"step --ckpt good.st --batch adir --out g.st", 2, "--batch", "adir"},
    {"step --ckpt good.st --batch long.st --out g.st", 2, "--batch", "block_size"},
    {"step --ckpt good.st --batch oov.st --out g.st", 2, "--batch", "vocabulary"},
    /* sample */
    {"sample", 2, "--ckpt", NULL},
    {"sample --ckpt empty", 2, "--ckpt", "empty"},
    {"sample --ckpt random.bin", 2, "--ckpt", "random.bin"},
    {"sample --ckpt trunc.st", 2, "--ckpt", "trunc.st"},
    {"sample --ckpt adir", 2, "--ckpt", "adir"},
    {"sample --ckpt fifo", 2, "--ckpt", "fifo"},
    {"sample --ckpt nonexistent.st", 2, "--ckpt", "nonexistent.st"},
    {"sample --ckpt wide.st", 2, "--ckpt", "wide.st"},
    {"sample --ckpt deep.st", 2, "--ckpt", "deep.st"},
    {"sample --ckpt huge.st", 2, "--ckpt", "huge.st"},
    {"sample --ckpt noscale.st", 2, "--ckpt", "attn_scale"},
    {"sample --ckpt badscale.st", 2, "--ckpt", "cube"},
    {"sample --ckpt nofc.st", 2, "--ckpt", "nofc.st"},
    {"sample --ckpt batch.st", 2, "--ckpt", "batch.st"},
    {"sample --ckpt good.st --prompt 64", 2, "--prompt", NULL},
    {"sample --ckpt good.st --prompt x", 2, "--prompt", NULL},
    {"sample --ckpt good.st --temperature nan", 2, "--temperature", NULL},
    {"sample --ckpt good.st --tokens 1.5", 2, "--tokens", NULL},
    {"sample --ckpt good.st --seed 18446744073709551616", 2, "--seed", NULL},
    /* train (test_train has the common flag errors; these are the rest) */
    {"train " MQ " --n-embd 48 --n-head 5", 2, "--n-embd", "--n-head"},
    {"train " MQ " --block-size 0", 2, "--block-size", NULL},
    {"train " MQ " --block-size 8", 2, "--data", "seq_len"},
    {"train --data copy:len=20 --block-size 32", 2, "--data", "seq_len"},
    {"train " MQ " --lr 1e-3x", 2, "--lr", NULL},
    {"train " MQ " --lr=", 2, "--lr", NULL},
    {"train " MQ " --lr inf", 2, "--lr", NULL},
    {"train " MQ " --lr 1e-400", 2, "--lr", NULL},
    {"train " MQ " --steps 99999999999", 2, "--steps", NULL},
    {"train " MQ " --data mqar", 2, "--data", "twice"},
    {"train " MQ " --attn-scale SQRT_DK", 2, "--attn-scale", NULL},
    {"train " MQ " --beta2 1", 2, "--beta2", NULL},
    {"train " MQ " --threads 5000", 2, "--threads", NULL},
    {"train " MQ " --detect-anomaly=yes", 2, "--detect-anomaly", NULL},
    {"train --data text:empty", 2, "--data", "'empty'"},
    {"train --data text:adir", 2, "--data", "'adir'"},
    {"train --data text:fifo", 2, "--data", "'fifo'"},
    {"train --data text:", 2, "--data", "path"},
    {"train --data text:short.txt", 2, "--data", "short.txt"},
    {"train --data text:t.txt,val_frac=1.5", 2, "--data", "val_frac"},
    {"train --data text:nonexistent.txt", 2, "--data", "nonexistent.txt"},
    {"train " MQ " --out afile", 2, "--out", "afile"},
    {"train --resume adir", 2, "--resume", "train.json"},
    {"train --resume afile", 2, "--resume", "train.json"},
    {"train --resume badjson", 2, "--resume", "badjson/train.json"},
    {"train --resume emptyjson", 2, "--resume", "emptyjson/train.json"},
    {"train --resume wrongfmt", 2, "--resume", "wrongfmt/train.json"},
    {"train --resume mixed", 2, "--resume", "n_layer"},
    {"train --resume randckpt", 2, "--resume", "randckpt/ckpt.safetensors"},
    {"train --resume r1 --steps 1", 2, "at step 2", "last step 1"}, /* below the checkpoint's step */
    {"train --resume badeps", 2, "badeps/train.json", "ln_eps"},
    {"train --resume rep0", 2, "rep0/train.json", "replicas"},
    {"train --resume repbig", 2, "repbig/train.json", "--replicas 64"},
    {"train --resume negv", 2, "'optim.v' holds -1 at index 0", "mean of squares"},
    /* a new run does not write over a checkpoint or log that has no train.json beside it */
    {"train " MQ " " TINY " --out orphan", 2, "orphan/ckpt.safetensors", "no train.json"},
    {"train " MQ " " TINY " --out orphanlog", 2, "orphanlog/log.csv", "no train.json"},
    /* a number starts at its first character (strtoull took "\t-1" as 2^64 - 1) */
    {"train " MQ " --seed=\t-1", 2, "--seed", NULL},
    {"sample --ckpt good.st --seed=\t-1", 2, "--seed", NULL},
    {"train " MQ " --lr=\t0.1", 2, "--lr", NULL},
#ifdef QKT_DOUBLE /* the float64 build: its smallest normal is the flags' own bound (a subnormal is refused) */
    {"step --ckpt good.st --batch batch.st --out g.st --eps 1e-310", 2, "--eps", "subnormal"},
#else
    {"step --ckpt good.st --batch batch.st --out g.st --eps 1e-300", 2, "--eps", "1.17549e-38"},
#endif
    {"data --show mqar --seed 1 --seed 2", 2, "--seed given twice", NULL},
    {"data --show mqar --seed=\t-1", 2, "--seed", NULL},
    /* a --pause-at past the last step never pauses (r1 ran its 2 steps) */
    {"train " MQ " --steps 5 --pause-at 10", 2, "--pause-at 10", "--steps 5"},
    {"train --resume r1 --pause-at 3", 2, "--pause-at 3", "--steps 2"},
    /* a value too small to compute with: 0 is suggested only to a flag that takes it */
    {"train " MQ " --lr 1e-320", 2, "subnormal", ": give a magnitude >= "},
    {"train " MQ " --lr 1e-999", 2, "rounds to 0", ": give a magnitude >= "},
    {"sample --ckpt good.st --temperature 1e-320", 2, "subnormal", "give 0 or a magnitude >= "},
    {"sample --ckpt good.st --temperature 1e-999", 2, "rounds to 0", "give 0 or a magnitude >= "},
    /* a path or value holding control characters is quoted escaped: the error stays one line */
    {"train --resume no\nsuch", 2, "--resume no\\nsuch: no train.json", NULL},
    {"train " MQ " --out afile/a\nb", 2, "--out afile/a\\nb: ", "afile"},
    {"train --resume no\tsuch\033[2J", 2, "--resume no\\x09such\\x1b[2J: ", NULL},
    {"train " MQ " --lr 1\n2", 2, "--lr '1\\n2': expected", NULL},
    /* the study's rates refuse a subnormal as train's flags do (it was stored and named a cell) */
    {"ablate --out runs --name sub --lr-grid 1e-320,1e-3", 2, "--lr-grid '1e-320,1e-3': 1e-320 is a subnormal", ": give a magnitude >= "},
    {"ablate --out runs --name sub --growth-lr 1e-320", 2, "--growth-lr '1e-320': is a subnormal", ": give a magnitude >= "},
    {"ablate --out runs --name sub --min-lr-frac 1e-320", 2, "--min-lr-frac '1e-320': is a subnormal", "give 0 or a magnitude >= "},
};

int main(void) {
    const char *tmp = qkt_test_tmpdir("clierr");
    if (!realpath(qkt_test_bin(), qkt_bin)) { /* absolute: the runs happen in tmp */
        perror(qkt_test_bin());
        return 1;
    }
    if (chdir(tmp) != 0) {
        perror(tmp);
        return 1;
    }
    make_fixtures();
    int n = (int)(sizeof cases / sizeof *cases), crashes = 0;
    for (int i = 0; i < n; i++) {
        const bad_case *c = &cases[i];
        qkt_buf before = {0}, after = {0};
        list_tree(".", &before);
        int rc = run_qkt(c->args);
        list_tree(".", &after);
        crashes += rc >= 128;
        EXPECT(rc == c->code && qkt_test_one_line(err_buf) && strstr(err_buf, c->want) && (!c->want2 || strstr(err_buf, c->want2)) && !out_buf[0],
               "'qkt %s': exit %d (expected %d), stderr:\n%sstdout:\n%s", c->args, rc, c->code, err_buf, out_buf);
        EXPECT(!strcmp(before.s, after.s), "'qkt %s' changed the directory:\nbefore:\n%safter:\n%s", c->args, before.s, after.s);
        qkt_buf_free(&before), qkt_buf_free(&after);
    }
    EXPECT(crashes == 0, "%d invocations crashed or hung", crashes);
    printf("%d bad invocations\n", n);
    /* README states the count ("`tests/cli/test_cli_errors.c` runs N bad invocations") */
    const char *root = getenv("QKT_SOURCE_DIR");
    char *readme = root ? qkt_test_read_file(qkt_test_path(root, "README.md"), NULL) : NULL;
    const char *key = "test_cli_errors.c` runs ", *at = readme ? strstr(readme, key) : NULL;
    long stated = at ? strtol(at + strlen(key), NULL, 10) : -1;
    EXPECT(!root || stated == n, "README.md states %ld bad invocations, this test runs %d", stated, n);
    free(readme);
    return qkt_test_finish();
}
