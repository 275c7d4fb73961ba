/* libFuzzer harness for the metrics.csv reader behind the report and `qkt plot`: any
 * bytes either fail with one line starting with the label (and nothing allocated), or
 * give a consistent table on which every query the report makes is safe. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_report.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qkt_table t;
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_table_parse((const char *)data, size, "fuzz", &t, &err) != 0) {
        MUST(!strncmp(err.msg, "fuzz: ", 6) && strlen(err.msg) > 6 && !strchr(err.msg, '\n'));
        MUST(!t.runs && !t.rows && t.n_runs == 0 && t.n_rows == 0);
        return 0;
    }
    /* runs tile the rows in order */
    int next = 0;
    for (int i = 0; i < t.n_runs; i++) {
        const qkt_run *r = &t.runs[i];
        MUST(r->first == next && r->count > 0);
        next += r->count;
        MUST(qkt_table_find_run(&t, r->exp, r->variant, r->d_k, r->seed, r->lr) >= 0);
    }
    MUST(next == t.n_rows);
    for (int i = 0; i < t.n_rows; i++) {
        const qkt_row *x = &t.rows[i];
        MUST(x->run >= 0 && x->run < t.n_runs && x->metric >= 0 && x->metric < t.n_metrics);
        MUST(i >= t.runs[x->run].first && i < t.runs[x->run].first + t.runs[x->run].count);
    }
    double steps[64], vals[64];
    for (int r = 0; r < t.n_runs && r < 16; r++)
        for (int m = 0; m < t.n_metrics; m++) {
            int n = qkt_table_series(&t, r, t.metrics[m], -1, steps, vals, 64);
            MUST(n >= 0 && n <= 64);
            int last = qkt_table_last_step(&t, r, t.metrics[m]);
            MUST(n == 0 ? last == -1 : last >= steps[0]);
            (void)qkt_table_value(&t, r, t.metrics[m], last, 0);
        }
    /* a name no field can hold (fields are split at commas) */
    MUST(qkt_table_metric(&t, "no,such") == -1 && isnan(qkt_table_value(&t, 0, "no,such", 0, -1)));
    qkt_table_free(&t);
    return 0;
}
