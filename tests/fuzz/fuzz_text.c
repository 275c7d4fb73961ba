/* libFuzzer harness for the character-level text loader (text:PATH[,val_frac=F]).
 * Input: an optional first line "<t><suffix>\n" (t: byte picking T in 1..64, suffix
 * appended to the spec, e.g. ",val_frac=0.3"; present when the input starts with '#'),
 * then the file's bytes, written to an in-memory file. Either a one-line error, or a
 * vocabulary holding exactly the file's bytes, splits that add up, batches that are
 * windows of the file, an encode/decode round trip, and a canonical spec that reopens
 * to the same splits. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qkt_data.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

static char path[64];

/* The file lives in memory (memfd), opened by the loader as /proc/self/fd/N. */
static void write_file(const uint8_t *p, size_t n) {
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("qkt-fuzz-text", 0);
        MUST(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    MUST(ftruncate(fd, 0) == 0 && pwrite(fd, p, n, 0) == (ssize_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int T = 0;
    char spec[256];
    const uint8_t *body = data;
    size_t n = size;
    const char *suffix = "";
    char line[128] = "";
    if (size >= 2 && data[0] == '#') {
        const uint8_t *nl = memchr(data, '\n', size < 100 ? size : 100);
        if (nl && nl >= data + 2) {
            T = 1 + data[1] % 64;
            size_t sl = (size_t)(nl - data) - 2;
            memcpy(line, data + 2, sl), line[sl] = 0;
            suffix = line;
            body = nl + 1, n = size - (size_t)(nl + 1 - data);
        }
    }
    write_file(body, n);
    snprintf(spec, sizeof spec, "text:%s%s", path, suffix);
    qkt_data_opts o = {.seq_len = T, .seed = 3};
    qkt_data *d;
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_data_open(&d, spec, &o, &err) != 0) {
        MUST(d == NULL && strlen(err.msg) > 0 && !strchr(err.msg, '\n'));
        return 0;
    }
    MUST(qkt_data_is_text(d) && n > 0);
    int V, Tm = qkt_data_seq_len(d);
    const uint8_t *voc = qkt_data_vocab(d, &V);
    MUST(V >= 1 && V <= 256 && V == qkt_data_vocab_size(d) && (T == 0 || Tm == T));
    uint8_t seen[256] = {0};
    for (size_t i = 0; i < n; i++) seen[body[i]] = 1;
    int distinct = 0;
    for (int c = 0; c < 256; c++) distinct += seen[c];
    MUST(distinct == V);
    for (int i = 0; i < V; i++) MUST(seen[voc[i]] && (i == 0 || voc[i] > voc[i - 1]));
    int64_t tr = qkt_data_split_tokens(d, QKT_SPLIT_TRAIN), va = qkt_data_split_tokens(d, QKT_SPLIT_VAL);
    MUST(tr + va == (int64_t)n && tr > Tm && va > Tm);
    /* encode/decode round trip of the whole file */
    int32_t *ids = malloc(n * sizeof *ids);
    uint8_t *back = malloc(n);
    MUST(qkt_data_encode(d, body, n, ids, &err) == 0);
    qkt_data_decode(d, ids, n, back);
    MUST(!memcmp(back, body, n));
    /* batches are windows of their split: y[t] = x[t+1] */
    int32_t x[3 * 64], y[3 * 64];
    for (int s = 0; s < 2; s++) {
        qkt_data_batch(d, (qkt_data_split)s, 3, x, y, NULL);
        for (int b = 0; b < 3; b++)
            for (int t = 0; t < Tm; t++) {
                MUST(x[b * Tm + t] >= 0 && x[b * Tm + t] < V && y[b * Tm + t] >= 0 && y[b * Tm + t] < V);
                if (t + 1 < Tm) MUST(y[b * Tm + t] == x[b * Tm + t + 1]);
            }
    }
    /* the canonical spec (what train.json keeps) reopens to the same splits */
    qkt_data *e;
    MUST(qkt_data_open(&e, qkt_data_spec(d), &o, &err) == 0);
    MUST(qkt_data_split_tokens(e, QKT_SPLIT_TRAIN) == tr && !strcmp(qkt_data_spec(e), qkt_data_spec(d)));
    qkt_data_free(e);
    free(ids), free(back);
    qkt_data_free(d);
    return 0;
}
