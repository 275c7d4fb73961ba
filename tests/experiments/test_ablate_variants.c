/* qkt ablate on the newer scale variants: a tiny study over sqrt_dk,
 * power:0.75 (a family member named on the command line), cosine and sigma_reparam, on
 * models with --norm rmsnorm --mlp swiglu --pos rope, runs, keeps the names through config.json, cell ids, metrics.csv and the report,
 * and refuses a bad family argument with one line. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_test.h"

static char out[1 << 16];

int main(void) {
    const char *tmp = qkt_test_tmpdir("ablate_variants");
    char cmd[2048], path[1024];
    const char *tiny = "--variants sqrt_dk,power:0.75,cosine,sigma_reparam --d-k 4 --seeds 2 --steps 12 --eval-every 6 "
                       "--lr-grid 1e-3,1e-2 --lr-variants power:0.75,sigma_reparam --lr-steps 6 --lr-d-k 4 --init-d-k 4,8 "
                       "--growth-d-k 4,8 --batch-size 8 --seq-len 16 --n-layer 1 --workers 2 --norm rmsnorm --mlp swiglu --pos rope";
    snprintf(cmd, sizeof cmd, "%s ablate --name v --out %s %s", qkt_test_bin(), tmp, tiny);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "qkt ablate exited %d:\n%s", rc, out);

    qkt_ablate_cfg c;
    qkt_err err;
    snprintf(path, sizeof path, "%s/v", tmp);
    EXPECT(qkt_ablate_load_config(path, &c, &err) == 0, "%s", err.msg);
    const char *want[] = {"sqrt_dk", "power:0.75", "cosine", "sigma_reparam"};
    EXPECT(c.n_variants == 4, "%d variants in config.json", c.n_variants);
    EXPECT(c.run.tc.model.norm == QKT_NORM_RMSNORM && c.run.tc.model.mlp == QKT_MLP_SWIGLU && c.run.tc.model.pos == QKT_POS_ROPE, "model options in config.json");
    for (int i = 0; i < 4 && i < c.n_variants; i++)
        EXPECT(!strcmp(qkt_attn_scale_name(c.variants[i]), want[i]), "variant %d: %s", i, qkt_attn_scale_name(c.variants[i]));

    snprintf(path, sizeof path, "%s/v/metrics.csv", tmp);
    qkt_table t;
    EXPECT(qkt_table_load(path, &t, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        int r = qkt_table_find_run(&t, "train", want[i], 4, 1, 0);
        EXPECT(r >= 0, "train run of %s missing", want[i]);
        if (r >= 0) EXPECT(qkt_table_last_step(&t, r, "val_loss") == 12, "%s: val_loss not logged after the last step", want[i]);
    }
    EXPECT(qkt_table_find_run(&t, "lr", "sigma_reparam", 4, 0, 1e-2) >= 0, "lr run of sigma_reparam missing");
    qkt_table_free(&t);
    size_t n;
    snprintf(path, sizeof path, "%s/v/report.md", tmp);
    char *rep = qkt_read_file(path, &n, &err);
    EXPECT(rep && strstr(rep, "power:0.75") && strstr(rep, "sigma_reparam") && strstr(rep, "(./attn_power:0.75.png)"),
           "report lacks the variants");
    free(rep);

    const char *bad[] = {"--variants sqrt_dk,power:x", "--variants power", "--lr-variants cosine:2", "--norm batchnorm",
                         "--pos rope --d-k 5", "--mlp relu"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s ablate --out %s/bad %s", qkt_test_bin(), tmp, bad[i]);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 2 && strchr(out, '\n') == out + strlen(out) - 1, "'%s': exit %d, output:\n%s", bad[i], rc, out);
    }
    return qkt_test_finish();
}
