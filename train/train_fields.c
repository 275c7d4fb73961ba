/* The configuration table (train_fields.def) and the functions that walk one field:
 * address, set from text, check, format (qkt_train_fields.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qkt_train_fields.h"

/* ---------------------------------------------------------------- the enums' names */
static const char *list_of(const char *(*name)(int), int n, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", name(i));
    return buf;
}

#define ENUM_DESC(id, type, name_fn, parse_fn, count)                                              \
    static const char *id##_name(int v) { return name_fn((type)v); }                              \
    static int id##_parse(const char *s, int *out, qkt_err *err) {                                 \
        type v;                                                                                     \
        if (parse_fn(s, &v, err)) return -1;                                                       \
        return *out = (int)v, 0;                                                                   \
    }                                                                                               \
    static const char *id##_list(char *buf, size_t n) { return list_of(id##_name, count, buf, n); } \
    static const qkt_train_enum qkt__enum_##id = {id##_name, id##_parse, id##_list};

ENUM_DESC(norm, qkt_norm_kind, qkt_norm_name, qkt_norm_parse, QKT_NORM_COUNT)
ENUM_DESC(mlp, qkt_mlp_kind, qkt_mlp_name, qkt_mlp_parse, QKT_MLP_COUNT)
ENUM_DESC(pos, qkt_pos_kind, qkt_pos_name, qkt_pos_parse, QKT_POS_COUNT)
ENUM_DESC(qk_init, qkt_qk_init, qkt_qk_init_name, qkt_qk_init_parse, QKT_QK_INIT_COUNT)
ENUM_DESC(schedule, qkt_sched_kind, qkt_sched_kind_name, qkt_sched_kind_parse, QKT_SCHED_COSINE + 1)
ENUM_DESC(optim, qkt_optim_kind, qkt_optim_kind_name, qkt_optim_kind_parse, QKT_OPTIM_ADAMW + 1)
/* the scale variants: the registry's names (built-ins, power:ALPHA, registered ones) */
static const char *scale_name(int v) { return qkt_attn_scale_name((qkt_attn_scale)v); }
static int scale_parse(const char *s, int *out, qkt_err *err) {
    qkt_attn_scale v;
    if (qkt_attn_scale_parse(s, &v, err)) return -1;
    return *out = (int)v, 0;
}
static const char *scale_list(char *buf, size_t n) { return qkt_attn_scale_list(buf, n); }
static const qkt_train_enum qkt__enum_attn_scale = {scale_name, scale_parse, scale_list};

/* ---------------------------------------------------------------- the table */
static const qkt_train_field fields[] = {
#define F(name, type, en, member, lo, hi, dflt, where, meta, ab, ab_order, flag, alias, note, help)                            \
    {#name, QKT_FIELD_##type, en, offsetof(qkt_train_run, member), lo, hi, (double)(dflt), where, meta, ab, ab_order, flag, \
     alias, note, help},
#include "train_fields.def"
#undef F
};
#define N_FIELDS ((int)(sizeof fields / sizeof *fields))

int qkt_train_field_count(void) { return N_FIELDS; }
const qkt_train_field *qkt_train_field_at(int i) { return i >= 0 && i < N_FIELDS ? &fields[i] : NULL; }

const qkt_train_field *qkt_train_field_find(const char *name) {
    for (int i = 0; name && i < N_FIELDS; i++)
        if (!strcmp(fields[i].name, name) || (fields[i].flag && !strcmp(fields[i].flag, name))) return &fields[i];
    return NULL;
}

/* ---------------------------------------------------------------- addresses */
#define TC_OFF offsetof(qkt_train_run, tc)
#define MODEL_OFF (offsetof(qkt_train_run, tc) + offsetof(qkt_train_config, model))

bool qkt_train_field_is_model(const qkt_train_field *f) {
    return f->off - MODEL_OFF < sizeof(qkt_gpt_config); /* unsigned: below MODEL_OFF wraps */
}
static bool in_tc(const qkt_train_field *f) { return f->off - TC_OFF < sizeof(qkt_train_config); }

void *qkt_train_field_ptr(const qkt_train_field *f, qkt_train_run *r) { return (char *)r + f->off; }
void *qkt_train_field_ptr_tc(const qkt_train_field *f, qkt_train_config *c) {
    return in_tc(f) ? (char *)c + (f->off - TC_OFF) : NULL;
}
void *qkt_train_field_ptr_model(const qkt_train_field *f, qkt_gpt_config *m) {
    return qkt_train_field_is_model(f) ? (char *)m + (f->off - MODEL_OFF) : NULL;
}

static void set_default(const qkt_train_field *f, void *p) {
    switch (f->type) {
    case QKT_FIELD_INT: *(int *)p = (int)f->dflt; break;
    case QKT_FIELD_ENUM: *(int *)p = (int)f->dflt; break;
    case QKT_FIELD_I64: *(int64_t *)p = (int64_t)f->dflt; break;
    case QKT_FIELD_U64: *(uint64_t *)p = (uint64_t)f->dflt; break;
    case QKT_FIELD_DOUBLE: *(double *)p = f->dflt; break;
    case QKT_FIELD_BOOL: *(bool *)p = f->dflt != 0; break;
    case QKT_FIELD_STRING: break; /* its default is set by the struct's owner */
    }
}

void qkt_train_field_copy(const qkt_train_field *f, qkt_train_run *dst, const qkt_train_run *src) {
    size_t n = 0;
    switch (f->type) {
    case QKT_FIELD_INT:
    case QKT_FIELD_ENUM: n = sizeof(int); break;
    case QKT_FIELD_I64: n = sizeof(int64_t); break;
    case QKT_FIELD_U64: n = sizeof(uint64_t); break;
    case QKT_FIELD_DOUBLE: n = sizeof(double); break;
    case QKT_FIELD_BOOL: n = sizeof(bool); break;
    case QKT_FIELD_STRING: n = sizeof src->data; break;
    }
    memcpy((char *)dst + f->off, (const char *)src + f->off, n);
}

void qkt_train_fields_default(qkt_train_config *c) {
    for (int i = 0; i < N_FIELDS; i++) {
        void *p = qkt_train_field_ptr_tc(&fields[i], c);
        if (p) set_default(&fields[i], p);
    }
}

void qkt__train_run_fields_default(qkt_train_run *r) {
    for (int i = 0; i < N_FIELDS; i++)
        if (!in_tc(&fields[i])) set_default(&fields[i], qkt_train_field_ptr(&fields[i], r));
}

const char *qkt_train_field_label(const qkt_train_field *f, char *buf, size_t n) {
    if (qkt_get_names() != QKT_NAMES_FLAGS || !f->flag) return f->name;
    snprintf(buf, n, "--%s", f->flag);
    return buf;
}

/* ---------------------------------------------------------------- describe, check */
static bool is_int(const qkt_train_field *f) { return f->type == QKT_FIELD_INT || f->type == QKT_FIELD_I64; }

void qkt_train_field_describe(const qkt_train_field *f, char *buf, size_t n) {
    unsigned w = f->where;
    if (f->type == QKT_FIELD_ENUM) {
        char list[512];
        snprintf(buf, n, "one of %s", f->en->list(list, sizeof list));
    } else if (f->type == QKT_FIELD_BOOL) {
        snprintf(buf, n, "true or false");
    } else if (f->type == QKT_FIELD_U64) {
        snprintf(buf, n, "an unsigned integer");
    } else if (f->type == QKT_FIELD_STRING) {
        snprintf(buf, n, "a non-empty value");
    } else if (w & QKT_FIELD_POSITIVE) {
        snprintf(buf, n, "a positive %s", is_int(f) ? "integer" : "number");
    } else if (f->hi >= 1e300 || (is_int(f) && f->hi >= 2147483647)) {
        snprintf(buf, n, "%s %s %s %g", is_int(f) ? "an" : "a", is_int(f) ? "integer" : "number", w & QKT_FIELD_LO_OPEN ? ">" : ">=",
                 f->lo);
    } else if (is_int(f)) {
        snprintf(buf, n, "an integer in [%.0f, %.0f]", f->lo, f->hi);
    } else {
        snprintf(buf, n, "a number in %c%g, %g%c", w & QKT_FIELD_LO_OPEN ? '(' : '[', f->lo, f->hi, w & QKT_FIELD_HI_OPEN ? ')' : ']');
    }
}

static bool in_bounds(const qkt_train_field *f, double x) {
    unsigned w = f->where;
    if (!isfinite(x)) return false;
    if (w & QKT_FIELD_POSITIVE) return x > 0;
    if (w & QKT_FIELD_LO_OPEN ? !(x > f->lo) : !(x >= f->lo)) return false;
    if (f->hi >= 1e300) return true; /* unbounded above (QKT_D_INF), as qkt_train_field_describe says */
    return w & QKT_FIELD_HI_OPEN ? x < f->hi : x <= f->hi;
}

int qkt_train_field_check(const void *p, const qkt_train_field *f, const char *label, qkt_err *err) {
    char want[600], v[64];
    const char *name = label ? label : f->name;
    bool ok = true;
    switch (f->type) {
    case QKT_FIELD_INT: ok = in_bounds(f, *(const int *)p); break;
    case QKT_FIELD_I64: ok = in_bounds(f, (double)*(const int64_t *)p); break;
    case QKT_FIELD_DOUBLE: ok = in_bounds(f, *(const double *)p); break;
    case QKT_FIELD_ENUM: ok = strcmp(f->en->name(*(const int *)p), "?") != 0; break;
    case QKT_FIELD_STRING: ok = *(const char *)p != 0; break;
    case QKT_FIELD_U64:
    case QKT_FIELD_BOOL: break;
    }
    if (ok) return 0;
    qkt_train_field_describe(f, want, sizeof want);
    if (f->type == QKT_FIELD_ENUM) snprintf(v, sizeof v, "%d", *(const int *)p);
    else if (f->type == QKT_FIELD_STRING) snprintf(v, sizeof v, "''");
    else if (f->type == QKT_FIELD_DOUBLE) snprintf(v, sizeof v, "%g", *(const double *)p); /* as typed, mostly */
    else qkt_train_field_format(p, f, v, sizeof v);
    return qkt_err_set(err, "%s %s: expected %s", name, v, want);
}

/* ---------------------------------------------------------------- text */
int qkt_train_field_format(const void *p, const qkt_train_field *f, char *buf, size_t n) {
    switch (f->type) {
    case QKT_FIELD_INT: return snprintf(buf, n, "%d", *(const int *)p);
    case QKT_FIELD_I64: return snprintf(buf, n, "%" PRId64, *(const int64_t *)p);
    case QKT_FIELD_U64: return snprintf(buf, n, "%" PRIu64, *(const uint64_t *)p);
    case QKT_FIELD_DOUBLE: return snprintf(buf, n, "%.17g", *(const double *)p);
    case QKT_FIELD_BOOL: return snprintf(buf, n, "%s", *(const bool *)p ? "true" : "false");
    case QKT_FIELD_ENUM: return snprintf(buf, n, "%s", f->en->name(*(const int *)p));
    case QKT_FIELD_STRING: return snprintf(buf, n, "%s", (const char *)p);
    }
    return 0;
}

static int bad_text(const qkt_train_field *f, const char *text, qkt_err *err) {
    char want[600];
    qkt_train_field_describe(f, want, sizeof want);
    return qkt_err_set(err, "%s '%.64s': expected %s", f->name, text, want);
}

int qkt_train_field_set(qkt_train_run *r, const qkt_train_field *f, const char *text, qkt_err *err) {
    void *p = qkt_train_field_ptr(f, r);
    char *end;
    errno = 0;
    /* A number starts at its first character: strtoull skips blanks, then takes " -1" as 2^64 - 1 */
    bool number = f->type == QKT_FIELD_INT || f->type == QKT_FIELD_I64 || f->type == QKT_FIELD_U64 || f->type == QKT_FIELD_DOUBLE;
    if (number && isspace((unsigned char)*text)) return bad_text(f, text, err);
    switch (f->type) {
    case QKT_FIELD_INT:
    case QKT_FIELD_I64: {
        long long x = strtoll(text, &end, 10);
        if (!*text || *end || errno || !in_bounds(f, (double)x)) return bad_text(f, text, err);
        if (f->type == QKT_FIELD_INT) *(int *)p = (int)x; /* in_bounds: the bounds are ints */
        else *(int64_t *)p = x;
        return 0;
    }
    case QKT_FIELD_U64: {
        unsigned long long x = strtoull(text, &end, 10);
        if (!*text || *text == '-' || *end || errno) return bad_text(f, text, err);
        *(uint64_t *)p = x;
        return 0;
    }
    case QKT_FIELD_DOUBLE: {
        double x = strtod(text, &end);
        if (!*text || *end || errno || !in_bounds(f, x)) return bad_text(f, text, err);
        *(double *)p = x;
        return 0;
    }
    case QKT_FIELD_BOOL:
        if (!strcmp(text, "1") || !strcasecmp(text, "true")) return *(bool *)p = true, 0;
        if (!strcmp(text, "0") || !strcasecmp(text, "false")) return *(bool *)p = false, 0;
        return bad_text(f, text, err);
    case QKT_FIELD_ENUM: {
        qkt_err e2;
        if (f->en->parse(text, (int *)p, &e2)) return qkt_err_set(err, "%s", e2.msg);
        return 0;
    }
    case QKT_FIELD_STRING:
        if (!*text) return bad_text(f, text, err);
        if (strlen(text) >= sizeof r->data) return qkt_err_set(err, "%s: too long (at most %zu bytes)", f->name, sizeof r->data - 1);
        snprintf((char *)p, sizeof r->data, "%s", text);
        return 0;
    }
    return 0;
}
