/* File helpers (qkt_io.h): atomic writes, directories, reads, a string buffer. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_io.h"

int qkt_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Temp names are unique per process (pid) and per call (counter). */
static atomic_uint tmp_counter;

int qkt_write_atomic_fn(const char *path, qkt_write_fn fill, void *user, qkt_err *err) {
    struct stat sb;
    /* Never rename over a device, directory or pipe (as root that would replace /dev/full). */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return qkt_err_set(err, "%s: exists and is not a regular file (%s); refusing to replace it", path,
                           S_ISDIR(sb.st_mode) ? "a directory" : "a device, fifo or socket");
    size_t plen = strlen(path);
    char *tmp = qkt_malloc(plen + 64); /* ".tmp.<pid>.<counter>" fits in 64 */
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(tmp, plen + 64, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return qkt_err_set(err, "%s: cannot create a temporary file next to it: %s", path, strerror(e));
    }
    int rc = fill(fd, path, user, err);
    if (!rc && fsync(fd) != 0) rc = qkt_err_set(err, "%s: fsync failed: %s", path, strerror(errno));
    if (close(fd) != 0 && !rc) rc = qkt_err_set(err, "%s: close failed: %s", path, strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = qkt_err_set(err, "%s: cannot rename the temporary file into place: %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    /* Make the rename itself durable. Filesystems that cannot sync a directory
     * (EINVAL, ENOTSUP) are accepted; any other failure is reported although the new
     * file is already in place. */
    char *dir = qkt_strdup(path);
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        rc = qkt_err_set(err, "%s: written, but its directory %s cannot be opened to sync it: %s", path, d, strerror(errno));
    } else {
        if (fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP)
            rc = qkt_err_set(err, "%s: written, but syncing directory %s failed: %s", path, d, strerror(errno));
        close(dfd);
    }
    free(dir);
    return rc;
}

typedef struct {
    const void *buf;
    size_t n;
} mem_src;

static int fill_mem(int fd, const char *label, void *user, qkt_err *err) {
    const mem_src *m = user;
    return qkt_write_all(fd, m->buf, m->n) ? qkt_err_set(err, "%s: write failed: %s", label, strerror(errno)) : 0;
}

int qkt_write_atomic(const char *path, const void *buf, size_t n, qkt_err *err) {
    mem_src m = {buf, n};
    return qkt_write_atomic_fn(path, fill_mem, &m, err);
}

int qkt_mkdirs(const char *path, qkt_err *err) {
    if (!*path) return qkt_err_set(err, "an empty path");
    if (qkt_check_path_len(path, 0, err)) return -1;
    char *buf = qkt_strdup(path);
    int rc = 0;
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            struct stat st;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) rc = qkt_err_set(err, "%s: cannot create directory: %s", buf, strerror(errno));
            else if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) rc = qkt_err_set(err, "%s: exists and is not a directory", buf);
            *p = c;
            if (!c || rc) break;
        }
    }
    free(buf);
    return rc;
}

int qkt_check_output(const char *path, qkt_err *err) {
    if (!*path) return qkt_err_set(err, "an empty path");
    /* room for the atomic writer's temp name: ".tmp.<pid>.<counter>" */
    if (qkt_check_path_len(path, 48, err)) return -1;
    char *buf = qkt_strdup(path);
    char *slash = strrchr(buf, '/');
    const char *dir = !slash ? "." : slash == buf ? "/" : (*slash = 0, buf);
    struct stat st;
    int rc = 0;
    if (stat(dir, &st) != 0) rc = qkt_err_set(err, "%s: directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode)) rc = qkt_err_set(err, "%s: %s is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0) rc = qkt_err_set(err, "%s: directory %s is not writable", path, dir);
    free(buf);
    return rc ? -1 : qkt_check_replaceable(path, err);
}

int qkt_check_replaceable(const char *path, qkt_err *err) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return qkt_err_set(err, "%s exists and is not a regular file", path);
    return 0;
}

bool qkt_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool qkt_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* A file that reports size 0 (procfs, sysfs: whatever they hold) is read to its end, up
 * to this: such a file need not end. */
#define UNSIZED_MAX ((size_t)1 << 30)

/* fd's bytes into a buffer with room for a NUL: `size` of them (the file's st_size) or
 * fewer if it ends first (sysfs reports 4096 for shorter files), or for size 0 all up to
 * EOF, at most UNSIZED_MAX. NULL + err naming path. */
static char *read_fd(int fd, const char *path, size_t size, size_t *n, qkt_err *err) {
    size_t cap = size ? size : 4096, got = 0;
    char *buf = qkt_malloc(cap + 1);
    for (;;) {
        if (got == cap && (size || cap >= UNSIZED_MAX)) break;
        if (got == cap) buf = qkt_realloc(buf, (cap *= 2) + 1);
        ssize_t r = read(fd, buf + got, cap - got > (1u << 30) ? (1u << 30) : cap - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            qkt_err_set(err, "%s: read failed: %s", path, strerror(errno));
            return free(buf), NULL;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    char extra;
    if (!size && got == cap && read(fd, &extra, 1) > 0) {
        qkt_err_set(err, "%s: reports no size and holds more than %zu bytes", path, UNSIZED_MAX);
        return free(buf), NULL;
    }
    buf[got] = 0;
    *n = got;
    return buf;
}

char *qkt_read_file(const char *path, size_t *n, qkt_err *err) {
    /* O_NONBLOCK: a FIFO must not block the open (it is refused below); no effect on regular files */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        qkt_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        qkt_err_set(err, "%s: not a regular file", path);
        return NULL;
    }
    size_t got = 0;
    char *buf = read_fd(fd, path, (size_t)st.st_size, &got, err);
    close(fd);
    if (buf && n) *n = got;
    return buf;
}

void qkt_buf_printf(qkt_buf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->n;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && (size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *s = qkt_realloc(b->s, cap);
        b->s = s, b->cap = cap;
    }
}

void qkt_buf_free(qkt_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}
