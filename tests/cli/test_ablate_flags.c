/* Every setting of the study has a flag: the optimiser and schedule settings
 * (warmup, min-lr-frac, weight-decay, grad-clip, beta2), eval-batches and the growth
 * check's steps and LR reach config.json, zero where zero means "off"; bad values are
 * refused with exit 2 naming the setting; --help shows both presets' values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

static char out[1 << 16];

/* The number after "key": in a config.json text, or NaN. */
static double json_num(const char *js, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = js ? strstr(js, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("ablate_flags");
    const char *study = "--variants sqrt_dk --d-k 8 --seeds 1 --steps 3 --lr-grid 0.001 --lr-variants sqrt_dk "
                        "--lr-steps 2 --init-d-k 4 --growth-d-k 8 --task2 none --workers 1";
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s ablate %s --name t --out %s --warmup 0 --min-lr-frac 0 --weight-decay 0 --grad-clip 0 "
             "--beta2 0.99 --eval-batches 3 --growth-steps 2 --growth-lr 0.02", qkt_test_bin(), study, tmp);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "exit %d: %s", rc, out);
    char *js = qkt_test_read_file(qkt_test_path(tmp, "t/config.json"), NULL);
    EXPECT(js != NULL, "no config.json");
    struct { const char *key; double want; } kv[] = {{"warmup", 0}, {"min_lr_frac", 0}, {"weight_decay", 0}, {"grad_clip", 0},
                                                     {"beta2", 0.99}, {"eval_batches", 3}, {"growth_steps", 2}, {"growth_lr", 0.02}};
    for (size_t i = 0; i < sizeof kv / sizeof *kv; i++)
        EXPECT(json_num(js, kv[i].key) == kv[i].want, "config.json %s = %g, expected %g", kv[i].key, json_num(js, kv[i].key), kv[i].want);
    free(js);

    /* bad values: one line naming the setting, exit 2, no run directory */
    const char *bad[][2] = {{"--beta2 1", "beta2"},           {"--min-lr-frac 2", "min-lr-frac"}, {"--warmup -1", "warmup"},
                            {"--grad-clip -1", "grad-clip"}, {"--weight-decay nan", "weight-decay"}, {"--eval-batches 0", "eval-batches"},
                            {"--growth-lr 0", "growth-lr"},  {"--growth-steps x", "growth-steps"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s ablate %s --name bad%zu --out %s %s", qkt_test_bin(), study, i, tmp, bad[i][0]);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 2 && strstr(out, bad[i][1]), "%s: exit %d: %s", bad[i][0], rc, out);
        EXPECT(strchr(out, '\n') == out + strlen(out) - 1, "%s: expected one line, got: %s", bad[i][0], out);
    }

    /* --help: both presets' values of the new settings */
    snprintf(cmd, sizeof cmd, "%s ablate --help", qkt_test_bin());
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "The presets (flag: quick | full)") && strstr(out, "steps            200 | 500") &&
               strstr(out, "--weight-decay") && strstr(out, "warmup           20 | 20"),
           "--help lacks the preset table or a flag: %.600s", out);
    return qkt_test_finish();
}
