/* Minimal test harness: every failed check is printed with file:line and counted;
 * qkt_test_finish() prints "N passed, N failed" and returns the exit status. */
#ifndef QKT_TEST_H
#define QKT_TEST_H
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>

#include "qkt_autograd.h"

extern int qkt_test_passed, qkt_test_failed;

#define EXPECT(cond, ...)                                                         \
    do {                                                                          \
        if (cond) {                                                               \
            qkt_test_passed++;                                                    \
        } else {                                                                  \
            qkt_test_failed++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
        }                                                                         \
    } while (0)

#define EXPECT_NEAR(a, b, tol)                                                                  \
    EXPECT(fabs((double)(a) - (double)(b)) <= (tol), "%s = %.10g, %s = %.10g, |diff| %.3g > %.3g", \
           #a, (double)(a), #b, (double)(b), fabs((double)(a) - (double)(b)), (double)(tol))

int qkt_test_finish(void);

/* The kernel path (autograd's qkt_isa_*): prints which one runs. When QKT_ISA names a path
 * this build or CPU lacks, prints "SKIP: <why>" and exits 77 (CTest's per-path runs,
 * tests/isa.cmake, report it as skipped); an unknown name fails (exit 1). */
void qkt_test_isa_or_skip(void);

/* Path of the built qkt program (from CTest's environment), or "./qkt". */
const char *qkt_test_bin(void);
/* Make a fresh temporary directory $TMPDIR/qkt-TAG-XXXXXX (TMPDIR unset: /tmp); returns its
 * path (static storage per call). qkt_test_finish removes it, with everything in it, when
 * every check passed and QKT_TEST_KEEP is unset (or 0); else it prints "kept PATH". */
const char *qkt_test_tmpdir(const char *tag);
/* What qkt_test_finish does with this process's directories: removes them (passed, and no
 * QKT_TEST_KEEP) or names them on stderr; either way forgets them. Returns how many could
 * not be removed (each named on stderr). A forked child's call leaves its parent's alone. */
int qkt_test_tmpdirs_done(bool passed);
/* "dir/name" in one of 8 rotating static buffers (so a few can be live at once). */
const char *qkt_test_path(const char *dir, const char *name);
/* Run a shell command, return its exit status (or -1), capturing stdout+stderr into out. */
int qkt_test_run(const char *cmd, char *out, size_t out_len);
/* Runs the qkt program as `[cd DIR &&] [ENV] <qkt> <args>` (dir, env: NULL for none; env
 * e.g. "QKT_THREADS=1"; args printf-formatted, a shell word list of any length): its exit
 * status (or -1), stdout+stderr into out. */
int qkt_test_qkt(const char *dir, const char *env, char *out, size_t out_len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Is s one non-empty line ending in its newline (how qkt reports a refusal)? */
bool qkt_test_one_line(const char *s);
/* Is msg a non-empty qkt_err message without a newline? */
bool qkt_test_one_msg(const char *msg);

/* The tests' tiny model: one layer, 2 heads, C 16, T 32, on a small mqar task. */
#define QKT_TEST_TINY_DATA "--data mqar:n_pairs=4,n_queries=4"
#define QKT_TEST_TINY_MODEL "--n-layer 1 --n-head 2 --n-embd 16 --block-size 32"
/* Usage errors caught: with qkt_set_fatal_handler(qkt_test_fatal_hook, NULL), a fatal
 * error copies its message into qkt_test_fatal_msg and longjmps to qkt_test_fatal_jb:
 *     if (setjmp(qkt_test_fatal_jb) == 0) { the_call(); EXPECT(0, "not refused"); }
 *     EXPECT(strstr(qkt_test_fatal_msg, "..."), ...); */
extern jmp_buf qkt_test_fatal_jb;
extern char qkt_test_fatal_msg[1024];
void qkt_test_fatal_hook(qkt_fatal_kind kind, const char *msg, void *user);
/* The whole file, NUL-terminated (malloc'd; *n gets the size, n may be NULL), or NULL. */
char *qkt_test_read_file(const char *path, size_t *n);
/* The line of a markdown file whose first cell is `id` ("| id | ..."), without its newline
 * (malloc'd), or NULL if the file cannot be read or has no such row. */
char *qkt_test_md_row(const char *path, const char *id);
/* Every file below root/rel, recursively (names starting with '.' skipped): the sum of
 * fn(full path, path relative to root, file name, ctx). */
typedef int (*qkt_test_file_fn)(const char *full, const char *rel, const char *name, void *ctx);
int qkt_test_walk(const char *root, const char *rel, qkt_test_file_fn fn, void *ctx);

#endif
