/* The report tests' hand-written cells: a cell file's rows, sealed as a finished cell and
 * written to RUN/cells/<id>.csv (b is freed). */
#ifndef QKT_TEST_REPORT_CELLS_H
#define QKT_TEST_REPORT_CELLS_H

#include <stdio.h>

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

#endif
