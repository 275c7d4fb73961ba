/* report.html of qkt train runs (qkt_train_report_html): one chart per log.csv column
 * against the step, every run overlaid. Reads a run without its lock: a run still training
 * is drawn up to its last complete row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"
#include "qkt_report.h"
#include "qkt_train_run.h"

#define MAX_POINTS 2000 /* per series; longer runs are thinned, every value kept exact */
#define MAX_COLS 16

/* The log.csv columns that get no chart: the x axis and the wall clock. */
static const char *const not_charted[] = {"step", "elapsed_s"};

typedef struct {
    char dir[1024];
    qkt_train_run cfg;
    int n_cols, n_rows;
    char cols[MAX_COLS][32];
    double *v; /* (n_rows, n_cols), NaN where the cell is empty */
    bool torn;
} run_log;

/* log.csv: the header must be qkt's; each complete row n_cols numbers or empty cells; a
 * last line without its newline is a row being written and is left out. */
static int read_log(run_log *L, qkt_err *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/log.csv", L->dir);
    size_t n;
    char *text = qkt_read_file(path, &n, err);
    if (!text) return -1;
    const char *hdr = QKT_TRAIN_LOG_HEADER;
    size_t hl = strlen(hdr);
    if (n < hl || strncmp(text, hdr, hl)) {
        free(text);
        return qkt_err_set(err, "%s: not a qkt train log (its header differs)", path);
    }
    for (const char *p = hdr; *p && *p != '\n' && L->n_cols < MAX_COLS; L->n_cols++) {
        size_t k = strcspn(p, ",\n");
        snprintf(L->cols[L->n_cols], sizeof L->cols[0], "%.*s", (int)k, p);
        p += k + (p[k] == ',');
    }
    int cap = 1024, rc = 0;
    L->v = qkt_malloc((size_t)cap * L->n_cols * sizeof *L->v);
    long line = 2;
    for (char *p = text + hl; p < text + n && !rc; line++) {
        char *nl = memchr(p, '\n', (size_t)(text + n - p));
        if (!nl) {
            L->torn = true;
            break;
        }
        *nl = 0;
        if (L->n_rows == cap) cap *= 2, L->v = qkt_realloc(L->v, (size_t)cap * L->n_cols * sizeof *L->v);
        double *row = L->v + (size_t)L->n_rows * L->n_cols;
        char *c = p;
        int k = 0;
        for (; k < L->n_cols && !rc; k++) {
            char *end = c + strcspn(c, ",");
            bool last = *end == 0;
            if (end == c) row[k] = NAN;
            else {
                char *e;
                row[k] = strtod(c, &e);
                if (e != end) rc = -1;
            }
            if (last != (k == L->n_cols - 1)) rc = -1;
            c = end + 1;
        }
        if (rc || isnan(row[0]))
            rc = qkt_err_set(err, "%s line %ld is not a log row (%d columns of numbers expected)", path, line, L->n_cols);
        L->n_rows++;
        p = nl + 1;
    }
    free(text);
    return rc;
}

static int load_run(run_log *L, const char *dir, qkt_err *err) {
    memset(L, 0, sizeof *L);
    snprintf(L->dir, sizeof L->dir, "%s", dir);
    char path[1100];
    snprintf(path, sizeof path, "%s/train.json", dir);
    if (!qkt_file_exists(path)) return qkt_err_set(err, "%s: no train.json (is %s a qkt train run?)", path, dir);
    if (qkt_train_run_load(path, &L->cfg, err) != 0) return -1;
    snprintf(path, sizeof path, "%s/log.csv", dir);
    if (!qkt_file_exists(path)) return qkt_err_set(err, "%s: no log.csv (is %s a qkt train run?)", path, dir);
    return read_log(L, err);
}

static bool charted(const char *col) {
    for (size_t i = 0; i < sizeof not_charted / sizeof *not_charted; i++)
        if (!strcmp(col, not_charted[i])) return false;
    return true;
}

static void write_json(qkt_buf *b, const run_log *R, int n) {
    qkt_buf_printf(b, "{\"title\":\"qkt train: %d run%s\",\"notes\":[", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        const run_log *L = &R[i];
        const qkt_train_config *tc = &L->cfg.tc;
        long last = L->n_rows ? (long)L->v[(size_t)(L->n_rows - 1) * L->n_cols] : -1;
        char note[1600], prog[96];
        if (last < 0) snprintf(prog, sizeof prog, "no row logged yet (%ld steps planned)", (long)tc->steps);
        else snprintf(prog, sizeof prog, "%s %ld of %ld", last < tc->steps ? "at step" : "finished, step", last, (long)tc->steps);
        snprintf(note, sizeof note, "`%s`: data `%s`, attn_scale `%s`, n_layer %d, n_head %d, n_embd %d, lr %g; %s%s", L->dir, L->cfg.data,
                 qkt_attn_scale_name(tc->model.attn_scale), tc->model.n_layer, tc->model.n_head, tc->model.n_embd, tc->lr, prog,
                 L->torn ? " (a partial last line of log.csv, being written, is left out)" : "");
        qkt_buf_printf(b, "%s", i ? "," : "");
        qkt__json_str(b, note);
    }
    qkt_buf_printf(b, "],\"charts\":[");
    double *x = NULL, *y = NULL;
    int cap = 0, nc = 0;
    for (int k = 0; k < R[0].n_cols; k++) {
        if (!charted(R[0].cols[k])) continue;
        qkt_buf_printf(b, "%s{\"id\":\"%s\",\"type\":\"line\",\"title\":\"%s\",\"xlabel\":\"step\",\"ylabel\":\"%s\",\"ctl\":[],\"series\":[",
                       nc++ ? "," : "", R[0].cols[k], R[0].cols[k], R[0].cols[k]);
        for (int i = 0, sf = 1; i < n; i++) {
            const run_log *L = &R[i];
            if (L->n_rows > cap) cap = L->n_rows, x = qkt_realloc(x, (size_t)cap * sizeof *x), y = qkt_realloc(y, (size_t)cap * sizeof *y);
            int m = 0;
            for (int r = 0; r < L->n_rows; r++) {
                const double *row = L->v + (size_t)r * L->n_cols;
                if (!isnan(row[k])) x[m] = row[0], y[m++] = row[k];
            }
            if (!m) continue;
            qkt_buf_printf(b, "%s{\"g\":", sf ? "" : ",");
            qkt__json_str(b, L->dir);
            qkt_buf_printf(b, ",\"k\":{\"metric\":\"%s\"},", R[0].cols[k]);
            qkt__json_xy(b, x, y, m, MAX_POINTS);
            qkt_buf_printf(b, "}");
            sf = 0;
        }
        qkt_buf_printf(b, "]}");
    }
    free(x), free(y);
    qkt_buf_printf(b, "]}");
}

int qkt_train_report_html(const char *const *run_dirs, int n_runs, const char *out_path, qkt_err *err) {
    QKT_CHECK(run_dirs && n_runs > 0 && out_path, "qkt_train_report_html: no runs or no output path");
    run_log *R = qkt_calloc((size_t)n_runs, sizeof *R);
    int rc = 0;
    for (int i = 0; i < n_runs && !rc; i++) rc = load_run(&R[i], run_dirs[i], err);
    if (!rc) {
        qkt_buf b = {0};
        write_json(&b, R, n_runs);
        char title[64];
        snprintf(title, sizeof title, "qkt train: %d run%s", n_runs, n_runs == 1 ? "" : "s");
        rc = qkt__html_write(out_path, title, &b, err);
        qkt_buf_free(&b);
    }
    for (int i = 0; i < n_runs; i++) free(R[i].v);
    free(R);
    return rc;
}
