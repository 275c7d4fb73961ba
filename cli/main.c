/* qkt: one program, one subcommand per job. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_autograd.h"
#include "qkt_dist.h"
#include "cli.h"

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

/* pre, then s with its control characters escaped (a newline as the two characters \n,
 * any other as \xHH: a tab, a carriage return, a terminal's escape sequence), then end, on
 * stderr in one write while it fits the buffer. A path or value holding a newline
 * cannot split a message over lines, nor one holding an escape sequence redraw it. */
static void put_line(const char *pre, const char *s, const char *end) {
    const char *part[3] = {pre, s, end};
    char buf[2048];
    size_t k = 0;
    for (int i = 0; i < 3; i++)
        for (const char *p = part[i]; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if (k + 5 > sizeof buf) fwrite(buf, 1, k, stderr), k = 0;
            if (i != 1 || (c >= 0x20 && c != 0x7f)) buf[k++] = (char)c;
            else if (c == '\n') buf[k++] = '\\', buf[k++] = 'n';
            else k += (size_t)snprintf(buf + k, 5, "\\x%02x", c);
        }
    fwrite(buf, 1, k, stderr);
}

int qkt_cli_err(const char *fmt, ...) {
    char small[1024], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return n;
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    if (!msg) msg = small, n = (int)sizeof small - 1; /* out of memory: the message cut */
    bool nl = n > 0 && msg[n - 1] == '\n';
    if (nl) msg[n - 1] = 0;
    put_line("", msg, nl ? "\n" : "");
    if (msg != small) free(msg);
    return n;
}

/* The library's messages on stderr, escaped as the CLI's own. On a terminal a status
 * line (a sweep's progress) is redrawn in place, and the next message first clears it. */
static bool status_shown;
static void on_log(qkt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == QKT_LOG_STATUS) {
        put_line("\r\033[K", msg, "");
        status_shown = true;
        return;
    }
    put_line(status_shown ? "\r\033[K" : "", msg, "\n");
    fflush(stderr);
    status_shown = false;
}

/* The library's fatal errors end the program with the documented exit codes: 1 out of
 * memory (or the job ended by qkt_dist_abort), 3 an anomaly (--detect-anomaly), abort
 * (134) for a usage error: a bug. exit() runs the atexit handlers (qkt train's note on
 * the last checkpoint). */
static void on_fatal(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)user;
    put_line(status_shown ? "\r\033[Kqkt: " : "qkt: ", msg, "\n");
    fflush(stderr);
    if (kind == QKT_FATAL_ANOMALY) exit(3);
    if (kind == QKT_FATAL_NOMEM || kind == QKT_FATAL_ABORT) exit(1);
}

/* A handler for sig unless the parent left it ignored (nohup's SIGHUP, a shell's
 * background SIGINT): what the parent ignored stays ignored. */
void qkt_cli_sigaction(int sig, const struct sigaction *sa) {
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    sigaction(sig, sa, NULL);
}

/* fds 0-2 open (on /dev/null if closed): else the first files qkt opens (.lock, log.csv)
 * would take them, and prints to stdout/stderr would land in those files. */
static void open_std_fds(void) {
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) != -1) continue;
        int n = open("/dev/null", O_RDONLY); /* read-only: a write to a closed stdout fails (EBADF) and is reported */
        if (n < 0) _exit(2); /* no /dev/null: no safe way to say so either */
        if (n != fd) dup2(n, fd), close(n);
    }
}

/* A command's output reached stdout, or the command fails: a full disk or a closed stdout
 * (`qkt data --dump X > /dev/full`) ends with a line and exit 1, not exit 0 and a cut file.
 * A pipe or socket whose reader left (`qkt sample ... | head -1`, where SIGPIPE is ignored)
 * is not an error: the reader took what it wanted. */
static int finish_stdout(int rc) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    int e = errno;
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return rc;
    qkt_cli_err("qkt: cannot write to stdout%s%s: its output is incomplete\n", e ? ": " : "", e ? strerror(e) : "");
    return rc ? rc : 1;
}

static int run(int argc, char **argv);

int main(int argc, char **argv) { return finish_stdout(run(argc, argv)); }

static int run(int argc, char **argv) {
    open_std_fds();
    /* A file-size limit (ulimit -f) would kill us with no word and leave a temp file:
     * ignored, a write past it fails with EFBIG, which the writers report. */
    signal(SIGXFSZ, SIG_IGN);
    qkt_thread_env_reexec(argv); /* returns at once when the environment is set already */
    qkt_set_fatal_handler(on_fatal, NULL);
    qkt_set_log_handler(on_log, NULL, isatty(STDERR_FILENO));
    qkt_set_names(QKT_NAMES_FLAGS); /* refused settings are named by the flags users type */
#ifdef QKT_WITH_MPI
    qkt_dist_use_mpi(); /* libqkt_mpi: qkt train / qkt ablate under mpirun join the job */
#endif
    qkt_err err;
    if (qkt_isa_select(&err)) { /* QKT_ISA names a kernel path this build or CPU lacks */
        qkt_cli_err("qkt: %s\n", err.msg);
        return 2;
    }
    if (argc < 2) { /* a usage error like any other: one line on stderr, exit 2 */
        qkt_cli_err("qkt: no command given (usage: qkt <command> [flags]; run 'qkt --help' for the list)\n");
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") && argc == 2) { /* as `qkt version`: the build, MPI or not */
        char *v[] = {"version", NULL};
        return qkt_cmd_version(1, v);
    }
    for (int i = 0; i < n_commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    qkt_cli_err("qkt: unknown command '%s' (run 'qkt --help' for the list)\n", argv[1]);
    return 2;
}
