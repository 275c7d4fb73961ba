/* qkt plot RUN: redraws the plots, summary.csv and report.md of a qkt ablate run. */
#include <stdio.h>
#include <sys/stat.h>

#include "qkt_ablate.h"
#include "cli.h"
#include "flags.h"
#include "qkt_io.h"

int qkt_cmd_plot(int argc, char **argv) {
    const char *pos[1];
    int np = 0;
    qkt_flag flags[1];
    int rc = qkt_flags_parse("plot", "usage: qkt plot RUN_DIR\nRedraws the plots, summary.csv and report.md of a qkt ablate run from its CSV files.",
                             flags, 0, argc, argv, pos, 1, &np);
    if (rc) return rc == 1 ? 0 : 2;
    if (np != 1) return fprintf(stderr, "qkt plot: expected one run directory (qkt plot runs/quick)\n"), 2;
    qkt_err err;
    /* Not a run (no valid config.json, no cells/): refused like a bad flag, exit 2.
     * A failure while reading the cells or writing the report is exit 1. */
    qkt_ablate_cfg c;
    if (qkt_ablate_load_config(pos[0], &c, &err) != 0) return fprintf(stderr, "qkt plot: %s\n", err.msg), 2;
    char cells[1100];
    snprintf(cells, sizeof cells, "%s/cells", pos[0]);
    struct stat sb;
    if (stat(cells, &sb) != 0 || !S_ISDIR(sb.st_mode)) return fprintf(stderr, "qkt plot: %s: not a directory (is %s a qkt ablate run?)\n", cells, pos[0]), 2;
    qkt_lock lk; /* it rewrites the derived files: not while a qkt ablate works in the run */
    if (qkt_dir_lock(&lk, pos[0], &err) != 0) return fprintf(stderr, "qkt plot: %s\n", err.msg), 2;
    char ids[1024];
    int seeds, missing = qkt_ablate_missing(pos[0], &c, ids, sizeof ids, &seeds);
    if (missing) /* the report says so too; a partial study is worth a look, not worth silence */
        fprintf(stderr, "qkt plot: warning: %d planned cell%s missing or unfinished (%s); report.md says so and uses the seeds "
                        "present (as few as %d of %d); rerun the study's qkt ablate command to compute them\n",
                missing, missing == 1 ? " is" : "s are", ids, seeds, c.seeds);
    rc = qkt_ablate_report(pos[0], &err);
    qkt_dir_unlock(&lk);
    if (rc != 0) return fprintf(stderr, "qkt plot: %s\n", err.msg), 1;
    printf("%s/report.md\n", pos[0]);
    return 0;
}
