/* qkt_read_file: a regular file whole, an empty one as "", a directory, a device and a
 * FIFO refused (the FIFO without blocking), and files that report size 0 whatever they
 * hold (procfs) read to their end: /proc/cpuinfo gave "" and `--data text:/proc/cpuinfo`
 * was "empty". */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_test.h"

static const char *dir;

static void write_bytes(const char *path, const char *p, size_t n) {
    FILE *f = fopen(path, "wb");
    EXPECT(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

/* qkt_read_file(path) must fail with a message holding `want`. */
static void expect_refused(const char *path, const char *want) {
    qkt_err err = {{0}};
    size_t n = 7;
    char *s = qkt_read_file(path, &n, &err);
    EXPECT(!s && strstr(err.msg, path) && strstr(err.msg, want), "%s: read (%zu bytes) or message '%s' lacks '%s'", path, n,
           err.msg, want);
    free(s);
}

static void test_regular(void) {
    qkt_err err;
    size_t n = 7;
    const char *p = qkt_test_path(dir, "five");
    write_bytes(p, "ab\0cd", 5);
    char *s = qkt_read_file(p, &n, &err);
    EXPECT(s && n == 5 && !memcmp(s, "ab\0cd", 6), "%s: %zu bytes", p, n); /* the copy ends with a NUL */
    free(s);
    p = qkt_test_path(dir, "empty");
    write_bytes(p, "", 0);
    s = qkt_read_file(p, &n, &err);
    EXPECT(s && n == 0 && s[0] == 0, "%s: %zu bytes", p, n);
    free(s);
    expect_refused(dir, "not a regular file");
    expect_refused("/dev/null", "not a regular file");
    expect_refused(qkt_test_path(dir, "missing"), "cannot open");
    p = qkt_test_path(dir, "fifo");
    EXPECT(mkfifo(p, 0644) == 0, "mkfifo %s", p);
    alarm(20); /* a FIFO opened for reading blocks until a writer comes: killed, not hung */
    expect_refused(p, "not a regular file");
    alarm(0);
}

/* procfs reports size 0; its files are read to their end. /proc/self/cmdline is known
 * (argv, each with its NUL), /proc/self/smaps is longer than the first buffer. */
static void test_proc(const char *argv0) {
    struct stat st;
    if (stat("/proc/cpuinfo", &st) != 0) {
        printf("SKIP: no /proc/cpuinfo here: files that report size 0 are not read\n");
        return;
    }
    EXPECT(S_ISREG(st.st_mode) && st.st_size == 0, "/proc/cpuinfo reports %lld bytes: not the case tested",
           (long long)st.st_size);
    qkt_err err = {{0}};
    size_t n = 0;
    char *s = qkt_read_file("/proc/cpuinfo", &n, &err);
    EXPECT(s && n > 0 && strlen(s) == n && s[n - 1] == '\n', "/proc/cpuinfo: %zu bytes: %s", n, s ? "" : err.msg);
    free(s);
    s = qkt_read_file("/proc/self/cmdline", &n, &err);
    size_t want = strlen(argv0) + 1;
    EXPECT(s && n == want && !memcmp(s, argv0, want), "/proc/self/cmdline: %zu bytes (want %zu): %s", n, want,
           s ? "" : err.msg);
    free(s);
    s = qkt_read_file("/proc/self/smaps", &n, &err);
    EXPECT(s && n > 4096 && strlen(s) == n && s[n - 1] == '\n', "/proc/self/smaps: %zu bytes: %s", n, s ? "" : err.msg);
    free(s);
}

/* sysfs reports 4096 bytes for its shorter files: they end before that, and are read so. */
static void test_sys(void) {
    const char *path = "/sys/devices/system/cpu/online";
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size <= 16) {
        printf("SKIP: no %s reporting more than it holds here: a file ending before its size is not read\n", path);
        return;
    }
    qkt_err err = {{0}};
    size_t n = 0;
    char *s = qkt_read_file(path, &n, &err);
    EXPECT(s && n > 0 && n < (size_t)st.st_size && strlen(s) == n && s[n - 1] == '\n', "%s: %zu bytes of %lld: %s", path, n,
           (long long)st.st_size, s ? "" : err.msg);
    free(s);
}

int main(int argc, char **argv) {
    (void)argc;
    dir = qkt_test_tmpdir("read_file");
    test_regular();
    test_proc(argv[0]);
    test_sys();
    return qkt_test_finish();
}
