/* qkt_ablate_run_study's refusals before any work, each with its status and one line: a
 * bad setting (named by its config.json key, after the call), a task that does not open,
 * a rerun on another kernel path with forked cells, a run directory another process holds, and one holding a different study. (A whole
 * study through the call, with forked cells running a registered variant: the ctest
 * example_study_variant.) */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_test.h"

int main(void) {
    const char *tmp = qkt_test_tmpdir("ablate_study");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/run", tmp);
    qkt_ablate_cfg c;
    qkt_err err = {{0}};
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);

    c.seeds = 0;
    EXPECT(qkt_ablate_run_study(&c, dir, NULL, &err) == QKT_ABLATE_ERR_CONFIG &&
               !strcmp(err.msg, "qkt_ablate_run_study: seeds 0: expected an integer in [1, 100]"), "'%s'", err.msg);
    EXPECT(!qkt_file_exists(dir), "%s made for a refused config", dir);
    c.seeds = 2;
    snprintf(c.run.data, sizeof c.run.data, "nosuchtask");
    EXPECT(qkt_ablate_run_study(&c, dir, NULL, &err) == QKT_ABLATE_ERR_CONFIG && !strncmp(err.msg, "qkt_ablate_run_study: task: ", 28),
           "'%s'", err.msg);
    snprintf(c.run.data, sizeof c.run.data, "mqar");
    /* forked cells cannot change kernel path: a rerun on another path needs opts.exe */
    snprintf(c.robust_isa, sizeof c.robust_isa, "baseline");
    EXPECT(qkt_ablate_run_study(&c, dir, NULL, &err) == QKT_ABLATE_ERR_CONFIG && strstr(err.msg, "robust_isa baseline: forked cells"),
           "'%s'", err.msg);
    EXPECT(!qkt_file_exists(dir), "%s made for a forked rerun on another path", dir);
    c.robust_isa[0] = 0;

    /* another holder of the lock: refused, nothing written */
    qkt_lock lk;
    EXPECT(qkt_mkdirs(dir, &err) == 0 && qkt_dir_lock(&lk, dir, &err) == 0, "%s", err.msg);
    pid_t pid = fork();
    if (pid == 0) _exit(qkt_ablate_run_study(&c, dir, NULL, &err) == QKT_ABLATE_ERR_LOCKED ? 0 : 1);
    int ws = -1;
    waitpid(pid, &ws, 0);
    EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "a locked directory: status %d", ws);
    qkt_dir_unlock(&lk);
    EXPECT(!qkt_file_exists(qkt_test_path(dir, "config.json")), "config.json written into a locked directory");

    /* a different study there: refused, naming the first key that differs */
    EXPECT(qkt_ablate_start(dir, &c, &err) == 0, "%s", err.msg);
    c.seeds = 3;
    EXPECT(qkt_ablate_run_study(&c, dir, NULL, &err) == QKT_ABLATE_ERR_OTHER && strstr(err.msg, "seeds is 2 there, 3 here"), "'%s'",
           err.msg);
    return qkt_test_finish();
}
