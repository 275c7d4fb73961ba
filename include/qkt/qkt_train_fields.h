/* The model and training configuration as one table (train_fields.def): each field's
 * name, type, bounds, default, help, CLI spelling and the files that hold it. train.json,
 * the checkpoint metadata, the study's config.json, the flags of `qkt train` and
 * `qkt ablate` and validation all walk this table, so an option is one row:
 *
 *     for (int i = 0; i < qkt_train_field_count(); i++) {
 *         const qkt_train_field *f = qkt_train_field_at(i);
 *         char v[64];
 *         qkt_train_field_format(qkt_train_field_ptr(f, &run), f, v, sizeof v);   // "4", "0.001", "rmsnorm"
 *     }
 *     qkt_train_field_set(&run, qkt_train_field_find("n_layer"), "6", &err);  */
#ifndef QKT_TRAIN_FIELDS_H
#define QKT_TRAIN_FIELDS_H
#include <stdbool.h>
#include <stddef.h>

#include "qkt_train_run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QKT_FIELD_INT,    /* int */
    QKT_FIELD_I64,    /* int64_t */
    QKT_FIELD_U64,    /* uint64_t (JSON: a string, as a double cannot hold it) */
    QKT_FIELD_DOUBLE, /* double */
    QKT_FIELD_BOOL,   /* bool */
    QKT_FIELD_ENUM,   /* an int-sized enum, by name (qkt_train_enum) */
    QKT_FIELD_STRING, /* char[] (qkt_train_run.data) */
} qkt_field_type;

/* qkt_train_field.where */
enum {
    QKT_FIELD_JSON = 1 << 0,        /* in train.json */
    QKT_FIELD_JSON_OPT = 1 << 1,    /* may be absent from train.json (older runs): the default */
    QKT_FIELD_JSON_INFO = 1 << 2,   /* written to train.json, not read back (vocab_size: the data's) */
    QKT_FIELD_META = 1 << 3,        /* in the checkpoint metadata; absent: the default */
    QKT_FIELD_META_REQ = 1 << 4,    /* ... and required there (implies QKT_FIELD_META) */
    QKT_FIELD_META_CHECK = 1 << 5,  /* a checkpoint loads only into a model with the same value */
    QKT_FIELD_META_ROPE = 1 << 6,   /* in the metadata for pos rope only, 0 written as 10000 */
    QKT_FIELD_RESUME = 1 << 7,      /* may change when a run is resumed */
    QKT_FIELD_POSITIVE = 1 << 8,    /* > 0 (lo, hi are not used) */
    QKT_FIELD_LO_OPEN = 1 << 9,     /* > lo rather than >= lo */
    QKT_FIELD_HI_OPEN = 1 << 10,    /* < hi rather than <= hi */
    QKT_FIELD_HELP_LIST = 1 << 11,  /* --help appends the enum's names */
    QKT_FIELD_NO_DEFAULT = 1 << 12, /* --help shows no default (a required flag) */
    QKT_FIELD_AB_OPT = 1 << 13,     /* may be absent from the study's config.json (older runs): the default */
};

/* An enum's names: name(v) is "?" for an unknown value; parse gives -1 and a one-line
 * message listing the names; list writes "a, b, c" into buf. */
typedef struct qkt_train_enum {
    const char *(*name)(int v);
    int (*parse)(const char *s, int *out, qkt_err *err);
    const char *(*list)(char *buf, size_t n);
} qkt_train_enum;

typedef struct qkt_train_field {
    const char *name;          /* train.json key and struct field: "n_layer" */
    qkt_field_type type;
    const qkt_train_enum *en;  /* QKT_FIELD_ENUM */
    size_t off;                /* of the field in qkt_train_run */
    double lo, hi;             /* bounds (see QKT_FIELD_POSITIVE, _LO_OPEN, _HI_OPEN) */
    double dflt;               /* the default (an enum's value) */
    unsigned where;            /* QKT_FIELD_* */
    int meta;                  /* position in the checkpoint metadata, 1.. (0: not there) */
    const char *ab;            /* key in the study's config.json (NULL: not there) */
    int ab_order;              /* its position there (the study's own keys fill the gaps) */
    const char *flag;          /* `qkt train --n-layer` (NULL: no flag) */
    const char *alias;         /* nanoGPT's spelling (NULL: none) */
    const char *alias_note;    /* how the alias's meaning differs (NULL: it does not) */
    const char *help;
} qkt_train_field;

/* The table, in train.json's key order. */
int qkt_train_field_count(void);
const qkt_train_field *qkt_train_field_at(int i);
/* By struct/JSON name or by flag spelling; NULL if none. */
const qkt_train_field *qkt_train_field_find(const char *name);
/* The field inside r, or inside a bare qkt_train_config / qkt_gpt_config (NULL when the
 * field is not part of that struct, e.g. eval_every of a qkt_train_config). */
void *qkt_train_field_ptr(const qkt_train_field *f, qkt_train_run *r);
void *qkt_train_field_ptr_tc(const qkt_train_field *f, qkt_train_config *c);
void *qkt_train_field_ptr_model(const qkt_train_field *f, qkt_gpt_config *m);
/* f of the model config m is in qkt_gpt_config. */
bool qkt_train_field_is_model(const qkt_train_field *f);

/* Text -> the field of r: the number (or name, true/false, string), then its bounds. 0,
 * or -1 with one line naming the field: "n_layer '0': expected an integer in [1, 1024]". */
int qkt_train_field_set(qkt_train_run *r, const qkt_train_field *f, const char *text, qkt_err *err);
/* The same for a value already in the struct: -1 with "n_layer 0: expected ...", named
 * by `label` (the flag, the JSON key; NULL: the field's name). */
int qkt_train_field_check(const void *value, const qkt_train_field *f, const char *label, qkt_err *err);
/* The field's name in messages (qkt_set_names): its name ("n_embd") or, under
 * QKT_NAMES_FLAGS, its flag ("--n-embd"; a field without a flag: its name). */
const char *qkt_train_field_label(const qkt_train_field *f, char *buf, size_t n);
/* The value at p (qkt_train_field_ptr) as text: "%d", "%.17g" (exact), the enum's name,
 * "true"/"false", the string. Returns the length snprintf gives. */
int qkt_train_field_format(const void *p, const qkt_train_field *f, char *buf, size_t n);
/* What the field takes, for messages and --help: "an integer in [1, 1024]", "a positive
 * number", "a number in [0, 1)", "sqrt_dk, none, ...". */
void qkt_train_field_describe(const qkt_train_field *f, char *buf, size_t n);
/* dst's field f = src's (f may be a caller's copy of a row: only its offset and type count). */
void qkt_train_field_copy(const qkt_train_field *f, qkt_train_run *dst, const qkt_train_run *src);
/* The table's defaults into the fields of c that it lists (the rest untouched). */
void qkt_train_fields_default(qkt_train_config *c);

#ifdef __cplusplus
}
#endif
#endif
