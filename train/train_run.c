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
#include "qkt_train_fields.h"
#include "qkt_train_run.h"
#include "train_internal.h"

void qkt_train_run_default(qkt_train_run *r) {
    memset(r, 0, sizeof *r);
    r->tc = qkt_train_config_default();
    r->tc.data = r->data;
    snprintf(r->data, sizeof r->data, "%s", "mqar");
    qkt__train_run_fields_default(r); /* eval_every 100, eval_batches 20, ckpt_every 500 */
}

#define BAD(...) return qkt_err_set(err, __VA_ARGS__)

/* The run's own fields (those outside r->tc), named as qkt_train_field_label says. */
int qkt__train_run_check(const qkt_train_run *r, qkt_err *err) {
    if (qkt__train_config_check(&r->tc, err)) return -1;
    if (r->tc.optim != QKT_OPTIM_ADAMW) BAD("optim: only adamw is supported by qkt train");
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if (qkt_train_field_ptr_tc(f, (qkt_train_config *)&r->tc)) continue; /* checked above */
        char l[64];
        if (qkt_train_field_check(qkt_train_field_ptr(f, (qkt_train_run *)r), f, qkt_train_field_label(f, l, sizeof l), err)) return -1;
    }
    return 0;
}

int qkt_train_run_validate(const qkt_train_run *r, qkt_err *err) {
    return qkt__train_run_check(r, err) ? qkt__err_call(err, "qkt_train_run_validate") : 0;
}

/* ---------------------------------------------------------------- JSON */
/* The keys of the table's train.json fields, in its order, after "format". */
char *qkt_train_run_json(const qkt_train_run *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "qkt-train-1");
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if (!(f->where & (QKT_FIELD_JSON | QKT_FIELD_JSON_INFO))) continue;
        const void *p = qkt_train_field_ptr(f, (qkt_train_run *)r);
        char text[64];
        switch (f->type) {
        case QKT_FIELD_INT: cJSON_AddNumberToObject(o, f->name, *(const int *)p); break;
        case QKT_FIELD_I64: cJSON_AddNumberToObject(o, f->name, (double)*(const int64_t *)p); break;
        case QKT_FIELD_DOUBLE: cJSON_AddNumberToObject(o, f->name, *(const double *)p); break;
        case QKT_FIELD_BOOL: cJSON_AddBoolToObject(o, f->name, *(const bool *)p); break;
        case QKT_FIELD_STRING: cJSON_AddStringToObject(o, f->name, (const char *)p); break;
        case QKT_FIELD_ENUM:
        case QKT_FIELD_U64: /* a string: u64 does not fit a JSON double */
            qkt_train_field_format(p, f, text, sizeof text);
            cJSON_AddStringToObject(o, f->name, text);
            break;
        }
    }
    char *s = cJSON_Print(o); /* cJSON prints doubles in their shortest round-trip form */
    cJSON_Delete(o);
    return s;
}

/* One train.json field into r; an absent optional one keeps its default. */
static int field_from_json(const cJSON *o, const char *path, const qkt_train_field *f, qkt_train_run *r, qkt_err *err) {
    if ((f->where & QKT_FIELD_JSON_OPT) && !cJSON_GetObjectItemCaseSensitive(o, f->name)) return 0;
    void *p = qkt_train_field_ptr(f, r);
    int64_t v;
    const char *s;
    qkt_err e2;
    switch (f->type) {
    case QKT_FIELD_INT:
    case QKT_FIELD_I64: /* integers need only fit their fields here: validation has the bounds */
        if (qkt_json_int(o, f->name, path, INT_MIN, INT_MAX, &v, err)) return -1;
        if (f->type == QKT_FIELD_INT) *(int *)p = (int)v;
        else *(int64_t *)p = v;
        return 0;
    case QKT_FIELD_DOUBLE: return qkt_json_num(o, f->name, path, (double *)p, err);
    case QKT_FIELD_BOOL: {
        const cJSON *b = qkt_json_get(o, f->name, path, err);
        if (!b) return -1;
        if (!cJSON_IsBool(b)) return qkt_err_set(err, "%s: '%s' is not true or false", path, f->name);
        *(bool *)p = cJSON_IsTrue(b);
        return 0;
    }
    case QKT_FIELD_STRING:
        if (!(s = qkt_json_str(o, f->name, path, err))) return -1;
        if (strlen(s) >= sizeof r->data) return qkt_err_set(err, "%s: '%s' is too long", path, f->name);
        snprintf((char *)p, sizeof r->data, "%s", s);
        return 0;
    case QKT_FIELD_ENUM:
        if (!(s = qkt_json_str(o, f->name, path, err))) return -1;
        if (f->en->parse(s, (int *)p, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
        return 0;
    case QKT_FIELD_U64: {
        if (!(s = qkt_json_str(o, f->name, path, err))) return -1;
        char *end;
        *(uint64_t *)p = strtoull(s, &end, 10);
        if (!*s || *end || *s == '-') return qkt_err_set(err, "%s: '%s' = '%.32s' is not an unsigned integer", path, f->name, s);
        return 0;
    }
    }
    return 0;
}

static int from_json(const cJSON *o, const char *path, qkt_train_run *r, qkt_err *err) {
    if (!cJSON_IsObject(o)) return qkt_err_set(err, "%s: not a JSON object", path);
    const char *fmt = qkt_json_str(o, "format", path, err);
    if (!fmt) return -1;
    if (strcmp(fmt, "qkt-train-1")) return qkt_err_set(err, "%s: format '%.32s' is not qkt-train-1", path, fmt);
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        if ((f->where & QKT_FIELD_JSON) && field_from_json(o, path, f, r, err)) return -1;
    }
    /* a run written before lr_decay_steps existed decayed over its steps */
    if (!cJSON_GetObjectItemCaseSensitive(o, "lr_decay_steps")) r->tc.lr_decay_steps = r->tc.steps;
    qkt_err e2;
    if (qkt__train_run_check(r, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
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

/* qkt_train_log_truncate's walk; the file is rewritten only when `write`. */
static int log_scan(const char *path, int64_t step, qkt_log_cut *cut, bool write, qkt_err *err) {
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
    if (!rc && write) rc = qkt_write_atomic(path, b.s, b.n, err);
    qkt_buf_free(&b);
    if (cut) *cut = c;
    return rc;
}

int qkt_train_log_truncate(const char *path, int64_t step, qkt_log_cut *cut, qkt_err *err) {
    return log_scan(path, step, cut, true, err);
}

int qkt_train_log_check(const char *path, int64_t step, qkt_log_cut *cut, qkt_err *err) {
    return log_scan(path, step, cut, false, err);
}
