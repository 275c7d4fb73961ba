/* The test harness's temporary directories: qkt_test_finish removes what qkt_test_tmpdir
 * made when every check passed (whatever a test left in it: nested and unreadable
 * directories, symbolic links, which are removed, not followed), keeps and names them when
 * a check failed or QKT_TEST_KEEP is set, and a forked child's finish leaves its parent's
 * alone. Each case runs in a child process whose TMPDIR is this test's own directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_test.h"

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    if (f) fputs(s, f), fclose(f);
}

/* Fills dir as a hostile test might: a nested tree, a directory without permissions, a
 * read-only directory with a file in it, and links to outside (a file and a directory). */
static void fill(const char *dir, const char *outside_dir, const char *outside_file) {
    char p[512];
    snprintf(p, sizeof p, "%s/a", dir), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/a/b", dir), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/a/b/f", dir), write_file(p, "x");
    snprintf(p, sizeof p, "%s/locked", dir), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/locked/f", dir), write_file(p, "x");
    snprintf(p, sizeof p, "%s/locked", dir), chmod(p, 0);
    snprintf(p, sizeof p, "%s/ro", dir), mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/ro/f", dir), write_file(p, "x");
    snprintf(p, sizeof p, "%s/ro", dir), chmod(p, 0500);
    snprintf(p, sizeof p, "%s/to_file", dir), (void)!symlink(outside_file, p);
    snprintf(p, sizeof p, "%s/to_dir", dir), (void)!symlink(outside_dir, p);
}

enum { PASS, FAIL, PASS_KEEP, GRANDCHILD };

/* In a child with TMPDIR = base: makes a directory, fills it, writes its path to
 * base/path.txt, ends the way `how` says (stderr into base/stderr.txt); the child's exit
 * status. */
static int run_case(const char *base, int how, const char *outside_dir, const char *outside_file) {
    char out[512];
    snprintf(out, sizeof out, "%s/stderr.txt", base);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TMPDIR", base, 1);
        if (how == PASS_KEEP) setenv("QKT_TEST_KEEP", "1", 1);
        else unsetenv("QKT_TEST_KEEP");
        if (!freopen(out, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(90);
        qkt_test_passed = qkt_test_failed = 0;
        const char *d = qkt_test_tmpdir("case");
        fill(d, outside_dir, outside_file);
        snprintf(out, sizeof out, "%s/path.txt", base);
        write_file(out, d);
        if (how == GRANDCHILD) { /* a forked child's finish must not remove d */
            pid_t g = fork();
            if (g == 0) {
                qkt_test_passed = 1, qkt_test_failed = 0;
                _exit(qkt_test_finish());
            }
            int st;
            waitpid(g, &st, 0);
            if (!exists(d)) _exit(91);
        }
        if (how == FAIL) qkt_test_failed = 1;
        else qkt_test_passed = 1;
        fflush(stdout);
        _exit(qkt_test_finish());
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void) {
    unsetenv("QKT_TEST_KEEP"); /* its own directories are checked removed at the end */
    const char *base = qkt_test_tmpdir("harness");
    char outside_dir[512], outside_file[600], path_txt[512], err_txt[512];
    snprintf(outside_dir, sizeof outside_dir, "%s/outside", base);
    mkdir(outside_dir, 0700);
    snprintf(outside_file, sizeof outside_file, "%s/keep_me", outside_dir);
    write_file(outside_file, "x");
    snprintf(path_txt, sizeof path_txt, "%s/path.txt", base);
    snprintf(err_txt, sizeof err_txt, "%s/stderr.txt", base);

    static const struct {
        int how, rc;
        bool kept;
        const char *name;
    } cases[] = {{PASS, 0, false, "every check passed"},
                 {FAIL, 1, true, "a check failed"},
                 {PASS_KEEP, 0, true, "QKT_TEST_KEEP=1"},
                 {GRANDCHILD, 0, false, "a forked child finished first"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run_case(base, cases[i].how, outside_dir, outside_file);
        char *d = qkt_test_read_file(path_txt, NULL), *err = qkt_test_read_file(err_txt, NULL);
        EXPECT(rc == cases[i].rc, "%s: exit status %d, expected %d (stderr: %s)", cases[i].name, rc, cases[i].rc,
               err ? err : "?");
        EXPECT(d && strstr(d, "/qkt-case-") && !strncmp(d, base, strlen(base)), "%s: the directory %s", cases[i].name,
               d ? d : "(none)");
        if (d) {
            EXPECT(exists(d) == cases[i].kept, "%s: %s %s", cases[i].name, d, exists(d) ? "still there" : "removed");
            char line[600];
            snprintf(line, sizeof line, "kept %s\n", d);
            EXPECT(err && (strstr(err, line) != NULL) == cases[i].kept, "%s: stderr '%s'", cases[i].name, err ? err : "?");
            EXPECT(err && !strstr(err, "could not remove"), "%s: stderr '%s'", cases[i].name, err);
        }
        EXPECT(exists(outside_file) && exists(outside_dir), "%s: a link's target was removed", cases[i].name);
        free(d), free(err);
        unlink(path_txt), unlink(err_txt);
    }
    /* This process's own directory (base, with the kept cases' directories and their
     * locked subdirectories in it) goes at its finish: checked here by hand. */
    const char *own = qkt_test_tmpdir("harness_own");
    fill(own, outside_dir, outside_file);
    char own_copy[512];
    snprintf(own_copy, sizeof own_copy, "%s", own);
    EXPECT(qkt_test_tmpdirs_done(true) == 0, "this process's directories could not all be removed");
    EXPECT(!exists(own_copy) && !exists(base), "%s or %s is still there", own_copy, base);
    return qkt_test_finish();
}
