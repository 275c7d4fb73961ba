/* Claim 5a's two tests and the reading of part 2 when unscaled runs end where scaled ones do
 * but get there later: the measurement labels the final loss "worse" and the mean loss over
 * the run "slower", and the reading says "slower, not worse" (hand-written cells, d_k 64,
 * 10 seeds). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"
#include "report_cells.h"

#define SEEDS 10
#define DK 64

/* val loss at steps 0, 100, 200: `mid` halfway, `fin` at the end */
static void write_cell(const char *run, const char *variant, int seed, double mid, double fin) {
    char id[96];
    snprintf(id, sizeof id, "train_%s_dk%d_s%d", variant, DK, seed);
    qkt_buf b = {0};
    double l[3] = {4.1, mid, fin}, acc[3] = {0.02, mid < 1 ? 0.95 : 0.5, 1};
    for (int k = 0; k < 3; k++) {
        qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,%d,val_loss,-1,-1,%.9g\n", id, variant, DK, seed, 100 * k, l[k]);
        qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,%d,val_acc,-1,-1,%.9g\n", id, variant, DK, seed, 100 * k, acc[k]);
    }
    qkt_buf_printf(&b, "%s,train,%s,%d,%d,0.003,200,diverged_step,-1,-1,-1\n", id, variant, DK, seed);
    qkt_test_write_cell(run, id, &b);
}

int main(void) {
    char run[1100], cells[1200], path[1300];
    snprintf(run, sizeof run, "%s/slower", qkt_test_tmpdir("slower"));
    snprintf(cells, sizeof cells, "%s/cells", run);
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    c.n_dk = 1, c.dks[0] = DK, c.seeds = SEEDS, c.n_variants = 2, c.variants[0] = QKT_ATTN_SQRT_DK, c.variants[1] = QKT_ATTN_NONE;
    c.task2[0] = 0, c.n_task2_dk = 0, c.task2_start_dk = 0, c.start_dk = 0;
    EXPECT(qkt_ablate_start(run, &c, &err) == 0 && qkt_mkdirs(cells, &err) == 0, "%s", err.msg);
    for (int s = 0; s < SEEDS; s++) {
        double e = 0.01 * (s % 3 - 1), d = 0.002 * (s % 2 ? 1 : -1); /* the final losses differ by +-0.002: no sign */
        write_cell(run, "sqrt_dk", s, 0.2 + e, 0.05 + e);
        write_cell(run, "none", s, 1.5 + e, 0.05 + e + d);
    }
    qkt_ablate_report(run, &err); /* the other parts have no cells: their plots may fail, report.md is written */
    snprintf(path, sizeof path, "%s/report.md", run);
    size_t n;
    char *md = qkt_read_file(path, &n, &err);
    EXPECT(md != NULL, "%s", err.msg);
    if (!md) return qkt_test_finish();
    char *row = strstr(md, "\n| 5a |");
    EXPECT(row && strstr(row, "final val loss (worse)") && strstr(row, "mean val loss over the run (slower)"), "5a: %.400s", row ? row : md);
    char *reading = strstr(md, "- **Training, d_k = 64.**");
    char *end = reading ? strchr(reading, '\n') : NULL;
    if (end) *end = 0;
    EXPECT(reading && strstr(reading, "unscaled is slower, not worse"), "reading: %s", reading ? reading : "(none)");
    free(md);
    return qkt_test_finish();
}
