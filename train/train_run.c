/* train.json (the configuration of a `qkt train` run) and log.csv truncation. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_json.h"
#include "qkt_train_run.h"

void qkt_train_run_default(qkt_train_run *r) {
    memset(r, 0, sizeof *r);
    r->tc = qkt_train_config_default();
    r->tc.data = r->data;
    snprintf(r->data, sizeof r->data, "%s", "mqar");
    r->eval_every = 100;
    r->eval_batches = 20;
    r->ckpt_every = 500;
}

#define BAD(...) return qkt_err_set(err, __VA_ARGS__)

int qkt_train_run_validate(const qkt_train_run *r, qkt_err *err) {
    if (qkt_train_config_validate(&r->tc, err)) return -1;
    if (r->tc.optim != QKT_OPTIM_ADAMW) BAD("optim: only adamw is supported by qkt train");
    if (r->eval_every < 0) BAD("--eval-every %d: expected an integer >= 0 (0 = first and last step only)", r->eval_every);
    if (r->eval_batches < 1 || r->eval_batches > QKT_TRAIN_MAX_EVAL_BATCHES)
        BAD("--eval-batches %d: expected an integer in [1, %d]", r->eval_batches, QKT_TRAIN_MAX_EVAL_BATCHES);
    if (r->ckpt_every < 0) BAD("--ckpt-every %d: expected an integer >= 0 (0 = at the end only)", r->ckpt_every);
    if (!r->data[0]) BAD("--data: expected a data spec (mqar, text:PATH, ...)");
    return 0;
}

/* ---------------------------------------------------------------- JSON */
char *qkt_train_run_json(const qkt_train_run *r) {
    const qkt_train_config *c = &r->tc;
    const qkt_gpt_config *m = &c->model;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, c->seed);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "qkt-train-1");
    cJSON_AddStringToObject(o, "data", r->data);
    cJSON_AddNumberToObject(o, "vocab_size", m->vocab_size); /* from the data; informational */
    cJSON_AddNumberToObject(o, "n_layer", m->n_layer);
    cJSON_AddNumberToObject(o, "n_head", m->n_head);
    cJSON_AddNumberToObject(o, "n_embd", m->n_embd);
    cJSON_AddNumberToObject(o, "block_size", m->block_size);
    cJSON_AddBoolToObject(o, "bias", m->bias);
    cJSON_AddNumberToObject(o, "dropout", m->dropout);
    cJSON_AddStringToObject(o, "attn_scale", qkt_attn_scale_name(m->attn_scale));
    cJSON_AddNumberToObject(o, "attn_temp", m->attn_temp);
    cJSON_AddNumberToObject(o, "qk_init_mult", m->qk_init_mult);
    cJSON_AddNumberToObject(o, "ln_eps", m->ln_eps);
    cJSON_AddStringToObject(o, "norm", qkt_norm_name(m->norm));
    cJSON_AddStringToObject(o, "mlp", qkt_mlp_name(m->mlp));
    cJSON_AddStringToObject(o, "pos", qkt_pos_name(m->pos));
    cJSON_AddNumberToObject(o, "batch_size", c->batch_size);
    cJSON_AddNumberToObject(o, "replicas", c->replicas);
    cJSON_AddNumberToObject(o, "steps", (double)c->steps);
    cJSON_AddStringToObject(o, "optim", qkt_optim_kind_name(c->optim));
    cJSON_AddNumberToObject(o, "lr", c->lr);
    cJSON_AddNumberToObject(o, "min_lr", c->min_lr);
    cJSON_AddStringToObject(o, "schedule", qkt_sched_kind_name(c->schedule));
    cJSON_AddNumberToObject(o, "warmup_steps", (double)c->warmup_steps);
    cJSON_AddNumberToObject(o, "weight_decay", c->weight_decay);
    cJSON_AddNumberToObject(o, "beta1", c->beta1);
    cJSON_AddNumberToObject(o, "beta2", c->beta2);
    cJSON_AddNumberToObject(o, "grad_clip", c->grad_clip);
    cJSON_AddStringToObject(o, "seed", seed); /* a string: u64 does not fit a JSON double */
    cJSON_AddNumberToObject(o, "eval_every", r->eval_every);
    cJSON_AddNumberToObject(o, "eval_batches", r->eval_batches);
    cJSON_AddNumberToObject(o, "ckpt_every", r->ckpt_every);
    char *s = cJSON_Print(o); /* cJSON prints doubles in their shortest round-trip form */
    cJSON_Delete(o);
    return s;
}

static int from_json(const cJSON *o, const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_config *c = &r->tc;
    qkt_gpt_config *m = &c->model;
    if (!cJSON_IsObject(o)) return qkt_err_set(err, "%s: not a JSON object", path);
    const char *fmt = qkt_json_str(o, "format", path, err);
    if (!fmt) return -1;
    if (strcmp(fmt, "qkt-train-1")) return qkt_err_set(err, "%s: format '%.32s' is not qkt-train-1", path, fmt);
    const char *s = qkt_json_str(o, "data", path, err);
    if (!s) return -1;
    if (strlen(s) >= sizeof r->data) return qkt_err_set(err, "%s: 'data' is too long", path);
    snprintf(r->data, sizeof r->data, "%s", s);
    /* Integers need only fit their fields here: qkt_train_run_validate has the bounds. */
    int64_t v[10];
    const char *ikeys[] = {"n_layer",    "n_head",       "n_embd",     "block_size", "batch_size",
                           "eval_every", "eval_batches", "ckpt_every", "steps",      "warmup_steps"};
    for (int i = 0; i < 10; i++)
        if (qkt_json_int(o, ikeys[i], path, INT_MIN, INT_MAX, &v[i], err)) return -1;
    m->n_layer = (int)v[0], m->n_head = (int)v[1], m->n_embd = (int)v[2], m->block_size = (int)v[3];
    c->batch_size = (int)v[4], r->eval_every = (int)v[5], r->eval_batches = (int)v[6], r->ckpt_every = (int)v[7];
    c->steps = v[8], c->warmup_steps = v[9];
    c->replicas = 1; /* runs written before replicas existed had one */
    if (cJSON_GetObjectItemCaseSensitive(o, "replicas")) {
        int64_t rep;
        if (qkt_json_int(o, "replicas", path, INT_MIN, INT_MAX, &rep, err)) return -1;
        c->replicas = (int)rep;
    }
    struct { const char *k; double *d; } reals[] = {
        {"dropout", &m->dropout}, {"attn_temp", &m->attn_temp}, {"qk_init_mult", &m->qk_init_mult}, {"ln_eps", &m->ln_eps},
        {"lr", &c->lr}, {"min_lr", &c->min_lr}, {"weight_decay", &c->weight_decay}, {"beta1", &c->beta1},
        {"beta2", &c->beta2}, {"grad_clip", &c->grad_clip}};
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++)
        if (qkt_json_num(o, reals[i].k, path, reals[i].d, err)) return -1;
    const cJSON *b = qkt_json_get(o, "bias", path, err);
    if (!b) return -1;
    if (!cJSON_IsBool(b)) return qkt_err_set(err, "%s: 'bias' is not true or false", path);
    m->bias = cJSON_IsTrue(b);
    qkt_err e2;
    if (!(s = qkt_json_str(o, "attn_scale", path, err))) return -1;
    if (qkt_attn_scale_parse(s, &m->attn_scale, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    /* norm, mlp, pos: absent in runs from before the options, which are layernorm, gelu, learned */
    if (cJSON_GetObjectItemCaseSensitive(o, "norm") &&
        (!(s = qkt_json_str(o, "norm", path, err)) || (qkt_norm_parse(s, &m->norm, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, "mlp") &&
        (!(s = qkt_json_str(o, "mlp", path, err)) || (qkt_mlp_parse(s, &m->mlp, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, "pos") &&
        (!(s = qkt_json_str(o, "pos", path, err)) || (qkt_pos_parse(s, &m->pos, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    if (!(s = qkt_json_str(o, "schedule", path, err))) return -1;
    if (qkt_sched_kind_parse(s, &c->schedule, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    if (!(s = qkt_json_str(o, "optim", path, err))) return -1;
    if (qkt_optim_kind_parse(s, &c->optim, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    if (!(s = qkt_json_str(o, "seed", path, err))) return -1;
    char *end;
    c->seed = strtoull(s, &end, 10);
    if (!*s || *end || *s == '-') return qkt_err_set(err, "%s: 'seed' = '%.32s' is not an unsigned integer", path, s);
    if (qkt_train_run_validate(r, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    return 0;
}

int qkt_train_run_load(const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_run_default(r);
    size_t n;
    char *text = qkt_read_file(path, &n, err);
    if (!text) return -1;
    int rc = qkt_train_run_parse(text, n, path, r, err);
    free(text);
    return rc;
}

int qkt_train_run_parse(const char *text, size_t n, const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_run_default(r);
    cJSON *o = qkt_json_parse(text, n, path, err); /* also refuses a key twice, text after the '}' */
    if (!o) return -1;
    int rc = from_json(o, path, r, err);
    cJSON_Delete(o);
    r->tc.data = r->data;
    return rc;
}

/* ---------------------------------------------------------------- log.csv */
/* One column of a row as log_row writes it: digits, '.', 'e', signs, "nan"/"inf" (%.9g,
 * %.1f, %.3f), at most 40 bytes, strtod-parsable to its end; empty where allowed. */
static bool log_value(const char *p, size_t n, bool may_be_empty) {
    if (n == 0) return may_be_empty;
    if (n > 40) return false;
    char v[41];
    memcpy(v, p, n);
    v[n] = 0;
    if (strspn(v, "0123456789.eE+-nainf") != n) return false;
    char *end;
    strtod(v, &end);
    return *end == 0;
}

/* A row [p, nl): step,loss,lr,grad_norm,val_loss,val_acc,tokens_per_s,elapsed_s with an
 * unsigned decimal step and numbers elsewhere (empty but for elapsed_s). The step, or -1. */
static long long row_step(const char *p, const char *nl) {
    const char *c = p;
    long long s = 0;
    for (; c < nl && *c >= '0' && *c <= '9'; c++) {
        if (s > (LLONG_MAX - 9) / 10) return -1;
        s = 10 * s + (*c - '0');
    }
    if (c == p || c == nl || *c != ',') return -1;
    for (int col = 1; col < 8; col++) {
        const char *e = ++c;
        while (e < nl && *e != ',') e++;
        if (!log_value(c, (size_t)(e - c), col < 7) || (col < 7) != (e < nl)) return -1;
        c = e;
    }
    return s;
}

/* Up to 40 bytes of the line [p, nl) for a message, a byte outside printable ASCII as \xNN. */
static const char *quote_line(const char *p, const char *nl, char *q, size_t qn) {
    size_t k = 0;
    for (const char *c = p; c < nl && c < p + 40 && k + 5 < qn; c++)
        k += (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? (size_t)snprintf(q + k, qn - k, "%c", *c)
                                                                   : (size_t)snprintf(q + k, qn - k, "\\x%02x", (unsigned char)*c);
    q[k] = 0;
    if (nl - p > 40) snprintf(q + k, qn - k, "...");
    return q;
}

int qkt_train_log_truncate(const char *path, int64_t step, qkt_log_cut *cut, qkt_err *err) {
    const char *hdr = QKT_TRAIN_LOG_HEADER;
    size_t hl = strlen(hdr), n = 0;
    char *text = NULL;
    qkt_log_cut c = {.last_kept = -1, .dropped_first = -1};
    if (qkt_file_exists(path) && !(text = qkt_read_file(path, &n, err))) return -1;
    if (text && strncmp(text, hdr, hl)) {
        free(text);
        return qkt_err_set(err, "%s: not a qkt train log (its header differs)", path);
    }
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", hdr);
    /* rows are written in step order: keep them up to the first one past `step` */
    long line = 1;
    int rc = 0;
    char *endt = text ? text + n : NULL; /* a NUL byte is a byte like another: memchr, not strchr */
    for (char *p = text ? text + hl : NULL; p && p < endt && !rc; line++) {
        char *nl = memchr(p, '\n', (size_t)(endt - p));
        if (!nl) { /* a torn last row (killed mid-write) */
            c.torn = true;
            break;
        }
        long long s = row_step(p, nl);
        char q[256];
        if (c.dropped == 0 && s >= 0 && s <= step && s == c.last_kept + 1) {
            qkt_buf_printf(&b, "%.*s", (int)(nl + 1 - p), p);
            c.last_kept = s;
        } else if (c.dropped > 0 || c.last_kept == step || (s > step && s == c.last_kept + 1)) {
            if (!c.dropped++) c.dropped_first = s; /* past the checkpoint: discarded whatever it holds */
        } else if (s < 0) {
            rc = qkt_err_set(err, "%s line %ld is not a log row ('%s'): repair or delete that line (the rows up to step %lld "
                                  "are needed); nothing was changed", path, line + 1, quote_line(p, nl, q, sizeof q), (long long)step);
        } else {
            rc = qkt_err_set(err, "%s line %ld: step %lld after step %lld (rows missing or out of order): repair the file; "
                                  "nothing was changed", path, line + 1, s, (long long)c.last_kept);
        }
        p = nl + 1;
    }
    free(text);
    if (!rc) rc = qkt_write_atomic(path, b.s, b.n, err);
    qkt_buf_free(&b);
    if (cut) *cut = c;
    return rc;
}
