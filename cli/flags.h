/* Table-driven command-line flags: `--name value` or `--name=value`, validated
 * before any work. Errors are one line naming the flag and what was expected. */
#ifndef QKT_FLAGS_H
#define QKT_FLAGS_H
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h"
#include "qkt_train_fields.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --threads of every command: 0 = all cores. */
#define QKT_FLAGS_MAX_THREADS QKT_MAX_THREADS
/* The top of a flag range meaning [0, 1) (a probability, an Adam beta): ranges are inclusive. */
#define QKT_FLAGS_BELOW_ONE 0.999999

/* QKT_FLAG_FIELD: a field of the configuration table (qkt_train_fields.h) set by name or
 * text through qkt_train_field_set; dst is a qkt_flag_field. */
typedef enum { QKT_FLAG_INT, QKT_FLAG_U64, QKT_FLAG_DOUBLE, QKT_FLAG_STRING, QKT_FLAG_BOOL, QKT_FLAG_I64, QKT_FLAG_FIELD } qkt_flag_type;

typedef struct {
    const char *name; /* without the dashes: "n-layer" */
    qkt_flag_type type;
    void *dst;        /* int*, uint64_t*, double*, const char**, bool*, int64_t*, qkt_flag_field*; its value
                         before parsing is the default --help shows (0 and NULL are not
                         shown, nor is any value when the help text gives the default) */
    const char *help;
    double min, max;  /* numeric range, inclusive; min > max means unchecked */
    bool positive;    /* numbers must be > 0 (e.g. sizes, learning rates) */
    bool seen;        /* set by the parser */
} qkt_flag;

/* What a QKT_FLAG_FIELD's dst points at: the run and the table's row. */
typedef struct {
    qkt_train_run *run;
    const qkt_train_field *field;
} qkt_flag_field;

/* Returns 0 when parsed, 1 when --help was printed (exit 0), 2 on a bad flag (one
 * line on stderr; exit 2). Positional arguments are refused unless `positional`
 * is non-NULL: then they are collected there (up to max_positional). */
int qkt_flags_parse(const char *cmd, const char *summary, qkt_flag *flags, int n_flags, int argc, char **argv,
                    const char **positional, int max_positional, int *n_positional);
/* Did the user give this flag? */
bool qkt_flag_seen(const qkt_flag *flags, int n_flags, const char *name);

/* Another spelling of one of the command's flags (nanoGPT's --n_layer for --n-layer). */
typedef struct {
    const char *alias; /* "n_layer" */
    const char *name;  /* the flag it sets: "n-layer" */
    const char *note;  /* how its meaning differs, for --help; or NULL */
} qkt_flag_alias;

/* Names a command takes besides its own flags, listed under `title` after them by
 * --help: aliases, which set the command's flags (errors name the spelling typed), and
 * extra flags the caller acts on after parsing (their help says what they do). */
typedef struct {
    const char *title;
    const qkt_flag_alias *aliases;
    int n_aliases;
    qkt_flag *extra;
    int n_extra;
} qkt_flag_more;

/* qkt_flags_parse, also taking `more`'s names (NULL: none). */
int qkt_flags_parse_more(const char *cmd, const char *summary, qkt_flag *flags, int n_flags, const qkt_flag_more *more,
                         int argc, char **argv, const char **positional, int max_positional, int *n_positional);
/* "1", "true", "0", "false" in any case (Python's True/False too) -> *out; -1 otherwise. */
int qkt_flag_bool_parse(const char *v, bool *out);
/* The thread count of a command with a --threads flag: the flag if given, else
 * QKT_THREADS if set, else *threads as it is (0 = all cores). 0, or 2 after one line
 * naming a bad QKT_THREADS. */
int qkt_flags_threads(const char *cmd, const qkt_flag *flags, int n_flags, int *threads);
/* The flags of the table's fields that have one (f->flag), in its order, writing into r:
 * numbers as the plain types with the table's bounds, enums and strings as
 * QKT_FLAG_FIELD. Returns the count (at most cap). */
int qkt_flags_from_fields(qkt_flag *out, int cap, qkt_train_run *r);
/* The same from rows of the caller's (qkt_ablate_fields: other names and bounds), which
 * must outlive the parse. */
int qkt_flags_from_table(qkt_flag *out, int cap, qkt_train_run *r, const qkt_train_field *fs, int n_fields);
/* The flags as the rows of a Markdown table "| flag | default | meaning |" (docs/train.md). */
void qkt_flags_markdown(const qkt_flag *flags, int n_flags);

#ifdef __cplusplus
}
#endif
#endif
