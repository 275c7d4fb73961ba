/* The study's own efficiency: FLOPs of its cells over their CPU seconds and the
 * single-core sgemm peak (qkt_ablate.h; the FLOPs as docs/performance.md counts them). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablate_internal.h"
#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_trainer.h"

void qkt_cell_cost_path(const char *run_dir, const char *id, char *path, size_t n) {
    snprintf(path, n, "%s/cells/%s.cost", run_dir, id);
}

static void peak_path(const char *run_dir, char *path, size_t n) { snprintf(path, n, "%s/sgemm_peak.txt", run_dir); }

/* A one-line record (cells/<id>.cost, sgemm_peak.txt; read_record reads it): the line, its
 * newline and its seal (qkt_cell_seal), written atomically. */
static int write_record(const char *path, qkt_err *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int write_record(const char *path, qkt_err *err, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof line) return qkt_err_set(err, "%s: a record of %d bytes (at most %zu)", path, k, sizeof line - 1);
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s\n", line);
    qkt_cell_seal(&b);
    int rc = qkt_write_atomic(path, b.s, b.n, err);
    qkt_buf_free(&b);
    return rc;
}

int qkt_ablate_measure_peak(const char *run_dir, qkt_err *err) {
    int threads = qkt_get_threads();
    qkt_set_threads(1); /* the cells run on one thread each */
    const int n = QKT_ABLATE_PEAK_N;
    double g = qkt_bench_gemm_rate_cpu(false, false, n, n, n, 0, QKT_ABLATE_PEAK_TIMINGS, 0); /* C = A B */
    qkt_set_threads(threads);
    char path[1100];
    peak_path(run_dir, path, sizeof path);
    return write_record(path, err, "gflops=%.9g n=%d isa=%s", g, n, qkt_isa_name());
}

int qkt__ablate_write_cost(const char *run_dir, const char *id, double train_flops, double eval_flops, double cpu_s,
                           qkt_err *err) {
    char path[1100];
    qkt_cell_cost_path(run_dir, id, path, sizeof path);
    return write_record(path, err, "train_flops=%.17g eval_flops=%.17g cpu_s=%.9g", train_flops, eval_flops, cpu_s);
}

/* The peak measured by the run that trains the cells: a resume with every cell done (e.g. to
 * add robustness reruns) keeps the peak it has rather than measuring under other conditions. */
int qkt__ablate_peak_for_cells(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err) {
    char path[1100];
    peak_path(run_dir, path, sizeof path);
    if (qkt_file_exists(path) && qkt_ablate_missing(run_dir, c, NULL, 0, NULL) == 0) return 0;
    return qkt_ablate_measure_peak(run_dir, err);
}

/* A one-line record (cells/<id>.cost, sgemm_peak.txt): its line, without the newline, into
 * line. The record is written sealed (qkt_cell_seal: one row); a file of the line alone, as an
 * older qkt wrote it, is taken as it is. 1 if the file is absent, -1 with why if it cannot be
 * read, fails its seal or is not one line. */
static int read_record(const char *path, char *line, size_t line_n, bool *sealed_out, char *why, size_t why_n) {
    if (!qkt_file_exists(path)) return 1;
    size_t n, body;
    qkt_err err;
    char *text = qkt_read_file(path, &n, &err);
    if (!text) return snprintf(why, why_n, "cannot be read"), -1;
    const char *nl = memchr(text, '\n', n);
    bool sealed = nl && (size_t)(nl - text) + 1 < n;
    int rc = 0;
    if (sealed && qkt_cell_check(text, n, &body, why, why_n) != 0) rc = -1;
    else if (!nl || (size_t)(nl - text) + 1 != (sealed ? body : n))
        rc = -1, snprintf(why, why_n, "%s", sealed ? "holds more than one line before its seal" : "is not one complete line");
    else if ((size_t)(nl - text) >= line_n || memchr(text, 0, (size_t)(nl - text)))
        rc = -1, snprintf(why, why_n, "has a line too long or with a NUL byte");
    else memcpy(line, text, (size_t)(nl - text)), line[nl - text] = 0;
    free(text);
    *sealed_out = sealed;
    return rc;
}

/* One cost record into *f, *e, *s: 0, 1 if absent, -1 with why if damaged (read_record's
 * reasons, or not "train_flops=F eval_flops=E cpu_s=S" with F, E >= 0 and S > 0 finite). */
static int read_cost(const char *path, double *f, double *e, double *s, bool *sealed, char *why, size_t why_n) {
    char line[256];
    int rc = read_record(path, line, sizeof line, sealed, why, why_n), used = -1;
    if (rc != 0) return rc;
    if (sscanf(line, "train_flops=%lf eval_flops=%lf cpu_s=%lf%n", f, e, s, &used) == 3 && line[used] == 0 && isfinite(*f) &&
        isfinite(*e) && isfinite(*s) && *f >= 0 && *e >= 0 && *s > 0)
        return 0;
    snprintf(why, why_n, "is not 'train_flops=F eval_flops=E cpu_s=S' with F, E >= 0 and S > 0");
    return -1;
}

/* What measures the peak again: a study that starts with no sgemm_peak.txt measures it, cells
 * left or not (a rerun alone keeps a damaged one). */
#define REMEASURE "delete it and rerun the study's qkt ablate command to measure it again"

/* sgemm_peak.txt's GFLOP/s into *peak (0 if the file is absent); -1 with err if it cannot be read. */
static int read_peak(const char *run_dir, double *peak, bool *sealed, qkt_err *err) {
    char path[1100], line[256], why[200];
    peak_path(run_dir, path, sizeof path);
    *peak = 0;
    *sealed = true;
    int rc = read_record(path, line, sizeof line, sealed, why, sizeof why);
    if (rc == 1) return 0;
    if (rc != 0) return qkt_err_set(err, "%s %s (" REMEASURE ")", path, why);
    if (sscanf(line, "gflops=%lf", peak) == 1 && isfinite(*peak) && *peak > 0) return 0;
    *peak = 0;
    return qkt_err_set(err, "%s: expected 'gflops=G n=N isa=I' with G > 0 (" REMEASURE ")", path);
}

/* Sums with the peak and nothing counted yet. */
static void sums_init(qkt_ablate_efficiency *e, double peak, bool peak_sealed) {
    memset(e, 0, sizeof *e);
    e->efficiency = NAN;
    e->peak_gflops = peak;
    e->unsealed = peak > 0 && !peak_sealed;
}

/* A planned cell into e's sums if it finished: its record counted, or its lack of one. */
static void add_cell(const char *run_dir, const qkt_cell *cell, qkt_ablate_efficiency *e) {
    char path[1100];
    qkt_cell_paths(run_dir, cell->id, path, NULL, NULL, sizeof path);
    if (!qkt_cell_done_id(path, cell->id, NULL, 0)) return;
    double f, ev, s;
    char why[200];
    qkt_cell_cost_path(run_dir, cell->id, path, sizeof path);
    bool sealed = true;
    int rc = read_cost(path, &f, &ev, &s, &sealed, why, sizeof why);
    if (rc == 1) e->unrecorded++;
    if (rc == -1 && e->damaged++ == 0) snprintf(e->damaged_first, sizeof e->damaged_first, "cells/%s.cost %s", cell->id, why);
    if (rc != 0) return;
    e->train_flops += f, e->eval_flops += ev, e->cpu_s += s, e->cells++, e->unsealed += !sealed;
}

/* Above 1 the cells ran faster than the peak. Sealed records and peak are measurements (an
 * instrumented build's sgemm slows more than its cells: 1.07 under ASan), so their ratio is
 * printed as it is; with an unsealed one among them (as older builds wrote them, and anyone
 * can edit) it is not: an edited one printed 20830. */
static void sums_finish(qkt_ablate_efficiency *e) {
    double r = e->cpu_s > 0 && e->peak_gflops > 0 ? (e->train_flops + e->eval_flops) / e->cpu_s / (e->peak_gflops * 1e9) : NAN;
    e->efficiency = r <= 1 || !e->unsealed ? r : NAN;
}

/* Did sums_finish leave out a ratio above 1? */
static bool above_peak(const qkt_ablate_efficiency *e) {
    return !isfinite(e->efficiency) && e->cpu_s > 0 && e->peak_gflops > 0;
}

/* The sums over the planned cells of kind `kind` (all kinds if negative) and key width d_k
 * (all if 0). */
static int efficiency_read(const char *run_dir, const qkt_ablate_cfg *c, int kind, int d_k, qkt_ablate_efficiency *e,
                           qkt_err *err) {
    double peak;
    bool sealed;
    sums_init(e, 0, true);
    if (read_peak(run_dir, &peak, &sealed, err) != 0) return -1;
    sums_init(e, peak, sealed);
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan);
    for (int i = 0; i < n; i++)
        if ((kind < 0 || (int)plan[i].kind == kind) && (!d_k || plan[i].d_k == d_k)) add_cell(run_dir, &plan[i], e);
    free(plan);
    sums_finish(e);
    return 0;
}

int qkt__ablate_efficiency_parts(const char *run_dir, const qkt_ablate_cfg *c, qkt__ablate_part **out, qkt_err *err) {
    double peak;
    bool sealed;
    *out = NULL;
    if (read_peak(run_dir, &peak, &sealed, err) != 0) return -1;
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan), np = 0;
    qkt__ablate_part *p = calloc(n > 0 ? (size_t)n : 1, sizeof *p);
    if (!p) {
        free(plan);
        return qkt_err_set(err, "out of memory for the parts of %d cells", n);
    }
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < np && !(p[j].kind == plan[i].kind && p[j].d_k == plan[i].d_k)) j++;
        if (j == np) p[np].kind = plan[i].kind, p[np].d_k = plan[i].d_k, sums_init(&p[np++].e, peak, sealed);
        add_cell(run_dir, &plan[i], &p[j].e);
    }
    free(plan);
    for (int j = 0; j < np; j++) sums_finish(&p[j].e);
    *out = p;
    return np;
}

int qkt_ablate_efficiency_read(const char *run_dir, const qkt_ablate_cfg *c, qkt_ablate_efficiency *e, qkt_err *err) {
    return efficiency_read(run_dir, c, -1, 0, e, err);
}

int qkt_ablate_efficiency_read_part(const char *run_dir, const qkt_ablate_cfg *c, qkt_cell_kind kind, int d_k,
                                    qkt_ablate_efficiency *e, qkt_err *err) {
    if ((int)kind < 0 || kind > QKT_CELL_START2 || d_k <= 0)
        return qkt_err_set(err, "efficiency of a part: kind %d and d_k %d (expected a qkt_cell_kind and d_k > 0)", (int)kind, d_k);
    return efficiency_read(run_dir, c, (int)kind, d_k, e, err);
}

void qkt_ablate_efficiency_text(const qkt_ablate_efficiency *e, char *buf, size_t n) {
    int k = isfinite(e->efficiency) ? snprintf(buf, n, "efficiency %.3f", e->efficiency)
            : above_peak(e)         ? snprintf(buf, n, "efficiency unknown, above 1 with unsealed records (as older builds wrote them): "
                                                       "a cost record or sgemm_peak.txt is wrong")
                                    : snprintf(buf, n, "efficiency unknown");
    if (k < 0 || (size_t)k >= n) return;
    double f = e->train_flops + e->eval_flops;
    k += snprintf(buf + k, n - (size_t)k, " (%.4g FLOPs of %d cells, %.4g training and %.4g forward-only, in %.1f CPU-s: %.1f GFLOP per CPU-second; ",
                  f, e->cells, e->train_flops, e->eval_flops, e->cpu_s, e->cpu_s > 0 ? f / e->cpu_s * 1e-9 : 0.0);
    if (k < 0 || (size_t)k >= n) return;
    if (e->peak_gflops > 0) /* %.1f, but a peak below 1 (an edited record) shown as it is, not as 0.0 */
        k += snprintf(buf + k, n - (size_t)k, e->peak_gflops >= 1 ? "single-core sgemm peak %.1f GFLOP/s" : "single-core sgemm peak %.3g GFLOP/s", e->peak_gflops);
    else k += snprintf(buf + k, n - (size_t)k, "no sgemm_peak.txt: the study's start did not measure the peak");
    if (k < 0 || (size_t)k >= n) return;
    if (e->unrecorded)
        k += snprintf(buf + k, n - (size_t)k, "; %d finished cell%s no cells/<id>.cost and %s not counted", e->unrecorded,
                      e->unrecorded == 1 ? " has" : "s have", e->unrecorded == 1 ? "is" : "are");
    if (k < 0 || (size_t)k >= n) return;
    if (e->damaged)
        k += snprintf(buf + k, n - (size_t)k, "; %d finished cell%s a damaged cost record and %s not counted (the first: %s)",
                      e->damaged, e->damaged == 1 ? " has" : "s have", e->damaged == 1 ? "is" : "are", e->damaged_first);
    if (k < 0 || (size_t)k >= n) return;
    snprintf(buf + k, n - (size_t)k, ")");
}
