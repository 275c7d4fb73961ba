/* The study's report.html: the findings table of report.md (read back from its rows, so a
 * new claim appears by itself), then one interactive chart per part, from metrics.csv and
 * the attention maps. The page's format: docs/ablate.md, "report.html". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"
#include "qkt_safetensors.h"
#include "report_internal.h"

#define MAX_POINTS 75 /* per-step series are thinned to about this many points (the size budget) */

/* ---------------------------------------------------------------- series from metrics.csv */
/* Metric m of a run, one value per step: the row itself, or qkt_table_value's mean (max for
 * logit_max) over the layers and heads where a step has several rows. Returns the count. */
static int run_series(const qkt_table *t, int run, int m, double *x, double *y, int cap) {
    const qkt_run *u = &t->runs[run];
    int n = 0, multi = 0;
    for (int i = u->first; i < u->first + u->count; i++) {
        const qkt_row *w = &t->rows[i];
        if (w->metric != m) continue;
        if (n && x[n - 1] == w->step) { /* several heads: aggregated below, y = NaN marks it */
            y[n - 1] = NAN, multi = 1;
            continue;
        }
        if (n == cap) break;
        x[n] = w->step, y[n++] = w->value;
    }
    for (int k = 0; multi && k < n; k++)
        if (isnan(y[k])) y[k] = qkt_table_value(t, run, t->metrics[m], (int)x[k], -1);
    return n;
}

static bool is_kind(const qkt_run *u, const char *const *kinds) {
    for (; *kinds; kinds++)
        if (!strcmp(u->exp, *kinds)) return true;
    return false;
}

/* Does any run of these kinds have more than one seed? (then series carry their seed) */
static bool many_seeds(const qkt_table *t, const char *const *kinds) {
    for (int i = 0; i < t->n_runs; i++)
        if (is_kind(&t->runs[i], kinds) && t->runs[i].seed != 0) return true;
    return false;
}

static void chart_head(qkt_buf *b, bool *first, const char *id, const char *title, const char *xlabel, bool xlog, bool ylog,
                       const char *ctl, const char *def_metric, const char *def_task, const char *note) {
    qkt_buf_printf(b, "%s{\"id\":\"%s\",\"type\":\"line\",\"title\":", *first ? "" : ",", id);
    qkt__json_str(b, title);
    qkt_buf_printf(b, ",\"xlabel\":\"%s\",\"xlog\":%s,\"ylog\":%s,\"ctl\":[%s],\"def\":{\"metric\":\"%s\",\"task\":", xlabel,
                   xlog ? "true" : "false", ylog ? "true" : "false", ctl, def_metric);
    qkt__json_str(b, def_task);
    qkt_buf_printf(b, "},\"note\":");
    qkt__json_str(b, note);
    *first = false;
}

static void series_head(qkt_buf *b, bool *first, const char *group, int seed) {
    qkt_buf_printf(b, "%s{\"g\":", *first ? "" : ",");
    qkt__json_str(b, group);
    if (seed >= 0) qkt_buf_printf(b, ",\"seed\":%d", seed);
    qkt_buf_printf(b, ",\"k\":{");
    *first = false;
}

/* Is metric a curve worth a line per run? Not the LR schedule (the same for every run of a
 * rate), nor bookkeeping values (the divergence step, the final evaluation's sequence count):
 * metrics.csv keeps them; the page's size is mostly these lines. */
static bool curve_metric(const char *name) {
    return strcmp(name, QKT_M(LR)) && strcmp(name, QKT_M(DIVERGED_STEP)) && strcmp(name, QKT_M(VAL_SEQS));
}

/* Curves over steps: one series per run and metric of the given kinds. The key "task" is
 * the run's task (train: the main task, train2: the second), "lr" the LR runs' rate. */
static void chart_steps(qkt__report *r, qkt_buf *b, bool *first, const char *id, const char *title, const char *const *kinds,
                        const char *ctl, const char *note) {
    const qkt_table *t = r->t;
    bool any = false, seeds = many_seeds(t, kinds), sfirst = true;
    for (int i = 0; i < t->n_runs && !any; i++) any = is_kind(&t->runs[i], kinds);
    if (!any) return;
    chart_head(b, first, id, title, "step", false, false, ctl, QKT_M(VAL_LOSS), r->c->run.data, note);
    qkt_buf_printf(b, ",\"series\":[");
    double *x = qkt_malloc(QKT_REPORT_MAXS * sizeof *x), *y = qkt_malloc(QKT_REPORT_MAXS * sizeof *y);
    qkt__xtab *xt = qkt_calloc(1, sizeof *xt);
    for (int i = 0; i < t->n_runs; i++) {
        const qkt_run *u = &t->runs[i];
        if (!is_kind(u, kinds)) continue;
        for (int m = 0; m < t->n_metrics; m++) {
            if (!curve_metric(t->metrics[m])) continue;
            int n = run_series(t, i, m, x, y, QKT_REPORT_MAXS);
            if (n == 0) continue;
            series_head(b, &sfirst, u->variant, seeds ? u->seed : -1);
            if (strstr(ctl, "task")) {
                qkt_buf_printf(b, "\"task\":");
                qkt__json_str(b, !strcmp(u->exp, QKT_KIND(TRAIN2)) ? r->c->task2 : r->c->run.data);
                qkt_buf_printf(b, ",");
            }
            if (strstr(ctl, "\"lr\"")) qkt_buf_printf(b, "\"lr\":%g,", u->lr);
            qkt_buf_printf(b, "\"d_k\":%d,\"metric\":\"%s\"},", u->d_k, t->metrics[m]);
            qkt__json_xy_shared(b, xt, x, y, n, MAX_POINTS);
            qkt_buf_printf(b, "}");
        }
    }
    free(x), free(y);
    qkt_buf_printf(b, "],");
    qkt__json_xtab(b, xt);
    free(xt);
    qkt_buf_printf(b, "}");
}

/* Values against d_k (log axis): per variant, seed and metric, the metric at its last step
 * in each run of the kind (part 1 at init, part 4's logit growth). */
static void chart_dk(qkt__report *r, qkt_buf *b, bool *first, const char *id, const char *title, const char *kind, const char *note) {
    const qkt_table *t = r->t;
    const char *kinds[] = {kind, NULL};
    int dks[64], n_dk = 0, n_runs = 0;
    for (int i = 0; i < t->n_runs; i++) {
        if (strcmp(t->runs[i].exp, kind)) continue;
        n_runs++;
        bool have = false;
        for (int k = 0; k < n_dk; k++) have |= dks[k] == t->runs[i].d_k;
        if (!have && n_dk < 64) dks[n_dk++] = t->runs[i].d_k;
    }
    if (!n_runs) return;
    bool seeds = many_seeds(t, kinds), sfirst = true;
    chart_head(b, first, id, title, "d_k", true, false, "\"metric\"", "", "", note);
    qkt_buf_printf(b, ",\"xticks\":[");
    for (int k = 0; k < n_dk; k++) qkt_buf_printf(b, "%s%d", k ? "," : "", dks[k]);
    qkt_buf_printf(b, "],\"series\":[");
    /* one series per (variant, seed, metric), in the order the runs come */
    bool *done = qkt_calloc((size_t)t->n_runs * QKT_MAX_METRICS, sizeof *done);
    double x[64], y[64];
    for (int i = 0; i < t->n_runs; i++) {
        const qkt_run *u = &t->runs[i];
        if (strcmp(u->exp, kind)) continue;
        for (int m = 0; m < t->n_metrics; m++) {
            if (done[(size_t)i * QKT_MAX_METRICS + m]) continue;
            int n = 0;
            for (int j = i; j < t->n_runs; j++) {
                const qkt_run *v = &t->runs[j];
                if (strcmp(v->exp, kind) || strcmp(v->variant, u->variant) || v->seed != u->seed) continue;
                done[(size_t)j * QKT_MAX_METRICS + m] = true;
                int last = qkt_table_last_step(t, j, t->metrics[m]);
                if (last < 0 || n == 64) continue;
                x[n] = v->d_k, y[n++] = qkt_table_value(t, j, t->metrics[m], last, -1);
            }
            if (!n) continue;
            for (int a = 1; a < n; a++) /* by d_k */
                for (int c = a; c > 0 && x[c - 1] > x[c]; c--) {
                    double tx = x[c], ty = y[c];
                    x[c] = x[c - 1], y[c] = y[c - 1], x[c - 1] = tx, y[c - 1] = ty;
                }
            series_head(b, &sfirst, u->variant, seeds ? u->seed : -1);
            qkt_buf_printf(b, "\"metric\":\"%s\"},", t->metrics[m]);
            qkt__json_xy(b, x, y, n, 0);
            qkt_buf_printf(b, "}");
        }
    }
    free(done);
    qkt_buf_printf(b, "]}");
}

/* Part 3: per LR variant, the final validation loss and the largest logit against the
 * learning rate (log axis), with the range where the variant trains marked. */
static void chart_lr_sweep(qkt__report *r, qkt_buf *b, bool *first) {
    const qkt_ablate_cfg *c = r->c;
    bool any = false;
    for (int i = 0; i < r->t->n_runs; i++) any |= !strcmp(r->t->runs[i].exp, QKT_KIND(LR));
    if (c->n_lr_variants == 0 || c->n_lr == 0 || !any) return;
    char note[400];
    snprintf(note, sizeof note, "Seed 0, d_k = %d, %d steps per run. The bar above the x axis marks, per variant, the learning "
                                "rates from the smallest up to the largest that trains before the first that fails (did not "
                                "train or diverged; report.md, part 3).", c->lr_dk, c->lr_steps);
    chart_head(b, first, "lr_sweep", "Learning-rate sweep: final validation loss and largest logit", "lr", true, false, "\"metric\"",
               "final val_loss", "", note);
    qkt_buf_printf(b, ",\"xticks\":[");
    for (int i = 0; i < c->n_lr; i++) qkt_buf_printf(b, "%s%g", i ? "," : "", c->lrs[i]);
    qkt_buf_printf(b, "],\"series\":[");
    bool sfirst = true;
    for (int v = 0; v < c->n_lr_variants; v++)
        for (int sk = 0; sk < 2 * (c->lr_seeds > 1 ? c->lr_seeds : 1); sk++) {
            int s = sk / 2, k = sk % 2; /* each seed's runs, as loss and as largest logit */
            const char *name = qkt_attn_scale_name(c->lr_variants[v]);
            double x[QKT_AB_MAX_LIST], y[QKT_AB_MAX_LIST];
            int n = 0;
            for (int i = 0; i < c->n_lr; i++) {
                qkt__lr_run o;
                qkt__report_lr_run(r, name, i, s, &o);
                if (o.run < 0) continue;
                x[n] = c->lrs[i], y[n++] = k ? o.logit_max : o.final_loss;
            }
            if (!n) continue;
            series_head(b, &sfirst, name, c->lr_seeds > 1 ? s : -1);
            qkt_buf_printf(b, "\"metric\":\"%s\"},", k ? "largest logit" : "final val_loss");
            qkt__json_xy(b, x, y, n, 0);
            qkt_buf_printf(b, "}");
        }
    qkt_buf_printf(b, "],\"ranges\":[");
    for (int v = 0, rf = 1; v < c->n_lr_variants; v++) {
        const char *name = qkt_attn_scale_name(c->lr_variants[v]);
        qkt__lr_range g = qkt__report_lr_range(r, name, 0); /* seed 0's, as report.md's table */
        if (g.n == 0 || isnan(g.max_trained_lr)) continue;
        char label[200];
        snprintf(label, sizeof label, "trains at lr %g .. %g%s%s", c->lrs[0], g.max_trained_lr, isnan(g.min_failed_lr) ? "" : ", fails from ",
                 isnan(g.min_failed_lr) ? "" : "");
        if (!isnan(g.min_failed_lr)) snprintf(label + strlen(label), sizeof label - strlen(label), "%g", g.min_failed_lr);
        qkt_buf_printf(b, "%s{\"g\":", rf ? "" : ",");
        qkt__json_str(b, name);
        qkt_buf_printf(b, ",\"lo\":%g,\"hi\":%g,\"label\":", c->lrs[0], g.max_trained_lr);
        qkt__json_str(b, label);
        qkt_buf_printf(b, "}");
        rf = 0;
    }
    qkt_buf_printf(b, "]}");
}

/* The attention maps (part 2): per variant with a maps cell, init and trained, layer x head. */
static void chart_maps(qkt__report *r, qkt_buf *b, bool *first) {
    const qkt_ablate_cfg *c = r->c;
    qkt_cell *plan;
    int n = qkt_ablate_plan(c, &plan);
    bool mfirst = true;
    for (int i = 0; i < n; i++) {
        if (!plan[i].maps) continue;
        char path[1200];
        qkt_cell_maps_path(r->dir, plan[i].id, path, sizeof path);
        qkt_safetensors st;
        qkt_err e;
        if (!qkt_file_exists(path) || qkt_safetensors_read(path, &st, &e) != 0) continue; /* report_maps.c says why */
        for (int k = 0; k < 2; k++) {
            const qkt_st_tensor *a = qkt_safetensors_find(&st, k ? QKT_MAPS_FINAL : QKT_MAPS_INIT);
            if (!a || a->ndim != 4 || a->shape[2] != a->shape[3] || a->shape[2] > 1024) continue;
            int L = (int)a->shape[0], H = (int)a->shape[1], T = (int)a->shape[2];
            qkt_real *f = qkt_malloc((size_t)a->numel * sizeof *f);
            if (qkt_st_tensor_to_real(a, f, a->numel, path, &e) == 0)
                for (int l = 0; l < L; l++)
                    for (int h = 0; h < H; h++) {
                        if (mfirst) {
                            char title[160];
                            snprintf(title, sizeof title, "Attention maps, d_k = %d, seed 0: one fixed validation sequence", plan[i].d_k);
                            qkt_buf_printf(b, "%s{\"id\":\"maps\",\"type\":\"heat\",\"title\":", *first ? "" : ",");
                            qkt__json_str(b, title);
                            qkt_buf_printf(b, ",\"ctl\":[\"variant\",\"when\",\"layer\",\"head\"],\"def\":{\"when\":\"trained\"},\"maps\":[");
                            *first = false;
                        }
                        qkt_buf_printf(b, "%s{\"k\":{\"variant\":", mfirst ? "" : ",");
                        qkt__json_str(b, qkt_attn_scale_name(plan[i].variant));
                        qkt_buf_printf(b, ",\"when\":\"%s\",\"layer\":%d,\"head\":%d},\"T\":%d,\"v\":[", k ? "trained" : "init", l, h, T);
                        const qkt_real *m = f + ((size_t)l * H + h) * T * T;
                        for (int q = 0; q < T * T; q++) qkt_buf_printf(b, "%s%.4g", q ? "," : "", (double)m[q]);
                        qkt_buf_printf(b, "]}");
                        mfirst = false;
                    }
            free(f);
        }
        qkt_safetensors_free(&st);
    }
    free(plan);
    if (!mfirst) qkt_buf_printf(b, "]}");
}

/* ---------------------------------------------------------------- the findings of report.md */
/* Where a claim's evidence is: its chart and what to select there. An id not listed falls
 * back on its number (the digits it starts with: "10b" -> "10"), then on the training chart. */
static const struct {
    const char *id, *chart, *metric;
    bool task2;
} evidence[] = {
    {"1", "iid", "iid_raw_logit_std", false},  {"2", "iid", "iid_norm_entropy", false},   {"3", "iid", "iid_logit_std", false},
    {"4", "train", "grad_norm_wq", false},     {"5", "train", "val_loss", false},         {"5c", "train", "val_loss", true},
    {"5d", "train", "val_loss", true},         {"6", "lr_sweep", "final val_loss", false}, {"6a", "lr", "logit_max", false},
    {"7", "lr_sweep", "final val_loss", false}, {"7a", "lr", "norm_entropy", false},       {"8", "growth", NULL, false},
    {"10", "train", "norm_entropy", false},    {"10c", "train", "norm_entropy", true},    {"10d", "train", "norm_entropy", true},
};

static int evidence_of(const char *id) {
    size_t k = strspn(id, "0123456789");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (int)(sizeof evidence / sizeof *evidence); i++)
            if (pass ? k && !strncmp(evidence[i].id, id, k) && !evidence[i].id[k] : !strcmp(evidence[i].id, id)) return i;
    return 4;
}

/* A cell of a markdown table row "| a | b | ... |" split on " | ". */
static int split_row(char *line, char **cells, int cap) {
    size_t len = strlen(line);
    while (len && (line[len - 1] == ' ' || line[len - 1] == '|')) line[--len] = 0;
    char *p = line + strspn(line, "| ");
    int n = 0;
    while (p && n < cap) {
        cells[n++] = p;
        char *e = strstr(p, " | ");
        if (e) *e = 0, p = e + 3;
        else p = NULL;
    }
    return n;
}

/* The rows of every table in report.md whose header is "| # | claim-or-check | measurement |
 * verdict | ... |": columns right of the measurement are counted from the right, so a '|'
 * inside a measurement stays in it. */
static void findings(qkt__report *r, qkt_buf *b) {
    char *text = qkt_strdup(r->md.s ? r->md.s : ""), *next = text;
    int col_id = -1, col_claim = -1, col_meas = -1, col_verdict = -1, n_head = 0, nf = 0;
    qkt_buf_printf(b, "\"findings\":[");
    for (char *line = text; next; line = next) {
        char *cells[32], *nl = strchr(line, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl) *nl = 0;
        if (line[0] != '|') {
            n_head = 0;
            continue;
        }
        if (!strncmp(line, "|---", 4)) continue;
        int n = split_row(line, cells, 32);
        if (!n_head) { /* a header: is it a findings table? */
            col_id = col_claim = col_meas = col_verdict = -1;
            for (int i = 0; i < n; i++) {
                if (!strcmp(cells[i], "#")) col_id = i;
                if (!strcmp(cells[i], "claim") || !strcmp(cells[i], "check")) col_claim = i;
                if (!strcmp(cells[i], "measurement")) col_meas = i;
                if (!strcmp(cells[i], "verdict")) col_verdict = i;
            }
            n_head = col_id >= 0 && col_claim >= 0 && col_meas >= 0 && col_verdict >= 0 ? n : -1;
            continue;
        }
        if (n_head < 0 || n < n_head) continue;
        for (int i = col_meas + 1; i < n - (n_head - col_meas - 1); i++) cells[i][-3] = ' ', cells[i][-2] = '|'; /* rejoin */
        int verdict = col_verdict > col_meas ? n - (n_head - col_verdict) : col_verdict;
        int ev = evidence_of(cells[col_id]);
        qkt_buf_printf(b, "%s{\"id\":", nf++ ? "," : "");
        qkt__json_str(b, cells[col_id]);
        qkt_buf_printf(b, ",\"claim\":");
        qkt__json_str(b, cells[col_claim]);
        qkt_buf_printf(b, ",\"meas\":");
        qkt__json_str(b, cells[col_meas]);
        qkt_buf_printf(b, ",\"verdict\":");
        qkt__json_str(b, cells[verdict]);
        qkt_buf_printf(b, ",\"chart\":\"%s\",\"sel\":{", evidence[ev].chart);
        if (evidence[ev].metric) qkt_buf_printf(b, "\"metric\":\"%s\"", evidence[ev].metric);
        if (!strcmp(evidence[ev].chart, "train")) {
            qkt_buf_printf(b, "%s\"task\":", evidence[ev].metric ? "," : "");
            qkt__json_str(b, evidence[ev].task2 && r->c->task2[0] ? r->c->task2 : r->c->run.data);
        }
        qkt_buf_printf(b, "}}");
    }
    qkt_buf_printf(b, "]");
    free(text);
}

void qkt__report_html(qkt__report *r) {
    qkt_buf b = {0};
    bool first = true;
    qkt_buf_printf(&b, "{\"title\":");
    char title[200];
    snprintf(title, sizeof title, "qkt ablation %s: why attention divides by sqrt(d_k)", r->c->name);
    qkt__json_str(&b, title);
    qkt_buf_printf(&b, ",\"notes\":[");
    char note[1400];
    snprintf(note, sizeof note, "Reproduce: `%s`. The numbers and the tables behind each verdict: report.md; the data: metrics.csv "
                                "(tidy), summary.csv. Click a verdict for its chart; hover a chart for values; click a legend "
                                "entry to hide or show it.", r->c->command);
    qkt__json_str(&b, note);
    qkt_buf_printf(&b, "],");
    findings(r, &b);
    qkt_buf_printf(&b, ",\"charts\":[");
    const char *train[] = {QKT_KIND(TRAIN), QKT_KIND(TRAIN2), NULL}, *lr[] = {QKT_KIND(LR), NULL};
    chart_steps(r, &b, &first, "train", "Training ablation: curves over steps (part 2, 2c)", train, "\"task\",\"d_k\",\"metric\"",
                "One line per variant: the mean over seeds with the min-max band, or each seed. Per-head metrics are the mean "
                "over layers and heads (the maximum for logit_max), as in report.md.");
    chart_maps(r, &b, &first);
    chart_dk(r, &b, &first, "iid", "At initialisation with iid q and k (part 1)", QKT_KIND(IID), "Each value at step 0, against d_k.");
    chart_dk(r, &b, &first, "init", "A fresh GPT at step 0", QKT_KIND(INIT), "Each value at step 0, against d_k.");
    chart_lr_sweep(r, &b, &first);
    chart_steps(r, &b, &first, "lr", "Learning-rate runs: curves over steps (part 3)", lr, "\"lr\",\"metric\"",
                "Seed 0: one line per variant at the chosen learning rate.");
    chart_dk(r, &b, &first, "growth", "Logit growth under Adam (part 4)", QKT_KIND(GROWTH),
             "Each metric at its last step against d_k: logit_delta_rms after the growth steps, logit_rms at init.");
    qkt_buf_printf(&b, "]}");
    char path[1200];
    snprintf(path, sizeof path, "%s/report.html", r->dir);
    qkt__report_plot_done(r, qkt__html_write(path, title, &b, r->err), path);
    qkt_buf_free(&b);
}
