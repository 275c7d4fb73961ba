/* docs/study/full is what `qkt plot` draws from the cells it ships: its cells.tar.xz is
 * unpacked beside its config.json and sgemm_peak.txt, `qkt plot` redraws the study, and
 * report.md, summary.csv and every plot equal the published ones byte for byte (and no plot is
 * missing on either side). A change to the report's code that changes them fails here until
 * scripts/full_study_doc.py publishes the redrawn directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_test.h"

static char out[1 << 16];

static bool is_png(const char *n) {
    size_t k = strlen(n);
    return k > 4 && !strcmp(n + k - 4, ".png");
}

/* Is `name` in `a` byte for byte the same as in `b`? (false, with a message, if not) */
static bool same_file(const char *a, const char *b, const char *name) {
    size_t na = 0, nb = 0;
    char *x = qkt_test_read_file(qkt_test_path(a, name), &na), *y = qkt_test_read_file(qkt_test_path(b, name), &nb);
    bool ok = x && y && na == nb && !memcmp(x, y, na);
    size_t at = 0;
    while (x && y && at < na && at < nb && x[at] == y[at]) at++;
    EXPECT(ok, "%s: published %s, redrawn %s (%zu and %zu bytes, first difference at byte %zu)", name, x ? "read" : "missing",
           y ? "read" : "missing", na, nb, at);
    free(x), free(y);
    return ok;
}

/* Every plot in `dir` also exists in `other`. */
static void plots_in(const char *dir, const char *other, const char *what) {
    DIR *d = opendir(dir);
    EXPECT(d != NULL, "cannot list %s", dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (is_png(e->d_name)) EXPECT(qkt_file_exists(qkt_test_path(other, e->d_name)), "%s %s has no counterpart", what, e->d_name);
    if (d) closedir(d);
}

int main(void) {
    const char *root = getenv("QKT_SOURCE_DIR");
    char pub[2048], run[2048], cmd[16384];
    snprintf(pub, sizeof pub, "%s/docs/study/full", root ? root : ".");
    const char *tmp = qkt_test_tmpdir("full_study");
    snprintf(run, sizeof run, "%s/runs/full", tmp); /* report.md names the path it was drawn at: runs/full */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && tar xJf '%s/cells.tar.xz' -C '%s' && cp '%s/config.json' '%s/sgemm_peak.txt' '%s/'", run,
             pub, run, pub, pub, run);
    int rc = qkt_test_run(cmd, out, sizeof out);
    EXPECT(rc == 0, "unpacking %s: exit %d: %s", pub, rc, out);
    if (rc != 0) return qkt_test_finish();
    rc = qkt_test_qkt(tmp, NULL, out, sizeof out, "plot runs/full");
    EXPECT(rc == 0, "qkt plot %s: exit %d: %s", run, rc, out);
    same_file(pub, run, "report.md");
    same_file(pub, run, "summary.csv");
    DIR *d = opendir(pub);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (is_png(e->d_name)) n++, same_file(pub, run, e->d_name);
    if (d) closedir(d);
    EXPECT(n > 0, "%s holds no plots", pub);
    plots_in(run, pub, "redrawn");
    plots_in(pub, run, "published");
    return qkt_test_finish();
}
