/* Table-driven command-line flags (flags.h). */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "flags.h"

/* " (default X)" for a flag's value before parsing, or "" (see qkt_flag.dst). */
static void default_text(const qkt_flag *f, char *def, size_t n) {
    def[0] = 0;
    if (strstr(f->help, "(default")) return;
    switch (f->type) {
    /* A zero default is left unsaid: commands use 0 for "from the preset / automatic". */
    case QKT_FLAG_INT:
        if (*(int *)f->dst) snprintf(def, n, " (default %d)", *(int *)f->dst);
        break;
    case QKT_FLAG_I64:
        if (*(int64_t *)f->dst) snprintf(def, n, " (default %lld)", (long long)*(int64_t *)f->dst);
        break;
    case QKT_FLAG_U64:
        if (*(uint64_t *)f->dst) snprintf(def, n, " (default %llu)", (unsigned long long)*(uint64_t *)f->dst);
        break;
    case QKT_FLAG_DOUBLE:
        if (*(double *)f->dst != 0) snprintf(def, n, " (default %g)", *(double *)f->dst);
        break;
    case QKT_FLAG_STRING: /* printed by usage(): a string default has any length */
        break;
    case QKT_FLAG_BOOL: break;
    case QKT_FLAG_FIELD:
        if (!(((const qkt_flag_field *)f->dst)->field->where & QKT_FIELD_NO_DEFAULT)) {
            const qkt_flag_field *b = f->dst;
            char v[64];
            qkt_train_field_format(qkt_train_field_ptr(b->field, b->run), b->field, v, sizeof v);
            snprintf(def, n, " (default %s)", v);
        }
        break;
    }
}

/* "  --name X", padded to the help column, which the caller prints. */
static void flag_head(const char *name, bool takes_value) {
    int w = printf("  --%s%s", name, takes_value ? " X" : "");
    printf("%*s ", w < 26 ? 26 - w : 0, "");
}

/* The other names a command takes (qkt_flag_more), after its own flags. */
static void usage_more(const qkt_flag_more *more) {
    if (!more) return;
    printf("\n%s\n", more->title);
    for (int i = 0; i < more->n_aliases; i++) {
        const qkt_flag_alias *a = &more->aliases[i];
        flag_head(a->alias, true);
        printf("= --%s%s%s\n", a->name, a->note ? "; " : "", a->note ? a->note : "");
    }
    for (int i = 0; i < more->n_extra; i++) {
        flag_head(more->extra[i].name, more->extra[i].type != QKT_FLAG_BOOL);
        printf("%s\n", more->extra[i].help);
    }
}

static void usage(const char *cmd, const char *summary, const qkt_flag *flags, int n_flags, const qkt_flag_more *more) {
    if (summary && !strncmp(summary, "usage:", 6)) /* a command with positional arguments gives its own */
        printf("%s\n\nflags:\n", summary);
    else
        printf("usage: qkt %s [flags]\n%s\n\nflags:\n", cmd, summary ? summary : "");
    for (int i = 0; i < n_flags; i++) {
        const qkt_flag *f = &flags[i];
        char def[64]; /* " (default N)": a number fits */
        default_text(f, def, sizeof def);
        const char *sdef = f->type == QKT_FLAG_STRING && !strstr(f->help, "(default") ? *(const char **)f->dst : NULL;
        flag_head(f->name, f->type != QKT_FLAG_BOOL);
        printf("%s%s%s%s%s\n", f->help, def, sdef ? " (default " : "", sdef ? sdef : "", sdef ? ")" : "");
    }
    printf("  %-24s %s\n", "--help", "show this help");
    usage_more(more);
}

bool qkt_flag_seen(const qkt_flag *flags, int n_flags, const char *name) {
    for (int i = 0; i < n_flags; i++)
        if (!strcmp(flags[i].name, name)) return flags[i].seen;
    return false;
}

static int bad(const char *cmd, const char *flag, const char *val, const char *want) {
    qkt_cli_err("qkt %s: --%s %s%s%s: expected %s\n", cmd, flag, val ? "'" : "", val ? val : "", val ? "'" : "", want);
    return 2;
}

/* want = "a positive integer in [1, 64]", "a number in [0, 0.5]", ...: what the flag takes. */
static void describe(const qkt_flag *f, bool integer, char *want, size_t n) {
    snprintf(want, n, "%s %s", f->positive ? "a positive" : integer ? "an" : "a", integer ? "integer" : "number");
    if (f->min > f->max) return;
    size_t l = strlen(want);
    if (integer) snprintf(want + l, n - l, " in [%.0f, %.0f]", f->min, f->max);
    else snprintf(want + l, n - l, " in [%g, %g]", f->min, f->max);
}

static bool in_range(const qkt_flag *f, double x) {
    if (f->positive && !(x > 0)) return false;
    if (f->min > f->max) return true;
    return x >= f->min && x <= f->max;
}

/* Appends to want why a value below the smallest normal double is refused (`why`: it is
 * a subnormal, or rounds to 0) and what to give instead: 0 only where the range admits it. */
static void tiny_hint(const qkt_flag *f, const char *why, char *want, size_t n) {
    size_t l = strlen(want);
    snprintf(want + l, n - l, "; this %s: give %sa magnitude >= %g", why, in_range(f, 0) ? "0 or " : "", DBL_MIN);
}

/* `shown`: the name the user typed (an alias of f, or f's own). */
static int set_value(const char *cmd, qkt_flag *f, const char *shown, const char *v) {
    char want[256]; /* the range and a note on a subnormal: fits */
    char *end;
    errno = 0;
    /* A number starts at its first character: strtoull skips blanks, then takes " -1" as 2^64 - 1 */
    bool integer = f->type == QKT_FLAG_INT || f->type == QKT_FLAG_I64 || f->type == QKT_FLAG_U64;
    if ((integer || f->type == QKT_FLAG_DOUBLE) && isspace((unsigned char)*v)) {
        describe(f, integer, want, sizeof want);
        return bad(cmd, shown, v, want);
    }
    if (integer) {
        describe(f, true, want, sizeof want);
        if (!*v || (f->type == QKT_FLAG_U64 && *v == '-')) return bad(cmd, shown, v, want);
        long long x = f->type == QKT_FLAG_U64 ? (long long)strtoull(v, &end, 10) : strtoll(v, &end, 10);
        if (*end || errno) return bad(cmd, shown, v, want);
        if (!in_range(f, (double)x)) return bad(cmd, shown, v, want);
        if (f->type == QKT_FLAG_INT) {
            if (x < -2147483647LL || x > 2147483647LL) return bad(cmd, shown, v, want);
            *(int *)f->dst = (int)x;
        } else if (f->type == QKT_FLAG_I64) {
            *(int64_t *)f->dst = x;
        } else {
            *(uint64_t *)f->dst = strtoull(v, NULL, 10);
        }
    } else if (f->type == QKT_FLAG_DOUBLE) {
        describe(f, false, want, sizeof want);
        double x = strtod(v, &end);
        if (*v && !*end && x != 0 && fabs(x) < DBL_MIN) { /* ERANGE: rounded to a subnormal */
            tiny_hint(f, "is a subnormal, too small to compute with", want, sizeof want);
            return bad(cmd, shown, v, want);
        }
        if (*v && !*end && errno == ERANGE && x == 0) { /* below even the subnormals */
            tiny_hint(f, "rounds to 0, too small", want, sizeof want);
            return bad(cmd, shown, v, want);
        }
        if (!*v || *end || errno || !isfinite(x) || !in_range(f, x)) return bad(cmd, shown, v, want);
        *(double *)f->dst = x;
    } else if (f->type == QKT_FLAG_FIELD) {
        qkt_err err;
        const qkt_flag_field *b = f->dst;
        if (qkt_train_field_set(b->run, b->field, v, &err))
            return qkt_cli_err("qkt %s: --%s: %s\n", cmd, shown, err.msg), 2;
    } else {
        if (!*v) return bad(cmd, shown, v, "a non-empty value");
        *(const char **)f->dst = v;
    }
    return 0;
}

/* Composed help texts of the table's flags ("...: sqrt_dk, none, ..."); the CLI parses
 * one command per process. */
static char help_store[4096];
static size_t help_used;
static qkt_flag_field bindings[64];
static int n_bindings;

int qkt_flags_from_fields(qkt_flag *out, int cap, qkt_train_run *r) {
    return qkt_flags_from_table(out, cap, r, qkt_train_field_at(0), qkt_train_field_count());
}

int qkt_flags_from_table(qkt_flag *out, int cap, qkt_train_run *r, const qkt_train_field *fs, int n_fields) {
    int n = 0;
    for (int i = 0; i < n_fields && n < cap; i++) {
        const qkt_train_field *f = &fs[i];
        if (!f->flag) continue;
        qkt_flag *g = &out[n++];
        *g = (qkt_flag){.name = f->flag, .dst = qkt_train_field_ptr(f, r), .help = f->help};
        bool pos = f->where & QKT_FIELD_POSITIVE;
        g->min = pos ? 1 : f->lo, g->max = pos ? 0 : f->hi;
        /* [lo, hi) of a number: the flag's inclusive range ends just below hi */
        if ((f->where & QKT_FIELD_HI_OPEN) && f->hi == 1) g->max = QKT_FLAGS_BELOW_ONE;
        switch (f->type) {
        case QKT_FIELD_INT: g->type = QKT_FLAG_INT, g->positive = f->lo >= 1; break;
        case QKT_FIELD_I64: g->type = QKT_FLAG_I64, g->positive = f->lo >= 1; break;
        case QKT_FIELD_U64: g->type = QKT_FLAG_U64, g->min = 1, g->max = 0; break;
        case QKT_FIELD_DOUBLE: g->type = QKT_FLAG_DOUBLE, g->positive = pos; break;
        case QKT_FIELD_BOOL: g->type = QKT_FLAG_BOOL; break;
        case QKT_FIELD_ENUM:
        case QKT_FIELD_STRING:
            QKT_CHECK(n_bindings < (int)(sizeof bindings / sizeof *bindings), "more than %d table flags", n_bindings);
            bindings[n_bindings] = (qkt_flag_field){r, f};
            g->type = QKT_FLAG_FIELD, g->dst = &bindings[n_bindings++], g->min = 1, g->max = 0;
            break;
        }
        if ((f->where & QKT_FIELD_HELP_LIST) && help_used < sizeof help_store) {
            char list[1024];
            char *h = help_store + help_used;
            int k = snprintf(h, sizeof help_store - help_used, "%s: %s", f->help, f->en->list(list, sizeof list));
            if (k > 0 && (size_t)k < sizeof help_store - help_used) g->help = h, help_used += (size_t)k + 1;
        }
    }
    return n;
}

/* "(default X)" in a help text: X into def, the text without it into rest. */
static bool split_default(const char *help, char *def, size_t nd, char *rest, size_t nr) {
    const char *at = strstr(help, " (default "), *end = NULL;
    for (int depth = 0, i = 1; at && at[i] && !end; i++) /* the matching ')': "(default min(100, steps/10))" */
        if (at[i] == '(') depth++;
        else if (at[i] == ')' && --depth == 0) end = at + i;
    if (!end) return snprintf(rest, nr, "%s", help), false;
    snprintf(def, nd, "%.*s", (int)(end - at - 10), at + 10);
    snprintf(rest, nr, "%.*s%s", (int)(at - help), help, end + 1);
    return true;
}

void qkt_flags_markdown(const qkt_flag *flags, int n_flags) {
    printf("| flag | default | meaning |\n|---|---|---|\n");
    for (int i = 0; i < n_flags; i++) {
        const qkt_flag *f = &flags[i];
        char def[256] = "", rest[1024], shown[80];
        if (!split_default(f->help, def, sizeof def, rest, sizeof rest)) {
            default_text(f, shown, sizeof shown); /* " (default N)" */
            if (shown[0]) snprintf(def, sizeof def, "%.*s", (int)strlen(shown) - 11, shown + 10);
            else if (f->type == QKT_FLAG_FIELD && (((const qkt_flag_field *)f->dst)->field->where & QKT_FIELD_NO_DEFAULT))
                snprintf(def, sizeof def, "required");
            else if (f->type == QKT_FLAG_STRING && *(const char **)f->dst) snprintf(def, sizeof def, "%s", *(const char **)f->dst);
            else if (f->type == QKT_FLAG_BOOL) snprintf(def, sizeof def, "off");
        }
        printf("| `--%s%s` | %s%s%s | %s |\n", f->name, f->type == QKT_FLAG_BOOL ? "" : " X", def[0] ? "`" : "", def,
               def[0] ? "`" : "", rest);
    }
}

/* The flag named by `name` (len chars): the command's own, an alias of one, or an extra.
 * *shown: the name as typed (for messages). */
static qkt_flag *find_flag(qkt_flag *flags, int n_flags, const qkt_flag_more *more, const char *name, size_t len,
                           const char **shown) {
    *shown = NULL;
    for (int k = 0; k < n_flags; k++)
        if (strlen(flags[k].name) == len && !strncmp(flags[k].name, name, len)) return *shown = flags[k].name, &flags[k];
    if (!more) return NULL;
    for (int k = 0; k < more->n_extra; k++)
        if (strlen(more->extra[k].name) == len && !strncmp(more->extra[k].name, name, len))
            return *shown = more->extra[k].name, &more->extra[k];
    for (int a = 0; a < more->n_aliases; a++) {
        const qkt_flag_alias *al = &more->aliases[a];
        if (strlen(al->alias) != len || strncmp(al->alias, name, len)) continue;
        for (int k = 0; k < n_flags; k++)
            if (!strcmp(flags[k].name, al->name)) return *shown = al->alias, &flags[k];
    }
    return NULL;
}

/* 1/true/True/TRUE or 0/false/False/FALSE (Python's spellings too: nanoGPT users type them). */
int qkt_flag_bool_parse(const char *v, bool *out) {
    if (!strcmp(v, "1") || !strcasecmp(v, "true")) return *out = true, 0;
    if (!strcmp(v, "0") || !strcasecmp(v, "false")) return *out = false, 0;
    return -1;
}

int qkt_flags_parse_more(const char *cmd, const char *summary, qkt_flag *flags, int n_flags, const qkt_flag_more *more,
                         int argc, char **argv, const char **positional, int max_positional, int *n_positional) {
    if (n_positional) *n_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(cmd, summary, flags, n_flags, more);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (positional && n_positional && *n_positional < max_positional) {
                positional[(*n_positional)++] = a;
                continue;
            }
            qkt_cli_err("qkt %s: unexpected argument '%s' (run 'qkt %s --help')\n", cmd, a, cmd);
            return 2;
        }
        const char *name = a + 2, *eq = strchr(name, '='), *shown;
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        qkt_flag *f = find_flag(flags, n_flags, more, name, len, &shown);
        if (!f) {
            qkt_cli_err("qkt %s: unknown flag '--%.*s' (run 'qkt %s --help')\n", cmd, (int)len, name, cmd);
            return 2;
        }
        if (f->seen) {
            const char *other = NULL; /* the flag's other spelling, if it has one */
            for (int k = 0; more && k < more->n_aliases && !other; k++)
                if (!strcmp(more->aliases[k].name, f->name)) other = more->aliases[k].alias;
            if (other) qkt_cli_err("qkt %s: --%s given twice (as --%s or --%s)\n", cmd, f->name, f->name, other);
            else qkt_cli_err("qkt %s: --%s given twice\n", cmd, f->name);
            return 2;
        }
        f->seen = true;
        if (f->type == QKT_FLAG_BOOL) {
            if (eq) {
                if (qkt_flag_bool_parse(eq + 1, (bool *)f->dst)) return bad(cmd, shown, eq + 1, "true or false");
            } else {
                *(bool *)f->dst = true;
            }
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) return bad(cmd, shown, NULL, "a value after it");
        if (set_value(cmd, f, shown, v) != 0) return 2;
    }
    return 0;
}

int qkt_flags_parse(const char *cmd, const char *summary, qkt_flag *flags, int n_flags, int argc, char **argv,
                    const char **positional, int max_positional, int *n_positional) {
    return qkt_flags_parse_more(cmd, summary, flags, n_flags, NULL, argc, argv, positional, max_positional, n_positional);
}

/* --threads if given, else QKT_THREADS if set, else 0 (all cores); 2 after one line on a bad QKT_THREADS. */
int qkt_flags_threads(const char *cmd, const qkt_flag *flags, int n_flags, int *threads) {
    if (qkt_flag_seen(flags, n_flags, "threads")) return 0;
    qkt_err err;
    if (qkt_threads_env(threads, &err) >= 0) return 0;
    qkt_cli_err("qkt %s: %s\n", cmd, err.msg);
    return 2;
}
