/* File helpers for the layers above (train, experiments, the CLI): atomic writes,
 * directories, output checks, whole-file reads, a growable string buffer. */
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
/* A file an atomic write will replace must be absent or a regular file (not a
 * directory, FIFO, ...). 0, or -1 with err naming the path. */
int qkt_check_replaceable(const char *path, qkt_err *err);
/* Can an atomic write to path succeed as far as one can tell before the work: its
 * directory exists and is writable, and path is replaceable (above). 0, or -1 with err
 * naming the path and the problem. */
int qkt_check_output(const char *path, qkt_err *err);
/* Reads a whole file (NUL-terminated copy; *n gets the size). NULL + err on failure. */
char *qkt_read_file(const char *path, size_t *n, qkt_err *err);
/* Growable string buffer for building files in memory before an atomic write. */
typedef struct {
    char *s;
    size_t n, cap;
} qkt_buf;
void qkt_buf_printf(qkt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qkt_buf_free(qkt_buf *b);

#ifdef __cplusplus
}
#endif
#endif
