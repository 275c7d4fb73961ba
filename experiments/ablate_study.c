/* The study in one call (qkt_ablate_run_study): the checks, the run directory's lock,
 * the resume check, the run and the report that `qkt ablate` and a program's own study
 * share; and one cell by its id, in a `qkt _cell` process or a forked child. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablate_internal.h"
#include "qkt_data.h"
#include "qkt_dist.h"
#include "qkt_io.h"

int qkt_ablate_run_cell_id(const char *run_dir, const char *id, qkt_err *err) {
    qkt_ablate_cfg c;
    if (qkt_ablate_load_config(run_dir, &c, err) != 0) return -1;
    qkt_set_threads(1); /* the cells run side by side, one thread each */
    qkt_cell *plan;
    int n = qkt_ablate_plan(&c, &plan), found = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(plan[i].id, id)) found = i;
    int rc = found < 0 ? qkt_err_set(err, "no cell '%s' in %s/config.json", id, run_dir) : qkt_ablate_run_cell(run_dir, &c, &plan[found], err);
    free(plan);
    return rc;
}

int qkt__ablate_cell_in_child(const char *run_dir, const char *id, qkt_err *err, void *user) {
    (void)user;
    return qkt_ablate_run_cell_id(run_dir, id, err);
}

int qkt_ablate_check_tasks(const qkt_ablate_cfg *c, qkt_err *err) {
    const char *key[] = {"task", "task2"}, *spec[] = {c->run.data, c->task2};
    qkt_data_opts dop = {.seq_len = c->run.tc.model.block_size, .seed = c->run.tc.seed};
    for (int i = 0; i < 2 && spec[i][0]; i++) {
        qkt_data *probe;
        qkt_err e2;
        if (qkt_data_open(&probe, spec[i], &dop, &e2) != 0) return qkt_err_set(err, "%s: %s", key[i], e2.msg);
        qkt_data_free(probe);
    }
    return 0;
}

/* The job's status (qkt_dist_agree): a rank whose own step passed says another refused. */
static qkt_ablate_status agree(qkt_ablate_status st, qkt_err *err) {
    qkt_ablate_status all = (qkt_ablate_status)qkt_dist_agree((int)st);
    if (all && !st) qkt_err_set(err, "another rank of the job stopped the study (rank 0 says why)");
    return all;
}

/* Does dir exist with anything in it but a lock and config.json's temp files (all a study
 * killed before its config.json leaves)? Its files are not a study's: `--name ..` named the
 * directory above. */
static bool foreign_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false; /* absent: made below */
    bool any = false;
    for (struct dirent *e; !any && (e = readdir(d));)
        any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, QKT_LOCK_NAME) &&
              strncmp(e->d_name, "config.json.tmp.", 16);
    closedir(d);
    return any;
}

/* After the lock: the resume check, config.json, the cells, the report. */
static qkt_ablate_status locked(const qkt_ablate_cfg *c, const char *run_dir, const qkt_ablate_study_opts *o, qkt_err *err) {
    const bool lead = qkt_dist_rank() == 0;
    qkt_ablate_status st = QKT_ABLATE_OK;
    bool resuming = false;
    if (lead && qkt_ablate_check_resume(run_dir, c, &resuming, err) != 0) {
        st = QKT_ABLATE_ERR_OTHER;
        qkt_ablate_cfg own;
        qkt_err e2;
        if (o->report_only && qkt_ablate_load_config(run_dir, &own, &e2) == 0) { /* the run is there, and another: its own configuration rebuilds its report */
            char m[QKT_ERR_LEN];
            snprintf(m, sizeof m, "%s", err->msg);
            qkt_err_set(err, "%.700s (qkt plot %.300s rebuilds its report from its own config.json)", m, run_dir);
        }
    }
    if (!st && resuming && o->verbose) qkt_logf(QKT_LOG_INFO, "qkt ablate: resuming %s (finished cells are kept)", run_dir);
    if (lead && !st && qkt_ablate_start(run_dir, c, err) != 0) st = QKT_ABLATE_ERR_DIR;
    if ((st = agree(st, err)) != QKT_ABLATE_OK) return st;
    if (!o->report_only && qkt_ablate_run(run_dir, o->exe, o->verbose, o->stop, err) != 0)
        return o->stop && *o->stop ? QKT_ABLATE_STOPPED : QKT_ABLATE_ERR_RUN;
    if (lead && qkt_ablate_report(run_dir, err) != 0) return QKT_ABLATE_ERR_REPORT; /* rank 0 writes it */
    return QKT_ABLATE_OK;
}

/* A forked cell keeps this process's kernel path (chosen once per process): another path
 * needs cells started from a program file, whose QKT_ISA the sweep sets (opts.exe). */
static int forked_isa(const qkt_ablate_cfg *c, qkt_err *err) {
    return qkt_err_set(err, "robust_isa %s: forked cells run on this process's kernel path; give opts.exe (the "
                            "program the cells run as) for a rerun on another path", c->robust_isa);
}

/* Each robustness rerun's directory, below run_dir, within QKT_ABLATE_MAX_DIR: checked before
 * the study's cells run, not after them. */
static int rerun_dirs_fit(const qkt_ablate_cfg *c, const char *run_dir, qkt_err *err) {
    qkt_ablate_rerun *x = qkt_malloc(sizeof *x);
    int rc = 0;
    for (int k = 0; k < qkt_ablate_reruns(c) && !rc; k++) {
        char dir[QKT_ABLATE_MAX_DIR + 200];
        qkt_ablate_rerun_get(c, k, x);
        qkt_ablate_rerun_dir(run_dir, x, dir, sizeof dir);
        if (qkt_ablate_check_dir(dir, err) != 0) {
            qkt_err tmp = *err;
            rc = qkt_err_set(err, "robustness rerun %s: %s", x->title, tmp.msg);
        }
    }
    free(x);
    return rc;
}

qkt_ablate_status qkt_ablate_run_study(const qkt_ablate_cfg *c, const char *run_dir, const qkt_ablate_study_opts *opts,
                                       qkt_err *err) {
    static const qkt_ablate_study_opts quiet = {0};
    const qkt_ablate_study_opts *o = opts ? opts : &quiet;
    const bool lead = qkt_dist_rank() == 0;
    qkt_ablate_status st = QKT_ABLATE_OK;
    if (qkt_ablate_validate(c, err) || qkt_ablate_check_tasks(c, err) || qkt_ablate_check_dir(run_dir, err) ||
        rerun_dirs_fit(c, run_dir, err) ||
        (c->robust_isa[0] && !o->exe && !o->report_only && forked_isa(c, err)))
        st = (qkt__err_call(err, "qkt_ablate_run_study"), QKT_ABLATE_ERR_CONFIG);
    if ((st = agree(st, err)) != QKT_ABLATE_OK) return st;
    qkt_lock lk = {.fd = -1};
    char cfg[1100];
    snprintf(cfg, sizeof cfg, "%s/config.json", run_dir);
    if (lead && o->report_only && !qkt_file_exists(cfg)) /* nothing to report: leave no directory behind */
        st = (qkt_err_set(err, "%s holds no study (no config.json): nothing to report; run without --report-only to start one",
                          run_dir),
              QKT_ABLATE_ERR_OTHER);
    else if (lead && !o->report_only && !qkt_file_exists(cfg) && foreign_files(run_dir))
        st = (qkt_err_set(err, "%s holds files but no study (no config.json): a study is not written over them; pick another "
                          "--name or --out", run_dir),
              QKT_ABLATE_ERR_DIR);
    else if (lead && qkt_mkdirs(run_dir, err) != 0) st = QKT_ABLATE_ERR_DIR;
    else if (lead && qkt_dir_lock(&lk, run_dir, err) != 0) st = QKT_ABLATE_ERR_LOCKED;
    if ((st = agree(st, err)) == QKT_ABLATE_OK) st = locked(c, run_dir, o, err);
    qkt_dir_unlock(&lk);
    return st;
}
