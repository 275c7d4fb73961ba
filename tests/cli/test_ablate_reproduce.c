/* report.md's "Reproduce:" line reruns the study: after a --report-only rerun it is the
 * study's command, without --report-only (or --workers, a machine setting). */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

static char out[1 << 16];

int main(void) {
    const char *tmp = qkt_test_tmpdir("reproduce");
    const char *study = "--name t --variants sqrt_dk --d-k 8 --seeds 1 --steps 2 --lr-grid 0.001 --lr-variants sqrt_dk "
                        "--lr-steps 2 --init-d-k 4 --growth-d-k 8";
    char cmd[4096], want[2048];
    snprintf(want, sizeof want, "Reproduce: `qkt ablate %s --out %s`", study, tmp);
    const char *extra[] = {"--workers 1", "--report-only", "--report-only=true --workers=2"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s ablate %s --out %s %s", qkt_test_bin(), study, tmp, extra[i]);
        int rc = qkt_test_run(cmd, out, sizeof out);
        EXPECT(rc == 0, "%s: exit %d: %s", extra[i], rc, out);
        char *md = qkt_test_read_file(qkt_test_path(tmp, "t/report.md"), NULL);
        EXPECT(md && strstr(md, want), "after '%s', report.md lacks\n  %s\n%.400s", extra[i], want, md ? md : "(no report.md)");
        free(md);
    }
    return qkt_test_finish();
}
