/* The report's part 5: the study's own efficiency (qkt_ablate_efficiency_read). */
#include <math.h>
#include <stdio.h>

#include "report_internal.h"

void qkt__report_part_efficiency(qkt__report *r) {
    qkt_ablate_efficiency e;
    qkt_err err;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "## 5. The study's own efficiency\n\n");
    if (qkt_ablate_efficiency_read(r->dir, r->c, &e, &err) != 0) {
        qkt_buf_printf(md, "Not computed: %s.\n\n", err.msg);
        return;
    }
    char line[600];
    qkt_ablate_efficiency_text(&e, line, sizeof line);
    qkt_buf_printf(md, "The cells' FLOPs over their CPU seconds and the single-core sgemm peak measured at the study's start "
                       "(training steps forward and backward as `qkt bench` counts them, forward-only passes a third of that; "
                       "docs/performance.md): %s.\n\n", line);
}
