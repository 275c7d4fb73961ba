/* The counts the docs state equal what the program and the tree say: the cells of each
 * preset (docs/ablate.md's table, README's demo section) against `qkt ablate --plan`; the
 * examples docs/library.md counts and lists against the .c files of examples/; and `make demo` builds
 * only the qkt program (its `cmake --build` lines, from `make -n`). (The PyTorch
 * cross-check's case count in docs/performance.md is checked by tests/torch/crosscheck.py.) */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_test.h"

static char out[1 << 16];
static const char *root;

static char *doc(const char *rel) {
    char *s = qkt_test_read_file(qkt_test_path(root, rel), NULL);
    EXPECT(s != NULL, "cannot read %s", rel);
    return s ? s : strdup("");
}

/* The number right after `key` in text, or -1. */
static long number_after(const char *text, const char *key) {
    const char *p = strstr(text, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void preset_cells(void) {
    char *ablate = doc("docs/ablate.md"), *readme = doc("README.md");
    const struct {
        const char *preset, *row;
    } p[] = {{"quick", "| `quick` (`make demo`) | "}, {"full", "| `full` | "}};
    for (int i = 0; i < 2; i++) {
        int rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate --preset %s --plan", p[i].preset);
        long n = strtol(out, NULL, 10);
        EXPECT(rc == 0 && n > 0 && strstr(out, " cells:"), "qkt ablate --preset %s --plan: exit %d: %s", p[i].preset, rc, out);
        if (i == 0) { /* --plan writes nothing */
            const char *tmp = qkt_test_tmpdir("doc_counts");
            rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate --plan --out %s/runs", tmp);
            EXPECT(rc == 0 && !qkt_file_exists(qkt_test_path(tmp, "runs")), "qkt ablate --plan --out: exit %d, or it wrote %s/runs", rc,
                   tmp);
            qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate --preset %s --plan", p[i].preset);
        }
        long d = number_after(ablate, p[i].row);
        EXPECT(d == n, "docs/ablate.md's table says %ld cells for %s; qkt ablate --plan says %ld", d, p[i].preset, n);
        if (i == 0) {
            long r = number_after(readme, "`make demo` runs `qkt ablate --preset quick`: ");
            EXPECT(r == n, "README's demo section says %ld cells; qkt ablate --plan says %ld", r, n);
            /* a robustness rerun's count, as "What reruns" states it */
            rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate --preset quick --plan --robust-seeds 2");
            long rr = number_after(out, "robustness rerun seed 2: ");
            long dr = number_after(ablate, "prints a rerun's count: "), dq = number_after(ablate, " of the quick\n  preset's ");
            EXPECT(rc == 0 && rr > 0 && dr == rr && dq == n, "docs/ablate.md says a rerun is %ld of %ld cells; qkt ablate --plan says %ld of %ld",
                   dr, dq, rr, n);
        }
    }
    free(ablate), free(readme);
}

static void examples(void) {
    static const char *const words[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
    char *lib = doc("docs/library.md");
    DIR *d = opendir(qkt_test_path(root, "examples"));
    EXPECT(d != NULL, "no examples/");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t k = strlen(e->d_name);
        if (k < 3 || strcmp(e->d_name + k - 2, ".c")) continue;
        n++;
        char row[300];
        snprintf(row, sizeof row, "| `examples/%s` |", e->d_name);
        EXPECT(strstr(lib, row), "docs/library.md's table of examples lacks examples/%s", e->d_name);
    }
    if (d) closedir(d);
    int rows = 0;
    for (const char *p = lib; (p = strstr(p, "\n| `examples/")); p++) rows++;
    EXPECT(rows == n, "docs/library.md's table lists %d examples; examples/ holds %d", rows, n);
    char said[64];
    snprintf(said, sizeof said, "`examples/` has %s short programs", n <= 10 ? words[n] : "many");
    EXPECT(strstr(lib, said), "docs/library.md does not say \"%s\"", said);
    free(lib);
}

/* make demo's builds, as make would run them (make -n prints without running) */
static void demo_builds_qkt_only(void) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "make -n -C '%s' demo BUILD=/nonexistent/build JOBS=2", root);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "%s: exit %d: %s", cmd, rc, out);
    int builds = 0;
    for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        if (!strstr(one, "cmake --build")) continue;
        builds++;
        EXPECT(strstr(one, "--target qkt"), "make demo builds more than the qkt program: %s", one);
    }
    EXPECT(builds == 1 && strstr(out, "ablate --preset quick"), "make -n demo: %d builds: %s", builds, out);
}

int main(void) {
    root = getenv("QKT_SOURCE_DIR");
    if (!root) root = ".";
    preset_cells();
    examples();
    demo_builds_qkt_only();
    return qkt_test_finish();
}
