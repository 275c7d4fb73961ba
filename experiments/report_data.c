/* Reading metrics.csv back into memory for the report and `qkt plot`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_report.h"

static int intern_metric(qkt_table *t, const char *m) {
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metrics[i], m)) return i;
    QKT_CHECK(t->n_metrics < QKT_MAX_METRICS, "too many metric names");
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
    char *line = text, *next;
    int lineno = 0;
    for (; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        if (lineno == 1) {
            if (strncmp(line, "run,experiment,variant,", 23) != 0) {
                free(text);
                return qkt_err_set(err, "%s: line 1 is not the qkt metrics header", path);
            }
            continue;
        }
        if (!*line) continue;
        char *f[12];
        if (split(line, f, 12) != 11) {
            free(text);
            return qkt_err_set(err, "%s: line %d: expected 11 fields", path, lineno);
        }
        if (t->n_runs == 0 || strcmp(t->runs[t->n_runs - 1].id, f[0]) != 0) {
            int found = -1;
            for (int i = 0; i < t->n_runs && found < 0; i++)
                if (!strcmp(t->runs[i].id, f[0])) found = i;
            if (found >= 0) {
                free(text);
                return qkt_err_set(err, "%s: line %d: rows of run %s are not contiguous", path, lineno, f[0]);
            }
            if (t->n_runs == t->cap_runs) {
                t->cap_runs = t->cap_runs ? 2 * t->cap_runs : 64;
                t->runs = realloc(t->runs, (size_t)t->cap_runs * sizeof *t->runs);
            }
            qkt_run *r = &t->runs[t->n_runs++];
            memset(r, 0, sizeof *r);
            snprintf(r->id, sizeof r->id, "%s", f[0]);
            snprintf(r->exp, sizeof r->exp, "%s", f[1]);
            snprintf(r->variant, sizeof r->variant, "%s", f[2]);
            r->d_k = atoi(f[3]), r->seed = atoi(f[4]), r->lr = atof(f[5]);
            r->first = t->n_rows;
        }
        if (t->n_rows == t->cap_rows) {
            t->cap_rows = t->cap_rows ? 2 * t->cap_rows : 4096;
            t->rows = realloc(t->rows, (size_t)t->cap_rows * sizeof *t->rows);
        }
        qkt_row *r = &t->rows[t->n_rows++];
        r->run = t->n_runs - 1;
        r->step = atoi(f[6]);
        r->metric = (short)intern_metric(t, f[7]);
        r->layer = (short)atoi(f[8]);
        r->head = (short)atoi(f[9]);
        r->value = strtod(f[10], NULL);
        t->runs[t->n_runs - 1].count++;
    }
    free(text);
    return 0;
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
    bool want_max = !strcmp(metric, "logit_max");
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
