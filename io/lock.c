/* One writer per directory: an flock(2) on DIR/.lock, and the clean-up of temp files
 * that a killed writer left there. API: qkt_io.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qkt_io.h"

char *qkt_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = qkt_malloc(a + b + 2);
    memcpy(p, dir, a);
    size_t k = a;
    if (a && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

int qkt_check_path_len(const char *path, size_t room, qkt_err *err) {
    size_t n = strlen(path);
    if (n + room >= PATH_MAX)
        return qkt_err_set(err, "%.80s...: path too long (%zu bytes; the files in it need at most %zu)", path, n,
                           (size_t)PATH_MAX - 1 - room);
    return 0;
}

int qkt_dir_lock(qkt_lock *lk, const char *dir, qkt_err *err) {
    lk->fd = -1;
    lk->path = NULL;
    char *path = qkt_path_join(dir, QKT_LOCK_NAME);
again:;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int e = errno;
        qkt_err_set(err, "%s: cannot open the lock file: %s", path, strerror(e));
        free(path);
        return -1;
    }
    int rc;
    while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {}
    if (rc != 0) {
        int e = errno;
        long holder = 0; /* the holder writes its pid just after locking: give it a moment */
        for (int tries = 0; tries < 20 && e == EWOULDBLOCK && holder <= 0; tries++) {
            char pid[32] = {0};
            ssize_t r = pread(fd, pid, sizeof pid - 1, 0);
            holder = r > 0 ? strtol(pid, NULL, 10) : 0;
            if (holder <= 0) usleep(10000);
        }
        close(fd);
        if (e == EWOULDBLOCK && holder > 0)
            qkt_err_set(err, "%s is in use by another qkt process (pid %ld holds %s); wait for it or stop it", dir, holder, path);
        else if (e == EWOULDBLOCK)
            qkt_err_set(err, "%s is in use by another qkt process (it holds %s); wait for it or stop it", dir, path);
        else
            qkt_err_set(err, "%s: cannot lock: %s", path, strerror(e));
        free(path);
        return -1;
    }
    /* The holder before us removes the file when it is done (under its lock): if what we
     * locked is no longer the file at `path`, lock the new one instead. */
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
        close(fd);
        goto again;
    }
    /* Ours: say who holds it, for the refusal of the next one. */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) { /* still locked; only the pid note is missing */ }
    lk->path = path;
    lk->fd = fd;
    return 0;
}

void qkt_dir_unlock(qkt_lock *lk) {
    /* Remove the file while still holding the lock (a waiter that opened it sees the
     * inode change and retries), then release the lock by closing. */
    if (lk->fd >= 0) unlink(lk->path), close(lk->fd);
    free(lk->path);
    lk->fd = -1;
    lk->path = NULL;
}

/* "<base>.tmp.<pid>.<counter>": qkt_write_atomic_fn's temp names; *pid gets the pid. */
static int is_temp_of(const char *name, const char *base, long *pid) {
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) || strncmp(name + bl, ".tmp.", 5)) return 0;
    const char *p = name + bl + 5;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || *end != '.' || errno || v <= 0) return 0;
    p = end + 1;
    strtoul(p, &end, 10);
    if (end == p || *end) return 0;
    *pid = v;
    return 1;
}

int qkt_remove_stale_temps(const char *path, qkt_buf *removed, qkt_err *err) {
    char *dir = qkt_strdup(path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    DIR *dh = opendir(d);
    if (!dh) {
        int e = errno;
        qkt_err_set(err, "%s: cannot list the directory: %s", d, strerror(e));
        free(dir);
        return -1;
    }
    int n = 0, rc = 0;
    for (struct dirent *e; (e = readdir(dh));) {
        long pid;
        if (!is_temp_of(e->d_name, base, &pid) || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* its writer may still be alive */
        char *p = qkt_path_join(d, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (unlink(p) == 0) {
                if (removed) qkt_buf_printf(removed, "%s%s", removed->n ? ", " : "", e->d_name);
                n++;
            } else if (!rc) {
                rc = qkt_err_set(err, "%s: cannot remove a stale temp file: %s", p, strerror(errno));
            }
        }
        free(p);
    }
    closedir(dh);
    free(dir);
    return rc ? -1 : n;
}
