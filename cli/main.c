/* qkt: one program, one subcommand per job. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qkt_autograd.h"
#include "qkt_cli.h"

static const qkt_command commands[] = {
#define QKT_COMMAND(name, fn, help) {name, fn, help},
#include "commands.def"
#undef QKT_COMMAND
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f) {
    fprintf(f, "usage: qkt <command> [flags]   (qkt <command> --help for its flags)\n\ncommands:\n");
    for (int i = 0; i < n_commands; i++) fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

/* libgomp reads its wait policy once, when it loads: by default an idle OpenMP thread
 * spins 300000 times (a pause is ~26 ns here: ~8 ms) before sleeping. On a 2-core
 * machine shared with other jobs, such spinning threads take the cores from the threads
 * with work (2-thread steps measured 2-5x slower than with passive waiting); with
 * passive waiting every parallel region pays a ~10-20 us wake-up (tiny config: 8.5 ms a
 * step). A short spin keeps most of both: a step's parallel regions follow each other
 * within microseconds, and a thread whose partner was descheduled sleeps after ~26 us
 * (tiny: 7.3 ms on an idle machine). So unless the user set OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT, qkt sets GOMP_SPINCOUNT=1000. It also sets OPENBLAS_NUM_THREADS=1
 * unless set: qkt never uses OpenBLAS's threads (gemm.c), and without it OpenBLAS
 * starts a worker per core when it loads, which spins on an idle core for a while.
 * Both are read when the libraries load, so qkt sets them and re-executes itself once. */
static void thread_environment(char **argv) {
    bool policy = !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"), blas = !getenv("OPENBLAS_NUM_THREADS");
    if (!policy && !blas) return;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1); /* the binary's real path: keeps its name in ps */
    if (n <= 0 || (size_t)n >= sizeof self - 1) return;
    self[n] = 0;
    if (policy && setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
    if (blas && setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0) return;
    execv(self, argv); /* returns only on failure: then run as we are */
}

/* The library's fatal errors end the program with the documented exit codes: 1 out of
 * memory, 3 an anomaly (--detect-anomaly), abort (134) for a usage error: a bug. exit()
 * runs the atexit handlers (qkt train's note on the last checkpoint). */
static void on_fatal(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)user;
    fprintf(stderr, "qkt: %s\n", msg);
    fflush(stderr);
    if (kind == QKT_FATAL_ANOMALY) exit(3);
    if (kind == QKT_FATAL_NOMEM) exit(1);
}

int main(int argc, char **argv) {
    thread_environment(argv);
    qkt_set_fatal_handler(on_fatal, NULL);
    qkt_err err;
    if (qkt_isa_select(&err)) { /* QKT_ISA names a kernel path this build or CPU lacks */
        fprintf(stderr, "qkt: %s\n", err.msg);
        return 2;
    }
    if (argc < 2) { /* a usage error like any other: one line on stderr, exit 2 */
        fprintf(stderr, "qkt: no command given (usage: qkt <command> [flags]; run 'qkt --help' for the list)\n");
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < n_commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "qkt: unknown command '%s' (run 'qkt --help' for the list)\n", argv[1]);
    return 2;
}
