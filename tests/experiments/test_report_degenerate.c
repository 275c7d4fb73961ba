/* The study in configurations where some question cannot be answered: one learning rate,
 * one d_k, one seed, every run diverged. Each must give a sentence in report.md, never
 * "nan" or a meaningless ranking. Also: qk_init in config.json (old files load as gpt2),
 * and that seeds pair the fixed-scale variants (same init draws, bit for bit). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"

static char out[1 << 16];

static char *read_report(const char *run) {
    char path[1200];
    snprintf(path, sizeof path, "%s/report.md", run);
    size_t n;
    qkt_err err;
    char *s = qkt_read_file(path, &n, &err);
    EXPECT(s != NULL, "%s", err.msg);
    return s;
}

/* "nan" as a word (not inside "finance" etc.), any case. */
static bool has_nan(const char *s) {
    for (const char *p = s; *p; p++)
        if (!strncasecmp(p, "nan", 3) && (p == s || !isalpha((unsigned char)p[-1])) && !isalpha((unsigned char)p[3])) return true;
    return false;
}

static void expect_in(const char *s, const char *what) { EXPECT(strstr(s, what) != NULL, "report.md lacks \"%s\"", what); }

/* Rewrites every train cell's diverged_step row to step 3. */
static void make_all_diverged(const char *run) {
    const char *ids[] = {"train_sqrt_dk_dk8_s0", "train_none_dk8_s0"};
    for (int i = 0; i < 2; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/cells/%s.csv", run, ids[i]);
        size_t n;
        qkt_err err;
        char *s = qkt_read_file(path, &n, &err);
        EXPECT(s != NULL, "%s", err.msg);
        if (!s) continue;
        char *p = strstr(s, ",diverged_step,-1,-1,-1\n");
        EXPECT(p != NULL, "%s has no diverged_step row", path);
        if (p) p[strlen(",diverged_step,-1,-1,")] = '3', memmove(p + 22, p + 23, strlen(p + 23) + 1);
        char *seal = strstr(s, "#end rows="); /* an edited cell file needs a new seal, or it is rerun */
        EXPECT(seal != NULL, "%s has no seal", path);
        if (seal) *seal = 0;
        qkt_buf b = {0};
        qkt_buf_printf(&b, "%s", s);
        qkt_cell_seal(&b);
        EXPECT(qkt_write_atomic(path, b.s, b.n, &err) == 0, "%s", err.msg);
        qkt_buf_free(&b);
        free(s);
    }
}

static void test_degenerate_run(void) {
    const char *tmp = qkt_test_tmpdir("degenerate");
    char cmd[2048], run[1100];
    snprintf(cmd, sizeof cmd,
             "%s ablate --name d --out %s --variants sqrt_dk,none --d-k 8 --seeds 1 --steps 8 --eval-every 4 --lr-grid 1e-3 "
             "--lr-variants sqrt_dk --lr-steps 4 --lr-d-k 8 --init-d-k 4 --growth-d-k 8 --batch-size 4 --workers 2 --task2 recall "
             "--task2-d-k 8",
             qkt_test_bin(), tmp);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "qkt ablate exited %d:\n%s", rc, out);
    snprintf(run, sizeof run, "%s/d", tmp);
    char *s = read_report(run);
    if (!s) return;
    EXPECT(!has_nan(s), "report.md of a degenerate run prints nan");
    expect_in(s, "One learning rate (0.001): no LR sensitivity");        /* one LR: no ranking */
    EXPECT(!strstr(s, "Least LR-sensitive"), "one LR still ranks the variants");
    expect_in(s, "One d_k only (8): a slope against d_k needs");         /* one growth d_k */
    expect_in(s, "one training d_k: no trend");                          /* one train d_k */
    expect_in(s, "one seed only, so no claim");                          /* one seed */
    expect_in(s, "Power with 1 seed");
    expect_in(s, "1 init d_k value: a slope with an interval needs 3");
    expect_in(s, "one learning rate (0.001): no LR range, nothing to compare"); /* claims 6a, 7a */
    expect_in(s, "one learning rate: no LR range");                     /* 6b */
    EXPECT(strstr(s, "this build has no `sigma_reparam` variant") || strstr(s, "`sigma_reparam` and `sqrt_dk` are not both in the LR sweep"),
           "claim 7b does not say why it is untested");
    expect_in(s, "one d_k on the second task: no trend");              /* 5d */
    expect_in(s, "## 2c. Second task: `recall`");
    free(s);
    /* every training run diverged: said in words, no loss comparison */
    make_all_diverged(run);
    snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "qkt plot exited %d:\n%s", rc, out);
    s = read_report(run);
    if (!s) return;
    EXPECT(!has_nan(s), "report.md with every run diverged prints nan");
    expect_in(s, "**Every training run diverged** (2 of 2)");
    expect_in(s, "No run finished without diverging: no loss to compare");
    expect_in(s, "every unscaled run diverged");
    free(s);
}

static void test_qk_init_config(void) {
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    EXPECT(c.run.tc.model.qk_init == QKT_QK_INIT_UNIT, "quick preset uses the unit W_q/W_k init");
    char *json = qkt_ablate_config_json(&c);
    EXPECT(strstr(json, "\"qk_init\":\t\"unit\"") != NULL, "config.json lacks qk_init: %s", json);
    qkt_ablate_cfg d;
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "cfg", &d, &err) == 0 && d.run.tc.model.qk_init == QKT_QK_INIT_UNIT, "round trip: %s", err.msg);
    /* a config.json from before the option: no key, loads as gpt2 (the old init) */
    char *p = strstr(json, "\"qk_init\"");
    char *e = p ? strchr(p, '\n') : NULL;
    if (e) memmove(p, e + 1, strlen(e + 1) + 1);
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "old", &d, &err) == 0 && d.run.tc.model.qk_init == QKT_QK_INIT_GPT2, "old config: %s", err.msg);
    free(json);
    const char *bad = "{\"qk_init\": \"wide\"}";
    EXPECT(qkt_ablate_parse_config(bad, strlen(bad), "x.json", &d, &err) != 0, "bad qk_init accepted");
}

/* Seeds pair the fixed-scale variants: the same init, bit for bit; "unit" gives W_q std 1/sqrt(C). */
static void test_pairing(void) {
    qkt_gpt_config gc = qkt_gpt_config_default();
    gc.vocab_size = 32, gc.block_size = 16, gc.n_layer = 2, gc.n_head = 2, gc.n_embd = 64, gc.init_std = 0.08;
    qkt_gpt g[3];
    qkt_err err;
    const qkt_attn_scale v[3] = {QKT_ATTN_SQRT_DK, QKT_ATTN_NONE, QKT_ATTN_DK};
    for (int i = 0; i < 3; i++) {
        gc.attn_scale = v[i];
        EXPECT(qkt_gpt_init(&g[i], &gc, &err) == 0, "%s", err.msg);
        qkt_rng r;
        qkt_rng_seed(&r, 5);
        qkt_gpt_init_weights(&g[i], &r);
    }
    for (int i = 1; i < 3; i++) {
        EXPECT(g[i].params.n == g[0].params.n, "parameter count differs");
        for (int k = 0; k < g[0].params.n && k < g[i].params.n; k++)
            EXPECT(!memcmp(g[0].params.t[k]->data, g[i].params.t[k]->data, (size_t)g[0].params.t[k]->size * sizeof(qkt_real)),
                   "%s differs between %s and %s", g[0].params.t[k]->name, qkt_attn_scale_name(v[0]), qkt_attn_scale_name(v[i]));
    }
    gc.attn_scale = QKT_ATTN_NONE, gc.qk_init = QKT_QK_INIT_UNIT;
    qkt_gpt u;
    EXPECT(qkt_gpt_init(&u, &gc, &err) == 0, "%s", err.msg);
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    qkt_gpt_init_weights(&u, &r);
    for (int k = 0; k < u.params.n; k++) {
        qkt_tensor *t = u.params.t[k];
        if (!strstr(t->name, "c_attn.weight")) continue;
        double s2 = 0, v2 = 0;
        int C = gc.n_embd;
        for (int i = 0; i < 2 * C * C; i++) s2 += (double)t->data[i] * t->data[i];
        for (int i = 2 * C * C; i < 3 * C * C; i++) v2 += (double)t->data[i] * t->data[i];
        EXPECT_NEAR(sqrt(s2 / (2.0 * C * C)), 1 / sqrt((double)C), 0.01);
        EXPECT_NEAR(sqrt(v2 / ((double)C * C)), 0.08, 0.005); /* W_v keeps init_std */
        /* W_v is drawn after W_q, W_k from the same stream: identical to the gpt2 init's */
        EXPECT(!memcmp(t->data + 2 * C * C, g[1].params.t[k]->data + 2 * C * C, (size_t)C * C * sizeof(qkt_real)), "W_v changed");
    }
    qkt_gpt_free(&u);
    for (int i = 0; i < 3; i++) qkt_gpt_free(&g[i]);
}

/* A run directory too long for the cells' file names is refused up front, never cut short. */
static void test_long_dir(void) {
    char dir[1200];
    memset(dir, 'd', sizeof dir - 1), dir[sizeof dir - 1] = 0;
    dir[0] = '/';
    qkt_err err;
    qkt_ablate_cfg c;
    EXPECT(qkt_ablate_check_dir(dir + (1199 - QKT_ABLATE_MAX_DIR), &err) == 0, "a %d-byte dir refused", QKT_ABLATE_MAX_DIR);
    EXPECT(qkt_ablate_check_dir(dir + (1199 - QKT_ABLATE_MAX_DIR - 1), &err) == -1 && strstr(err.msg, "at most 800"),
           "an %d-byte dir accepted: %s", QKT_ABLATE_MAX_DIR + 1, err.msg);
    EXPECT(qkt_ablate_load_config(dir, &c, &err) == -1 && strstr(err.msg, "its path is 1199 bytes"), "load: %s", err.msg);
    qkt_ablate_preset("quick", &c, &err);
    EXPECT(qkt_ablate_save_config(dir, &c, &err) == -1 && strstr(err.msg, "its path is 1199 bytes"), "save: %s", err.msg);
    /* a study whose directory fits but whose rerun's (DIR/robust/seed2) does not: refused
     * before any cell runs (and before the directory is made), not after the study's cells */
    char *fits = dir + (1199 - (QKT_ABLATE_MAX_DIR - 5)); /* relative: 795 bytes of 'd' */
    c.n_robust_seeds = 1, c.robust_seeds[0] = 2;
    qkt_ablate_status st = qkt_ablate_run_study(&c, fits, NULL, &err);
    EXPECT(st == QKT_ABLATE_ERR_CONFIG && strstr(err.msg, "robustness rerun seed 2: ") && strstr(err.msg, "its path is 808 bytes") &&
               !qkt_file_exists(fits),
           "a rerun directory too long: status %d, %s", (int)st, err.msg);
}

int main(void) {
    test_long_dir();
    test_qk_init_config();
    test_pairing();
    test_degenerate_run();
    return qkt_test_finish();
}
