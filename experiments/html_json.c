/* JSON pieces of the report pages (html_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"
#include "qkt_plot.h"

void qkt__json_str(qkt_buf *b, const char *s) {
    qkt_buf_printf(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') qkt_buf_printf(b, "\\%c", *c);
        else if (*c < 0x20) qkt_buf_printf(b, "\\u%04x", *c);
        else qkt_buf_printf(b, "%c", *c);
    }
    qkt_buf_printf(b, "\"");
}

void qkt__json_num(qkt_buf *b, double v) {
    if (isfinite(v)) qkt_buf_printf(b, "%.6g", v);
    else qkt_buf_printf(b, "null");
}

static void json_array(qkt_buf *b, const double *v, int n) {
    qkt_buf_printf(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) qkt_buf_printf(b, ",");
        qkt__json_num(b, v[i]);
    }
    qkt_buf_printf(b, "]");
}

void qkt__json_xy_shared(qkt_buf *b, qkt__xtab *t, const double *x, const double *y, int n, int max_points) {
    int stride = n > max_points && max_points > 0 ? (n + max_points - 1) / max_points : 1, m = 0;
    double *xt = qkt_malloc(((size_t)n + 1) * sizeof *xt), *yt = qkt_malloc(((size_t)n + 1) * sizeof *yt);
    for (int i = 0; i < n; i++)
        if (i % stride == 0 || i == n - 1) xt[m] = x[i], yt[m] = y[i], m++;
    int idx = -1;
    for (int k = 0; t && k < t->n && idx < 0; k++)
        if (t->len[k] == m && !memcmp(t->v[k], xt, (size_t)m * sizeof *xt)) idx = k;
    if (t && idx < 0 && t->n < (int)(sizeof t->v / sizeof t->v[0])) {
        idx = t->n++;
        t->len[idx] = m;
        t->v[idx] = qkt_malloc(((size_t)m + 1) * sizeof *xt);
        memcpy(t->v[idx], xt, (size_t)m * sizeof *xt);
    }
    if (idx >= 0) qkt_buf_printf(b, "\"x\":%d", idx);
    else qkt_buf_printf(b, "\"x\":"), json_array(b, xt, m);
    qkt_buf_printf(b, ",\"y\":");
    json_array(b, yt, m);
    free(xt), free(yt);
}

void qkt__json_xy(qkt_buf *b, const double *x, const double *y, int n, int max_points) {
    qkt__json_xy_shared(b, NULL, x, y, n, max_points);
}

void qkt__json_xtab(qkt_buf *b, qkt__xtab *t) {
    qkt_buf_printf(b, "\"xs\":[");
    for (int k = 0; k < t->n; k++) {
        if (k) qkt_buf_printf(b, ",");
        json_array(b, t->v[k], t->len[k]);
        free(t->v[k]);
    }
    qkt_buf_printf(b, "]");
    t->n = 0;
}

int qkt__html_write(const char *path, const char *title, const qkt_buf *data, qkt_err *err) {
    size_t n;
    char *page = qkt_plot_html_page(title, data->s ? data->s : "{}", &n);
    int rc = qkt_write_atomic(path, page, n, err);
    free(page);
    return rc;
}
