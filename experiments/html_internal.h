/* Internal to the report pages (report.html): JSON writing and the line-chart series both
 * pages share. report_html.c writes a study's page, train_html.c the page of qkt train
 * runs; plot/plot_html.c wraps either in the page's style and script. */
#ifndef QKT_HTML_INTERNAL_H
#define QKT_HTML_INTERNAL_H
#include "qkt_io.h"

/* A JSON string: "s" with '"', '\\' and control characters escaped. */
void qkt__json_str(qkt_buf *b, const char *s);
/* A JSON number (%.6g), null for NaN or infinity. */
void qkt__json_num(qkt_buf *b, double v);
/* The points i of x[0..n), y[0..n) with i a multiple of ceil(n / max_points), and the last:
 * a long series thinned to about max_points, every value kept exact. Writes "x":[..],"y":[..]. */
void qkt__json_xy(qkt_buf *b, const double *x, const double *y, int n, int max_points);
/* The x arrays a chart's series share: a series whose thinned x equals one already written
 * refers to it by index ("x":3), so the steps of hundreds of runs are written once per chart
 * (page.js resolves them). At most 256 distinct arrays; a further one is written inline. */
typedef struct {
    int n;
    int len[256];
    double *v[256];
} qkt__xtab;
/* As qkt__json_xy, with x taken from (or added to) t; t NULL writes x inline (qkt__json_xy). */
void qkt__json_xy_shared(qkt_buf *b, qkt__xtab *t, const double *x, const double *y, int n, int max_points);
/* "xs":[[..],..]: t's arrays (for the chart object that holds the series), and frees them. */
void qkt__json_xtab(qkt_buf *b, qkt__xtab *t);
/* The page (qkt_plot_html_page) around the JSON in data, written atomically to path. */
int qkt__html_write(const char *path, const char *title, const qkt_buf *data, qkt_err *err);

#endif
