/* qkt plot RUN: redraws the plots, summary.csv, report.md and report.html of a qkt ablate
 * run; qkt plot RUN [RUN ...] on qkt train runs writes their report.html. */
#include <stdio.h>
#include <sys/stat.h>

#include "qkt_ablate.h"
#include "cli.h"
#include "flags.h"
#include "qkt_io.h"
#include "qkt_report.h"

#define MAX_RUNS 64

static bool has(const char *dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return qkt_file_exists(path);
}

/* The study: the derived files are rewritten, under the run's lock. */
static int plot_ablate(const char *run) {
    qkt_err err;
    /* Not a run (no valid config.json, no cells/): refused like a bad flag, exit 2.
     * A failure while reading the cells or writing the report is exit 1. */
    qkt_ablate_cfg c;
    if (qkt_ablate_load_config(run, &c, &err) != 0) return qkt_cli_err("qkt plot: %s\n", err.msg), 2;
    char cells[1100];
    snprintf(cells, sizeof cells, "%s/cells", run);
    struct stat sb;
    if (stat(cells, &sb) != 0 || !S_ISDIR(sb.st_mode)) return qkt_cli_err("qkt plot: %s: not a directory (is %s a qkt ablate run?)\n", cells, run), 2;
    qkt_lock lk; /* it rewrites the derived files: not while a qkt ablate works in the run */
    if (qkt_dir_lock(&lk, run, &err) != 0) return qkt_cli_err("qkt plot: %s\n", err.msg), 2;
    char ids[1024];
    int seeds, missing = qkt_ablate_missing(run, &c, ids, sizeof ids, &seeds);
    int rc = qkt_ablate_report(run, &err);
    qkt_dir_unlock(&lk);
    if (rc != 0) return qkt_cli_err("qkt plot: %s\n", err.msg), 1;
    if (missing) /* the report says so too (once written); a partial study is worth a look, not worth silence */
        qkt_cli_err("qkt plot: warning: %d planned cell%s missing or unfinished (%s); report.md says so and uses the seeds "
                    "present (as few as %d of %d); rerun the study's qkt ablate command to compute them\n",
                    missing, missing == 1 ? " is" : "s are", ids, seeds, c.seeds);
    printf("%s/report.md\n%s/report.html\n", run, run);
    return 0;
}

int qkt_cmd_plot(int argc, char **argv) {
    const char *pos[MAX_RUNS + 1], *out = NULL;
    int np = 0;
    qkt_flag flags[] = {{"out", QKT_FLAG_STRING, &out, "qkt train runs: the page to write (default RUN/report.html of the first RUN)", 1, 0, false, false}};
    int rc = qkt_flags_parse("plot",
                             "usage: qkt plot RUN_DIR          (a qkt ablate run)\n"
                             "       qkt plot [--out FILE] RUN [RUN ...]   (qkt train runs)\n"
                             "A qkt ablate run: redraws the plots, summary.csv, report.md and report.html from its CSV files.\n"
                             "qkt train runs (train.json, log.csv): writes one report.html with their curves overlaid, by\n"
                             "default into the first run's directory; a run still training is drawn up to its last row.",
                             flags, 1, argc, argv, pos, MAX_RUNS + 1, &np);
    if (rc) return rc == 1 ? 0 : 2;
    if (np == 0) return qkt_cli_err("qkt plot: expected a run directory (qkt plot runs/quick, or qkt train runs)\n"), 2;
    if (np > MAX_RUNS) return qkt_cli_err("qkt plot: at most %d runs at once\n", MAX_RUNS), 2;
    /* One directory without train.json: a study (its own messages name config.json, cells/). */
    if (np == 1 && !has(pos[0], "train.json")) {
        if (out) return qkt_cli_err("qkt plot: --out is for qkt train runs; a study's report.html goes beside its report.md\n"), 2;
        return plot_ablate(pos[0]);
    }
    for (int i = 0; i < np; i++) {
        struct stat sb;
        if (stat(pos[i], &sb) != 0 || !S_ISDIR(sb.st_mode)) return qkt_cli_err("qkt plot: %s: not a directory\n", pos[i]), 2;
        if (!has(pos[i], "train.json"))
            return qkt_cli_err("qkt plot: %s/train.json: not found (several runs are qkt train runs; a qkt ablate run is plotted alone)\n",
                               pos[i]), 2;
    }
    char def[1200];
    snprintf(def, sizeof def, "%s/report.html", pos[0]);
    qkt_err err;
    if (qkt_train_report_html(pos, np, out ? out : def, &err) != 0) return qkt_cli_err("qkt plot: %s\n", err.msg), 1;
    printf("%s\n", out ? out : def);
    return 0;
}
