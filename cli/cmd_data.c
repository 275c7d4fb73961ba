/* qkt data: show what a data source produces (one readable example, vocabulary,
 * chance levels) or dump sequences as integers for other tools. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qkt_data.h"

static void data_usage(FILE *f) {
    fprintf(f,
            "usage: qkt data --show SPEC [--seed N] [--seq-len T] [--split train|val] [--count N]\n"
            "       qkt data --dump SPEC [--seed N] [--seq-len T] [--split train|val] [--count N]\n"
            "\n"
            "  --show SPEC      print example sequences readably: tokens, answers in [brackets],\n"
            "                   vocabulary size, chance-level and best loss/accuracy\n"
            "  --dump SPEC      print sequences as integers, one per line: T inputs then T targets\n"
            "                   (-1 = not counted), for cross-checks with other tools\n"
            "  --seed N         seed of the streams (default 1)\n"
            "  --seq-len T      the model's sequence length (default: the source's own)\n"
            "  --split S        train (default) or val\n"
            "  --count N        number of sequences (default 1)\n"
            "\n");
    size_t n = 4096; /* the task table's help: grown until it fits */
    char *buf = qkt_malloc(n);
    for (int k; (k = qkt_data_help(buf, n)) >= 0 && (size_t)k >= n;) buf = qkt_realloc(buf, n = (size_t)k + 1);
    fputs(buf, f);
    free(buf);
}

static int bad(const char *msg, const char *flag, const char *val) {
    if (val)
        qkt_cli_err("qkt data: %s '%s': expected %s\n", flag, val, msg);
    else
        qkt_cli_err("qkt data: %s needs a value (%s)\n", flag, msg);
    return 2;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (!*s || isspace((unsigned char)*s) || *e || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

#define MAX_COUNT 1000000 /* --count */

typedef struct {
    const char *spec;
    bool dump;
    uint64_t seed;
    long T, count; /* T 0: the source's own */
    qkt_data_split split;
} data_args;

/* One integer flag's value (argv[i + 1]) into *out. 0, or 2 after the message. */
static int int_flag(const char *flag, const char *v, long lo, long hi, long *out) {
    char want[64];
    if (hi == LONG_MAX) snprintf(want, sizeof want, "an integer >= %ld", lo);
    else snprintf(want, sizeof want, "an integer in [%ld, %ld]", lo, hi);
    if (!v) return bad(want, flag, NULL);
    if (parse_int(v, lo, hi, out)) return bad(want, flag, v);
    return 0;
}

/* --seed's value: the other commands' seeds (an unsigned 64-bit integer). */
static int seed_flag(const char *v, uint64_t *out) {
    const char *want = "an integer in [0, 18446744073709551615]";
    if (!v) return bad(want, "--seed", NULL);
    char *e;
    errno = 0;
    unsigned long long x = strtoull(v, &e, 10);
    if (!*v || *v == '-' || isspace((unsigned char)*v) || *e || errno) return bad(want, "--seed", v);
    *out = x;
    return 0;
}

/* argv -> a, flags given as --flag VALUE or --flag=VALUE, each once. Returns 0, -1 after
 * --help, or 2 after a one-line error. */
static int parse_args(int argc, char **argv, data_args *a) {
    *a = (data_args){.seed = 1, .T = 0, .count = 1, .split = QKT_SPLIT_TRAIN};
    static const char *const names[] = {"--show", "--seed", "--seq-len", "--count", "--split"}; /* --dump is --show's twin */
    bool seen[5] = {false};
    char name[64];
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL, *eq = strchr(f, '=');
        bool joined = !strncmp(f, "--", 2) && eq && (size_t)(eq - f) < sizeof name;
        if (joined) { /* --flag=VALUE */
            memcpy(name, f, (size_t)(eq - f));
            name[eq - f] = 0;
            f = name, v = eq + 1;
        }
        for (int k = 0; k < 5; k++) {
            bool is = !strcmp(f, names[k]) || (k == 0 && !strcmp(f, "--dump"));
            if (is && seen[k]) return qkt_cli_err("qkt data: %s given twice\n", k ? f : "--show/--dump"), 2;
            if (is) seen[k] = true;
        }
        int rc = 0;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            data_usage(stdout);
            return -1;
        } else if (!strcmp(f, "--show") || !strcmp(f, "--dump")) {
            if (!v) return bad("a data spec such as mqar or text:PATH", f, NULL);
            a->spec = v, a->dump = f[2] == 'd';
        } else if (!strcmp(f, "--seed")) {
            rc = seed_flag(v, &a->seed);
        } else if (!strcmp(f, "--seq-len")) {
            rc = int_flag(f, v, 1, QKT_DATA_MAX_T, &a->T);
        } else if (!strcmp(f, "--count")) {
            rc = int_flag(f, v, 1, MAX_COUNT, &a->count);
        } else if (!strcmp(f, "--split")) {
            if (!v) return bad("train or val", f, NULL);
            if (!strcmp(v, "train")) a->split = QKT_SPLIT_TRAIN;
            else if (!strcmp(v, "val")) a->split = QKT_SPLIT_VAL;
            else return bad("train or val", f, v);
        } else {
            return qkt_cli_err("qkt data: unknown flag '%s' (run 'qkt data --help')\n", f), 2;
        }
        if (rc) return rc;
        if (!joined) i++; /* every flag but --help takes a value */
    }
    if (!a->spec) return qkt_cli_err("qkt data: expected --show SPEC or --dump SPEC (run 'qkt data --help')\n"), 2;
    return 0;
}

/* Prints tokens space-separated, wrapped at ~88 columns, answers in [brackets]. */
static void show_tokens(const qkt_data *d, const int32_t *s, const uint8_t *ans, int n) {
    int col = 0;
    char tok[16], item[24];
    printf("  ");
    for (int i = 0; i < n; i++) {
        qkt_data_token_str(d, s[i], tok);
        int w = snprintf(item, sizeof item, ans[i] ? "[%s]" : "%s", tok);
        if (col && col + w + 1 > 86) printf("\n  "), col = 0;
        printf("%s%s", col ? " " : "", item);
        col += w + (col ? 1 : 0);
    }
    printf("\n");
}

static void show_text(const qkt_data *d, const int32_t *x, const int32_t *y, int T) {
    int V = qkt_data_vocab_size(d);
    printf("vocabulary (%d bytes): \"", V);
    char tok[16];
    for (int i = 0; i < V; i++) fputs(qkt_data_token_str(d, i, tok), stdout);
    printf("\"\nwindow of T+1 = %d bytes (every position counts: target[t] = byte t+1):\n  \"", T + 1);
    for (int t = 0; t < T; t++) fputs(qkt_data_token_str(d, x[t], tok), stdout);
    fputs(qkt_data_token_str(d, y[T - 1], tok), stdout);
    printf("\"\n");
}

/* --show's first lines: the spec, vocabulary, chance and best levels, text split sizes. */
static void show_header(const qkt_data *d, const data_args *a) {
    double cl, ca, bl, ba;
    qkt_data_chance(d, &cl, &ca);
    qkt_data_best(d, &bl, &ba);
    printf("%s  (seed %" PRIu64 ", %s split, T %d)\n", qkt_data_spec(d), a->seed, a->split == QKT_SPLIT_TRAIN ? "train" : "val",
           qkt_data_seq_len(d));
    printf("vocab %d; chance: loss %.4f, accuracy %.4f", qkt_data_vocab_size(d), cl, ca);
    if (bl >= 0) printf("; best: loss %.4f, accuracy %.4f", bl, ba);
    printf("\n");
    if (qkt_data_is_text(d))
        printf("split: train %" PRId64 " bytes, val %" PRId64 " bytes\n", qkt_data_split_tokens(d, QKT_SPLIT_TRAIN),
               qkt_data_split_tokens(d, QKT_SPLIT_VAL));
}

/* One task row (x, y) shown readably; s and ans are scratch of T + 1. */
static void show_task_row(const qkt_data *d, const int32_t *x, const int32_t *y, int32_t *s, uint8_t *ans, bool first) {
    int Tm = qkt_data_seq_len(d), U = qkt_data_used_len(d);
    /* Rebuild s[0..U] from the row: s[t] = x[t], s[U] = the last target. */
    int n_ans = 0;
    for (int t = 0; t < U; t++) s[t] = x[t], ans[t] = t > 0 && y[t - 1] != QKT_IGNORE;
    s[U] = y[U - 1] != QKT_IGNORE ? y[U - 1] : 0;
    ans[U] = y[U - 1] != QKT_IGNORE;
    for (int t = 0; t <= U; t++) n_ans += ans[t];
    if (first)
        printf("sequence s[0..%d]: the model reads s[t] and predicts s[t+1]; [x] marks the %d answers\n"
               "(only they count in loss and accuracy):\n",
               U, n_ans);
    show_tokens(d, s, ans, U + 1);
    if (U < Tm) printf("  (then %d padding positions: token 0, not counted)\n", Tm - U);
}

int qkt_cmd_data(int argc, char **argv) {
    data_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    qkt_err err;
    qkt_data *d;
    qkt_data_opts o = {.seq_len = (int)a.T, .seed = a.seed};
    if (qkt_data_open(&d, a.spec, &o, &err)) {
        qkt_cli_err("qkt data: %s\n", err.msg);
        return 2;
    }
    int Tm = qkt_data_seq_len(d);
    int32_t *x = qkt_malloc((size_t)Tm * sizeof *x), *y = qkt_malloc((size_t)Tm * sizeof *y);
    int32_t *s = qkt_malloc((size_t)(Tm + 1) * sizeof *s);
    uint8_t *ans = qkt_malloc((size_t)Tm + 1);
    rc = 0;
    if (!a.dump) show_header(d, &a);
    for (long n = 0; n < a.count; n++) {
        qkt_data_batch(d, a.split, 1, x, y, NULL);
        if (a.dump) {
            for (int t = 0; t < Tm; t++) printf("%d ", x[t]);
            for (int t = 0; t < Tm; t++) printf("%d%c", y[t], t + 1 < Tm ? ' ' : '\n');
        } else if (qkt_data_is_text(d)) {
            show_text(d, x, y, Tm);
        } else {
            show_task_row(d, x, y, s, ans, n == 0);
        }
    }
    free(x), free(y), free(s), free(ans);
    qkt_data_free(d);
    return rc;
}
