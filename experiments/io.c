#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_io.h"

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

int qkt_write_atomic(const char *path, const void *buf, size_t n, qkt_err *err) {
    struct stat st;
    /* Never rename over a device, directory or pipe (as root that would replace /dev/full). */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) return qkt_err_set(err, "%s: exists and is not a regular file", path);
    size_t len = strlen(path);
    char *tmp = malloc(len + 48);
    if (!tmp) return qkt_err_set(err, "%s: out of memory", path);
    static unsigned counter; /* unique temp names for concurrent writes from one process */
    unsigned k = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, len + 48, "%s.tmp.%d.%u", path, (int)getpid(), k);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        qkt_err_set(err, "%s: cannot write: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    if (write_all(fd, buf, n) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return qkt_err_set(err, "%s: write failed: %s", path, strerror(e));
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return qkt_err_set(err, "%s: cannot replace: %s", path, strerror(e));
    }
    free(tmp);
    /* fsync the directory so the rename itself is durable */
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (dir) {
        if (slash) *slash = 0;
        int dfd = open(slash ? (*dir ? dir : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int bad = dfd < 0 || fsync(dfd) != 0;
        int e = errno;
        if (dfd >= 0) close(dfd);
        free(dir);
        if (bad) return qkt_err_set(err, "%s: written, but syncing its directory failed: %s", path, strerror(e));
    }
    return 0;
}

int qkt_mkdirs(const char *path, qkt_err *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return qkt_err_set(err, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return qkt_err_set(err, "%s: cannot create directory: %s", buf, strerror(errno));
            struct stat st;
            if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) return qkt_err_set(err, "%s: exists and is not a directory", buf);
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

bool qkt_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

char *qkt_read_file(const char *path, size_t *n, qkt_err *err) {
    /* O_NONBLOCK: a FIFO must not block the open (it is refused below); no effect on regular files */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        qkt_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        qkt_err_set(err, "%s: not a regular file", path);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)st.st_size) {
        free(buf);
        qkt_err_set(err, "%s: read failed", path);
        return NULL;
    }
    buf[got] = 0;
    if (n) *n = got;
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
        char *s = realloc(b->s, cap);
        QKT_CHECK(s, "out of memory (%zu bytes)", cap);
        b->s = s, b->cap = cap;
    }
}

void qkt_buf_free(qkt_buf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}
