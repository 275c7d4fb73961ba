/* Claim 10 of the findings table: does training still sharpen the scaled model's attention on a
 * retrieval task (10a), to attention as peaked as the unscaled model's (10b)? First the rule
 * (qkt__report_sharpen_rule) on constructed per-seed entropies: each verdict, the margin's
 * direction and every reason for "not testable"; then report.md's rows and report.html's link
 * on hand-written train cells (2 layers x 2 heads, d_k 64, 10 seeds). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"
#include "report_cells.h"
#include "report_internal.h"

#define SEEDS 10
#define DK 64

/* seed-to-seed spread, smaller than every effect below, mean 0 over an even number of seeds */
static double jitter(int s) { return s % 2 ? 0.01 : -0.01; }

/* ---------------------------------------------------------------- the rule */
static void test_rule(void) {
    double si[SEEDS], se[SEEDS], ue[SEEDS], nan_[SEEDS];
    qkt__sharpen k;
    for (int s = 0; s < SEEDS; s++) nan_[s] = NAN;
    /* sharpened: 0.95 -> 0.30; the unscaled model ends at 0.28 (scaled 0.02 flatter: inside the 0.05 margin) */
    for (int s = 0; s < SEEDS; s++) si[s] = 0.95 + jitter(s), se[s] = 0.30 + jitter(s), ue[s] = 0.28 + 0.5 * jitter(s);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_REPRODUCED && k.why_fall == QKT_SHARPEN_OK, "sharpened: 10a %d (why %d)", k.v_fall, k.why_fall);
    EXPECT_NEAR(k.fall.mean, -0.65, 1e-9);
    EXPECT(k.v_gap == QKT_V_REPRODUCED, "0.02 flatter, margin 0.05: 10b %d", k.v_gap);
    EXPECT_NEAR(k.gap.mean, 0.02, 1e-3);
    EXPECT_NEAR(k.gap_margin.mean, 0.02 - QKT_REPORT_PEAK_MARGIN, 1e-3);
    /* the scaled model ends sharper than the unscaled one: as peaked, and more */
    for (int s = 0; s < SEEDS; s++) ue[s] = 0.6 + jitter(s);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_gap == QKT_V_REPRODUCED, "scaled sharper: 10b %d", k.v_gap);
    /* 0.08 flatter than the unscaled model, every seed: more than the margin */
    for (int s = 0; s < SEEDS; s++) ue[s] = 0.22 + 0.5 * jitter(s);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_gap == QKT_V_CONTRADICTED, "0.08 flatter: 10b %d", k.v_gap);
    /* flattened by training (0.90 -> 0.99), far flatter than the unscaled model's 0.3 */
    for (int s = 0; s < SEEDS; s++) si[s] = 0.90 + jitter(s), se[s] = 0.99 + 0.5 * jitter(s), ue[s] = 0.3 + jitter(s);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_CONTRADICTED && k.v_gap == QKT_V_CONTRADICTED, "flattened: 10a %d, 10b %d", k.v_fall, k.v_gap);
    /* no effect either way: end - init = +-0.1; scaled - unscaled = margin +- 0.1 */
    for (int s = 0; s < SEEDS; s++) si[s] = 0.8, se[s] = 0.8 + (s % 2 ? 0.1 : -0.1), ue[s] = se[s] - QKT_REPORT_PEAK_MARGIN + (s % 4 < 2 ? 0.1 : -0.1);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_NOT_DETECTABLE && k.v_gap == QKT_V_NOT_DETECTABLE, "noise: 10a %d, 10b %d", k.v_fall, k.v_gap);
    /* not testable: a task without retrieval, no entropy at init, no unscaled run, one seed */
    for (int s = 0; s < SEEDS; s++) si[s] = 0.95 + jitter(s), se[s] = 0.30 + jitter(s), ue[s] = 0.28 + jitter(s);
    qkt__report_sharpen_rule(si, se, ue, SEEDS, false, 1, &k);
    EXPECT(k.v_fall == QKT_V_UNTESTABLE && k.v_gap == QKT_V_UNTESTABLE && k.why_fall == QKT_SHARPEN_NO_RETRIEVAL &&
           k.why_gap == QKT_SHARPEN_NO_RETRIEVAL, "no retrieval: %d %d", k.v_fall, k.v_gap);
    EXPECT(strstr(qkt__sharpen_why(k.why_fall), "no retrieval") != NULL, "why: %s", qkt__sharpen_why(k.why_fall));
    qkt__report_sharpen_rule(nan_, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_UNTESTABLE && k.why_fall == QKT_SHARPEN_NO_INIT && k.v_gap == QKT_V_REPRODUCED,
           "no init: 10a %d (why %d), 10b %d", k.v_fall, k.why_fall, k.v_gap);
    qkt__report_sharpen_rule(si, se, nan_, SEEDS, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_REPRODUCED && k.v_gap == QKT_V_UNTESTABLE && k.why_gap == QKT_SHARPEN_NO_END,
           "no unscaled run: 10a %d, 10b %d (why %d)", k.v_fall, k.v_gap, k.why_gap);
    qkt__report_sharpen_rule(si, nan_, ue, SEEDS, true, 1, &k);
    EXPECT(k.why_fall == QKT_SHARPEN_NO_END && k.why_gap == QKT_SHARPEN_NO_END, "no end: why %d %d", k.why_fall, k.why_gap);
    qkt__report_sharpen_rule(si, se, ue, 1, true, 1, &k);
    EXPECT(k.v_fall == QKT_V_UNTESTABLE && k.v_gap == QKT_V_UNTESTABLE && k.why_fall == QKT_SHARPEN_FEW_PAIRS &&
           k.why_gap == QKT_SHARPEN_FEW_PAIRS, "one seed: %d %d", k.v_fall, k.v_gap);
    for (int s = 1; s < SEEDS; s++) se[s] = NAN; /* ten seeds, but only one with both values (the others diverged) */
    qkt__report_sharpen_rule(si, se, ue, SEEDS, true, 1, &k);
    EXPECT(k.why_fall == QKT_SHARPEN_FEW_PAIRS && k.why_gap == QKT_SHARPEN_FEW_PAIRS, "one pair: why %d %d", k.why_fall, k.why_gap);
}

/* ---------------------------------------------------------------- report.md on written cells */
/* SHARPEN: sqrt_dk 0.97 -> one head at 0.30, none 0.40 -> 0.28. FLATTEN: sqrt_dk 0.90 -> 0.99,
 * none ends at 0.30. NO_INIT: as SHARPEN, without the entropy at step 0. BIGRAM: as SHARPEN on
 * a task without retrieval. ONE_SEED: as SHARPEN with one seed. */
enum { SHARPEN, FLATTEN, NO_INIT, BIGRAM, ONE_SEED };

/* One train cell: val loss and accuracy at steps 0 and 200, normalised entropy of each of its 2
 * layers x 2 heads: every head at e0 at step 0 (none if e0 is NaN), at the end layer 1 head 0 at
 * e1 and the others at 0.8 (or e1 if higher). */
static void write_cell(const char *run, const char *variant, int seed, double e0, double e1) {
    char id[96];
    snprintf(id, sizeof id, "train_%s_dk%d_s%d", variant, DK, seed);
    qkt_buf b = {0};
    for (int k = 0; k < 2; k++) {
        qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,%d,val_loss,-1,-1,%.9g\n", id, variant, DK, seed, 200 * k, k ? 1.0 : 2.8);
        qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,%d,val_acc,-1,-1,0.3\n", id, variant, DK, seed, 200 * k);
        for (int h = 0; h < 4; h++) {
            double e = k ? (h == 2 ? e1 : fmax(e1, 0.8)) : e0;
            if (!isnan(e)) qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,%d,norm_entropy,%d,%d,%.9g\n", id, variant, DK, seed, 200 * k, h / 2, h % 2, e);
        }
    }
    qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,200,diverged_step,-1,-1,-1\n", id, variant, DK, seed);
    qkt_test_write_cell(run, id, &b);
}

/* Builds the scenario's study (once) and returns its directory. */
static const char *build(int mode) {
    static char run[5][1100];
    if (run[mode][0]) return run[mode];
    char cells[1200];
    snprintf(run[mode], sizeof run[mode], "%s/m%d", qkt_test_tmpdir("sharpen"), mode);
    snprintf(cells, sizeof cells, "%s/cells", run[mode]);
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    c.n_dk = 1, c.dks[0] = DK, c.seeds = mode == ONE_SEED ? 1 : SEEDS, c.n_variants = 2, c.variants[0] = QKT_ATTN_SQRT_DK, c.variants[1] = QKT_ATTN_NONE;
    c.task2[0] = 0, c.n_task2_dk = 0, c.task2_start_dk = 0, c.start_dk = 0;
    if (mode == BIGRAM) snprintf(c.run.data, sizeof c.run.data, "bigram");
    EXPECT(c.run.tc.model.n_layer == 2 && c.run.tc.model.n_head == 2, "the quick preset's model: %d layers, %d heads", c.run.tc.model.n_layer, c.run.tc.model.n_head);
    EXPECT(qkt_ablate_start(run[mode], &c, &err) == 0 && qkt_mkdirs(cells, &err) == 0, "%s", err.msg);
    for (int s = 0; s < c.seeds; s++) {
        double j = jitter(s);
        if (mode == FLATTEN) {
            write_cell(run[mode], "sqrt_dk", s, 0.90 + j, 0.99 + 0.5 * j);
            write_cell(run[mode], "none", s, 0.40 + j, 0.30 + j);
        } else {
            write_cell(run[mode], "sqrt_dk", s, mode == NO_INIT ? NAN : 0.97 + j, 0.30 + j);
            write_cell(run[mode], "none", s, mode == NO_INIT ? NAN : 0.40 + j, 0.28 + 0.5 * j);
        }
    }
    qkt_ablate_report(run[mode], &err); /* the other parts have no cells: their plots may fail, report.md is written */
    return run[mode];
}

static void expect_row(int mode, const char *id, const char *a, const char *b) {
    char *r = qkt_test_md_row(qkt_test_path(build(mode), "report.md"), id);
    EXPECT(r != NULL, "scenario %d: report.md has no row %s", mode, id);
    if (!r) return;
    EXPECT(strstr(r, a) != NULL, "scenario %d, row %s lacks \"%s\": %s", mode, id, a, r);
    if (b) EXPECT(strstr(r, b) != NULL, "scenario %d, row %s lacks \"%s\": %s", mode, id, b, r);
    EXPECT(!strstr(r, "nan") && !strstr(r, "Holm"), "scenario %d, row %s: %s", mode, id, r);
    int bars = 0; /* a '|' in a measurement would split the markdown row */
    for (const char *q = r; *q; q++) bars += *q == '|';
    EXPECT(bars == 7, "row %s has %d '|' (6 columns have 7): %s", id, bars, r);
    free(r);
}

/* report.html's findings link claim 10 to the entropy curves of the training chart. */
static void test_html(void) {
    char *h = qkt_test_read_file(qkt_test_path(build(SHARPEN), "report.html"), NULL);
    EXPECT(h != NULL, "no report.html");
    if (!h) return;
    for (int i = 0; i < 2; i++) {
        const char *key = i ? "{\"id\":\"10b\"" : "{\"id\":\"10a\"";
        char *p = strstr(h, key), *end = p ? strstr(p + 1, "{\"id\":") : NULL, *link = p ? strstr(p, "\"chart\":\"train\",\"sel\":{\"metric\":\"norm_entropy\"") : NULL;
        EXPECT(p && link && (!end || link < end), "report.html: the finding %s does not link the entropy curves", key);
    }
    free(h);
}

int main(void) {
    test_rule();
    expect_row(SHARPEN, "10a", "sqrt_dk 0.97 -> 0.30, none 0.40 -> 0.28", "**reproduced**");
    expect_row(SHARPEN, "10a", "L1H0 0.97 -> 0.30", "end - init per seed: -0.670");
    expect_row(SHARPEN, "10b", "sqrt_dk - none per seed: +0.020", "**reproduced**");
    expect_row(SHARPEN, "10b", "none: L0H0 0.40 -> 0.80", NULL);
    expect_row(FLATTEN, "10a", "sqrt_dk 0.90 -> 0.99", "**contradicted**");
    expect_row(FLATTEN, "10b", "sqrt_dk - none per seed: +0.690", "**contradicted**");
    expect_row(NO_INIT, "10a", "no attention entropy at step 0", "not testable here");
    expect_row(NO_INIT, "10b", "+0.020", "**reproduced**");
    expect_row(BIGRAM, "10a", "the task has no retrieval", "not testable here");
    expect_row(BIGRAM, "10b", "`bigram`", "not testable here");
    expect_row(ONE_SEED, "10a", "fewer than 2 seeds", "not testable here");
    expect_row(ONE_SEED, "10b", "fewer than 2 seeds", "not testable here");
    test_html();
    return qkt_test_finish();
}
