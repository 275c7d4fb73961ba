/* libFuzzer harness for log.csv's cut on resume (qkt_train_log_truncate): the first byte
 * is the checkpoint's step (0..31), the rest the rows after the header. Either an error
 * (one line starting with the file's name) with the file unchanged, or: every complete
 * line of the input kept verbatim (the first ones, steps 0, 1, ...) or discarded past the
 * step, never both missing; a discarded partial line only at the end (no newline); every
 * kept row made of number characters with 8 columns. Never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qkt_io.h"
#include "qkt_train_run.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

/* The file every input is written to, one per process, removed at its exit. */
static char path[64];
static void remove_log(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/qkt-fuzz-log-%d.csv", (int)getpid());
        atexit(remove_log);
    }
    int64_t step = data[0] % 32;
    const char *hdr = QKT_TRAIN_LOG_HEADER;
    size_t hl = strlen(hdr), bl = size - 1;
    const char *body = (const char *)data + 1;
    char *in = malloc(hl + bl + 1);
    memcpy(in, hdr, hl), memcpy(in + hl, body, bl);
    qkt_err err;
    MUST(qkt_write_atomic(path, in, hl + bl, &err) == 0);
    qkt_log_cut cut;
    err.msg[0] = 0;
    int rc = qkt_train_log_truncate(path, step, &cut, &err);
    size_t n = 0;
    char *got = qkt_read_file(path, &n, &err);
    MUST(got != NULL);
    if (rc) {
        MUST(!strncmp(err.msg, path, strlen(path)) && !strchr(err.msg, '\n'));
        MUST(n == hl + bl && !memcmp(got, in, n)); /* nothing changed */
    } else {
        size_t lines = 0, last_nl = 0;
        for (size_t i = 0; i < bl; i++)
            if (body[i] == '\n') lines++, last_nl = i + 1;
        MUST(cut.last_kept + 1 + cut.dropped == (int64_t)lines); /* every complete line kept or said */
        MUST(cut.torn == (last_nl < bl));
        MUST(cut.dropped == 0 || cut.last_kept == step);
        MUST(n >= hl && n - hl <= bl && !memcmp(got, hdr, hl) && !memcmp(got + hl, body, n - hl)); /* kept: the first lines, verbatim */
        size_t rows = 0;
        for (size_t i = hl, start = hl; i < n; i++) {
            if (got[i] != '\n') continue;
            int commas = 0;
            for (size_t k = start; k < i; k++) {
                MUST(got[k] && strchr("0123456789.eE+-naif,", got[k]));
                commas += got[k] == ',';
            }
            MUST(commas == 7 && i - start < 8 * 41);
            rows++, start = i + 1;
        }
        MUST((int64_t)rows == cut.last_kept + 1);
    }
    free(got), free(in);
    return 0;
}
