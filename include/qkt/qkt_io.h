/* File helpers for the layers above (train, experiments, the CLI): atomic writes,
 * directories, output checks, whole-file reads, a growable string buffer, paths, the
 * one-writer lock of a directory, the clean-up of killed writers' temp files, CRC-32C. */
#ifndef QKT_IO_H
#define QKT_IO_H
#include <stdbool.h>
#include <stddef.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes buf to path atomically: temp file in the same directory, write, fsync,
 * rename, fsync the directory. On failure the previous file is intact, the temp
 * file removed, and err names the path and the OS error. */
int qkt_write_atomic(const char *path, const void *buf, size_t n, qkt_err *err);
/* The same for content produced by `fill`, which writes to fd (the temp file) and
 * returns 0, or -1 with err set naming `label` (the target path). */
typedef int (*qkt_write_fn)(int fd, const char *label, void *user, qkt_err *err);
int qkt_write_atomic_fn(const char *path, qkt_write_fn fill, void *user, qkt_err *err);
/* write(2) until all n bytes are out (EINTR retried; a zero write is ENOSPC). 0 or -1 with errno. */
int qkt_write_all(int fd, const void *buf, size_t n);
/* mkdir -p; err names the first path that could not be made. */
int qkt_mkdirs(const char *path, qkt_err *err);
bool qkt_file_exists(const char *path);
/* Do both paths name one existing file (same device and inode: through symlinks,
 * hard links, relative paths)? An output that is an input must be refused up front. */
bool qkt_same_file(const char *a, const char *b);
/* A file an atomic write will replace must be absent or a regular file (not a
 * directory, FIFO, ...). 0, or -1 with err naming the path. */
int qkt_check_replaceable(const char *path, qkt_err *err);
/* Can an atomic write to path succeed as far as one can tell before the work: its
 * directory exists and is writable, and path is replaceable (above). 0, or -1 with err
 * naming the path and the problem. */
int qkt_check_output(const char *path, qkt_err *err);
/* Reads a whole regular file (NUL-terminated copy; *n gets the size); a FIFO or device
 * is refused without blocking. One that reports size 0 (procfs) is read to its end,
 * up to 1 GiB; one that ends before its reported size (sysfs: 4096) is what it holds.
 * NULL + err on failure. */
char *qkt_read_file(const char *path, size_t *n, qkt_err *err);
/* Growable string buffer for building files in memory before an atomic write. */
typedef struct {
    char *s;
    size_t n, cap;
} qkt_buf;
void qkt_buf_printf(qkt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qkt_buf_free(qkt_buf *b);

/* "dir/name" (one '/' between), allocated (qkt_malloc; free it). */
char *qkt_path_join(const char *dir, const char *name);
/* A path to which up to `room` more bytes will be appended ("/ckpt.safetensors.tmp.PID.N")
 * must stay below PATH_MAX: 0, or -1 with "path too long" (refuse it before any work). */
int qkt_check_path_len(const char *path, size_t room, qkt_err *err);

/* ---------------------------------------------------------------- one writer per directory
 * qkt_dir_lock takes an exclusive flock(2) on DIR/.lock (created if missing) and writes
 * our pid into it. The lock lives as long as the descriptor: qkt_dir_unlock (which
 * also removes the file), or the process's end whatever the cause (the kernel drops
 * it, even after SIGKILL: a .lock file left behind never blocks anyone). When another
 * process holds it: -1 with "DIR is in use by another qkt process (pid N holds DIR/.lock)". */
#define QKT_LOCK_NAME ".lock"
typedef struct qkt_lock {
    int fd;     /* -1: not held */
    char *path;
} qkt_lock;
int qkt_dir_lock(qkt_lock *lk, const char *dir, qkt_err *err);
void qkt_dir_unlock(qkt_lock *lk);
/* Removes the temp files that qkt_write_atomic_fn left next to `path` when its process
 * was killed mid-write ("<name>.tmp.<pid>.<n>" whose pid is no longer running; nothing
 * else is touched). Call it only while holding the directory's lock. Returns how many
 * were removed (their names appended to `removed`, comma-separated, if not NULL), or -1
 * with err. */
int qkt_remove_stale_temps(const char *path, qkt_buf *removed, qkt_err *err);

/* CRC-32C (Castagnoli) of buf[0..n), continuing from `crc` (0 to start):
 * qkt_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t qkt_crc32c(uint32_t crc, const void *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
