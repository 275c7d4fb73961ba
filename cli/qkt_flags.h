/* Table-driven command-line flags: `--name value` or `--name=value`, validated
 * before any work. Errors are one line naming the flag and what was expected. */
#ifndef QKT_FLAGS_H
#define QKT_FLAGS_H
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --threads of every command: 0 = all cores. */
#define QKT_FLAGS_MAX_THREADS QKT_MAX_THREADS
/* The top of a flag range meaning [0, 1) (a probability, an Adam beta): ranges are inclusive. */
#define QKT_FLAGS_BELOW_ONE 0.999999

typedef enum { QKT_FLAG_INT, QKT_FLAG_U64, QKT_FLAG_DOUBLE, QKT_FLAG_STRING, QKT_FLAG_BOOL, QKT_FLAG_I64 } qkt_flag_type;

typedef struct {
    const char *name; /* without the dashes: "n-layer" */
    qkt_flag_type type;
    void *dst;        /* int*, uint64_t*, double*, const char**, bool*, int64_t*; its value
                         before parsing is the default --help shows (0 and NULL are not
                         shown, nor is any value when the help text gives the default) */
    const char *help;
    double min, max;  /* numeric range, inclusive; min > max means unchecked */
    bool positive;    /* numbers must be > 0 (e.g. sizes, learning rates) */
    bool seen;        /* set by the parser */
} qkt_flag;

/* Returns 0 when parsed, 1 when --help was printed (exit 0), 2 on a bad flag (one
 * line on stderr; exit 2). Positional arguments are refused unless `positional`
 * is non-NULL: then they are collected there (up to max_positional). */
int qkt_flags_parse(const char *cmd, const char *summary, qkt_flag *flags, int n_flags, int argc, char **argv,
                    const char **positional, int max_positional, int *n_positional);
/* Did the user give this flag? */
bool qkt_flag_seen(const qkt_flag *flags, int n_flags, const char *name);

#ifdef __cplusplus
}
#endif
#endif
