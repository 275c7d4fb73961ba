/* The data source interface: spec parsing, the two RNG streams, batches with the
 * train/val hash partition, chance levels and the accuracy helpers. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

/* Sequences with fewer than 2^8 variants cannot be split reliably (val gets 1/8). */
#define MIN_LOG2_SPACE 8.0
/* Rejection sampling for the partition needs ~8 draws per val sequence; this many
 * in a row can only mean a broken generator. */
#define MAX_TRIES (1 << 20)

void qkt__sample_distinct(qkt_rng *r, int32_t *a, int n, int k) {
    QKT_CHECK(k >= 0 && k <= n, "sample %d of %d", k, n);
    for (int i = 0; i < n; i++) a[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)qkt_rng_below(r, (uint32_t)(n - i));
        int32_t t = a[i];
        a[i] = a[j], a[j] = t;
    }
}

uint64_t qkt__rng_below64(qkt_rng *r, uint64_t n) {
    QKT_CHECK(n > 0, "rng_below64(0)");
    if (n <= UINT32_MAX) return qkt_rng_below(r, (uint32_t)n);
    /* Reject the top partial block so every residue is equally likely. */
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
    do x = qkt_rng_u64(r);
    while (x >= lim);
    return x % n;
}

/* A fixed (seed-independent) 64-bit hash of a token sequence: a multiply-xorshift
 * per token, then the splitmix64 finaliser. */
static uint64_t seq_hash(const int32_t *s, int n) {
    uint64_t h = 0x243F6A8885A308D3ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint32_t)s[i]) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 32;
    }
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}
/* The partition: a sequence is a validation sequence iff its hash's top 3 bits are 0. */
static int is_val_seq(const int32_t *s, int n) { return (seq_hash(s, n) >> 61) == 0; }

/* ------------------------------------------------------------------ open / free */
static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dup_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = qkt_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* The seed's two streams: split 1 of its generator for train, then split 2 for val. */
static void split_streams(uint64_t seed, qkt_rng out[2]) {
    qkt_rng base;
    qkt_rng_seed(&base, seed);
    qkt_rng_split(&base, 1, &out[QKT_SPLIT_TRAIN]);
    qkt_rng_split(&base, 2, &out[QKT_SPLIT_VAL]);
}

static void seed_streams(qkt_data *d, uint64_t seed) {
    split_streams(seed, d->rng0);
    d->rng[0] = d->rng0[0], d->rng[1] = d->rng0[1];
}

static int param_names(const qkt_data_task *t, char *buf, size_t n) {
    int k = 0, count = 0;
    while (t->params[count].name) count++;
    buf[0] = 0;
    for (int i = 0; i < count; i++)
        k += snprintf(buf + k, n > (size_t)k ? n - (size_t)k : 0, "%s%s", i == 0 ? "" : i == count - 1 ? " or " : ", ",
                      t->params[i].name);
    return k;
}

/* Parse "name=value,name=value" into d->p (defaults first). */
static int parse_params(qkt_data *d, const char *list, qkt_err *err) {
    const qkt_data_task *t = d->task;
    int given[QKT_DATA_MAX_PARAMS] = {0};
    for (int i = 0; t->params[i].name; i++) d->p[i] = t->params[i].def;
    if (!list) return 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128];
        if (len == 0) return qkt_err_set(err, "%s: empty parameter in '%s' (expected name=value,...)", t->name, list);
        if (len >= sizeof item) return qkt_err_set(err, "%s: parameter '%.40s...' is too long", t->name, p);
        memcpy(item, p, len), item[len] = 0;
        char *eq = strchr(item, '=');
        if (eq) *eq = 0;
        int k = -1;
        for (int i = 0; t->params[i].name; i++)
            if (!strcmp(item, t->params[i].name)) k = i;
        if (k < 0) {
            char names[128];
            param_names(t, names, sizeof names);
            return qkt_err_set(err, "%s: unknown parameter '%s' (expected %s)", t->name, item, names);
        }
        const qkt_data_param *pd = &t->params[k];
        if (!eq) return qkt_err_set(err, "%s: parameter '%s' needs a value (%s=N)", t->name, item, item);
        if (given[k]) return qkt_err_set(err, "%s: parameter '%s' is given twice", t->name, item);
        errno = 0;
        char *e;
        long v = strtol(eq + 1, &e, 10);
        if (eq[1] == 0 || *e || errno || v < pd->lo || v > pd->hi)
            return qkt_err_set(err, "%s: %s=%s: expected an integer in [%d, %d]", t->name, item, eq + 1, pd->lo, pd->hi);
        d->p[k] = (int)v, given[k] = 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int qkt_data_task_count(void) { return qkt__n_tasks; }

const char *qkt_data_task_name(int i) { return i >= 0 && i < qkt__n_tasks ? qkt__tasks[i].name : NULL; }

int qkt_data_task_retrieval(int i) { return i >= 0 && i < qkt__n_tasks && qkt__tasks[i].retrieval; }

/* "mqar, induction, ..., bigram or text:PATH" from the task table. */
static const char *source_names(char *buf, size_t n) {
    buf[0] = 0;
    for (int i = 0; i < qkt__n_tasks; i++) {
        size_t k = strlen(buf);
        if (snprintf(buf + k, n - k, "%s%s", qkt__tasks[i].name, i + 1 < qkt__n_tasks ? ", " : "") >= (int)(n - k)) break;
    }
    size_t k = strlen(buf);
    snprintf(buf + k, n - k, " or text:PATH");
    return buf;
}

static int open_task(qkt_data *d, const char *name, size_t name_len, const char *list, qkt_err *err) {
    for (int i = 0; i < qkt__n_tasks; i++)
        if (strlen(qkt__tasks[i].name) == name_len && !strncmp(name, qkt__tasks[i].name, name_len))
            d->task = &qkt__tasks[i];
    if (!d->task) {
        char names[512];
        return qkt_err_set(err, "unknown data source '%.*s' (expected %s)", (int)name_len, name, source_names(names, sizeof names));
    }
    if (parse_params(d, list, err)) return -1;
    if (d->task->setup(d, err)) return -1;
    d->T = d->T_req ? d->T_req : d->used;
    /* Canonical spec: every parameter, resolved. */
    char buf[256];
    int k = snprintf(buf, sizeof buf, "%s", d->task->name);
    for (int i = 0; d->task->params[i].name; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k, "%c%s=%d", i ? ',' : ':', d->task->params[i].name, d->p[i]);
    d->spec = dup_printf("%s", buf);
    if (d->used > d->T)
        return qkt_err_set(err, "%s needs seq_len >= %d, got %d (shorten the task or raise the model's T)", d->spec,
                           d->used, d->T);
    if (d->T > QKT_DATA_MAX_T) return qkt_err_set(err, "%s: seq_len %d exceeds %d", d->spec, d->T, QKT_DATA_MAX_T);
    if (d->log2_space < MIN_LOG2_SPACE)
        return qkt_err_set(err, "%s has only about %.0f distinct sequences; a train/val split needs >= %.0f (make it larger)",
                           d->spec, exp2(d->log2_space), exp2(MIN_LOG2_SPACE));
    d->seq = qkt_malloc((size_t)(d->T + 1) * sizeof *d->seq);
    d->ans = qkt_malloc((size_t)(d->T + 1));
    return 0;
}

int qkt_data_open(qkt_data **out, const char *spec, const qkt_data_opts *opts, qkt_err *err) {
    QKT_CHECK(out, "qkt_data_open: out is NULL");
    *out = NULL;
    qkt_data_opts o = opts ? *opts : (qkt_data_opts){0};
    char names[512];
    if (!spec || !*spec) return qkt_err_set(err, "empty data spec (expected %s)", source_names(names, sizeof names));
    if (o.seq_len < 0 || o.seq_len > QKT_DATA_MAX_T)
        return qkt_err_set(err, "data: seq_len %d: expected an integer in [1, %d] (or 0 for the task's own)", o.seq_len,
                           QKT_DATA_MAX_T);
    qkt_data *d = qkt_calloc(1, sizeof *d);
    d->T_req = o.seq_len;
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int rc;
    if (name_len == 4 && !strncmp(spec, "text", 4)) {
        if (!colon || !colon[1]) {
            rc = qkt_err_set(err, "text: missing file path (expected text:PATH)");
        } else {
            rc = qkt__text_open(d, colon + 1, err);
        }
    } else {
        rc = open_task(d, spec, name_len, colon ? colon + 1 : NULL, err);
    }
    if (rc) {
        qkt_data_free(d);
        return -1;
    }
    seed_streams(d, o.seed);
    *out = d;
    return 0;
}

int qkt_data_from_vocab(qkt_data **out, const uint8_t *bytes, int n, qkt_err *err) {
    QKT_CHECK(out, "qkt_data_from_vocab: out is NULL");
    *out = NULL;
    if (!bytes || n < 1 || n > 256) return qkt_err_set(err, "text vocabulary: %d bytes, expected 1..256", n);
    for (int i = 1; i < n; i++)
        if (bytes[i] <= bytes[i - 1])
            return qkt_err_set(err, "text vocabulary: bytes must be sorted and unique (0x%02x follows 0x%02x at %d)",
                               bytes[i], bytes[i - 1], i);
    qkt_data *d = qkt_calloc(1, sizeof *d);
    memset(d->enc, 0xff, sizeof d->enc); /* -1 */
    for (int i = 0; i < n; i++) d->vocab_bytes[i] = bytes[i], d->enc[bytes[i]] = (int16_t)i;
    d->vocab = d->answer_k = n;
    d->spec = dup_printf("text");
    *out = d;
    return 0;
}

void qkt_data_free(qkt_data *d) {
    if (!d) return;
    qkt__text_close(d);
    free(d->spec), free(d->path);
    free(d->seq), free(d->ans), free(d->scratch), free(d->scratch2), free(d->succ), free(d->cum);
    free(d);
}

/* ------------------------------------------------------------------ queries */
const char *qkt_data_name(const qkt_data *d) { return d->task ? d->task->name : "text"; }
const char *qkt_data_spec(const qkt_data *d) { return d->spec; }
int qkt_data_vocab_size(const qkt_data *d) { return d->vocab; }
int qkt_data_seq_len(const qkt_data *d) { return d->T; }
int qkt_data_used_len(const qkt_data *d) { return d->used; }
int qkt_data_is_text(const qkt_data *d) { return d->task == NULL; }

int64_t qkt_data_split_tokens(const qkt_data *d, qkt_data_split split) {
    if (d->task) return -1;
    return (int64_t)(split == QKT_SPLIT_TRAIN ? d->n_train : d->len - d->n_train);
}

void qkt_data_chance(const qkt_data *d, double *loss, double *acc) {
    if (loss) *loss = log((double)d->answer_k);
    if (acc) *acc = 1.0 / d->answer_k;
}

void qkt_data_best(const qkt_data *d, double *loss, double *acc) {
    if (loss) *loss = d->task ? d->best_loss : -1;
    if (acc) *acc = d->task ? d->best_acc : -1;
}

const char *qkt_data_token_str(const qkt_data *d, int32_t tok, char buf[16]) {
    QKT_CHECK(tok >= 0 && tok < d->vocab, "token %d outside [0, %d)", tok, d->vocab);
    if (d->task) {
        d->task->token_str(d, tok, buf);
        return buf;
    }
    uint8_t c = d->vocab_bytes[tok];
    if (c == '\n') snprintf(buf, 16, "\\n");
    else if (c == '\t') snprintf(buf, 16, "\\t");
    else if (c == '\\') snprintf(buf, 16, "\\\\");
    else if (c >= 0x20 && c < 0x7f) snprintf(buf, 16, "%c", c);
    else snprintf(buf, 16, "\\x%02x", c);
    return buf;
}

/* ------------------------------------------------------------------ batches */
void qkt_data_batch(qkt_data *d, qkt_data_split split, int B, int32_t *idx, int32_t *targets, uint8_t *answer_mask) {
    QKT_CHECK(split == QKT_SPLIT_TRAIN || split == QKT_SPLIT_VAL, "bad split %d", (int)split);
    QKT_CHECK(B >= 0 && idx && targets, "qkt_data_batch: B = %d, idx %p, targets %p", B, (void *)idx, (void *)targets);
    if (!d->task) {
        QKT_CHECK(d->has_file, "qkt_data_batch: this text source has a vocabulary only (qkt_data_from_vocab)");
        qkt__text_batch(d, split, B, idx, targets, answer_mask);
        return;
    }
    int T = d->T, U = d->used, want_val = split == QKT_SPLIT_VAL;
    for (int b = 0; b < B; b++) {
        int tries = 0;
        do {
            QKT_CHECK(tries++ < MAX_TRIES, "%s: no %s sequence in %d draws", d->spec, want_val ? "val" : "train", MAX_TRIES);
            d->task->gen(d, &d->rng[split]);
        } while (is_val_seq(d->seq, U + 1) != want_val);
        int32_t *x = idx + (size_t)b * T, *y = targets + (size_t)b * T;
        for (int t = 0; t < U; t++) {
            x[t] = d->seq[t];
            y[t] = d->ans[t + 1] ? d->seq[t + 1] : QKT_IGNORE;
        }
        for (int t = U; t < T; t++) x[t] = 0, y[t] = QKT_IGNORE; /* padding */
        if (answer_mask)
            for (int t = 0; t < T; t++) answer_mask[(size_t)b * T + t] = y[t] != QKT_IGNORE;
    }
}

void qkt_data_reset(qkt_data *d, qkt_data_split split) {
    QKT_CHECK(split == QKT_SPLIT_TRAIN || split == QKT_SPLIT_VAL, "bad split %d", (int)split);
    d->rng[split] = d->rng0[split];
}
void qkt_data_seed_split(qkt_data *d, qkt_data_split split, uint64_t seed) {
    QKT_CHECK(split == QKT_SPLIT_TRAIN || split == QKT_SPLIT_VAL, "bad split %d", (int)split);
    qkt_rng s[2];
    split_streams(seed, s);
    d->rng0[split] = d->rng[split] = s[split];
}
void qkt_data_get_rng(const qkt_data *d, qkt_data_split split, qkt_rng *out) {
    QKT_CHECK(split == QKT_SPLIT_TRAIN || split == QKT_SPLIT_VAL, "bad split %d", (int)split);
    *out = d->rng[split];
}
void qkt_data_set_rng(qkt_data *d, qkt_data_split split, const qkt_rng *in) {
    QKT_CHECK(split == QKT_SPLIT_TRAIN || split == QKT_SPLIT_VAL, "bad split %d", (int)split);
    d->rng[split] = *in;
}

/* ------------------------------------------------------------------ accuracy */
double qkt_data_accuracy(const qkt_real *logits, const int32_t *targets, int64_t n_rows, int V, int64_t *n_counted) {
    int64_t counted = 0, correct = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        if (targets[r] == QKT_IGNORE) continue;
        const qkt_real *x = logits + r * V;
        int best = 0; /* the first largest; a NaN compares false (at 0 it stays) */
        qkt_real bv = x[0];
        for (int j = 1; j < V; j++)
            if (x[j] > bv) bv = x[j], best = j;
        counted++, correct += best == targets[r];
    }
    if (n_counted) *n_counted = counted;
    return counted ? (double)correct / (double)counted : 0;
}

double qkt_data_accuracy_tokens(const int32_t *pred, const int32_t *targets, int64_t n, int64_t *n_counted) {
    int64_t counted = 0, correct = 0;
    for (int64_t i = 0; i < n; i++)
        if (targets[i] != QKT_IGNORE) counted++, correct += pred[i] == targets[i];
    if (n_counted) *n_counted = counted;
    return counted ? (double)correct / (double)counted : 0;
}

double qkt_data_seq_accuracy(const qkt_real *logits, const int32_t *targets, int B, int T, int V) {
    int rows = 0, right = 0;
    for (int b = 0; b < B; b++) {
        int64_t n;
        double a = qkt_data_accuracy(logits + (size_t)b * T * V, targets + (size_t)b * T, T, V, &n);
        if (n) rows++, right += a == 1.0;
    }
    return rows ? (double)right / rows : 0;
}

/* ------------------------------------------------------------------ help */
int qkt_data_help(char *buf, size_t n) {
    int k = 0;
#define PUT(...) k += snprintf(buf + k, n > (size_t)k ? n - (size_t)k : 0, __VA_ARGS__)
    PUT("data sources (SPEC = name or name:param=value,...):\n");
    for (int i = 0; i < qkt__n_tasks; i++) {
        const qkt_data_task *t = &qkt__tasks[i];
        PUT("  %-10s %s\n", t->name, t->summary);
        for (int j = 0; t->params[j].name; j++) {
            const qkt_data_param *p = &t->params[j];
            char def[16];
            if (p->def == QKT_PARAM_AUTO) snprintf(def, sizeof def, "auto");
            else snprintf(def, sizeof def, "%d", p->def);
            PUT("    %-11s %-7s %s\n", p->name, def, p->help);
        }
    }
    PUT("  %-10s %s\n", "text:PATH", "character-level text: vocabulary = the file's sorted unique bytes");
    PUT("    %-11s %-7s %s\n", "val_frac", "0.1", "fraction of the file (at its end) held out for validation");
#undef PUT
    return k;
}
