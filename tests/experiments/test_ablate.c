/* qkt ablate end to end on a tiny configuration: the files it writes, the tidy CSV
 * schema, resume (finished cells are not rerun), qkt plot, and bad flags. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

static char out[1 << 16];

/* path := buf (n bytes) with bit 4 of byte `at` flipped (in buf too). */
static void flip_bit(const char *path, char *buf, size_t n, size_t at) {
    buf[at] ^= 0x10;
    FILE *f = fopen(path, "wb");
    EXPECT(f && fwrite(buf, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

/* A train cell's attention maps file: QKT_MAPS_INIT and QKT_MAPS_FINAL, F32 (L, H, T, T),
 * each row a causal probability distribution (zero right of the diagonal, sum 1). */
static void check_maps(const char *run, const char *id, int L, int H, int T) {
    char path[1024];
    qkt_cell_maps_path(run, id, path, sizeof path);
    qkt_safetensors st;
    qkt_err err;
    EXPECT(qkt_safetensors_read(path, &st, &err) == 0, "%s", err.msg);
    if (!st.t) return;
    EXPECT(st.n == 2 && qkt_safetensors_meta(&st, "cell") && !strcmp(qkt_safetensors_meta(&st, "cell"), id), "%s: %d tensors",
           path, st.n);
    EXPECT(st.checksummed, "%s: written without checksums", path);
    const char *names[2] = {QKT_MAPS_INIT, QKT_MAPS_FINAL};
    for (int k = 0; k < 2; k++) {
        const qkt_st_tensor *a = qkt_safetensors_find(&st, names[k]);
        EXPECT(a && a->dtype == QKT_ST_F32 && a->ndim == 4 && a->shape[0] == L && a->shape[1] == H && a->shape[2] == T &&
                   a->shape[3] == T, "%s: tensor %s missing or not F32 (%d, %d, %d, %d)", path, names[k], L, H, T, T);
        if (!a || a->numel != (int64_t)L * H * T * T) continue;
        qkt_real *p = malloc((size_t)a->numel * sizeof *p);
        EXPECT(qkt_st_tensor_to_real(a, p, a->numel, path, &err) == 0, "%s", err.msg);
        int bad = 0;
        for (int r = 0; r < L * H * T; r++) {
            const qkt_real *row = p + (size_t)r * T;
            const int i = r % T;
            double sum = 0;
            for (int j = 0; j < T; j++) {
                if (j > i && row[j] != 0) bad++;
                /* float32 softmax normalises by a reciprocal: a row with one visible key
                 * can hold 1 + 1 or 2 ulp (1.00000012, seen); the sum is checked below. */
                if (!(row[j] >= 0 && row[j] <= 1 + 4 * FLT_EPSILON)) bad++;
                sum += row[j];
            }
            if (fabs(sum - 1) > 1e-4) bad++;
        }
        EXPECT(bad == 0, "%s: %s has %d entries that are not causal probabilities", path, names[k], bad);
        free(p);
    }
    qkt_safetensors_free(&st);
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("ablate");
    char cmd[2048], path[1024];
    const char *tiny = "--variants sqrt_dk,none --d-k 8 --seeds 2 --steps 12 --eval-every 6 --lr-grid 1e-3,1e-1 "
                       "--lr-variants sqrt_dk,none --lr-steps 6 --lr-d-k 8 --init-d-k 4,16 --growth-d-k 4,8 --batch-size 8 --workers 2";
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "qkt ablate exited %d:\n%s", rc, out);
    const char *files[] = {"config.json", "metrics.csv", "summary.csv", "report.md", "init_logit_std.png", "init_entropy.png",
                           "init_jacobian.png", "loss_dk8.png", "acc_dk8.png", "entropy_dk8_L0.png", "lr_sensitivity.png",
                           "logit_growth.png", "attn_sqrt_dk.png", "attn_none.png"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/t/%s", tmp, files[i]);
        EXPECT(qkt_file_exists(path), "missing %s", path);
    }
    /* Tidy schema: header, 11 fields per row, known experiments, every planned run present. */
    snprintf(path, sizeof path, "%s/t/metrics.csv", tmp);
    qkt_table t;
    qkt_err err;
    EXPECT(qkt_table_load(path, &t, &err) == 0, "%s", err.msg);
    const char *runs[] = {"train_sqrt_dk_dk8_s0", "train_none_dk8_s1", "lr_none_dk8_lr0.1", "init_dk_dk16",
                          "growth_dk_dk4", "iid_sqrt_dmodel_dk16"};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        int found = 0;
        for (int k = 0; k < t.n_runs; k++) found |= !strcmp(t.runs[k].id, runs[i]);
        EXPECT(found, "run %s missing from metrics.csv", runs[i]);
    }
    /* Every run's id is qkt_cell_id of its own columns: one format, wherever an id is made. */
    for (int k = 0; k < t.n_runs; k++) {
        const qkt_run *u = &t.runs[k];
        int kind = 0;
        while (kind <= QKT_CELL_TRAIN2 && strcmp(qkt_cell_kind_name((qkt_cell_kind)kind), u->exp)) kind++;
        qkt_attn_scale v;
        char id[96] = "";
        if (kind <= QKT_CELL_TRAIN2 && !qkt_attn_scale_parse(u->variant, &v, &err))
            qkt_cell_id(id, sizeof id, (qkt_cell_kind)kind, v, u->d_k, u->seed, u->lr);
        EXPECT(!strcmp(id, u->id), "run %s (%s, %s, d_k %d, seed %d, lr %g): qkt_cell_id gives '%s'", u->id, u->exp, u->variant,
               u->d_k, u->seed, u->lr, id);
    }
    /* Every metric name in metrics.csv is one of the study's table, and the table round-trips. */
    for (int m = 0; m < t.n_metrics; m++)
        EXPECT(qkt_metric_parse(t.metrics[m]) < QKT_METRIC_COUNT, "metric '%s' is not in QKT_STUDY_METRICS", t.metrics[m]);
    for (int m = 0; m < QKT_METRIC_COUNT; m++)
        EXPECT(qkt_metric_parse(qkt_metric_name((qkt_metric)m)) == (qkt_metric)m, "metric %d: name '%s' is not unique", m,
               qkt_metric_name((qkt_metric)m));
    EXPECT(t.n_metrics == QKT_METRIC_COUNT, "metrics.csv has %d metric names, the table %d", t.n_metrics, QKT_METRIC_COUNT);
    int r0 = qkt_table_find_run(&t, "train", "sqrt_dk", 8, 0, 0);
    EXPECT(r0 >= 0, "train run not found");
    EXPECT(qkt_table_last_step(&t, r0, "train_loss") == 11, "train_loss should be logged at steps 0..11");
    EXPECT(qkt_table_last_step(&t, r0, "val_loss") == 12, "val_loss should be logged after the last step");
    EXPECT(isfinite(qkt_table_value(&t, r0, "entropy", 0, 1)), "per-layer entropy missing");
    /* the LR runs are also evaluated at every step up to lr_eval_dense (the preset's 20 covers all 6 here) */
    int rl = qkt_table_find_run(&t, "lr", "none", 8, 0, 0.1);
    double st[16], lv[16];
    int ne = rl >= 0 ? qkt_table_series(&t, rl, qkt_metric_name(QKT_METRIC_VAL_LOSS), -1, st, lv, 16) : -1;
    EXPECT(ne == 7 && st[1] == 1 && st[6] == 6, "lr run: %d evaluations (expected steps 0..6)", ne);
    qkt_table_free(&t);
    size_t n;
    char *rep = qkt_read_file(strcat(strcpy(path, tmp), "/t/report.md"), &n, &err);
    EXPECT(rep && strstr(rep, "## 1. At initialisation") && strstr(rep, "## 4. Logit growth") && strstr(rep, "What the numbers say"),
           "report sections missing");
    free(rep);

    /* Attention maps: the seed-0 train cells of the largest d_k, and no others. */
    snprintf(path, sizeof path, "%s/t", tmp);
    check_maps(path, "train_sqrt_dk_dk8_s0", 2, 2, 32);
    check_maps(path, "train_none_dk8_s0", 2, 2, 32);
    char maps[1024];
    qkt_cell_maps_path(path, "train_none_dk8_s1", maps, sizeof maps);
    EXPECT(!qkt_file_exists(maps), "%s: only seed 0 keeps maps", maps);

    /* Resume: remove one finished cell; a rerun recomputes only it. */
    snprintf(path, sizeof path, "%s/t/cells/train_none_dk8_s1.csv", tmp);
    EXPECT(remove(path) == 0, "cannot remove %s", path);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "resuming") && strstr(out, "already done, kept"), "resume failed (%d):\n%s", rc, out);
    EXPECT(qkt_file_exists(path), "the removed cell was not rerun");
    EXPECT(strstr(out, "1/") || strstr(out, "done"), "%s", out);

    /* A different configuration in the same directory is refused. */
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s --seed 5", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 2 && strstr(out, "different configuration") && strstr(out, "seed is \"1\" there, \"5\" here"), "(%d) %s", rc,
           out);
    /* a renamed run directory: the refusal names the field that differs (name) */
    char from[1100], to[1100];
    snprintf(from, sizeof from, "%s/t", tmp);
    snprintf(to, sizeof to, "%s/t_renamed", tmp);
    EXPECT(rename(from, to) == 0, "cannot rename %s", from);
    snprintf(cmd, sizeof cmd, "%s ablate --name t_renamed --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 2 && strstr(out, "name is \"t\" there, \"t_renamed\" here"), "renamed: (%d) %s", rc, out);
    EXPECT(rename(to, from) == 0, "cannot rename %s back", to);
    /* a key one side lacks (lr_eval_dense is left out of config.json while 0) is named either way */
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s --lr-eval-dense 0", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 2 && strstr(out, "lr_eval_dense is 20 there, missing here"), "dense 0: (%d) %s", rc, out);
    qkt_ablate_cfg saved;
    qkt_err cerr;
    EXPECT(qkt_ablate_load_config(from, &saved, &cerr) == 0, "%s", cerr.msg);
    saved.lr_eval_dense = 0; /* as a run made before the key existed */
    EXPECT(qkt_ablate_save_config(from, &saved, &cerr) == 0, "%s", cerr.msg);
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 2 && strstr(out, "lr_eval_dense is missing there, 20 here"), "older run: (%d) %s", rc, out);
    saved.lr_eval_dense = 20;
    EXPECT(qkt_ablate_save_config(from, &saved, &cerr) == 0, "%s", cerr.msg);

    /* config.json carries its CRC-32C: every bit flipped is refused, an edited value named as
     * such by qkt plot; a file without the key (a study made before it) loads as it is. */
    char cpath[1200];
    snprintf(cpath, sizeof cpath, "%s/config.json", from);
    size_t cn = 0;
    char *cj = qkt_test_read_file(cpath, &cn);
    EXPECT(cj && strstr(cj, "\"" QKT_ABLATE_CONFIG_CRC "\":"), "config.json has no %s key", QKT_ABLATE_CONFIG_CRC);
    int taken = 0, first = -1;
    for (size_t i = 0; cj && i < cn; i++)
        for (int bit = 0; bit < 8; bit += 5) {
            cj[i] ^= (char)(1 << bit);
            qkt_ablate_cfg back;
            if (qkt_ablate_parse_config(cj, cn, "flipped", &back, &cerr) == 0 && taken++ == 0) first = (int)i;
            cj[i] ^= (char)(1 << bit);
        }
    EXPECT(taken == 0, "%d flipped bits of config.json were loaded (the first at byte %d)", taken, first);
    char *legacy = qkt_ablate_config_json(&saved);
    qkt_ablate_cfg back;
    EXPECT(qkt_ablate_parse_config(legacy, strlen(legacy), "legacy", &back, &cerr) == 0 && back.run.tc.steps == saved.run.tc.steps,
           "a config.json without its CRC: %s", cerr.msg);
    char typo[8192]; /* a key qkt does not read (a misspelt one added by hand) */
    snprintf(typo, sizeof typo, "{\"sedes\": 3,%s", legacy + 1);
    EXPECT(qkt_ablate_parse_config(typo, strlen(typo), "legacy", &back, &cerr) != 0 && strstr(cerr.msg, "unknown key 'sedes'"),
           "a config.json with an unknown key: %s", cerr.msg);
    free(legacy);
    char *at = cj ? strstr(cj, "\"steps\":\t") : NULL;
    EXPECT(at != NULL, "no steps in config.json");
    if (at) {
        at[9] = at[9] == '9' ? '8' : (char)(at[9] + 1); /* steps edited by hand */
        FILE *f = fopen(cpath, "wb");
        EXPECT(f && fwrite(cj, 1, cn, f) == cn && fclose(f) == 0, "cannot write %s", cpath);
        snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), from);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 2 && strstr(out, "config.json: its CRC-32C is") && strstr(out, "edited or damaged"),
               "an edited config.json (%d): %s", rc, out);
        /* --report-only: refused alike, without pointing at qkt plot, which refuses it too */
        snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s --report-only", qkt_test_bin(), tmp, tiny);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 2 && strstr(out, "config.json: its CRC-32C is") && !strstr(out, "rebuilds its report"),
               "--report-only on an edited config.json (%d): %s", rc, out);
        EXPECT(qkt_ablate_save_config(from, &saved, &cerr) == 0, "%s", cerr.msg);
    }
    free(cj);

    /* qkt plot redraws from the CSV files. */
    snprintf(path, sizeof path, "%s/t/loss_dk8.png", tmp);
    remove(path);
    snprintf(cmd, sizeof cmd, "%s plot %s/t", qkt_test_bin(), tmp);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && qkt_file_exists(path), "qkt plot (%d): %s", rc, out);

    /* A run of an older qkt kept cells/<id>.maps: qkt plot says so, qkt ablate reruns the cell. */
    char run[1024], maps_new[1024], maps_old[1100];
    snprintf(run, sizeof run, "%s/t", tmp);
    qkt_cell_maps_path(run, "train_none_dk8_s0", maps_new, sizeof maps_new);
    snprintf(maps_old, sizeof maps_old, "%s/cells/train_none_dk8_s0.maps", run);
    EXPECT(rename(maps_new, maps_old) == 0, "cannot rename %s", maps_new);
    snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "train_none_dk8_s0.maps") && strstr(out, "rerun"), "qkt plot on old maps (%d): %s", rc, out);
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "1 finished cell has no attention maps to draw: rerunning") &&
               strstr(out, "train_none_dk8_s0.attn.safetensors is absent (the old .maps format is beside it)"),
           "rerun of old maps (%d): %s", rc, out);
    check_maps(run, "train_none_dk8_s0", 2, 2, 32);

    /* A bit flipped in a map: qkt plot names the file and the tensor and draws the rest. */
    size_t mn = 0;
    char *mb = qkt_test_read_file(maps_new, &mn);
    EXPECT(mb && mn > 64, "cannot read %s", maps_new);
    if (mb && mn > 64) {
        flip_bit(maps_new, mb, mn, mn - 5); /* in attn.final's last row */
        snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 0 && strstr(out, "train_none_dk8_s0.attn.safetensors: tensor 'attn.final' fails its checksum") &&
                   strstr(out, "skipped"),
               "qkt plot on a damaged map (%d): %s", rc, out);
        /* ... and qkt ablate computes that cell again */
        snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 0 && strstr(out, "1 finished cell has no attention maps to draw: rerunning") && strstr(out, "fails its checksum"),
               "rerun of a damaged map (%d): %s", rc, out);
        check_maps(run, "train_none_dk8_s0", 2, 2, 32);
    }
    free(mb);

    /* Another cell's maps copied over this one's (each sealed), or the file deleted: qkt plot
     * names it and leaves no heatmap of the variant beside the report (the one drawn before
     * would show other maps); qkt ablate computes the cell again. */
    char maps_other[1024], png[1100];
    qkt_cell_maps_path(run, "train_sqrt_dk_dk8_s0", maps_other, sizeof maps_other);
    snprintf(png, sizeof png, "%s/attn_none.png", run);
    for (int pass = 0; pass < 2; pass++) {
        size_t on = 0;
        char *ob = qkt_test_read_file(pass ? maps_new : maps_other, &on);
        if (pass) remove(maps_new);
        else {
            FILE *f = fopen(maps_new, "wb");
            EXPECT(ob && f && fwrite(ob, 1, on, f) == on && fclose(f) == 0, "cannot copy %s", maps_other);
        }
        free(ob);
        EXPECT(qkt_file_exists(png), "%s is missing before the test", png);
        snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
        rc = qkt_test_run(cmd, out, sizeof out);
        const char *said = pass ? "cells/train_none_dk8_s0.attn.safetensors is missing"
                                : "the maps of cell 'train_sqrt_dk_dk8_s0', not of 'train_none_dk8_s0', skipped";
        EXPECT(rc == 0 && strstr(out, said) && !qkt_file_exists(png), "qkt plot, pass %d (%d): %s", pass, rc, out);
        snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
        rc = qkt_test_run(cmd, out, sizeof out);
        said = pass ? "train_none_dk8_s0.attn.safetensors is absent)" : "the maps of cell 'train_sqrt_dk_dk8_s0', not of 'train_none_dk8_s0')";
        EXPECT(rc == 0 && strstr(out, "1 finished cell has no attention maps to draw: rerunning") && strstr(out, said) &&
                   qkt_file_exists(png),
               "qkt ablate, pass %d (%d): %s", pass, rc, out);
        check_maps(run, "train_none_dk8_s0", 2, 2, 32);
    }

    /* A missing cell (deleted, or a study stopped before it): qkt plot and --report-only
     * warn naming it, and report.md says so first and states the seeds it used (1 of 2),
     * rather than "2 seeds per cell" over 1. */
    snprintf(path, sizeof path, "%s/t/cells/train_none_dk8_s1.csv", tmp);
    EXPECT(remove(path) == 0, "cannot remove %s", path);
    snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "warning: 1 planned cell is missing or unfinished (train_none_dk8_s1)") &&
               strstr(out, "as few as 1 of 2"),
           "qkt plot with a cell missing (%d): %s", rc, out);
    char *md = qkt_test_read_file(qkt_test_path(run, "report.md"), NULL);
    EXPECT(md && strstr(md, "**Incomplete run: 1 planned cell is missing or unfinished** (train_none_dk8_s1)") &&
               strstr(md, "1 seed per cell (at least; cells are missing") && !strstr(md, "2 seeds per cell") &&
               strstr(md, "**Power with 1 seed.**"),
           "report.md with a cell missing does not say so");
    free(md);
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s --report-only", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "warning: 1 planned cell is missing") && strstr(out, "train_none_dk8_s1"),
           "--report-only with a cell missing (%d): %s", rc, out);

    /* FIFOs where the missing cell's log and progress go: the rerun replaces them (the open of
     * either blocked for ever, the parent in the spawn) and recomputes the cell. */
    const char *fifos[] = {"log", "progress"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/t/cells/train_none_dk8_s1.%s", tmp, fifos[i]);
        remove(path);
        EXPECT(mkfifo(path, 0644) == 0, "mkfifo %s", path);
    }
    snprintf(cmd, sizeof cmd, "timeout 300 %s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/t/cells/train_none_dk8_s1.csv", tmp);
    EXPECT(rc == 0 && qkt_file_exists(path), "rerun with FIFOs for a cell's log and progress (%d): %s", rc, out);

    /* Another cell's sealed file under this cell's name, and a sealed file of no rows: qkt plot
     * refuses naming the row, and the study's rerun recomputes both (they were taken as done) */
    char keep[1024], other[1024], emptyc[1024];
    snprintf(keep, sizeof keep, "%s/t/cells/train_none_dk8_s1.csv", tmp);
    snprintf(other, sizeof other, "%s/t/cells/train_none_dk8_s0.csv", tmp);
    snprintf(emptyc, sizeof emptyc, "%s/t/cells/train_sqrt_dk_dk8_s1.csv", tmp);
    size_t kn = 0, en = 0;
    char *kb = qkt_test_read_file(keep, &kn), *eb = qkt_test_read_file(emptyc, &en), *ob = qkt_test_read_file(other, NULL);
    EXPECT(kb && eb && ob, "cannot read the cells' files");
    if (kb && eb && ob) {
        FILE *cf = fopen(keep, "wb");
        if (cf) fputs(ob, cf), fclose(cf);
        cf = fopen(emptyc, "wb");
        if (cf) fputs("#end rows=0 crc32c=00000000\n", cf), fclose(cf);
        snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc != 0 && strstr(out, "holds a row of 'train_none_dk8_s0', not of train_none_dk8_s1") && !strstr(out, "report.md says so"),
               "qkt plot with another cell's file under a cell's name (%d): %s", rc, out);
        snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
        rc = qkt_test_run(cmd, out, sizeof out);
        size_t k2 = 0, e2 = 0;
        char *k2b = qkt_test_read_file(keep, &k2), *e2b = qkt_test_read_file(emptyc, &e2);
        EXPECT(rc == 0 && strstr(out, "holds no rows: rerunning") && k2b && k2 == kn && !memcmp(k2b, kb, kn) && e2b && e2 == en &&
                   !memcmp(e2b, eb, en),
               "the rerun recomputes both cells as they were (%d): %s", rc, out);
        free(k2b), free(e2b);
    }
    free(kb), free(eb), free(ob);

    /* A map without checksums (as an older qkt wrote) of a shape that is not the run's (L, H, T, T):
     * skipped with a line, not drawn from past its data (a [1, 1, 4096, 1] map crashed the plot) */
    const uint64_t hl = 160;
    char hdr[161];
    int hn = snprintf(hdr, sizeof hdr, "{\"attn.init\":{\"dtype\":\"F32\",\"shape\":[1,1,4096,1],\"data_offsets\":[0,16384]},"
                                       "\"attn.final\":{\"dtype\":\"F32\",\"shape\":[1,1,4096,1],\"data_offsets\":[16384,32768]}}");
    memset(hdr + hn, ' ', (size_t)(hl - hn)); /* padded to its 8-byte multiple */
    FILE *mf = fopen(maps_new, "wb");
    EXPECT(mf && hn < (int)hl, "cannot write %s", maps_new);
    if (mf) {
        static const float zeros[8192];
        fwrite(&hl, 8, 1, mf), fwrite(hdr, 1, hl, mf), fwrite(zeros, sizeof zeros, 1, mf), fclose(mf);
    }
    snprintf(cmd, sizeof cmd, "%s plot %s", qkt_test_bin(), run);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "train_none_dk8_s0.attn.safetensors: expected tensors") && strstr(out, "(L 2, H 2, T 32, T 32)") &&
               strstr(out, "skipped"),
           "qkt plot on a map of another shape (%d): %s", rc, out);
    /* ... and maps of the run's L and H at another T (another study's, with this cell's id) */
    hn = snprintf(hdr, sizeof hdr, "{\"attn.init\":{\"dtype\":\"F32\",\"shape\":[2,2,16,16],\"data_offsets\":[0,4096]},"
                                  "\"attn.final\":{\"dtype\":\"F32\",\"shape\":[2,2,16,16],\"data_offsets\":[4096,8192]}}");
    memset(hdr + hn, ' ', (size_t)(hl - hn));
    mf = fopen(maps_new, "wb");
    EXPECT(mf && hn < (int)hl, "cannot write %s", maps_new);
    if (mf) {
        static const float zeros[2048];
        fwrite(&hl, 8, 1, mf), fwrite(hdr, 1, hl, mf), fwrite(zeros, sizeof zeros, 1, mf), fclose(mf);
    }
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "(L 2, H 2, T 32, T 32)") && strstr(out, "skipped"), "qkt plot on maps of T 16 (%d): %s", rc, out);
    /* A directory where the maps go: qkt ablate keeps the finished cell and says what to remove
     * (the rerun's write would fail after its csv went); removed, the cell is computed again */
    char csv0[1100];
    snprintf(csv0, sizeof csv0, "%s/cells/train_none_dk8_s0.csv", run);
    EXPECT(remove(maps_new) == 0 && mkdir(maps_new, 0755) == 0, "cannot make a directory at %s", maps_new);
    snprintf(cmd, sizeof cmd, "%s ablate --name t --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc != 0 && strstr(out, "exists and is not a regular file: remove it, then rerun") &&
               qkt_file_exists(csv0),
           "a directory at a cell's maps (%d): %s", rc, out);
    EXPECT(rmdir(maps_new) == 0, "cannot remove %s", maps_new);
    rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0 && strstr(out, "1 finished cell has no attention maps to draw: rerunning"), "the rerun after the directory (%d): %s", rc, out);
    check_maps(run, "train_none_dk8_s0", 2, 2, 32);

    /* A directory that holds files but no study is not taken over (`--name ..` named the one above) */
    snprintf(path, sizeof path, "%s/foreign", tmp);
    EXPECT(mkdir(path, 0755) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/foreign/report.md", tmp);
    FILE *ff = fopen(path, "w");
    if (ff) fputs("mine\n", ff), fclose(ff);
    snprintf(cmd, sizeof cmd, "%s ablate --name foreign --out %s %s", qkt_test_bin(), tmp, tiny);
    rc = qkt_test_run(cmd, out, sizeof out);
    char *mine = qkt_test_read_file(path, NULL);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "holds files but no study") && mine && !strcmp(mine, "mine\n"),
           "a directory of other files as the study's (%d): %s", rc, out);
    free(mine);

    /* The "Reproduce:" line quotes what the shell would split or run: it reruns the study as typed */
    snprintf(cmd, sizeof cmd,
             "%s ablate --preset quick --variants sqrt_dk --seeds 1 --steps 4 --task2 none --lr-grid 0.003 --lr-variants sqrt_dk "
             "--lr-steps 2 --start-d-k 0 --init-d-k 4 --growth-d-k 4 --d-k 4 --lr-d-k 4 --out %s --name 'a b$(x)'\\''q'",
             qkt_test_bin(), tmp);
    rc = qkt_test_run(cmd, out, sizeof out);
    snprintf(path, sizeof path, "%s/a b$(x)'q/report.md", tmp);
    char *rmd = qkt_test_read_file(path, NULL);
    EXPECT(rc == 0 && rmd && strstr(rmd, "--name 'a b$(x)'\\''q'`"), "the Reproduce line of a name with a space, $( and ' (%d): %s",
           rc, out);
    free(rmd);

    /* Bad flags: one line, exit 2. */
    const char *bad[] = {"--variants sqrt_dk,bogus", "--d-k 0", "--seeds -1", "--lr -3", "--lr-grid 1e-3,x", "--preset huge",
                         "--steps", "--frobnicate 1", "--task nosuchtask", "--name ..", "--name .", "--d-k 16,,64",
                         "--variants sqrt_dk,", "--steps ' 5'"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s ablate --out %s/bad %s", qkt_test_bin(), tmp, bad[i]);
        rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 2 && strchr(out, '\n') == out + strlen(out) - 1, "'%s': exit %d, output:\n%s", bad[i], rc, out);
    }
    return qkt_test_finish();
}
