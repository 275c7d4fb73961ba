/* The findings table's rows: collected while the claims are measured, then printed together
 * with Holm's adjustment over every p-value of the table (report_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_stats.h"
#include "report_internal.h"

struct qkt__finding {
    char id[16];
    char *claim, *src, *meas, *pre;
    qkt__tests t;
};

qkt__tests qkt__test(qkt__verdict v, double p) {
    qkt__tests t = {.n = isnan(p) || v == QKT_V_UNTESTABLE ? 0 : 1, .v = {v, v}, .p = {p, NAN}}; /* no test without a verdict */
    return t;
}

void qkt__finding(qkt__report *r, const char *id, const char *claim, const char *src, const char *meas, const char *pre, qkt__tests t) {
    r->rows = qkt_realloc(r->rows, (size_t)(r->n_rows + 1) * sizeof *r->rows);
    struct qkt__finding *f = &r->rows[r->n_rows++];
    snprintf(f->id, sizeof f->id, "%s", id);
    f->claim = qkt_strdup(claim), f->src = qkt_strdup(src), f->meas = qkt_strdup(meas), f->pre = pre ? qkt_strdup(pre) : NULL;
    f->t = t;
}

qkt__verdict qkt__verdict_holm(qkt__verdict v, double adj) {
    if (v != QKT_V_REPRODUCED && v != QKT_V_CONTRADICTED && v != QKT_V_NEGLIGIBLE) return v;
    return adj <= 1 - QKT_REPORT_LEVEL + 1e-12 ? v : QKT_V_NOT_DETECTABLE;
}

qkt__verdict qkt__verdict_combine(qkt__verdict a, qkt__verdict b) {
    if (a == QKT_V_UNTESTABLE && b == QKT_V_UNTESTABLE) return QKT_V_UNTESTABLE;
    bool rep = a == QKT_V_REPRODUCED || b == QKT_V_REPRODUCED, con = a == QKT_V_CONTRADICTED || b == QKT_V_CONTRADICTED;
    bool neg = a == QKT_V_NEGLIGIBLE || b == QKT_V_NEGLIGIBLE;
    return rep && !con ? QKT_V_REPRODUCED : con && !rep ? QKT_V_CONTRADICTED : neg && !rep && !con ? QKT_V_NEGLIGIBLE : QKT_V_NOT_DETECTABLE;
}

/* An adjusted p-value, or "-" for a test without one. */
static const char *fmt_p(char *b, size_t n, double p) {
    if (isfinite(p)) snprintf(b, n, "%.3g", p);
    else snprintf(b, n, "-");
    return b;
}

void qkt__findings_print(qkt__report *r) {
    int n = 0;
    int n_tests = 0; /* with a p-value: the family's size */
    for (int i = 0; i < r->n_rows; i++) {
        n += r->rows[i].t.n;
        for (int j = 0; j < r->rows[i].t.n; j++) n_tests += isfinite(r->rows[i].t.p[j]);
    }
    double *p = qkt_malloc((size_t)(n ? n : 1) * sizeof *p), *adj = qkt_malloc((size_t)(n ? n : 1) * sizeof *adj);
    int k = 0;
    for (int i = 0; i < r->n_rows; i++)
        for (int j = 0; j < r->rows[i].t.n; j++) p[k++] = r->rows[i].t.p[j];
    qkt_stats_holm(p, n, adj);
    const char *extra = qkt__robust_header(r); /* the reruns' column, or "" */
    qkt_buf_printf(&r->md, "| # | claim | measurement | p (Holm, %d test%s) | verdict |%s source |\n|---|---|---|---|---|%s---|\n", n_tests,
                   n_tests == 1 ? "" : "s", extra,
                   *extra ? "---|" : "");
    k = 0;
    for (int i = 0; i < r->n_rows; i++) {
        struct qkt__finding *f = &r->rows[i];
        char ps[64] = "-", vs[256];
        qkt__verdict v = f->t.v[0], before = f->t.v[0];
        if (f->t.n >= 1) {
            qkt__verdict a = qkt__verdict_holm(f->t.v[0], adj[k]);
            if (f->t.n == 2) {
                v = qkt__verdict_combine(a, qkt__verdict_holm(f->t.v[1], adj[k + 1]));
                before = qkt__verdict_combine(f->t.v[0], f->t.v[1]);
                char p0[24], p1[24];
                if (isfinite(adj[k]) || isfinite(adj[k + 1])) snprintf(ps, sizeof ps, "%s / %s", fmt_p(p0, sizeof p0, adj[k]), fmt_p(p1, sizeof p1, adj[k + 1]));
            } else {
                v = a;
                fmt_p(ps, sizeof ps, adj[k]);
            }
            k += f->t.n;
        }
        char vt[200]; /* the verdict as the reruns compare it */
        if (f->t.n == 0 && f->t.v[0] < 0) snprintf(vt, sizeof vt, "%s", f->pre ? f->pre : "");
        else snprintf(vt, sizeof vt, "%s%s", f->pre ? f->pre : "", qkt__verdict_name(v));
        bool fragile = false;
        const char *held = qkt__robust_row(r, f->id, vt, &fragile);
        snprintf(vs, sizeof vs, "%s%s%s", vt, v != before && !(f->t.n == 0 && f->t.v[0] < 0) ? " (not after Holm's adjustment)" : "",
                 fragile ? " (**fragile**)" : "");
        qkt_buf_printf(&r->md, "| %s | %s | %s | %s | %s |%s%s%s %s |\n", f->id, f->claim, f->meas, ps, vs, held ? " " : "", held ? held : "",
                       held ? " |" : "", f->src);
        free(f->claim), free(f->src), free(f->meas), free(f->pre);
    }
    free(r->rows);
    r->rows = NULL, r->n_rows = 0;
    free(p), free(adj);
    qkt__robust_after_table(r);
}
