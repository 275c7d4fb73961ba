/* config.json is made from two tables (the field table's rows with a config.json key and
 * the study's own keys, interleaved by position): its keys stay in the order runs made
 * before the tables have (so a study's config.json is byte-identical), every preset reads
 * back to the same text, and each key is set by qkt_ablate_set, its bad text refused in
 * one line starting with the key. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_test.h"

static const char *const keys[] = {
    "name",  "preset", "task",   "task2",         "command",     "qk_init",      "norm",          "mlp",       "pos",
    "seq_len", "n_layer", "n_head", "batch_size", "steps",       "eval_every",   "eval_batches",  "warmup",    "lr",
    "min_lr_frac", "weight_decay", "grad_clip", "beta2", "attn_temp", "qk_init_mult", "init_std", "seeds", "lr_steps",
    "lr_dk", "lr_eval_every", "growth_steps", "growth_lr", "workers", "seed", "variants", "lr_variants", "d_k", "task2_d_k",
    "init_d_k", "growth_d_k", "lr_grid", "start_d_k", "lr_seeds", "task2_start_d_k", "final_eval_seqs",
    "lr_eval_dense"};
#define N_KEYS ((int)(sizeof keys / sizeof *keys))

int main(void) {
    const char *presets[] = {"quick", "full"};
    for (int p = 0; p < 2; p++) {
        qkt_ablate_cfg c, back;
        qkt_err err = {{0}};
        EXPECT(qkt_ablate_preset(presets[p], &c, &err) == 0 && qkt_ablate_validate(&c, &err) == 0, "%s: %s", presets[p], err.msg);
        char *js = qkt_ablate_config_json(&c);
        const char *at = js;
        int found = 0;
        for (int k = 0; k < N_KEYS; k++) {
            char pat[64];
            snprintf(pat, sizeof pat, "\n\t\"%s\":", keys[k]);
            const char *hit = strstr(at, pat);
            EXPECT(hit != NULL, "%s: key %s missing or out of order", presets[p], keys[k]);
            if (hit) at = hit + 1, found++;
        }
        int lines = 0;
        for (const char *q = js; *q; q++) lines += *q == '\n';
        EXPECT(found == N_KEYS && lines == N_KEYS + 1, "%s: %d keys in order, %d lines:\n%s", presets[p], found, lines, js);
        EXPECT(qkt_ablate_parse_config(js, strlen(js), "cfg", &back, &err) == 0, "%s", err.msg);
        char *again = qkt_ablate_config_json(&back);
        EXPECT(!strcmp(js, again), "%s does not read back to itself", presets[p]);
        free(js), free(again);
    }
    /* each key from text; bad text names the key */
    const char *good[][2] = {{"seq_len", "48"}, {"task", "recall"}, {"norm", "rmsnorm"}, {"seed", "9"}, {"d_k", "4,16"},
                             {"variants", "none,dk"}, {"lr_grid", "0.1"}, {"min_lr_frac", "0.5"}, {"workers", "3"}, {"task2", ""}};
    const char *bad[][2] = {{"seq_len", "1"}, {"n_layer", "65"}, {"norm", "batchnorm"}, {"seed", "-1"}, {"d_k", "4,0"},
                            {"variants", "cube"}, {"lr_grid", "0"}, {"min_lr_frac", "2"}, {"workers", "0"}, {"beta2", "1"}};
    qkt_ablate_cfg c;
    qkt_err err = {{0}};
    qkt_ablate_preset("quick", &c, &err);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        EXPECT(qkt_ablate_set(&c, good[i][0], good[i][1], &err) == 0, "%s=%s: %s", good[i][0], good[i][1], err.msg);
    EXPECT(c.run.tc.model.block_size == 48 && !strcmp(c.run.data, "recall") && c.run.tc.seed == 9 && c.n_dk == 2 && c.dks[1] == 16,
           "values not set");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        EXPECT(qkt_ablate_set(&c, bad[i][0], bad[i][1], &err) == -1 && !strncmp(err.msg, bad[i][0], strlen(bad[i][0])) &&
                   !strchr(err.msg, '\n'),
               "%s=%s: '%s'", bad[i][0], bad[i][1], err.msg);
    EXPECT(qkt_ablate_set(&c, "nosuch", "1", &err) == -1, "an unknown key is refused");
    return qkt_test_finish();
}
