/* Files of the PyTorch cross-check drivers (attention_driver.c, optim_driver.c): raw arrays in
 * DIR/NAME, read or written whole, a one-line message on stderr naming the file otherwise. */
#ifndef QKT_TESTS_TORCH_DRIVER_IO_H
#define QKT_TESTS_TORCH_DRIVER_IO_H
#include <stdio.h>

/* Reads exactly `bytes` bytes of dir/name into dst: 0, or -1 with the message. */
static inline int driver_load(const char *who, const char *dir, const char *name, void *dst, size_t bytes) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(dst, 1, bytes, f) : 0;
    if (f) fclose(f);
    if (got != bytes) fprintf(stderr, "%s: %s: expected %zu bytes, read %zu\n", who, path, bytes, got);
    return got == bytes ? 0 : -1;
}

/* Writes n values of `size` bytes from src to dir/name: 0, or -1 with the message. */
static inline int driver_save(const char *who, const char *dir, const char *name, const void *src, size_t size, size_t n) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    size_t put = f ? fwrite(src, size, n, f) : 0;
    if (f && fclose(f) != 0) put = 0;
    if (put != n) fprintf(stderr, "%s: cannot write %s\n", who, path);
    return put == n ? 0 : -1;
}
#endif
