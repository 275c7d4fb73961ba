/* The study's report: metrics.csv gathered from the cells, summary.csv, report.md
 * (its sections are in report_*.c, see report_internal.h) and the plots. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_data.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_sweep.h"
#include "report_internal.h"

/* ---------------------------------------------------------------- gather */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A cell file's rows are its own: each starts with the id its name gives (name minus
 * ".csv"); init_iid.csv alone holds the rows of several ids (the GPT-free part 1). */
static int rows_of(const char *text, size_t body, const char *name, char *why, size_t why_n) {
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)(strlen(name) - 4), name);
    return qkt_cell_rows_check(text, body, id, why, why_n);
}

int qkt__report_gather(const char *run_dir, qkt_err *err) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cells", run_dir);
    DIR *d = opendir(dir);
    if (!d) return qkt_err_set(err, "%s: cannot open (is %s a qkt ablate run?)", dir, run_dir);
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".csv")) continue;
        if (n == cap) cap = cap ? 2 * cap : 64, names = qkt_realloc(names, (size_t)cap * sizeof *names);
        names[n++] = qkt_strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_str); /* qsort(NULL, 0) is undefined */
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", qkt_metrics_header);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        size_t len, body;
        char *text = qkt_read_file(path, &len, err), why[200];
        if (!text) {
            rc = -1;
        } else if (qkt_cell_check(text, len, &body, why, sizeof why) != 0 || (strcmp(names[i], "init_iid.csv") &&
                                                                              rows_of(text, body, names[i], why, sizeof why))) {
            rc = qkt_err_set(err, "%s %s: rerun the qkt ablate command of this run to recompute it", path, why);
        } else {
            text[body] = 0; /* metrics.csv holds the rows, not the seals */
            qkt_buf_printf(&b, "%s", text);
        }
        free(text);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    char out[1024];
    snprintf(out, sizeof out, "%s/metrics.csv", run_dir);
    if (!rc) rc = qkt_write_atomic(out, b.s, b.n, err);
    qkt_buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- summary.csv */
static int write_summary(qkt__report *r) {
    const qkt_table *t = r->t;
    qkt_buf b = {0};
    qkt_buf_printf(&b, "run,experiment,variant,d_k,seed,lr,init_val_loss,final_val_loss,final_val_acc,final_train_loss,steps_to_90,"
                       "diverged_step,init_logit_std,init_norm_entropy,final_norm_entropy,final_logit_std,final_logit_max\n");
    for (int i = 0; i < t->n_runs; i++) {
        const qkt_run *u = &t->runs[i];
        if (!strcmp(u->exp, QKT_KIND(IID))) continue;
        int last = qkt_table_last_step(t, i, QKT_M(VAL_LOSS)), div = -1;
        qkt__report_diverged(t, i, &div);
        qkt_buf_printf(&b, "%s,%s,%s,%d,%d,%g,%.6g,%.6g,%.6g,%.6g,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", u->id, u->exp, u->variant, u->d_k, u->seed,
                       u->lr, qkt_table_value(t, i, QKT_M(VAL_LOSS), 0, -1), qkt_table_value(t, i, QKT_M(VAL_LOSS), last, -1),
                       qkt_table_value(t, i, QKT_M(VAL_ACC), last, -1), qkt__report_final_val(t, i, QKT_M(TRAIN_LOSS)), qkt__report_steps_to_90(t, i), div,
                       qkt_table_value(t, i, QKT_M(LOGIT_STD), 0, -1), qkt_table_value(t, i, QKT_M(NORM_ENTROPY), 0, -1),
                       qkt_table_value(t, i, QKT_M(NORM_ENTROPY), last, -1), qkt_table_value(t, i, QKT_M(LOGIT_STD), last, -1),
                       qkt_table_value(t, i, QKT_M(LOGIT_MAX), last, -1));
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/summary.csv", r->dir);
    int rc = qkt_write_atomic(path, b.s, b.n, r->err);
    qkt_buf_free(&b);
    return rc;
}

int qkt_ablate_missing(const char *run_dir, const qkt_ablate_cfg *c, char *ids_out, size_t ids_n, int *seeds_min) {
    qkt_cell *plan = NULL;
    qkt_buf b = {0}, *ids = &b;
    int n = qkt_ablate_plan(c, &plan), missing = 0;
    bool *done = qkt_calloc((size_t)n + 1, sizeof *done);
    for (int i = 0; i < n; i++) {
        char csv[1200];
        qkt_cell_paths(run_dir, plan[i].id, csv, NULL, NULL, sizeof csv);
        done[i] = qkt_cell_done_id(csv, plan[i].id, NULL, 0);
        if (done[i]) continue;
        if (missing < 8) qkt_buf_printf(ids, "%s%s", missing ? ", " : "", plan[i].id);
        missing++;
    }
    if (missing > 8) qkt_buf_printf(ids, ", ... (%d more)", missing - 8);
    /* the fewest seeds present in a training cell (variant, d_k): what its statistics use */
    int least = c->seeds;
    for (int i = 0; i < n; i++) {
        if (plan[i].kind != QKT_CELL_TRAIN) continue;
        int have = 0;
        for (int j = 0; j < n; j++)
            have += plan[j].kind == QKT_CELL_TRAIN && plan[j].variant == plan[i].variant && plan[j].d_k == plan[i].d_k && done[j];
        least = have < least ? have : least;
    }
    if (seeds_min) *seeds_min = least;
    if (ids_out && ids_n) snprintf(ids_out, ids_n, "%s", b.s ? b.s : "");
    qkt_buf_free(&b);
    free(done), free(plan);
    return missing;
}

double qkt__report_chance(const qkt_ablate_cfg *c) {
    double chance = NAN, acc;
    qkt_data *d;
    qkt_err de;
    qkt_data_opts o = {.seq_len = c->run.tc.model.block_size, .seed = c->run.tc.seed};
    if (qkt_data_open(&d, c->run.data, &o, &de) == 0) { /* the LR runs' "did not train" is measured against it */
        qkt_data_chance(d, &chance, &acc);
        qkt_data_free(d);
    }
    return chance;
}

int qkt_ablate_report(const char *run_dir, qkt_err *err) {
    qkt_ablate_cfg c;
    if (qkt_ablate_load_config(run_dir, &c, err) != 0) return -1;
    char missing_ids[1024];
    int seeds_used, n_missing = qkt_ablate_missing(run_dir, &c, missing_ids, sizeof missing_ids, &seeds_used);
    if (qkt__report_gather(run_dir, err) != 0) return -1;
    qkt_table t;
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
    if (qkt_table_load(path, &t, err) != 0) return -1;
    qkt__report r = {.c = &c, .t = &t, .dir = run_dir, .err = err, .chance = qkt__report_chance(&c), .seeds_used = seeds_used};
    qkt_buf_printf(&r.md, "# qkt ablation `%s`: why attention divides by sqrt(d_k)\n\n", c.name);
    qkt_buf_printf(&r.md, "Reproduce: `%s` (the full configuration is in `config.json`). "
                          "Redraw: `qkt plot %s`. Data: `metrics.csv` (tidy), `summary.csv` (one row per run).\n\n",
                   c.command, run_dir);
    if (n_missing) /* a study stopped early, a cell file deleted: said before any number */
        qkt_buf_printf(&r.md, "**Incomplete run: %d planned cell%s missing or unfinished** (%s). Their rows are absent from every "
                              "table, plot and test below, which use the seeds present (as few as %d of the %d planned per training "
                              "cell). Rerun the command above to compute them (finished cells are kept).\n\n",
                       n_missing, n_missing == 1 ? " is" : "s are", missing_ids, seeds_used, c.seeds);
    qkt__robust_load(&r); /* the reruns' verdicts, before the table that compares with them */
    /* The reading comes first in report.md but needs the parts' results (the growth
     * slopes): the parts are written to a second buffer, appended after it. */
    qkt__report_findings(&r);
    double s1 = NAN, s2 = NAN;
    qkt_buf md_head = r.md;
    r.md = (qkt_buf){0};
    qkt__report_part_init(&r);
    qkt__report_part_train(&r);
    qkt__report_part_stats(&r);
    qkt__report_part_task2(&r);
    qkt__report_part_maps(&r);
    qkt__report_part_lr(&r);
    qkt__report_part_growth(&r, &s1, &s2);
    qkt__report_part_efficiency(&r);
    qkt_buf body = r.md;
    r.md = md_head;
    qkt__report_reading(&r, s1, s2);
    qkt_buf_printf(&r.md, "%s", body.s ? body.s : "");
    qkt_buf_free(&body);
    int rc = write_summary(&r);
    snprintf(path, sizeof path, "%s/report.md", run_dir);
    if (!rc) rc = qkt_write_atomic(path, r.md.s, r.md.n, err);
    if (!rc) qkt__report_html(&r);
    qkt_buf_free(&r.md);
    qkt__robust_free(&r);
    qkt_table_free(&t);
    if (!rc && r.n_plots_failed) rc = qkt_err_set(err, "%d plots could not be written", r.n_plots_failed);
    return rc;
}
