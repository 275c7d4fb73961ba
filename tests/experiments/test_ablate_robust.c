/* The study's robustness reruns: which cells a rerun plans (those a verdict reads: no
 * GPT-at-init cells, no attention maps, every other cell of the study with its id), the
 * reruns' settings and directories, their config.json keys (absent while unset), and the
 * comparison rule of the findings table's "holds under" column on constructed verdicts. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_test.h"
#include "report_internal.h"

static void test_plan(void) {
    qkt_ablate_cfg c;
    qkt_err err = {{0}};
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    EXPECT(qkt_ablate_reruns(&c) == 0, "the quick preset asks for %d reruns, expected none", qkt_ablate_reruns(&c));
    EXPECT(qkt_ablate_set(&c, "robust_seeds", "2,3", &err) == 0 && qkt_ablate_set(&c, "robust_isa", "avx2", &err) == 0, "%s", err.msg);
    EXPECT(qkt_ablate_validate(&c, &err) == 0, "%s", err.msg);
    EXPECT(qkt_ablate_reruns(&c) == 3, "reruns %d, expected 3 (two seeds, one kernel path)", qkt_ablate_reruns(&c));
    static qkt_ablate_rerun r[3];
    const char *labels[] = {"seed2", "seed3", "isa_avx2"}, *titles[] = {"seed 2", "seed 3", "isa avx2"};
    const unsigned long long seeds[] = {2, 3, 1};
    for (int k = 0; k < 3; k++) {
        qkt_ablate_rerun_get(&c, k, &r[k]);
        EXPECT(!strcmp(r[k].label, labels[k]) && !strcmp(r[k].title, titles[k]), "rerun %d: label '%s', title '%s'", k, r[k].label, r[k].title);
        EXPECT((unsigned long long)r[k].cfg.run.tc.seed == seeds[k], "rerun %d: seed %llu, expected %llu", k,
               (unsigned long long)r[k].cfg.run.tc.seed, seeds[k]);
        EXPECT(!strcmp(r[k].isa, k == 2 ? "avx2" : ""), "rerun %d: kernel path '%s'", k, r[k].isa);
        EXPECT(r[k].cfg.verdict_cells_only == 1 && qkt_ablate_reruns(&r[k].cfg) == 0, "rerun %d asks for reruns of its own", k);
        EXPECT(qkt_ablate_validate(&r[k].cfg, &err) == 0, "rerun %d: %s", k, err.msg);
        char dir[256];
        qkt_ablate_rerun_dir("runs/quick", &r[k], dir, sizeof dir);
        char want[64];
        snprintf(want, sizeof want, "runs/quick/robust/%s", labels[k]);
        EXPECT(!strcmp(dir, want), "rerun %d: directory %s, expected %s", k, dir, want);
    }
    /* the rerun's plan: the study's cells but the GPT-at-init ones, none drawing maps */
    qkt_cell *main_plan, *plan;
    int n = qkt_ablate_plan(&c, &main_plan), m = qkt_ablate_plan(&r[0].cfg, &plan), n_init = 0, n_maps = 0;
    for (int i = 0; i < n; i++) n_init += main_plan[i].kind == QKT_CELL_INIT, n_maps += main_plan[i].maps;
    EXPECT(n_init > 0 && n_maps > 0, "the quick preset plans %d init cells, %d with maps", n_init, n_maps);
    EXPECT(m == n - n_init, "a rerun plans %d cells, expected the study's %d minus its %d init cells", m, n, n_init);
    for (int i = 0; i < m; i++) {
        EXPECT(plan[i].kind != QKT_CELL_INIT && !plan[i].maps, "rerun cell %s: init or maps", plan[i].id);
        bool in_main = false;
        for (int j = 0; j < n; j++) in_main |= !strcmp(plan[i].id, main_plan[j].id);
        EXPECT(in_main, "rerun cell %s is not a cell of the study", plan[i].id);
    }
    free(main_plan), free(plan);

    /* config.json: the keys are absent while unset (a study without reruns keeps its text),
     * present and read back when set */
    qkt_ablate_cfg q, back;
    qkt_ablate_preset("quick", &q, &err);
    char *js = qkt_ablate_config_json(&q);
    EXPECT(!strstr(js, "robust_") && !strstr(js, "verdict_cells_only"), "a study without reruns writes their keys:\n%s", js);
    free(js);
    js = qkt_ablate_config_json(&c);
    EXPECT(strstr(js, "\"robust_seeds\":") && strstr(js, "\"robust_isa\":\t\"avx2\""), "robust keys missing:\n%s", js);
    EXPECT(qkt_ablate_parse_config(js, strlen(js), "cfg", &back, &err) == 0, "%s", err.msg);
    EXPECT(back.n_robust_seeds == 2 && back.robust_seeds[1] == 3 && !strcmp(back.robust_isa, "avx2"), "robust keys do not read back");
    free(js);
    js = qkt_ablate_config_json(&r[2].cfg);
    EXPECT(strstr(js, "\"verdict_cells_only\":\t1") && !strstr(js, "robust_"), "a rerun's config.json:\n%s", js);
    free(js);

    /* refusals: the study's own seed, a seed twice, a name that is no kernel path's */
    qkt_ablate_set(&c, "robust_seeds", "1", &err);
    EXPECT(qkt_ablate_validate(&c, &err) == -1 && strstr(err.msg, "robust_seeds") && qkt_test_one_msg(err.msg), "seed 1 = the study's: '%s'", err.msg);
    EXPECT(qkt_ablate_set(&c, "robust_seeds", "2,2", &err) == -1 && !strncmp(err.msg, "robust_seeds", 12), "a seed twice: '%s'", err.msg);
    qkt_ablate_set(&c, "robust_seeds", "2", &err);
    qkt_ablate_set(&c, "robust_isa", "AVX/2", &err);
    EXPECT(qkt_ablate_validate(&c, &err) == -1 && !strncmp(err.msg, "robust_isa", 10), "robust_isa 'AVX/2': '%s'", err.msg);
}

static void test_rule(void) {
    const char *rep = qkt__verdict_name(QKT_V_REPRODUCED), *nd = qkt__verdict_name(QKT_V_NOT_DETECTABLE),
               *nt = qkt__verdict_name(QKT_V_UNTESTABLE);
    const char *titles[] = {"seed 2", "seed 3", "isa avx2"};
    bool d[3];
    char cell[512];
    { /* every rerun reaches the study's verdict */
        const char *got[] = {rep, rep, rep};
        EXPECT(qkt__robust_judge(rep, got, 3, d) == QKT__HOLDS && !d[0] && !d[1] && !d[2], "all agree: not robust");
        qkt__robust_cell(cell, sizeof cell, titles, rep, got, 3);
        EXPECT(!strcmp(cell, "holds under seed 2, seed 3, isa avx2"), "all agree: '%s'", cell);
    }
    { /* one differs: fragile, and the cell names it and what it reached */
        const char *got[] = {rep, nd, rep};
        EXPECT(qkt__robust_judge(rep, got, 3, d) == QKT__FRAGILE && !d[0] && d[1] && !d[2], "one differs: not fragile");
        qkt__robust_cell(cell, sizeof cell, titles, rep, got, 3);
        char want[200];
        snprintf(want, sizeof want, "**fragile**: seed 3 gives %s; holds under seed 2, isa avx2", nd);
        EXPECT(!strcmp(cell, want), "one differs: '%s', expected '%s'", cell, want);
    }
    { /* a text before the verdict is part of it */
        const char *got[] = {"reproduced (iid); GPT: reproduced"};
        EXPECT(qkt__robust_judge("reproduced (iid); GPT: not detectable at this size", got, 1, d) == QKT__FRAGILE, "row 2's GPT part ignored");
    }
    { /* not rerun: none has the row; some have it */
        const char *none[] = {NULL, NULL, NULL}, *some[] = {rep, NULL, NULL};
        EXPECT(qkt__robust_judge(rep, none, 3, d) == QKT__NOT_RERUN, "no rerun: judged");
        qkt__robust_cell(cell, sizeof cell, titles, rep, none, 3);
        EXPECT(!strcmp(cell, "not rerun"), "no rerun: '%s'", cell);
        EXPECT(qkt__robust_judge(rep, some, 3, d) == QKT__HOLDS, "one rerun agrees, two missing: not holding");
        qkt__robust_cell(cell, sizeof cell, titles, rep, some, 3);
        EXPECT(!strcmp(cell, "holds under seed 2; not rerun: seed 3, isa avx2"), "partly rerun: '%s'", cell);
        const char *miss_diff[] = {NULL, nd, NULL};
        EXPECT(qkt__robust_judge(rep, miss_diff, 3, d) == QKT__FRAGILE, "one differs, two missing: not fragile");
        qkt__robust_cell(cell, sizeof cell, titles, rep, miss_diff, 3);
        char want[200];
        snprintf(want, sizeof want, "**fragile**: seed 3 gives %s; not rerun: seed 2, isa avx2", nd);
        EXPECT(!strcmp(cell, want), "'%s', expected '%s'", cell, want);
    }
    { /* a "not testable" study verdict: it holds where the reruns cannot test either, and is
       * fragile where a rerun could (the seed, not the configuration, decided it) */
        const char *same[] = {nt, nt}, *tested[] = {nt, rep};
        EXPECT(qkt__robust_judge(nt, same, 2, d) == QKT__HOLDS, "not testable everywhere: not holding");
        EXPECT(qkt__robust_judge(nt, tested, 2, d) == QKT__FRAGILE && d[1], "not testable, a rerun reproduces: not fragile");
    }
}

int main(void) {
    test_plan();
    test_rule();
    return qkt_test_finish();
}
