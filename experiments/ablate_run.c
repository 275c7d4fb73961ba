/* Running a study in a run directory: the resume check, the cost model behind the ETA,
 * and the sweep of part 1 and the cells. `qkt ablate` only parses flags around these. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablate_internal.h"
#include "qkt_dist.h"
#include "qkt_io.h"
#include "qkt_study.h"
#include "qkt_sweep.h"

/* The refusal of a different study: names the first field of config.json that differs
 * (one of the run's that differs or is missing here, else one only this configuration has). */
static int first_difference(const char *then_s, const char *now_s, const char *run_dir, qkt_err *err) {
    cJSON *then = cJSON_Parse(then_s), *now = cJSON_Parse(now_s);
    const cJSON *x = then ? then->child : NULL, *y = NULL; /* x: the run's key, y: the same key here (NULL: missing) */
    for (; x; x = x->next)
        if (!(y = cJSON_GetObjectItemCaseSensitive(now, x->string)) || !cJSON_Compare(x, y, true)) break;
    if (!x) { /* every key of the run's is the same here: one only this configuration has */
        y = now ? now->child : NULL;
        while (y && cJSON_GetObjectItemCaseSensitive(then, y->string)) y = y->next;
    }
    const char *key = x ? x->string : y ? y->string : NULL;
    char *vx = x ? cJSON_PrintUnformatted(x) : NULL, *vy = y ? cJSON_PrintUnformatted(y) : NULL;
    if (key)
        qkt_err_set(err, "%s holds a run with a different configuration: %s is %.200s there, %.200s here; use --name NEW or "
                         "remove it", run_dir, key, vx ? vx : "missing", vy ? vy : "missing");
    else
        qkt_err_set(err, "%s holds a run with a different configuration; use --name NEW or remove it", run_dir);
    cJSON_free(vx), cJSON_free(vy);
    cJSON_Delete(then), cJSON_Delete(now);
    return -1;
}

int qkt_ablate_check_resume(const char *run_dir, const qkt_ablate_cfg *c, bool *resuming, qkt_err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    *resuming = qkt_file_exists(path);
    if (!*resuming) return 0;
    /* The same study means the same config.json text once the settings that do not
     * change results (workers: a machine setting; the command as typed; the reruns asked
     * for, which have directories of their own) are equal. */
    qkt_ablate_cfg old;
    if (qkt_ablate_load_config(run_dir, &old, err) != 0) return -1;
    old.workers = c->workers;
    memcpy(old.command, c->command, sizeof c->command);
    old.n_robust_seeds = c->n_robust_seeds; /* reruns may be added to a finished study */
    memcpy(old.robust_seeds, c->robust_seeds, sizeof c->robust_seeds);
    memcpy(old.robust_isa, c->robust_isa, sizeof c->robust_isa);
    char *a = qkt_ablate_config_json(&old), *b = qkt_ablate_config_json(c);
    int rc = strcmp(a, b) ? first_difference(a, b, run_dir, err) : 0;
    free(a), free(b);
    return rc;
}

int qkt_ablate_start(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err) {
    if (qkt_mkdirs(run_dir, err) != 0) return -1;
    return qkt_ablate_save_config(run_dir, c, err);
}

double qkt_ablate_cell_cost(const qkt_ablate_cfg *c, const qkt_cell *cell) {
    /* A step costs about width^2 (the projections and MLP) + T x width (attention) per
     * token; the constant 64 and the two extra evaluations only shape the ETA. */
    double width = (double)c->run.tc.model.n_head * cell->d_k;
    return (cell->steps + 2.0) * (width * width + 64.0 * c->run.tc.model.block_size * width) / 1e6;
}

/* The sweep of every planned cell, as separate `qkt _cell` processes (on kernel path isa,
 * NULL: this process's). */
static int run_cells(const char *run_dir, const qkt_ablate_cfg *c, const char *exe, const char *isa, bool verbose,
                     const volatile sig_atomic_t *stop, qkt_err *err) {
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan);
    const bool lead = qkt_dist_rank() == 0; /* an MPI job: rank 0 tidies the directory */
    char first[700];
    int stale = lead ? qkt_ablate_forget_bad_maps(run_dir, c, plan, n, first, sizeof first, err) : 0;
    if (stale < 0) return free(plan), -1;
    if (stale && verbose)
        qkt_logf(QKT_LOG_WARN, "qkt ablate: %d finished cell%s no attention maps to draw: rerunning (the first: %s)", stale,
                 stale == 1 ? " has" : "s have", first);
    /* Temp files of cells killed mid-write (the caller holds the run's lock). */
    qkt_buf gone = {0};
    for (int i = 0; i < n && lead; i++) {
        char path[1100];
        qkt_cell_paths(run_dir, plan[i].id, path, NULL, NULL, sizeof path);
        qkt_remove_stale_temps(path, &gone, NULL);
        qkt_cell_maps_path(run_dir, plan[i].id, path, sizeof path);
        qkt_remove_stale_temps(path, &gone, NULL);
        qkt_cell_cost_path(run_dir, plan[i].id, path, sizeof path);
        qkt_remove_stale_temps(path, &gone, NULL);
    }
    if (gone.n && verbose) qkt_logf(QKT_LOG_INFO, "qkt ablate: removed temp files of stopped cells: %s", gone.s);
    qkt_buf_free(&gone);
    const char **ids = qkt_malloc((size_t)n * sizeof *ids);
    double *w = qkt_malloc((size_t)n * sizeof *w);
    int n_start = 0;
    for (int i = 0; i < n; i++) ids[i] = plan[i].id, w[i] = qkt_ablate_cell_cost(c, &plan[i]), n_start += plan[i].kind == QKT_CELL_START || plan[i].kind == QKT_CELL_START2;
    if (verbose && c->verdict_cells_only)
        qkt_logf(QKT_LOG_INFO, "qkt ablate: %d cells that carry verdicts, %d side by side", n, c->workers);
    else if (verbose)
        qkt_logf(QKT_LOG_INFO, "qkt ablate: parts 1-4, %d cells (init %d d_k x %d variants, train %d variants x %d d_k x %d seeds, "
                               "second task %d d_k, form x start %d, lr %d x %d x %d seeds, growth %d x %d), %d side by side with one thread each",
                 n, c->n_init_dk, QKT_STUDY_N_FIXED, c->n_variants, c->n_dk, c->seeds, c->task2[0] ? c->n_task2_dk : 0, n_start, c->n_lr_variants,
                 c->n_lr, c->lr_seeds, c->n_growth_dk, QKT_STUDY_N_GROWTH, c->workers);
    qkt_sweep s = {exe, run_dir, c->workers, n, ids, w, verbose, stop, qkt_dist_size() > 1, isa,
                   exe ? NULL : qkt__ablate_cell_in_child, NULL, true};
    qkt_sweep_result res;
    int rc = qkt_sweep_run(&s, &res, err);
    if (rc) {
        qkt_err tmp = *err;
        qkt_err_set(err, "%s; rerun the same command to retry them", tmp.msg);
    }
    free(ids);
    free(w);
    free(plan);
    return rc;
}

/* In an MPI job: every rank learns whether every rank can go on (rank 0 did part 1; the
 * others read the config it wrote, which needs a directory every host sees). */
static int agree(int rc, qkt_err *err) {
    const int n = qkt_dist_size();
    if (n < 2) return rc;
    struct {
        int rc;
        char msg[600];
    } mine = {rc, ""}, *all = qkt_malloc((size_t)n * sizeof *all);
    if (rc) snprintf(mine.msg, sizeof mine.msg, "%.590s", err->msg);
    qkt_dist_allgather(&mine, all, sizeof mine);
    rc = 0;
    for (int r = 0; r < n && !rc; r++) {
        if (!all[r].rc) continue;
        rc = -1;
        if (r) qkt_err_set(err, "rank %d (on another host?): %s", r, all[r].msg);
        else if (qkt_dist_rank()) qkt_err_set(err, "%s", all[r].msg);
    }
    free(all);
    return rc;
}

/* The reruns c asks for, one after the other, each like the study: its directory and
 * config.json (a different one there is refused, as the study's is), part 1, its cells. */
static int run_reruns(const char *run_dir, const qkt_ablate_cfg *c, const char *exe, bool verbose, const volatile sig_atomic_t *stop,
                      qkt_err *err) {
    const int n = qkt_ablate_reruns(c);
    const bool lead = qkt_dist_rank() == 0;
    if (c->robust_isa[0] && qkt_isa_check(c->robust_isa, err) != 0) {
        qkt_err tmp = *err;
        return qkt_err_set(err, "robust_isa: %s", tmp.msg);
    }
    qkt_ablate_rerun *r = qkt_malloc(sizeof *r);
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        qkt_ablate_rerun_get(c, k, r);
        char dir[1100], cells[1200];
        qkt_ablate_rerun_dir(run_dir, r, dir, sizeof dir);
        snprintf(cells, sizeof cells, "%s/cells", dir);
        bool resuming = false;
        if (lead) {
            if (verbose) qkt_logf(QKT_LOG_INFO, "qkt ablate: robustness rerun %d of %d (%s) in %s", k + 1, n, r->title, dir);
            if (qkt_ablate_check_resume(dir, &r->cfg, &resuming, err) || qkt_ablate_start(dir, &r->cfg, err) || qkt_mkdirs(cells, err) ||
                qkt_ablate_init_iid(dir, &r->cfg, err))
                rc = -1;
        }
        if (qkt_dist_size() > 1) {
            qkt_dist_bcast(&rc, sizeof rc, 0);
            if (rc && !lead) rc = qkt_err_set(err, "rank 0 stopped before the rerun's cells (it says why)");
        }
        if (!rc) rc = run_cells(dir, &r->cfg, exe, r->isa[0] ? r->isa : NULL, verbose, stop, err);
    }
    free(r);
    return rc;
}

int qkt_ablate_run(const char *run_dir, const char *exe, bool verbose, const volatile sig_atomic_t *stop, qkt_err *err) {
    qkt_ablate_cfg c;
    char cells[1100];
    snprintf(cells, sizeof cells, "%s/cells", run_dir);
    const bool lead = qkt_dist_rank() == 0;
    int rc = 0;
    if (lead) { /* part 1 (in this process) is rank 0's in an MPI job; the others wait */
        rc = qkt_ablate_load_config(run_dir, &c, err) || qkt_mkdirs(cells, err) ? -1 : 0; /* what the cells will see */
        if (!rc && qkt__ablate_peak_for_cells(run_dir, &c, err) != 0) rc = -1; /* the efficiency's denominator */
        if (!rc && verbose) qkt_logf(QKT_LOG_INFO, "qkt ablate: part 1, attention at init with iid q and k (%d d_k values)", c.n_init_dk);
        if (!rc && qkt_ablate_init_iid(run_dir, &c, err) != 0) rc = -1;
    }
    if (qkt_dist_size() > 1) {
        qkt_dist_bcast(&rc, sizeof rc, 0);
        if (rc) return lead ? -1 : qkt_err_set(err, "rank 0 stopped before the cells (it says why)");
        if (!lead && qkt_ablate_load_config(run_dir, &c, err)) rc = -1; /* from the directory rank 0 wrote */
        if (agree(rc, err)) return -1;
    }
    if (rc) return -1;
    if (run_cells(run_dir, &c, exe, NULL, verbose, stop, err)) return -1;
    return run_reruns(run_dir, &c, exe, verbose, stop, err);
}
