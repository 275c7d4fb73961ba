/* The io layer's integrity tools: CRC-32C against known vectors, checksummed
 * safetensors (a flipped data bit names its tensor, an edited header is refused, a
 * partial set of checksums is refused, files without any still load), non-finite
 * values refused by a checkpoint restore, the directory lock (a second holder is
 * refused with the first's pid, the file goes on unlock, the lock dies with its
 * process), the removal of a killed writer's temp files, and qkt_same_file. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"

static const char *dir;

static void test_crc(void) {
    EXPECT(qkt_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c(123456789) = %08x", qkt_crc32c(0, "123456789", 9));
    EXPECT(qkt_crc32c(0, "", 0) == 0, "crc32c('') = %08x", qkt_crc32c(0, "", 0));
    uint8_t z[32] = {0}, o[32];
    memset(o, 0xff, sizeof o);
    EXPECT(qkt_crc32c(0, z, 32) == 0x8A9136AAu, "crc32c(32 zeros) = %08x", qkt_crc32c(0, z, 32)); /* RFC 3720 B.4 */
    EXPECT(qkt_crc32c(0, o, 32) == 0x62A8AB43u, "crc32c(32 x 0xff) = %08x", qkt_crc32c(0, o, 32));
    /* chained = whole, at every split (the 8-byte loop and the tail) */
    char buf[100];
    for (int i = 0; i < 100; i++) buf[i] = (char)(i * 37 + 11);
    uint32_t whole = qkt_crc32c(0, buf, 100);
    int bad = 0;
    for (int k = 0; k <= 100; k++) bad += qkt_crc32c(qkt_crc32c(0, buf, (size_t)k), buf + k, (size_t)(100 - k)) != whole;
    EXPECT(bad == 0, "%d splits give another crc", bad);
}

static void flip_byte(const char *path, long at) {
    size_t n;
    char *b = qkt_test_read_file(path, &n);
    if (!b) return;
    b[at < 0 ? (long)n + at : at] ^= 0x01;
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    free(b);
}

static void test_checksums(void) {
    float a[6] = {1, 2, 3, 4, 5, 6};
    int64_t c[2] = {7, 8};
    qkt_st_write w[2] = {{"a", QKT_ST_F32, 2, {2, 3}, a}, {"c", QKT_ST_I64, 1, {2}, c}};
    qkt_st_meta m[1] = {{"step", "20"}};
    const char *p = qkt_test_path(dir, "sum.safetensors");
    qkt_err err = {{0}};
    qkt_safetensors st;
    EXPECT(qkt_safetensors_write_checked(p, w, 2, m, 1, &err) == 0, "%s", err.msg);
    EXPECT(qkt_safetensors_read(p, &st, &err) == 0 && st.checksummed && st.n_meta == 1 && !strcmp(st.meta[0].key, "step"),
           "checked read: %s", err.msg);
    qkt_safetensors_free(&st);
    flip_byte(p, -3); /* in c's data */
    EXPECT(qkt_safetensors_read(p, &st, &err) == -1 && strstr(err.msg, "tensor 'c' fails its checksum"), "%s", err.msg);
    EXPECT(qkt_safetensors_write_checked(p, w, 2, m, 1, &err) == 0, "%s", err.msg);
    size_t n;
    char *b = qkt_test_read_file(p, &n), *at = b ? strstr(b + 8, "\"20\"") : NULL;
    if (at) at[2] = '8'; /* step 20 -> 28 */
    FILE *f = fopen(p, "wb");
    if (f) fwrite(b, 1, n, f), fclose(f);
    free(b);
    EXPECT(qkt_safetensors_read(p, &st, &err) == -1 && strstr(err.msg, "header fails its checksum"), "%s", err.msg);
    /* without checksums: loads, not checksummed */
    EXPECT(qkt_safetensors_write(p, w, 2, m, 1, &err) == 0, "%s", err.msg);
    EXPECT(qkt_safetensors_read(p, &st, &err) == 0 && !st.checksummed, "unchecked read: %s", err.msg);
    qkt_safetensors_free(&st);
    /* a checksum for one tensor only (and none of the header): refused */
    qkt_st_meta part[2] = {{"step", "20"}, {"crc32c:a", "00000000"}};
    EXPECT(qkt_safetensors_write(p, w, 2, part, 2, &err) == 0, "%s", err.msg);
    EXPECT(qkt_safetensors_read(p, &st, &err) == -1 && strstr(err.msg, "checksum"), "%s", err.msg);

    /* non-finite values are refused by a restore, before anything is copied */
    qkt_params ps;
    qkt_params_init(&ps);
    int shape[1] = {4};
    qkt_tensor *t = qkt_params_add(&ps, "w", 1, shape, 0);
    qkt_params_finalize(&ps);
    for (int i = 0; i < 4; i++) t->data[i] = (qkt_real)i;
    EXPECT(qkt_checkpoint_save(p, &ps, NULL, 0, NULL, 0, &err) == 0, "%s", err.msg);
    qkt_real keep = t->data[3];
    t->data[2] = NAN;
    const char *q = qkt_test_path(dir, "nan.safetensors");
    EXPECT(qkt_checkpoint_save(q, &ps, NULL, 0, NULL, 0, &err) == 0, "%s", err.msg);
    t->data[2] = 2;
    EXPECT(qkt_checkpoint_load(q, &ps, NULL, 0, 0, &err) == -1 && strstr(err.msg, "non-finite value at index 2"), "%s", err.msg);
    EXPECT(t->data[2] == 2 && t->data[3] == keep, "a refused restore changed the parameters");
    EXPECT(qkt_checkpoint_load(p, &ps, NULL, 0, 0, &err) == 0, "%s", err.msg);
    qkt_params_free(&ps);
}

static void test_lock(void) {
    const char *d = qkt_test_path(dir, "locked");
    qkt_err err = {{0}};
    EXPECT(qkt_mkdirs(d, &err) == 0, "%s", err.msg);
    qkt_lock a, b;
    EXPECT(qkt_dir_lock(&a, d, &err) == 0, "%s", err.msg);
    char want[64];
    snprintf(want, sizeof want, "pid %d", (int)getpid());
    EXPECT(qkt_dir_lock(&b, d, &err) == -1 && strstr(err.msg, "in use by another qkt process") && strstr(err.msg, want), "%s",
           err.msg);
    /* another process is refused too, while we hold it */
    pid_t pid = fork();
    if (pid == 0) {
        qkt_lock c;
        qkt_err e2;
        _exit(qkt_dir_lock(&c, d, &e2) == -1 && strstr(e2.msg, want) ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child could take the lock we hold");
    qkt_dir_unlock(&a);
    EXPECT(!qkt_file_exists(qkt_test_path(d, QKT_LOCK_NAME)), "the lock file stays after unlock");
    /* a holder killed with SIGKILL: its lock is gone with it */
    pid = fork();
    if (pid == 0) {
        qkt_lock c;
        qkt_err e2;
        if (qkt_dir_lock(&c, d, &e2)) _exit(1);
        pause();
        _exit(0);
    }
    for (int i = 0; i < 200 && !qkt_file_exists(qkt_test_path(d, QKT_LOCK_NAME)); i++) usleep(5000);
    usleep(20000);
    EXPECT(qkt_dir_lock(&b, d, &err) == -1, "the child's lock was not held");
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    EXPECT(qkt_dir_lock(&b, d, &err) == 0, "after SIGKILL of its holder: %s", err.msg);
    qkt_dir_unlock(&b);
}

static void touch(const char *p) {
    FILE *f = fopen(p, "w");
    if (f) fputs("x", f), fclose(f);
}

static void test_stale_temps(void) {
    const char *d = qkt_test_path(dir, "stale");
    qkt_err err = {{0}};
    EXPECT(qkt_mkdirs(d, &err) == 0, "%s", err.msg);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    int st;
    waitpid(dead, &st, 0);
    char p1[600], p2[600], p3[600], p4[600];
    snprintf(p1, sizeof p1, "%s/ckpt.safetensors.tmp.%d.0", d, (int)dead);      /* ours, writer dead: goes */
    snprintf(p2, sizeof p2, "%s/ckpt.safetensors.tmp.%d.1", d, (int)getppid());  /* writer alive: stays */
    snprintf(p3, sizeof p3, "%s/ckpt.safetensors.tmp.%d.x", d, (int)dead);       /* not the pattern: stays */
    snprintf(p4, sizeof p4, "%s/other.safetensors.tmp.%d.0", d, (int)dead);      /* another file's: stays */
    touch(p1), touch(p2), touch(p3), touch(p4);
    qkt_buf gone = {0};
    char *target = qkt_path_join(d, "ckpt.safetensors");
    EXPECT(qkt_remove_stale_temps(target, &gone, &err) == 1 && gone.s && strstr(gone.s, "ckpt.safetensors.tmp."), "%s",
           gone.s ? gone.s : err.msg);
    EXPECT(!qkt_file_exists(p1) && qkt_file_exists(p2) && qkt_file_exists(p3) && qkt_file_exists(p4), "the wrong files went");
    free(target);
    qkt_buf_free(&gone);
    /* qkt_same_file: through a symlink and a relative path, not for two files */
    char link[600], rel[700];
    snprintf(link, sizeof link, "%s/link", d);
    EXPECT(symlink(p2, link) == 0, "symlink");
    snprintf(rel, sizeof rel, "%s/../stale/%s", d, strrchr(p2, '/') + 1);
    EXPECT(qkt_same_file(link, p2) && qkt_same_file(rel, p2) && !qkt_same_file(p2, p3) && !qkt_same_file(p2, "/nonexistent"),
           "qkt_same_file");
}

int main(void) {
    dir = qkt_test_tmpdir("integrity");
    test_crc();
    test_checksums();
    test_lock();
    test_stale_temps();
    return qkt_test_finish();
}
