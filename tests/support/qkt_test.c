#define _GNU_SOURCE /* asprintf, vasprintf */
#include "qkt_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int qkt_test_passed = 0, qkt_test_failed = 0;

jmp_buf qkt_test_fatal_jb;
char qkt_test_fatal_msg[1024];
void qkt_test_fatal_hook(qkt_fatal_kind kind, const char *msg, void *user) {
    (void)kind, (void)user;
    snprintf(qkt_test_fatal_msg, sizeof qkt_test_fatal_msg, "%s", msg);
    longjmp(qkt_test_fatal_jb, 1);
}

/* The directories qkt_test_tmpdir made in this process (made_by): qkt_test_finish removes
 * them when every check passed, and names them on stderr when one failed. */
static char **made;
static int n_made;
static pid_t made_by;

/* Removes name (in directory dfd) and, for a directory, everything below it, never
 * following a symbolic link; a directory a test left unreadable or read-only is made
 * 0700 first (the test's own). Relative to open directories, so no path length limit.
 * 0, or -1 with errno. */
static int remove_at(int dfd, const char *name) {
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlinkat(dfd, name, 0) && errno != ENOENT ? -1 : 0;
    if ((st.st_mode & 0700) != 0700 && fchmodat(dfd, name, 0700, 0)) return -1;
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int err = 0; /* the first failure's errno, kept past closedir */
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && remove_at(fd, e->d_name) && !err) err = errno;
    closedir(d);
    if (err) return errno = err, -1;
    return unlinkat(dfd, name, AT_REMOVEDIR) ? -1 : 0;
}

int qkt_test_tmpdirs_done(bool passed) {
    if (made_by != getpid()) return 0; /* a forked child's finish leaves its parent's directories alone */
    const char *keep = getenv("QKT_TEST_KEEP");
    bool kept = !passed || (keep && *keep && strcmp(keep, "0"));
    int left = 0;
    for (int i = 0; i < n_made; i++) {
        if (kept) {
            fprintf(stderr, "kept %s\n", made[i]);
        } else if (remove_at(AT_FDCWD, made[i])) {
            fprintf(stderr, "could not remove %s: %s\n", made[i], strerror(errno));
            left++;
        }
        free(made[i]);
    }
    free(made);
    made = NULL, n_made = 0;
    return left;
}

int qkt_test_finish(void) {
    printf("%d passed, %d failed\n", qkt_test_passed, qkt_test_failed);
    fflush(stdout);
    int rc = qkt_test_failed || !qkt_test_passed ? 1 : 0;
    qkt_test_tmpdirs_done(rc == 0);
    fflush(stderr);
    return rc;
}

const char *qkt_test_bin(void) {
    const char *b = getenv("QKT_BIN");
    return b && *b ? b : "./qkt";
}

const char *qkt_test_tmpdir(const char *tag) {
    static char buf[8][256];
    static int k = 0;
    char *p = buf[k++ % 8];
    const char *base = getenv("TMPDIR");
    snprintf(p, 256, "%s/qkt-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(p)) {
        perror("mkdtemp");
        exit(1);
    }
    if (made_by != getpid()) { /* a forked child starts its own list */
        made = NULL, n_made = 0;
        made_by = getpid();
    }
    char **m = realloc(made, (size_t)(n_made + 1) * sizeof *made);
    if (!m || !(m[n_made] = strdup(p))) {
        perror("qkt_test_tmpdir");
        exit(1);
    }
    made = m, n_made++;
    return p;
}

const char *qkt_test_path(const char *dir, const char *name) {
    static char buf[8][512];
    static int k = 0;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

int qkt_test_run(const char *cmd, char *out, size_t out_len) {
    char *full = NULL;
    if (asprintf(&full, "%s 2>&1", cmd) < 0) return -1;
    FILE *f = popen(full, "r");
    free(full);
    if (!f) return -1;
    size_t n = 0;
    if (out && out_len) {
        n = fread(out, 1, out_len - 1, f);
        out[n] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, f) > 0) {
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int qkt_test_qkt(const char *dir, const char *env, char *out, size_t out_len, const char *fmt, ...) {
    char *args = NULL, *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&args, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    n = asprintf(&cmd, "%s%s%s%s%s%s %s", dir ? "cd " : "", dir ? dir : "", dir ? " && " : "", env ? env : "", env ? " " : "",
                 qkt_test_bin(), args);
    free(args);
    if (n < 0) return -1;
    int rc = qkt_test_run(cmd, out, out_len);
    free(cmd);
    return rc;
}

bool qkt_test_one_line(const char *s) {
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == 0 && nl > s;
}

bool qkt_test_one_msg(const char *msg) { return msg[0] && !strchr(msg, '\n'); }

char *qkt_test_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) free(buf);
            buf = b;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) return free(buf), NULL;
    buf[len] = 0;
    if (n) *n = len;
    return buf;
}

char *qkt_test_md_row(const char *path, const char *id) {
    char *s = qkt_test_read_file(path, NULL), key[64], *row = NULL;
    if (!s) return NULL;
    snprintf(key, sizeof key, "\n| %s |", id);
    char *p = strstr(s, key);
    if (p) {
        size_t k = strcspn(p + 1, "\n");
        row = malloc(k + 1);
        if (row) memcpy(row, p + 1, k), row[k] = 0;
    }
    free(s);
    return row;
}

void qkt_test_isa_or_skip(void) {
    qkt_err err;
    if (qkt_isa_select(&err) == 0) {
        printf("kernel path: %s\n", qkt_isa_name());
        return;
    }
    const char *isa = getenv("QKT_ISA");
    bool known = isa && (!strcmp(isa, "baseline") || !strcmp(isa, "avx2") || !strcmp(isa, "avx512") || !strcmp(isa, "native"));
    printf("%s: %s\n", known ? "SKIP" : "FAIL", err.msg);
    fflush(stdout);
    exit(known ? 77 : 1);
}

int qkt_test_walk(const char *root, const char *rel, qkt_test_file_fn fn, void *ctx) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    DIR *d = opendir(path);
    if (!d) return 0;
    int sum = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char sub[2048], full[4096];
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (stat(full, &st)) continue;
        sum += S_ISDIR(st.st_mode) ? qkt_test_walk(root, sub, fn, ctx) : fn(full, sub, e->d_name, ctx);
    }
    closedir(d);
    return sum;
}
