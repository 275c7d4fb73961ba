/* The report tests' hand-written study files: a cell file's rows, sealed as a finished cell
 * and written to RUN/cells/<id>.csv (b is freed); a config.json text as a run made before one
 * of its keys existed. */
#ifndef QKT_TEST_REPORT_CELLS_H
#define QKT_TEST_REPORT_CELLS_H

#include <stdio.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"

static inline void qkt_test_write_cell(const char *run, const char *id, qkt_buf *b) {
    char path[1400];
    qkt_err err;
    qkt_cell_seal(b);
    snprintf(path, sizeof path, "%s/cells/%s.csv", run, id);
    EXPECT(qkt_write_atomic(path, b->s, b->n, &err) == 0, "%s", err.msg);
    qkt_buf_free(b);
}

/* Drops the line of config.json text `json` holding `key` (with its quotes: "\"task2\""), and
 * the comma before it when it was the last key, so the text stays valid JSON. */
static inline void qkt_test_drop_json_key(char *json, const char *key) {
    char *p = strstr(json, key), *e = p ? strchr(p, '\n') : NULL;
    EXPECT(p && e, "config.json has no %s", key);
    if (!p || !e) return;
    while (p > json && p[-1] != '\n') p--;
    memmove(p, e + 1, strlen(e + 1) + 1);
    if (*p == '}' && p - json >= 2 && p[-2] == ',') memmove(p - 2, p - 1, strlen(p - 1) + 1);
}

#endif
