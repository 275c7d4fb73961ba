/* qkt _cell: runs one cell of a qkt ablate sweep in this process (the sweep runner
 * starts one per cell, so a crashing cell cannot take the study down). Internal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <signal.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "cli.h"
#include "flags.h"

int qkt_cmd_cell(int argc, char **argv) {
    const char *run = NULL, *id = NULL;
    qkt_flag flags[] = {
        {"run", QKT_FLAG_STRING, &run, "run directory", 1, 0, false, false},
        {"cell", QKT_FLAG_STRING, &id, "cell id", 1, 0, false, false},
    };
    int rc = qkt_flags_parse("_cell", "Internal: runs one cell of a qkt ablate sweep.", flags, 2, argc, argv, NULL, 0, NULL);
    if (rc) return rc == 1 ? 0 : 2;
    if (!run || !id) return qkt_cli_err("qkt _cell: --run and --cell are required\n"), 2;
#ifdef __linux__
    /* The study's parent killed outright (SIGKILL: it cannot stop us itself): end with it
     * rather than keep writing into a run nobody holds. Its finished cells stay. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) return qkt_cli_err("qkt _cell: the qkt ablate that started this cell is gone\n"), 1;
#endif
    qkt_err err;
    if (qkt_ablate_run_cell_id(run, id, &err) != 0) return qkt_cli_err("qkt _cell %s: %s\n", id, err.msg), 1;
    return 0;
}
