/* qkt train under nanoGPT's train.py names (cli/nanogpt_aliases.c): every alias, in
 * both the --name=X and the --name X form, gives the same train.json as the qkt flag
 * it stands for (each given a non-default value, so an alias wired to the wrong flag
 * shows); the settings without a qkt flag (bias, decay_lr, ...) act or are refused; a
 * bad alias value is one line naming the alias, exit 2, nothing written. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qkt_test.h"

static char out[1 << 16];
static const char *tmp;

static int run(const char *args) { return qkt_test_qkt(tmp, "QKT_THREADS=1", out, sizeof out, "train %s", args); }

static char *train_json(const char *dir) { return qkt_test_read_file(qkt_test_path(qkt_test_path(tmp, dir), "train.json"), NULL); }

/* One nanoGPT name, the qkt flag it stands for, and a value other than the default. */
typedef struct {
    const char *nano, *qkt, *value;
} pair;

/* The settings nanoGPT users type, on a tiny mqar model (all values non-default). */
static const pair pairs[] = {
    {"n_layer", "n-layer", "1"},         {"n_head", "n-head", "2"},           {"n_embd", "n-embd", "16"},
    {"block_size", "block-size", "32"},  {"batch_size", "batch-size", "4"},   {"max_iters", "steps", "3"},
    {"learning_rate", "lr", "0.002"},    {"min_lr", "min-lr", "0.0001"},      {"warmup_iters", "warmup-steps", "1"},
    {"weight_decay", "weight-decay", "0.05"}, {"grad_clip", "grad-clip", "0.5"}, {"eval_interval", "eval-every", "2"},
    {"eval_iters", "eval-batches", "3"}, {"log_interval", "log-every", "7"}, {"dropout", "dropout", "0.1"},
    {"beta1", "beta1", "0.8"},           {"beta2", "beta2", "0.99"},          {"seed", "seed", "7"},
};
#define N_PAIRS ((int)(sizeof pairs / sizeof *pairs))

/* "--data mqar... --out DIR" plus every pair, in nanoGPT's names (form 1: --a=X, 2: --a X)
 * or qkt's (form 0). */
static void args_for(int form, const char *dir, char *buf, size_t n) {
    size_t l = (size_t)snprintf(buf, n, "--data mqar:n_pairs=4,n_queries=4 %s%s%s", form ? "--out_dir" : "--out",
                                form == 1 ? "=" : " ", dir);
    for (int i = 0; i < N_PAIRS; i++)
        l += (size_t)snprintf(buf + l, n - l, " --%s%s%s", form ? pairs[i].nano : pairs[i].qkt, form == 1 ? "=" : " ",
                              pairs[i].value);
}

static void same_json_as_qkt_flags(void) {
    char args[4096];
    const char *dirs[] = {"qkt", "eq", "space"};
    for (int form = 0; form < 3; form++) {
        args_for(form, dirs[form], args, sizeof args);
        int rc = run(args);
        EXPECT(rc == 0, "form %d: exit %d: %s", form, rc, out);
    }
    char *ref = train_json("qkt");
    EXPECT(ref && strstr(ref, "\"eval_batches\":\t3") && strstr(ref, "\"steps\":\t3"), "train.json: %s", ref ? ref : "(none)");
    for (int form = 1; form < 3; form++) {
        char *j = train_json(dirs[form]);
        EXPECT(j && ref && !strcmp(j, ref), "%s: train.json differs from the qkt flags':\n%s\nvs\n%s", dirs[form], j ? j : "(none)",
               ref ? ref : "(none)");
        free(j);
    }
    free(ref);
}

/* The nanoGPT settings that have no qkt flag of their own. */
/* The scalar type this build computes in: --dtype accepts it and refuses the other. */
#ifdef QKT_DOUBLE
#define BUILD_DTYPE "float64"
#define OTHER_DTYPE "float32"
#else
#define BUILD_DTYPE "float32"
#define OTHER_DTYPE "float64"
#endif

static void extras(void) {
    const char *tiny = "--data mqar:n_pairs=4,n_queries=4 --n_layer 1 --n_head 2 --n_embd 16 --block_size 32 --batch_size 4 "
                       "--max_iters 2 --eval_iters 1";
    char args[2048];
    struct {
        const char *dir, *extra, *want;
    } cases[] = {
        {"nobias", "--bias=False", "\"bias\":\tfalse"},
        {"bias", "--bias True", "\"bias\":\ttrue"},
        {"const", "--decay_lr=False", "\"schedule\":\t\"constant\""},
        {"cpu", "--device=cpu --compile=False --dtype=" BUILD_DTYPE " --gradient_accumulation_steps=1 --init_from=scratch "
                "--lr_decay_iters=2 --decay_lr True",
         "\"schedule\":\t\"cosine\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(args, sizeof args, "%s --out_dir %s %s", tiny, cases[i].dir, cases[i].extra);
        int rc = run(args);
        EXPECT(rc == 0, "%s: exit %d: %s", cases[i].extra, rc, out);
        char *j = train_json(cases[i].dir);
        EXPECT(j && strstr(j, cases[i].want), "%s: train.json lacks %s: %s", cases[i].extra, cases[i].want, j ? j : "(none)");
        free(j);
    }
    /* --decay_lr False is --schedule constant: the same train.json */
    snprintf(args, sizeof args, "%s --out_dir const2 --schedule constant", tiny);
    EXPECT(run(args) == 0, "%s", out);
    char *a = train_json("const"), *b = train_json("const2");
    EXPECT(a && b && !strcmp(a, b), "--decay_lr=False vs --schedule constant:\n%s\nvs\n%s", a ? a : "", b ? b : "");
    free(a), free(b);
}

/* Refused before any work: exit 2, one line naming the flag as typed, no run directory. */
static void refusals(void) {
    struct {
        const char *args, *names;
    } bad[] = {
        {"--n_layer=0", "--n_layer"},
        {"--n_head 0", "--n_head"},
        {"--learning_rate=-1", "--learning_rate"},
        {"--max_iters abc", "--max_iters"},
        {"--max_iters", "--max_iters"},
        {"--eval_iters=0", "--eval_iters"},
        {"--dropout=1.5", "--dropout"},
        {"--data mqar --out_dir=", "--out_dir"},
        {"--n_layer 2 --n-layer 2", "given twice"},
        {"--bias=maybe", "--bias"},
        {"--decay_lr=nope", "--decay_lr"},
        {"--decay_lr=False --schedule cosine", "--decay_lr"},
        {"--lr_decay_iters 0", "--lr_decay_iters"},
        {"--lr_decay_iters 3 --warmup_iters 4", "--lr-decay-steps 3"},
        {"--device=cuda", "--device"},
        {"--compile=maybe", "--compile"},
        {"--dtype=bfloat16", "--dtype"},
        {"--dtype=" OTHER_DTYPE, "this build computes in " BUILD_DTYPE},
        {"--gradient_accumulation_steps=40", "--gradient_accumulation_steps"},
        {"--dataset=shakespeare_char", "--dataset"},
        {"--init_from=resume", "--resume"},
        {"--init_from=gpt2", "--init_from"},
        {"--resume nowhere --bias=False", "--bias"},
        {"--resume nowhere --learning_rate 9", "--lr"},
        {"--wandb_log=True", "--wandb_log"},
    };
    char args[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bool own = !strncmp(bad[i].args, "--resume", 8) || strstr(bad[i].args, "--out_dir"); /* no --data, --out_dir */
        /* --pause-at 1: an invocation wrongly accepted stops after one step */
        snprintf(args, sizeof args, "--pause-at 1 %s%s", own ? "" : "--data mqar --out_dir refused ", bad[i].args);
        int rc = run(args);
        const char *nl = strchr(out, '\n');
        EXPECT(rc == 2, "%s: exit %d (want 2): %s", bad[i].args, rc, out);
        EXPECT(nl && nl[1] == 0 && strstr(out, bad[i].names), "%s: want one line naming %s, got: %s", bad[i].args, bad[i].names, out);
        struct stat st;
        EXPECT(stat(qkt_test_path(tmp, "refused"), &st) != 0, "%s: left a run directory", bad[i].args);
    }
}

/* --help lists every nanoGPT name it takes. */
static void help_lists_them(void) {
    EXPECT(run("--help") == 0, "%s", out);
    const char *more[] = {"out_dir", "lr_decay_iters", "decay_lr", "bias", "device", "compile", "gradient_accumulation_steps"};
    for (int i = 0; i < N_PAIRS; i++) {
        char want[64];
        snprintf(want, sizeof want, "--%s", pairs[i].nano);
        EXPECT(strstr(out, want), "--help does not mention %s", want);
    }
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) EXPECT(strstr(out, more[i]), "--help does not mention %s", more[i]);
}

int main(void) {
    tmp = qkt_test_tmpdir("nanogpt");
    same_json_as_qkt_flags();
    extras();
    refusals();
    help_lists_them();
    return qkt_test_finish();
}
