/* QKT_THREADS: every command with --threads takes it when the flag is not given (the
 * flag wins), and refuses a bad value before any work (exit 2, one line naming it). */
#include <string.h>

#include "qkt_test.h"

static char out[1 << 16];

static int run(const char *env, const char *args) { return qkt_test_qkt(NULL, env, out, sizeof out, "%s", args); }

int main(void) {
    const char *bench = "bench --config tiny --steps 1 --warmup 0 --peak 100";
    EXPECT(run("QKT_THREADS=1", bench) == 0 && strstr(out, " threads=1 "), "QKT_THREADS=1 qkt bench: %s", out);
    char with_flag[256];
    snprintf(with_flag, sizeof with_flag, "%s --threads 2", bench);
    EXPECT(run("QKT_THREADS=1", with_flag) == 0 && strstr(out, " threads=2 "), "--threads 2 over QKT_THREADS=1: %s", out);
    const char *cmds[] = {"bench --config tiny", "sample --ckpt x", "step --ckpt x --batch y --out z", "train --data mqar"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = run("QKT_THREADS=two", cmds[i]);
        const char *nl = strchr(out, '\n');
        EXPECT(rc == 2 && strstr(out, "QKT_THREADS 'two'") && nl && !nl[1], "QKT_THREADS=two qkt %s: exit %d: %s", cmds[i], rc, out);
    }
    return qkt_test_finish();
}
