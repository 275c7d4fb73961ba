/* The study's validation: every cell, whatever its seed, validates on the same sequences
 * (the study's seed's val stream), and its final evaluation covers final_eval_seqs of them
 * (metric val_seqs) while the periodic ones cover eval_batches x batch_size. Both presets
 * judge on at least 1024 sequences. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_data.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_test.h"
#include "qkt_trainer.h"
#include "report_cells.h"

#define NV 40 /* final_eval_seqs here: not a multiple of the batch (16) */

static qkt_cell cell_of(int seed) {
    qkt_cell c = {.kind = QKT_CELL_TRAIN, .variant = QKT_ATTN_SQRT_DK, .d_k = 8, .seed = seed, .steps = 2};
    qkt_cell_id(c.id, sizeof c.id, c.kind, c.variant, c.d_k, c.seed, 0);
    return c;
}

/* The value of `metric` at `step` in a cell's csv (NAN if absent); *n_rows: its rows. */
static double csv_value(const char *path, const char *metric, int step, int *n_rows) {
    size_t n;
    qkt_err err;
    char *text = qkt_read_file(path, &n, &err), want[64];
    EXPECT(text != NULL, "%s", err.msg);
    double v = NAN;
    *n_rows = 0;
    snprintf(want, sizeof want, ",%s,", metric);
    for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        char *m = strstr(line, want);
        if (!m) continue;
        (*n_rows)++;
        int commas = 0; /* run,experiment,variant,d_k,seed,lr,step,metric,... */
        char *p = line;
        for (; *p && commas < 6; p++) commas += *p == ',';
        if (atoi(p) == step) v = atof(strrchr(line, ',') + 1);
    }
    free(text);
    return v;
}

int main(void) {
    qkt_err err = {{0}};
    const char *presets[2] = {"quick", "full"};
    for (int p = 0; p < 2; p++) {
        qkt_ablate_cfg c;
        EXPECT(qkt_ablate_preset(presets[p], &c, &err) == 0, "%s", err.msg);
        EXPECT(c.final_eval_seqs >= 1024 && c.final_eval_seqs > c.run.eval_batches * c.run.tc.batch_size,
               "%s: final_eval_seqs %d", presets[p], c.final_eval_seqs);
    }
    qkt_ablate_cfg c, old;
    qkt_ablate_preset("quick", &c, &err);
    /* a config.json from before the key: the final evaluation was the last periodic one */
    char *json = qkt_ablate_config_json(&c);
    qkt_test_drop_json_key(json, "\"final_eval_seqs\"");
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "old", &old, &err) == 0 &&
               old.final_eval_seqs == old.run.eval_batches * old.run.tc.batch_size,
           "old config: %s, final_eval_seqs %d", err.msg, old.final_eval_seqs);
    free(json);
    const char *set[][2] = {{"steps", "2"}, {"eval_every", "1"}, {"eval_batches", "1"}, {"batch_size", "16"}, {"final_eval_seqs", "40"}};
    for (size_t i = 0; i < sizeof set / sizeof *set; i++)
        EXPECT(qkt_ablate_set(&c, set[i][0], set[i][1], &err) == 0, "%s: %s", set[i][0], err.msg);
    EXPECT(qkt_ablate_set(&c, "final_eval_seqs", "0", &err) == -1 && !strncmp(err.msg, "final_eval_seqs", 15), "0 refused: %s", err.msg);
    EXPECT(c.final_eval_seqs == NV, "final_eval_seqs %d", c.final_eval_seqs);

    /* two cells of different seeds: the same val sequences, different train batches */
    qkt_cell a = cell_of(0), b = cell_of(3);
    qkt_trainer ta, tb;
    EXPECT(qkt_ablate_cell_trainer(&c, &a, &ta, &err) == 0 && qkt_ablate_cell_trainer(&c, &b, &tb, &err) == 0, "%s", err.msg);
    const int T = ta.T;
    size_t n = (size_t)NV * T;
    int32_t *ia = malloc(n * sizeof *ia), *ya = malloc(n * sizeof *ya), *ib = malloc(n * sizeof *ib), *yb = malloc(n * sizeof *yb);
    qkt_data_reset(ta.data, QKT_SPLIT_VAL), qkt_data_reset(tb.data, QKT_SPLIT_VAL);
    qkt_data_batch(ta.data, QKT_SPLIT_VAL, NV, ia, ya, NULL), qkt_data_batch(tb.data, QKT_SPLIT_VAL, NV, ib, yb, NULL);
    EXPECT(!memcmp(ia, ib, n * sizeof *ia) && !memcmp(ya, yb, n * sizeof *ya), "seeds 0 and 3 validate on different sequences");
    qkt_data_batch(ta.data, QKT_SPLIT_TRAIN, NV, ia, ya, NULL), qkt_data_batch(tb.data, QKT_SPLIT_TRAIN, NV, ib, yb, NULL);
    EXPECT(memcmp(ia, ib, n * sizeof *ia) != 0, "seeds 0 and 3 train on the same sequences");
    /* the final evaluation's count: NV sequences of T/2 answers (induction), whatever the batch */
    qkt_eval e16 = {0}, e40 = {0}, e32 = {0};
    qkt_trainer_eval_seqs(&ta, NV, 16, &e16);
    qkt_trainer_eval_seqs(&ta, NV, NV, &e40);
    qkt_trainer_eval_seqs(&ta, 32, 16, &e32);
    EXPECT(e16.counted == (int64_t)NV * (T / 2) && e40.counted == e16.counted && e32.counted == 32 * (T / 2),
           "counted %lld, %lld, %lld", (long long)e16.counted, (long long)e40.counted, (long long)e32.counted);
    EXPECT_NEAR(e16.loss, e40.loss, 1e-5 * e40.loss);
    EXPECT(e32.loss != e16.loss, "32 and 40 sequences give the same loss %g", e16.loss);
    qkt_trainer_free(&ta), qkt_trainer_free(&tb);
    free(ia), free(ya), free(ib), free(yb);

    /* a cell writes val_seqs = final_eval_seqs once, at its final evaluation */
    const char *tmp = qkt_test_tmpdir("ablate_val");
    char cells[1024], csv[1024];
    snprintf(cells, sizeof cells, "%s/cells", tmp);
    EXPECT(qkt_mkdirs(cells, &err) == 0, "%s", err.msg);
    EXPECT(qkt_ablate_run_cell(tmp, &c, &a, &err) == 0, "%s", err.msg);
    snprintf(csv, sizeof csv, "%s/cells/%s.csv", tmp, a.id);
    int rows = 0, loss_rows = 0;
    double seqs = csv_value(csv, qkt_metric_name(QKT_METRIC_VAL_SEQS), 2, &rows);
    double fin = csv_value(csv, qkt_metric_name(QKT_METRIC_VAL_LOSS), 2, &loss_rows);
    EXPECT(seqs == NV && rows == 1, "val_seqs %g in %d rows", seqs, rows);
    EXPECT(loss_rows == 3 && isfinite(fin), "val_loss: %d rows, final %g", loss_rows, fin);
    return qkt_test_finish();
}
