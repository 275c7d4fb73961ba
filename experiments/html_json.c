/* JSON pieces of the report pages (html_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

void qkt__json_xy(qkt_buf *b, const double *x, const double *y, int n, int max_points) {
    int stride = n > max_points && max_points > 0 ? (n + max_points - 1) / max_points : 1;
    for (int k = 0; k < 2; k++) {
        const double *v = k ? y : x;
        qkt_buf_printf(b, "%s\"%s\":[", k ? "," : "", k ? "y" : "x");
        for (int i = 0, first = 1; i < n; i++) {
            if (i % stride && i != n - 1) continue;
            qkt_buf_printf(b, "%s", first ? "" : ",");
            qkt__json_num(b, v[i]);
            first = 0;
        }
        qkt_buf_printf(b, "]");
    }
}

int qkt__html_write(const char *path, const char *title, const qkt_buf *data, qkt_err *err) {
    size_t n;
    char *page = qkt_plot_html_page(title, data->s ? data->s : "{}", &n);
    int rc = qkt_write_atomic(path, page, n, err);
    free(page);
    return rc;
}
