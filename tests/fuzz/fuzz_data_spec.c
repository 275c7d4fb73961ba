/* libFuzzer harness for data spec strings ("mqar:n_pairs=4", ...): byte 0 picks the
 * model's T (0 = the task's own, else 1..255), the rest is the spec. Any spec either
 * fails with one line, or opens a task whose canonical spec reopens to the same task
 * and whose batches hold tokens in [0, V) and targets in [0, V) or -1.
 * Text specs are the text harness's (they would open files of this machine); specs
 * naming sizes above 4096 (or a bigram chain above 2^21 vocab x branch) are skipped:
 * they only make the same code slow. */
#include <stdlib.h>
#include <string.h>

#include "qkt_data.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

static void check_batch(qkt_data *d, qkt_data_split split, int B) {
    int T = qkt_data_seq_len(d), V = qkt_data_vocab_size(d);
    int32_t *x = malloc((size_t)B * T * sizeof *x), *y = malloc((size_t)B * T * sizeof *y);
    uint8_t *m = malloc((size_t)B * T);
    qkt_data_batch(d, split, B, x, y, m);
    int counted = 0;
    for (int i = 0; i < B * T; i++) {
        MUST(x[i] >= 0 && x[i] < V);
        MUST(y[i] == QKT_IGNORE || (y[i] >= 0 && y[i] < V));
        MUST(m[i] == (y[i] != QKT_IGNORE));
        counted += m[i];
        char buf[16];
        MUST(strlen(qkt_data_token_str(d, x[i], buf)) < 16);
    }
    MUST(counted > 0);
    free(x), free(y), free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 256) return 0;
    char spec[256];
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = 0;
    if (!strncmp(spec, "text", 4)) return 0;
    double prod = 1;
    for (const char *p = spec; *p; p++)
        if (*p >= '0' && *p <= '9' && (p == spec || p[-1] < '0' || p[-1] > '9')) {
            long v = strtol(p, NULL, 10);
            if (v > 4096) return 0;
            prod *= v > 1 ? (double)v : 1;
        }
    if (strstr(spec, "bigram") && prod > (1 << 21)) return 0; /* its setup is O(vocab x branch x T): seconds under ASan */
    qkt_data_opts o = {.seq_len = data[0], .seed = data[0] * 7u};
    qkt_data *d;
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_data_open(&d, spec, &o, &err) != 0) {
        MUST(d == NULL && strlen(err.msg) > 0 && !strchr(err.msg, '\n'));
        return 0;
    }
    int T = qkt_data_seq_len(d), V = qkt_data_vocab_size(d), U = qkt_data_used_len(d);
    MUST(T >= 1 && (o.seq_len == 0 || T == o.seq_len) && U >= 1 && U <= T && V >= 2);
    double cl, ca, bl, ba;
    qkt_data_chance(d, &cl, &ca);
    qkt_data_best(d, &bl, &ba);
    MUST(cl >= 0 && ca > 0 && ca <= 1 && bl >= 0 && bl <= cl + 1e-9 && ba >= ca - 1e-9 && ba <= 1 + 1e-9);
    /* the canonical spec reopens to the same task */
    qkt_data *e;
    MUST(qkt_data_open(&e, qkt_data_spec(d), &o, &err) == 0);
    MUST(!strcmp(qkt_data_spec(d), qkt_data_spec(e)) && qkt_data_vocab_size(e) == V && qkt_data_seq_len(e) == T);
    qkt_data_free(e);
    if ((int64_t)T * V < (1 << 20)) {
        check_batch(d, QKT_SPLIT_TRAIN, 2);
        check_batch(d, QKT_SPLIT_VAL, 2);
    }
    qkt_data_free(d);
    return 0;
}
