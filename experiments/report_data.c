/* Reading metrics.csv back into memory for the report and `qkt plot`. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_report.h"

/* ---------------------------------------------------------------- the study's metric names */
#define QKT_METRIC_NAME_(id, name, aggregate, what) [QKT_METRIC_##id] = name,
static const char *const metric_names[QKT_METRIC_COUNT] = {QKT_STUDY_METRICS(QKT_METRIC_NAME_)};
#undef QKT_METRIC_NAME_
#define QKT_METRIC_MAX_(id, name, aggregate, what) [QKT_METRIC_##id] = QKT_METRIC_IS_##aggregate,
enum { QKT_METRIC_IS_MEAN = 0, QKT_METRIC_IS_MAX = 1 };
static const bool metric_takes_max[QKT_METRIC_COUNT] = {QKT_STUDY_METRICS(QKT_METRIC_MAX_)};
#undef QKT_METRIC_MAX_

const char *qkt_metric_name(qkt_metric m) { return (unsigned)m < QKT_METRIC_COUNT ? metric_names[m] : "?"; }

qkt_metric qkt_metric_parse(const char *name) {
    for (int i = 0; i < QKT_METRIC_COUNT; i++)
        if (!strcmp(name, metric_names[i])) return (qkt_metric)i;
    return QKT_METRIC_COUNT;
}

/* ---------------------------------------------------------------- the table */
/* The metric's index, interning a new name; -1 when the table is full. */
static int intern_metric(qkt_table *t, const char *m) {
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metrics[i], m)) return i;
    if (t->n_metrics == QKT_MAX_METRICS) return -1;
    snprintf(t->metrics[t->n_metrics], sizeof t->metrics[0], "%s", m);
    return t->n_metrics++;
}

int qkt_table_metric(const qkt_table *t, const char *m) {
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metrics[i], m)) return i;
    return -1;
}

/* Splits a CSV line (no quoting: qkt writes none) into at most n fields. */
static int split(char *s, char **f, int n) {
    int k = 0;
    while (k < n) {
        f[k++] = s;
        char *c = strchr(s, ',');
        if (!c) break;
        *c = 0;
        s = c + 1;
    }
    return k;
}

int qkt_table_load(const char *path, qkt_table *t, qkt_err *err) {
    memset(t, 0, sizeof *t);
    size_t n;
    char *text = qkt_read_file(path, &n, err);
    if (!text) return -1;
    int rc = qkt_table_parse(text, n, path, t, err);
    free(text);
    return rc;
}

/* Strict field readers: the whole field, in range. */
static bool field_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}
static bool field_real(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end); /* nan and inf are values (a diverged run) */
    if (end == s || *end) return false;
    *out = v;
    return true;
}

int qkt_table_parse(const char *src, size_t n, const char *path, qkt_table *t, qkt_err *err) {
    static const char *const names[11] = {"run", "experiment", "variant", "d_k", "seed", "lr", "step", "metric", "layer", "head", "value"};
    memset(t, 0, sizeof *t);
    char *text = qkt_malloc(n + 1); /* split in place on a NUL-terminated copy */
    memcpy(text, src, n);
    text[n] = 0;
    int lineno = 0, rc = 0;
    char *line = text, *next;
#define FAIL(...) do { rc = qkt_err_set(err, __VA_ARGS__); goto done; } while (0)
    for (; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        if (lineno == 1) {
            if (strncmp(line, "run,experiment,variant,", 23) != 0) FAIL("%s: line 1 is not the qkt metrics header", path);
            continue;
        }
        if (!*line) continue;
        char *f[12];
        if (split(line, f, 12) != 11) FAIL("%s: line %d: expected 11 fields", path, lineno);
        int d_k, seed, step, layer, head, bad = -1;
        double lr, value;
        if (strlen(f[0]) >= sizeof t->runs->id || !f[0][0]) bad = 0;
        else if (strlen(f[1]) >= sizeof t->runs->exp) bad = 1;
        else if (strlen(f[2]) >= sizeof t->runs->variant) bad = 2;
        else if (!field_int(f[3], 0, 1 << 30, &d_k)) bad = 3;
        else if (!field_int(f[4], -1, 1 << 30, &seed)) bad = 4;
        else if (!field_real(f[5], &lr) || !(lr >= 0 && isfinite(lr))) bad = 5; /* a setting: finite (runs are looked up by it) */
        else if (!field_int(f[6], -1, INT_MAX, &step)) bad = 6;
        else if (strlen(f[7]) >= sizeof t->metrics[0] || !f[7][0]) bad = 7;
        else if (!field_int(f[8], -1, SHRT_MAX, &layer)) bad = 8;
        else if (!field_int(f[9], -1, SHRT_MAX, &head)) bad = 9;
        else if (!field_real(f[10], &value)) bad = 10;
        if (bad >= 0) FAIL("%s: line %d: field %s = '%.40s' is malformed", path, lineno, names[bad], f[bad]);
        if (t->n_runs == 0 || strcmp(t->runs[t->n_runs - 1].id, f[0]) != 0) {
            for (int i = 0; i < t->n_runs; i++)
                if (!strcmp(t->runs[i].id, f[0])) FAIL("%s: line %d: rows of run %s are not contiguous", path, lineno, f[0]);
            if (t->n_runs == t->cap_runs) {
                t->cap_runs = t->cap_runs ? 2 * t->cap_runs : 64;
                t->runs = qkt_realloc(t->runs, (size_t)t->cap_runs * sizeof *t->runs);
            }
            qkt_run *r = &t->runs[t->n_runs++];
            memset(r, 0, sizeof *r);
            snprintf(r->id, sizeof r->id, "%s", f[0]);
            snprintf(r->exp, sizeof r->exp, "%s", f[1]);
            snprintf(r->variant, sizeof r->variant, "%s", f[2]);
            r->d_k = d_k, r->seed = seed, r->lr = lr;
            r->first = t->n_rows;
        }
        int m = intern_metric(t, f[7]);
        if (m < 0) FAIL("%s: line %d: more than %d metric names", path, lineno, QKT_MAX_METRICS);
        if (t->n_rows == t->cap_rows) {
            t->cap_rows = t->cap_rows ? 2 * t->cap_rows : 4096;
            t->rows = qkt_realloc(t->rows, (size_t)t->cap_rows * sizeof *t->rows);
        }
        qkt_row *r = &t->rows[t->n_rows++];
        *r = (qkt_row){.run = t->n_runs - 1, .step = step, .metric = (short)m, .layer = (short)layer, .head = (short)head, .value = value};
        t->runs[t->n_runs - 1].count++;
    }
#undef FAIL
done:
    free(text);
    if (rc) qkt_table_free(t); /* all or nothing */
    return rc;
}

void qkt_table_free(qkt_table *t) {
    free(t->runs);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

int qkt_table_find_run(const qkt_table *t, const char *exp, const char *variant, int d_k, int seed, double lr) {
    for (int i = 0; i < t->n_runs; i++) {
        const qkt_run *r = &t->runs[i];
        if (!strcmp(r->exp, exp) && !strcmp(r->variant, variant) && r->d_k == d_k && (seed < 0 || r->seed == seed) &&
            (lr <= 0 || fabs(r->lr - lr) <= 1e-9 * lr))
            return i;
    }
    return -1;
}

/* Mean over heads (head >= 0 rows) of one layer (layer < 0: all layers), or the
 * run-level value (layer = head = -1) when the metric has no per-head rows. */
double qkt_table_value(const qkt_table *t, int run, const char *metric, int step, int layer) {
    int m = qkt_table_metric(t, metric);
    if (m < 0 || run < 0) return NAN;
    const qkt_run *r = &t->runs[run];
    double s = 0;
    int n = 0;
    const qkt_metric known = qkt_metric_parse(metric);
    const bool want_max = known < QKT_METRIC_COUNT && metric_takes_max[known];
    for (int i = r->first; i < r->first + r->count; i++) {
        const qkt_row *x = &t->rows[i];
        if (x->metric != m || x->step != step) continue;
        if (layer >= 0 && x->layer != layer) continue;
        if (want_max) s = n == 0 || x->value > s ? x->value : s;
        else s += x->value;
        n++;
    }
    return n ? (want_max ? s : s / n) : NAN;
}

int qkt_table_series(const qkt_table *t, int run, const char *metric, int layer, double *steps, double *vals, int cap) {
    int m = qkt_table_metric(t, metric);
    if (m < 0 || run < 0) return 0;
    const qkt_run *r = &t->runs[run];
    int n = 0;
    for (int i = r->first; i < r->first + r->count; i++) {
        const qkt_row *x = &t->rows[i];
        if (x->metric != m || (layer >= 0 && x->layer != layer)) continue;
        if (n > 0 && steps[n - 1] == x->step) { /* several heads/layers at one step: mean */
            continue;
        }
        if (n == cap) break;
        steps[n] = x->step;
        vals[n] = qkt_table_value(t, run, metric, x->step, layer);
        n++;
    }
    return n;
}

int qkt_table_last_step(const qkt_table *t, int run, const char *metric) {
    int m = qkt_table_metric(t, metric), last = -1;
    if (m < 0 || run < 0) return -1;
    const qkt_run *r = &t->runs[run];
    for (int i = r->first; i < r->first + r->count; i++)
        if (t->rows[i].metric == m && t->rows[i].step > last) last = t->rows[i].step;
    return last;
}
