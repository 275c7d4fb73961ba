/* `qkt bench` smoke test (CI): a few steps of the tiny config and of a custom config,
 * the sgemm peak on a small matrix, the output line's format, and bad flags. No timed
 * assertion: only that the numbers are there, finite and positive. */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

static char out[1 << 14];

static int run(const char *args) { return qkt_test_qkt(NULL, NULL, out, sizeof out, "bench %s", args); }

/* Value of `key=` in the first line that starts with `prefix`, or -1. */
static double field(const char *prefix, const char *key) {
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, prefix, strlen(prefix)) != 0) continue;
        const char *end = strchr(line, '\n'), *k = strstr(line, key);
        if (!k || (end && k > end)) return -1;
        return atof(k + strlen(key));
    }
    return -1;
}

static void expect_run(const char *args, const char *prefix, int threads) {
    int rc = run(args);
    EXPECT(rc == 0, "qkt bench %s: exit %d\n%s", args, rc, out);
    char want[64];
    snprintf(want, sizeof want, "threads=%d ", threads);
    EXPECT(strstr(out, prefix) && strstr(out, want), "qkt bench %s: no '%s ... %s' line:\n%s", args, prefix, want, out);
    const char *keys[] = {"ms_per_step=", "tokens_per_s=", "peak_rss_mb=", "mfu="};
    for (int i = 0; i < 4; i++) {
        double v = field(prefix, keys[i]);
        EXPECT(v > 0 && v < 1e9, "qkt bench %s: %s%g\n%s", args, keys[i], v, out);
    }
}

static void expect_bad(const char *args, const char *want) {
    int rc = run(args);
    EXPECT(rc == 2, "qkt bench %s: exit %d, expected 2\n%s", args, rc, out);
    EXPECT(strstr(out, want) != NULL, "qkt bench %s: message lacks '%s': %s", args, want, out);
    int lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    EXPECT(lines == 1, "qkt bench %s: %d lines of error, expected 1: %s", args, lines, out);
}

int main(void) {
    expect_run("--config tiny --steps 2 --warmup 1 --threads 1 --peak 50", "qkt tiny ", 1);
    expect_run("--config tiny --steps 3 --warmup 0 --threads 2 --peak 50", "qkt tiny ", 2);
    expect_run("--config tiny --steps 2 --warmup 1 --threads 2 --replicas 2 --peak 50", "qkt tiny ", 2);
    expect_run("--vocab 11 --seq 20 --batch 2 --n-embd 24 --n-layer 1 --n-head 3 --steps 2 --warmup 1 --threads 1 --peak-n 128",
               "qkt custom ", 1);
    EXPECT(strstr(out, "V=11 T=20 B=2 C=24 L=1 NH=3"), "custom config not echoed:\n%s", out);

    EXPECT(run("--sgemm-peak --peak-n 256 --threads 1") == 0, "sgemm peak failed:\n%s", out);
    double g = field("qkt sgemm ", "gflops=");
    EXPECT(g > 0 && g < 1e6, "sgemm peak gflops=%g:\n%s", g, out);

    /* the step's products of a small custom config: 5 linear layers x (forward, dx, dw), then the sum */
    EXPECT(run("--vocab 11 --seq 8 --batch 2 --n-embd 16 --n-layer 1 --n-head 2 --threads 1 --gemm-shapes") == 0,
           "gemm shapes failed:\n%s", out);
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "qkt gemm ")); p++) lines++;
    EXPECT(lines == 16 && strstr(out, "qkt gemm c_fc forward threads=1 M=16 N=64 K=16 gflops=") &&
               strstr(out, "qkt gemm lm_head dw threads=1 M=11 N=16 K=16 gflops="),
           "gemm shapes: %d lines:\n%s", lines, out);
    g = field("qkt gemm step ", "gflops=");
    EXPECT(g > 0 && g < 1e6, "gemm shapes step gflops=%g:\n%s", g, out);

    /* --ops: the five elementwise cases and AdamW at two sizes, one line each */
    EXPECT(run("--ops --steps 2 --warmup 0 --threads 1") == 0, "--ops failed:\n%s", out);
    lines = 0;
    for (const char *p = out; (p = strstr(p, "qkt op ")); p++) lines++;
    EXPECT(lines == 5 && strstr(out, "qkt op mul_bt1 threads=1 elements=262144 ms=") &&
               strstr(out, "qkt adamw threads=1 params=1048576 ms=") && strstr(out, "qkt adamw threads=1 params=10485760 ms="),
           "--ops: %d op lines:\n%s", lines, out);
    g = field("qkt op div_same ", "ms=");
    EXPECT(g > 0 && g < 1e4, "--ops div ms=%g:\n%s", g, out);

    EXPECT(run("--help") == 0 && strstr(out, "--sgemm-peak") && strstr(out, "--gemm-shapes") && strstr(out, "--ops"), "--help:\n%s", out);
    expect_bad("--config huge", "--config 'huge': expected tiny, small, medium, cell32 or cell128");
    expect_bad("--sgemm-peak --peak 5", "--peak sets a step's MFU denominator: --sgemm-peak prints no MFU"); /* was ignored */
    expect_bad("--gemm-shapes --peak 5", "--gemm-shapes prints no MFU");
    expect_bad("--ops --peak 5", "--ops prints no MFU");
    expect_bad("--config tiny --steps 0", "--steps '0'");
    expect_bad("--n-embd 30 --n-head 4", "--n-head 4: expected a divisor of the width 30");
    expect_bad("", "--config");
    expect_bad("--config tiny --replicas 17", "--replicas 17: expected at most the batch size 16");
    expect_bad("--config tiny --replicas 0", "--replicas '0'");
    expect_bad("--config tiny --batch 1048576 --seq 512", "--batch 1048576 x --seq 512: expected at most 2^28 tokens");
    expect_bad("--ops --gemm-shapes --config tiny", "--sgemm-peak, --gemm-shapes and --ops each time something else: give one of them");
    expect_bad("--sgemm-peak --ops", "--sgemm-peak, --gemm-shapes and --ops each time something else");
    expect_bad("--ops --config medium", "--ops times fixed shapes: --config, the model flags and --replicas do not apply");
    expect_bad("--ops --replicas 2", "--ops times fixed shapes");
    expect_bad("--sgemm-peak --n-embd 64", "--sgemm-peak times fixed shapes");
    expect_bad("--config tiny --peak 1e-300", "--peak 1e-300: expected 0 (measure it) or at least 0.001 GFLOP/s");
    /* a --peak below the step's own rate: the mfu above 1 is printed with a warning naming both rates */
    expect_run("--config tiny --steps 2 --warmup 1 --threads 1 --peak 0.001", "qkt tiny ", 1);
    const char *w = strstr(out, "qkt bench: warning: --peak 0.001 GFLOP/s is below the rate the step ran at (");
    EXPECT(field("qkt tiny ", "mfu=") > 1 && w && strstr(w, " GFLOP/s), so the mfu is not a fraction of a peak\n"),
           "--peak 0.001: no warning:\n%s", out);
    EXPECT(strstr(out, ", sgemm peak 0.001 GFLOP/s, "), "--peak 0.001 is not shown as given:\n%s", out);
    expect_run("--config tiny --steps 2 --warmup 1 --threads 1 --peak 1000", "qkt tiny ", 1);
    EXPECT(!strstr(out, "warning"), "--peak 1000: a warning:\n%s", out);
    return qkt_test_finish();
}
