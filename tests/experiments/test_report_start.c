/* Claims 4 and 9 of the findings table on hand-written cells of the 2x2 of scale form x start
 * (d_k 64, 10 seeds, so that an all-same-sign effect survives Holm's adjustment): the gradient
 * claim at a fixed form with the chain rule's factor s m removed, where the harm comes from,
 * and the rows that must read "not testable" (no 2x2 cells, no dL/dz). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"
#include "report_cells.h"
#include "report_internal.h"

/* SHRINK: saturation halves dL/dz; the saturated start's raw W_q, W_k gradient is 1.5x larger, but
 * x0.53 with s m removed; the saturated start ends 0.5 worse, the unscaled form 0.2 worse.
 * GROW: the reverse for the gradients and the start; the form makes no difference.
 * NO_DZ: as SHRINK, from runs made before dL/dz was measured. NO_CELLS: start_d_k 0, no start cells.
 * TINY: as SHRINK, but the saturated start ends only 0.003 worse and the unscaled form 0.002, in every
 * seed: detected, and negligible. */
enum { SHRINK, GROW, NO_DZ, NO_CELLS, TINY };
#define SEEDS 10
#define DK 64

/* One train or start cell: val loss at steps 0, 100, 200, the W_q, W_k gradient and dL/dz at step 0. */
static void write_cell(const char *run, const char *exp, const char *variant, int seed, double loss, double g, double dz) {
    char id[96];
    snprintf(id, sizeof id, "%s_%s_dk%d_s%d", exp, variant, DK, seed);
    qkt_buf b = {0};
    double l[3] = {2.8, 0.5 * (2.8 + loss), loss};
    for (int k = 0; k < 3; k++) {
        qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,%d,val_loss,-1,-1,%.9g\n", id, exp, variant, DK, seed, 100 * k, l[k]);
        qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,%d,val_acc,-1,-1,0.3\n", id, exp, variant, DK, seed, 100 * k);
    }
    /* |grad W_q, W_k| = sqrt(wq^2 + wk^2) = g */
    qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,0,grad_norm_wq,-1,-1,%.9g\n", id, exp, variant, DK, seed, g / sqrt(2.0));
    qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,0,grad_norm_wk,-1,-1,%.9g\n", id, exp, variant, DK, seed, g / sqrt(2.0));
    if (!isnan(dz)) qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,0,grad_logits,-1,-1,%.9g\n", id, exp, variant, DK, seed, dz);
    qkt_buf_printf(&b, "%s,%s,%s,%d,%d,0.003,200,diverged_step,-1,-1,-1\n", id, exp, variant, DK, seed);
    qkt_test_write_cell(run, id, &b);
}

/* The findings row `id` of the report built for a scenario (malloc'd), or NULL. */
static char *build(int mode, const char *id) {
    char run[1100], cells[1200];
    snprintf(run, sizeof run, "%s/m%d", qkt_test_tmpdir("start"), mode);
    snprintf(cells, sizeof cells, "%s/cells", run);
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    c.n_dk = 1, c.dks[0] = DK, c.seeds = SEEDS, c.n_variants = 2, c.variants[0] = QKT_ATTN_SQRT_DK, c.variants[1] = QKT_ATTN_NONE;
    c.task2[0] = 0, c.n_task2_dk = 0, c.task2_start_dk = 0, c.start_dk = mode == NO_CELLS ? 0 : DK;
    EXPECT(qkt_ablate_start(run, &c, &err) == 0 && qkt_mkdirs(cells, &err) == 0, "%s", err.msg);
    /* the factors s m: sqrt_dk 1/8 (x 64^(1/4) from the saturated start), none 1 (x 64^(-1/4) from the unsaturated one) */
    const double m = pow(DK, 0.25), f_su = 0.125, f_ss = 0.125 * m, f_nu = 1 / m, f_ns = 1;
    for (int s = 0; s < SEEDS; s++) {
        double e = 0.01 * (s % 3 - 1), g = 1 + e; /* seed-to-seed spread, smaller than every effect */
        double dz = mode == NO_DZ ? NAN : 1 + e, dzs = mode == GROW ? 2 * dz : 0.5 * dz, gs = (mode == GROW ? 6 : 1.5) * g;
        double lu = 1.0 + e, ls = mode == GROW ? lu - 0.3 : mode == TINY ? lu + 0.003 : lu + 0.5;
        double lnu = mode == GROW ? lu + 0.01 * (s % 2 ? 1 : -1) : mode == TINY ? lu + 0.002 : lu + 0.2;
        write_cell(run, "train", "sqrt_dk", s, lu, g, dz);
        write_cell(run, "train", "none", s, ls + 0.1, gs / f_ss * f_ns, dzs); /* the function of the saturated sqrt_dk start */
        if (mode == NO_CELLS) continue;
        write_cell(run, "start", "sqrt_dk", s, ls, gs, dzs);
        write_cell(run, "start", "none", s, lnu, g / f_su * f_nu, dz); /* the function of sqrt_dk at its own start */
    }
    qkt_ablate_report(run, &err); /* the other parts have no cells: their plots may fail, report.md is written */
    char path[1300];
    snprintf(path, sizeof path, "%s/report.md", run);
    size_t n;
    char *s = qkt_read_file(path, &n, &err);
    EXPECT(s != NULL, "%s", err.msg);
    if (!s) return NULL;
    char key[32];
    snprintf(key, sizeof key, "\n| %s |", id);
    char *p = strstr(s, key), *row = NULL;
    EXPECT(p != NULL, "report.md has no row %s", id);
    if (p) {
        char *end = strchr(p + 1, '\n');
        size_t k = end ? (size_t)(end - p - 1) : strlen(p + 1);
        row = qkt_malloc(k + 1);
        memcpy(row, p + 1, k), row[k] = 0;
    }
    free(s);
    return row;
}

static void expect_row(int mode, const char *id, const char *a, const char *b) {
    char *r = build(mode, id);
    if (!r) return;
    EXPECT(strstr(r, a) != NULL, "scenario %d, row %s lacks \"%s\": %s", mode, id, a, r);
    if (b) EXPECT(strstr(r, b) != NULL, "scenario %d, row %s lacks \"%s\": %s", mode, id, b, r);
    EXPECT(!strstr(r, "nan"), "row %s prints nan: %s", id, r);
    int bars = 0; /* a '|' in a measurement would split the markdown row */
    for (const char *q = r; *q; q++) bars += *q == '|';
    EXPECT(bars == 7, "row %s has %d '|' (6 columns have 7): %s", id, bars, r);
    free(r);
}

/* The plan: the 2x2's cells per preset, and an lr cell's id per seed. */
static void test_plan(void) {
    qkt_ablate_cfg c;
    qkt_err err;
    qkt_cell *plan;
    const char *presets[2] = {"quick", "full"};
    const int start[2] = {2 * 10, 2 * 10}, start2[2] = {0, 2 * 10}, lr_seeds[2] = {1, 3};
    for (int p = 0; p < 2; p++) {
        EXPECT(qkt_ablate_preset(presets[p], &c, &err) == 0, "%s", err.msg);
        int n = qkt_ablate_plan(&c, &plan), k1 = 0, k2 = 0, lr = 0;
        for (int i = 0; i < n; i++) {
            k1 += plan[i].kind == QKT_CELL_START, k2 += plan[i].kind == QKT_CELL_START2, lr += plan[i].kind == QKT_CELL_LR;
            if (plan[i].kind == QKT_CELL_START && plan[i].seed == 0 && plan[i].variant == QKT_ATTN_NONE)
                EXPECT(!strcmp(plan[i].id, "start_none_dk64_s0"), "%s: start cell id %s", presets[p], plan[i].id);
        }
        EXPECT(k1 == start[p] && k2 == start2[p], "%s: %d start and %d start2 cells, expected %d and %d", presets[p], k1, k2, start[p], start2[p]);
        EXPECT(c.lr_seeds == lr_seeds[p] && lr == c.n_lr * c.n_lr_variants * c.lr_seeds, "%s: %d lr cells with %d seeds", presets[p], lr, c.lr_seeds);
        free(plan);
    }
    char id[96];
    qkt_cell_id(id, sizeof id, QKT_CELL_LR, QKT_ATTN_NONE, 16, 0, 0.03);
    EXPECT(!strcmp(id, "lr_none_dk16_lr0.03"), "seed 0 keeps the one-seed id: %s", id);
    qkt_cell_id(id, sizeof id, QKT_CELL_LR, QKT_ATTN_NONE, 16, 2, 0.03);
    EXPECT(!strcmp(id, "lr_none_dk16_lr0.03_s2"), "lr id of seed 2: %s", id);
    EXPECT(fabs(qkt_ablate_start_mult(QKT_ATTN_SQRT_DK, 64) - pow(64, 0.25)) < 1e-12 && fabs(qkt_ablate_start_mult(QKT_ATTN_NONE, 16) - 0.5) < 1e-12 &&
           qkt_ablate_start_mult(QKT_ATTN_DK, 64) == 1, "qkt_ablate_start_mult");
    /* a d_k the run does not train plans no 2x2 cells; the keys are optional in config.json */
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    c.start_dk = 32;
    int n = qkt_ablate_plan(&c, &plan), k = 0;
    for (int i = 0; i < n; i++) k += plan[i].kind == QKT_CELL_START;
    EXPECT(k == 0 && qkt_ablate_validate(&c, &err) == 0, "start_d_k 32 (not trained): %d start cells", k);
    free(plan);
    char *json = qkt_ablate_config_json(&c);
    qkt_ablate_cfg d;
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "cfg", &d, &err) == 0 && d.start_dk == 32 && d.lr_seeds == 1, "round trip: %s", err.msg);
    const char *keys[3] = {"\"start_d_k\"", "\"task2_start_d_k\"", "\"lr_seeds\""};
    for (int i = 0; i < 3; i++) { /* a config.json from before the keys */
        char *at = strstr(json, keys[i]), *end = at ? strchr(at, '\n') : NULL;
        EXPECT(at && end, "config.json has no %s", keys[i]);
        if (at && end) memmove(at, end + 1, strlen(end + 1) + 1);
    }
    char *last = strrchr(json, '}'); /* the key before the dropped ones now ends the object: drop its comma */
    while (last && last > json && (last[-1] == '\n' || last[-1] == '\t' || last[-1] == ' ')) last--;
    if (last && last > json && last[-1] == ',') last[-1] = ' ';
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "old", &d, &err) == 0, "old config: %s", err.msg);
    EXPECT(d.start_dk == 0 && d.task2_start_dk == 0 && d.lr_seeds == 1, "old config: start_d_k %d, lr_seeds %d", d.start_dk, d.lr_seeds);
    free(json);
}

/* The negligible verdict's rule on constructed intervals, through Holm's adjustment and the
 * combination of a row's two tests. */
static void test_negligible_rule(void) {
    qkt_paired p = {.n = 10, .mean = 0.003, .sd = 0.001, .lo = 0.002, .hi = 0.004, .t_lo = 0.002, .t_hi = 0.004, .p_exact = 0.00195, .p_min = 0.00195};
    EXPECT(qkt__report_verdict(&p, 1) == QKT_V_REPRODUCED && qkt__report_verdict_loss(&p, 1) == QKT_V_NEGLIGIBLE, "+0.003: %d",
           qkt__report_verdict_loss(&p, 1));
    qkt_paired q = p;
    q.mean = -0.003, q.lo = q.t_lo = -0.004, q.hi = q.t_hi = -0.002; /* the other side, as small */
    EXPECT(qkt__report_verdict(&q, 1) == QKT_V_CONTRADICTED && qkt__report_verdict_loss(&q, 1) == QKT_V_NEGLIGIBLE, "-0.003");
    q = p;
    q.mean = 0.05, q.lo = q.t_lo = 0.04, q.hi = q.t_hi = 0.06;
    EXPECT(qkt__report_verdict_loss(&q, 1) == QKT_V_REPRODUCED, "+0.05 is not negligible");
    q = p;
    q.p_exact = 0.3; /* not detected: not negligible either */
    EXPECT(qkt__report_verdict_loss(&q, 1) == QKT_V_NOT_DETECTABLE, "p 0.3: %d", qkt__report_verdict_loss(&q, 1));
    q.n = 1; /* no interval */
    EXPECT(qkt__report_verdict_loss(&q, 1) == QKT_V_UNTESTABLE, "one pair");
    EXPECT(qkt__verdict_holm(QKT_V_NEGLIGIBLE, 0.2) == QKT_V_NOT_DETECTABLE && qkt__verdict_holm(QKT_V_NEGLIGIBLE, 0.01) == QKT_V_NEGLIGIBLE,
           "Holm on negligible");
    EXPECT(qkt__verdict_combine(QKT_V_NEGLIGIBLE, QKT_V_REPRODUCED) == QKT_V_REPRODUCED &&
               qkt__verdict_combine(QKT_V_CONTRADICTED, QKT_V_NEGLIGIBLE) == QKT_V_CONTRADICTED &&
               qkt__verdict_combine(QKT_V_NEGLIGIBLE, QKT_V_NOT_DETECTABLE) == QKT_V_NEGLIGIBLE &&
               qkt__verdict_combine(QKT_V_UNTESTABLE, QKT_V_NEGLIGIBLE) == QKT_V_NEGLIGIBLE &&
               qkt__verdict_combine(QKT_V_NOT_DETECTABLE, QKT_V_NOT_DETECTABLE) == QKT_V_NOT_DETECTABLE,
           "combining with negligible");
}

int main(void) {
    test_negligible_rule();
    test_plan();
    /* at a fixed form, saturation shrinks dL/dz; the raw W_q, W_k gradient grows 1.5x but with s m removed it is x0.53 */
    expect_row(SHRINK, "4a", "log(norm of dL/dz, saturated / unsaturated) = -0.69", "**reproduced**");
    expect_row(SHRINK, "4b", "scaled form -0.63", "(x0.53); unscaled form -0.63");
    expect_row(SHRINK, "4b", "of which ln sqrt(d_k) = 2.08 is the form's factor", "**reproduced**");
    expect_row(SHRINK, "9a", "scaled form +0.500", "**reproduced**");
    expect_row(SHRINK, "9b", "from the unsaturated start +0.200", "**reproduced**");
    /* 6 tests (4a, 4b, 5a's two, 9a, 9b), each p = 2/1024: Holm gives 6 x 0.00195 */
    expect_row(SHRINK, "9b", "| 0.0117 |", NULL);
    expect_row(GROW, "4a", "= +0.69", "**contradicted**");
    expect_row(GROW, "4b", "scaled form +0.75", "**contradicted**");
    expect_row(GROW, "9a", "scaled form -0.300", "**contradicted**");
    expect_row(GROW, "9b", "from the unsaturated start +0.000", "not detectable at this size");
    /* a difference every seed shows, but under 0.01 nats: negligible, not reproduced */
    expect_row(TINY, "9a", "scaled form +0.003", "negligible (detected, under 0.01 nats)");
    expect_row(TINY, "9b", "from the unsaturated start +0.002", "negligible (detected, under 0.01 nats)");
    expect_row(TINY, "9b", "| 0.0", NULL); /* still a test of the family, with its adjusted p */
    expect_row(NO_DZ, "4a", "no dL/dz in metrics.csv", "not testable here");
    expect_row(NO_DZ, "4b", "scaled form -0.63", "**reproduced**");
    expect_row(NO_CELLS, "4a", "no 2x2 cells in this run (start_d_k = 0", "not testable here");
    expect_row(NO_CELLS, "4b", "no 2x2 cells", "not testable here");
    expect_row(NO_CELLS, "9a", "no 2x2 cells", "not testable here");
    expect_row(NO_CELLS, "9b", "no 2x2 cells", "not testable here");
    return qkt_test_finish();
}
