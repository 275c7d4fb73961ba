/* `qkt data`: --show for every source, --dump against the API, --help, bad flags. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_data.h"
#include "qkt_test.h"

static char out[1 << 16];

static int run(const char *args) { return qkt_test_qkt(NULL, NULL, out, sizeof out, "data %s", args); }

static void expect_ok(const char *args, const char *want1, const char *want2) {
    int rc = run(args);
    EXPECT(rc == 0, "qkt data %s: exit %d\n%s", args, rc, out);
    EXPECT(strstr(out, want1) != NULL, "qkt data %s: output lacks '%s':\n%s", args, want1, out);
    if (want2) EXPECT(strstr(out, want2) != NULL, "qkt data %s: output lacks '%s':\n%s", args, want2, out);
}

static void expect_bad(const char *args, const char *want) {
    int rc = run(args);
    EXPECT(rc == 2, "qkt data %s: exit %d, expected 2\n%s", args, rc, out);
    EXPECT(strstr(out, want) != NULL, "qkt data %s: message lacks '%s': %s", args, want, out);
    int lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    EXPECT(lines == 1, "qkt data %s: %d lines of error, expected 1: %s", args, lines, out);
}

/* docs/data.md shows real output: every block that starts with "$ qkt data ..."
 * (text files excluded: their path depends on the checkout) must match the program. */
static void check_docs(void) {
    const char *src = getenv("QKT_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/data.md", src && *src ? src : "..");
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "cannot read %s", path);
    if (!f) return;
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = 0;
    fclose(f);
    int blocks = 0;
    for (char *p = doc; (p = strstr(p, "```\n$ qkt data ")) != NULL;) {
        char *args = p + strlen("```\n$ qkt data "), *eol = strchr(args, '\n');
        char *end = eol ? strstr(eol + 1, "```\n") : NULL;
        if (!end) break;
        *eol = 0;
        p = end + 4;
        if (strstr(args, "text:")) continue;
        *end = 0;
        blocks++;
        int rc = run(args);
        EXPECT(rc == 0 && !strcmp(out, eol + 1), "docs/data.md: 'qkt data %s' prints something else now "
               "(run scripts/update_doc_examples.py):\n%s", args, out);
    }
    EXPECT(blocks >= 7, "docs/data.md: only %d command examples found", blocks);
}

/* Output that does not reach stdout fails the command: a full disk (/dev/full) or a closed
 * stdout, with one line on stderr; a pipe whose reader left is not an error. */
static void check_stdout_errors(void) {
    static const struct {
        const char *shell, *want;
        int code;
    } c[] = {
        {"{ %s data --dump mqar --count 1000 >/dev/full; }", "cannot write to stdout", 1},
        {"{ %s data --show mqar >&-; }", "cannot write to stdout", 1},
        {"{ %s version >/dev/full; }", "cannot write to stdout", 1},
        {"{ %s data --dump mqar --count 100000 | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}; }", "", 141},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, c[i].shell, qkt_test_bin());
        char *bash = NULL;
        EXPECT(asprintf(&bash, "bash -c '%s'", cmd) > 0, "asprintf");
        int rc = qkt_test_run(bash, out, sizeof out);
        free(bash);
        if (c[i].code == 141) { /* SIGPIPE (bash's 128 + 13): the default action, no message */
            EXPECT(rc == 141 && !out[0], "%s: exit %d (expected 141), output: %s", cmd, rc, out);
            continue;
        }
        EXPECT(rc == c[i].code && qkt_test_one_line(out) && strstr(out, c[i].want), "%s: exit %d (expected %d), stderr: %s", cmd, rc,
               c[i].code, out);
    }
}

int main(void) {
    check_stdout_errors();
    expect_ok("--help", "--show SPEC", "n_queries");
    expect_ok("--show mqar", "mqar:vocab=32,seq_len=64,n_pairs=4,n_queries=16", "chance: loss 2.7726, accuracy 0.0625");
    expect_ok("--show mqar --seed 3 --split val", "val split", "[v");
    expect_ok("--show induction --seq-len 32", "induction:vocab=64,len=16", "16 answers");
    expect_ok("--show sort", "sort:len=8,digits=10", " | [");
    expect_ok("--show reverse --count 3", "reverse:len=12", "12 answers");
    expect_ok("--show copy --seq-len 30", "6 padding positions", "copy:len=12");
    expect_ok("--show bigram", "best: loss 1.23", "64 answers");
    const char *dir = qkt_test_tmpdir("datacli");
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/t.txt", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 100; i++) fprintf(f, "line %d of the text\n", i);
    fclose(f);
    snprintf(args, sizeof args, "--show text:%s --seq-len 16", path);
    expect_ok(args, "split: train 1791 bytes, val 199 bytes", "vocabulary (21 bytes): \"\\n 0123456789efhilnotx\"");

    /* --dump equals the API's batches, row by row. */
    EXPECT(run("--dump sort:len=5 --seed 9 --split val --count 3") == 0, "dump: %s", out);
    qkt_data *d;
    qkt_err err;
    qkt_data_opts o = {.seq_len = 0, .seed = 9};
    EXPECT(qkt_data_open(&d, "sort:len=5", &o, &err) == 0, "%s", err.msg);
    int32_t x[10], y[10];
    char *p = out;
    int mismatches = 0;
    for (int r = 0; r < 3; r++) {
        qkt_data_batch(d, QKT_SPLIT_VAL, 1, x, y, NULL);
        for (int t = 0; t < 20; t++) {
            long v = strtol(p, &p, 10);
            mismatches += v != (t < 10 ? x[t] : y[t - 10]);
        }
    }
    EXPECT(mismatches == 0, "dump differs from the API in %d values:\n%s", mismatches, out);
    qkt_data_free(d);

    check_docs();

    expect_bad("", "expected --show SPEC or --dump SPEC");
    expect_bad("--frobnicate", "unknown flag '--frobnicate'");
    expect_bad("--show", "--show needs a value");
    expect_bad("--show nope", "unknown data source 'nope'");
    expect_bad("--show mqar:n_pairs=x", "n_pairs=x: expected an integer");
    expect_bad("--show mqar --seed -1", "--seed '-1': expected an integer in [0, 18446744073709551615]");
    expect_bad("--show mqar --seed", "--seed needs a value");
    expect_bad("--show mqar --seq-len 0", "--seq-len '0'");
    expect_bad("--show mqar --seq-len 12abc", "--seq-len '12abc'");
    expect_bad("--show sort --seq-len 10", "needs seq_len >= 16, got 10");
    expect_bad("--show mqar --split test", "--split 'test': expected train or val");
    expect_bad("--show mqar --count 0", "--count '0'");
    expect_bad("--show mqar --dump sort", "--show/--dump given twice");
    expect_bad("--show text:/nonexistent/x.txt", "'/nonexistent/x.txt': no such file");
    snprintf(args, sizeof args, "--show text:%s", dir);
    expect_bad(args, "is a directory");
    snprintf(args, sizeof args, "--show text:%s --seq-len 900", path);
    expect_bad(args, "too short for seq_len 900");
    return qkt_test_finish();
}
