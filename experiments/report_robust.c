/* The robustness reruns in the report (report_internal.h): each rerun's findings computed
 * from its own metrics.csv, the comparison rule, the findings table's "holds under" column
 * and the paragraph naming the fragile rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "report_internal.h"

#define MAX_RERUNS (QKT_AB_MAX_LIST + 1)
#define MAX_ROWS 64

typedef struct qkt__robust qkt__robust;
struct qkt__robust {
    int n;                              /* reruns asked for */
    char title[MAX_RERUNS][48], label[MAX_RERUNS][48];
    bool have[MAX_RERUNS];              /* compared: its directory holds every planned cell */
    int n_got[MAX_RERUNS];
    char id[MAX_RERUNS][MAX_ROWS][16];  /* its findings rows: id and verdict text */
    char *v[MAX_RERUNS][MAX_ROWS];
    int rows, holds, fragile, not_rerun; /* the study's rows as judged */
    qkt_buf which;                      /* "5a (seed 3: not detectable)", ... */
    qkt_buf absent;                     /* the reruns not compared, and why */
    char cell[1024];                    /* the last row's "holds under" cell */
};

qkt__robustness qkt__robust_judge(const char *main_v, const char *const *got, int n, bool *differs) {
    int reached = 0, differ = 0;
    for (int i = 0; i < n; i++) {
        bool d = got[i] && strcmp(got[i], main_v) != 0;
        if (differs) differs[i] = d;
        reached += got[i] != NULL, differ += d;
    }
    return differ ? QKT__FRAGILE : reached ? QKT__HOLDS : QKT__NOT_RERUN;
}

void qkt__robust_cell(char *buf, size_t n, const char *const *titles, const char *main_v, const char *const *got, int n_reruns) {
    bool differs[MAX_RERUNS];
    qkt__robustness j = qkt__robust_judge(main_v, got, n_reruns, differs);
    qkt_buf b = {0};
    if (j == QKT__FRAGILE) {
        qkt_buf_printf(&b, "**fragile**: ");
        for (int i = 0, k = 0; i < n_reruns; i++)
            if (differs[i]) qkt_buf_printf(&b, "%s%s gives %s", k++ ? ", " : "", titles[i], got[i]); /* the name carries its own markup */
    }
    int held = 0, absent = 0;
    for (int i = 0; i < n_reruns; i++) held += got[i] && !differs[i], absent += !got[i];
    if (held) qkt_buf_printf(&b, "%sholds under ", b.n ? "; " : "");
    for (int i = 0, k = 0; i < n_reruns; i++)
        if (got[i] && !differs[i]) qkt_buf_printf(&b, "%s%s", k++ ? ", " : "", titles[i]);
    if (j == QKT__NOT_RERUN) qkt_buf_printf(&b, "not rerun");
    else if (absent) qkt_buf_printf(&b, "; not rerun: ");
    for (int i = 0, k = 0; i < n_reruns && j != QKT__NOT_RERUN; i++)
        if (!got[i]) qkt_buf_printf(&b, "%s%s", k++ ? ", " : "", titles[i]);
    snprintf(buf, n, "%s", b.s ? b.s : "");
    qkt_buf_free(&b);
}

/* A rerun's findings from its metrics.csv into R (rows k), and its findings.md; -1 (err set)
 * when its cells cannot be read. */
static int rerun_findings(qkt__robust *R, int k, const char *dir, const qkt_ablate_cfg *c, qkt_err *err) {
    if (qkt__report_gather(dir, err) != 0) return -1;
    char path[1300];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    qkt_table t;
    if (qkt_table_load(path, &t, err) != 0) return -1;
    qkt_buf got = {0};
    qkt__report s = {.c = c, .t = &t, .dir = dir, .err = err, .chance = qkt__report_chance(c), .seeds_used = c->seeds, .verdicts = &got};
    qkt_buf_printf(&s.md, "# Robustness rerun: the findings again\n\nThe study `%s` with %s (only the cells that carry verdicts); "
                          "the study's report.md compares them.\n\n", c->name, R->title[k]);
    qkt__report_findings(&s);
    snprintf(path, sizeof path, "%s/findings.md", dir);
    int rc = qkt_write_atomic(path, s.md.s, s.md.n, err);
    for (char *line = got.s, *nl; line && *line && R->n_got[k] < MAX_ROWS; line = nl + 1) {
        char *tab = strchr(line, '\t');
        if (!tab || !(nl = strchr(tab, '\n'))) break;
        int i = R->n_got[k]++;
        snprintf(R->id[k][i], sizeof R->id[k][i], "%.*s", (int)(tab - line), line);
        R->v[k][i] = qkt_malloc((size_t)(nl - tab));
        snprintf(R->v[k][i], (size_t)(nl - tab), "%s", tab + 1);
    }
    qkt_buf_free(&got), qkt_buf_free(&s.md);
    qkt_table_free(&t);
    return rc;
}

/* A rerun whose config.json or findings cannot be read: said in report.md and on stderr, and
 * named among those not compared. */
static void unreadable(qkt__report *r, qkt__robust *R, const char *title, const char *why) {
    qkt_buf_printf(&r->md, "**Rerun %s cannot be read**: %s\n\n", title, why);
    qkt_buf_printf(&R->absent, "%s%s (unreadable)", R->absent.n ? "; " : "", title);
    qkt_logf(QKT_LOG_WARN, "qkt: warning: robustness rerun %s cannot be read: %s; report.md does not compare its verdicts", title, why);
}

void qkt__robust_load(qkt__report *r) {
    const int n = qkt_ablate_reruns(r->c);
    if (r->verdicts || n <= 0) return;
    qkt__robust *R = r->robust = qkt_calloc(1, sizeof *R);
    R->n = n < MAX_RERUNS ? n : MAX_RERUNS;
    qkt_ablate_rerun *x = qkt_malloc(sizeof *x);
    for (int k = 0; k < R->n; k++) {
        qkt_ablate_rerun_get(r->c, k, x);
        snprintf(R->title[k], sizeof R->title[k], "%s", x->title);
        snprintf(R->label[k], sizeof R->label[k], "%s", x->label);
        char dir[1100], path[1200], ids[1024];
        qkt_ablate_rerun_dir(r->dir, x, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/config.json", dir);
        qkt_err e;
        if (!qkt_file_exists(path)) {
            qkt_buf_printf(&R->absent, "%s%s (`robust/%s/` holds no run yet)", R->absent.n ? "; " : "", x->title, x->label);
            continue;
        }
        bool made;
        if (qkt_ablate_check_resume(dir, &x->cfg, &made, &e) != 0) { /* edited, damaged, or another rerun's */
            unreadable(r, R, x->title, e.msg);
            continue;
        }
        int seeds, missing = qkt_ablate_missing(dir, &x->cfg, ids, sizeof ids, &seeds);
        if (missing) { /* said at the top, as the study's own missing cells are */
            qkt_buf_printf(&r->md, "**Incomplete rerun %s: %d planned cell%s missing or unfinished** (%s, in `robust/%s/`). Its verdicts are "
                                   "not compared (the \"holds under\" column says *not rerun* for it). Rerun the command above to compute "
                                   "them (finished cells are kept).\n\n",
                           x->title, missing, missing == 1 ? " is" : "s are", ids, x->label);
            qkt_buf_printf(&R->absent, "%s%s (incomplete: %d cell%s missing)", R->absent.n ? "; " : "", x->title, missing, missing == 1 ? "" : "s");
            qkt_logf(QKT_LOG_WARN, "qkt: warning: robustness rerun %s (robust/%s/): %d planned cell%s missing or unfinished (%s); "
                                   "report.md does not compare its verdicts; rerun the study's qkt ablate command to compute them",
                     x->title, x->label, missing, missing == 1 ? " is" : "s are", ids);
            continue;
        }
        if (rerun_findings(R, k, dir, &x->cfg, &e) != 0) {
            unreadable(r, R, x->title, e.msg);
            continue;
        }
        R->have[k] = true;
    }
    free(x);
}

const char *qkt__robust_header(const qkt__report *r) { return r->robust ? " holds under |" : ""; }

const char *qkt__robust_row(qkt__report *r, const char *id, const char *v, bool *fragile) {
    *fragile = false;
    if (r->verdicts) qkt_buf_printf(r->verdicts, "%s\t%s\n", id, v);
    qkt__robust *R = r->robust;
    if (!R) return NULL;
    const char *got[MAX_RERUNS], *titles[MAX_RERUNS];
    for (int k = 0; k < R->n; k++) {
        got[k] = NULL, titles[k] = R->title[k];
        for (int i = 0; i < R->n_got[k] && R->have[k]; i++)
            if (!strcmp(R->id[k][i], id)) got[k] = R->v[k][i];
    }
    bool differs[MAX_RERUNS];
    qkt__robustness j = qkt__robust_judge(v, got, R->n, differs);
    qkt__robust_cell(R->cell, sizeof R->cell, titles, v, got, R->n);
    R->rows++;
    R->holds += j == QKT__HOLDS, R->not_rerun += j == QKT__NOT_RERUN;
    if (j == QKT__FRAGILE) {
        *fragile = true;
        qkt_buf_printf(&R->which, "%s%s (", R->fragile++ ? ", " : "", id);
        for (int k = 0, m = 0; k < R->n; k++)
            if (differs[k]) qkt_buf_printf(&R->which, "%s%s: %s", m++ ? "; " : "", R->title[k], got[k]);
        qkt_buf_printf(&R->which, ")");
    }
    return R->cell;
}

/* "H of N verdicts hold ...; fragile: ..." (no newline). */
static void verdict_sentence(const qkt__robust *R, qkt_buf *b) {
    int compared = 0;
    for (int k = 0; k < R->n; k++) compared += R->have[k];
    if (!compared) {
        qkt_buf_printf(b, "No rerun has finished, so no verdict is compared yet.");
        return;
    }
    qkt_buf_printf(b, "%d of %d verdicts hold on every rerun that ran", R->holds, R->rows);
    if (R->fragile) qkt_buf_printf(b, "; **fragile** (a rerun reached another verdict): %s.", R->which.s);
    else qkt_buf_printf(b, "; none is fragile.");
}

void qkt__robust_after_table(qkt__report *r) {
    qkt__robust *R = r->robust;
    if (!R) return;
    qkt_buf_printf(&r->md, "\n**Robustness reruns.** The \"holds under\" column compares each verdict with the one a replicate study of "
                           "the cells that carry verdicts reaches (`robust/<rerun>/`, its findings in `findings.md` there): ");
    for (int k = 0; k < R->n; k++)
        qkt_buf_printf(&r->md, "%s%s (%s)", k ? ", " : "", R->title[k],
                       strncmp(R->label[k], "isa_", 4) ? "another study seed: other data and init draws"
                                                       : "the same draws, its cells on another kernel path: QKT_ISA");
    qkt_buf_printf(&r->md, ". A verdict is *fragile* when any rerun reaches a different one. ");
    verdict_sentence(R, &r->md);
    if (R->absent.n) qkt_buf_printf(&r->md, " Not compared: %s.", R->absent.s);
    qkt_buf_printf(&r->md, "\n");
}

void qkt__robust_reading(qkt__report *r) {
    qkt__robust *R = r->robust;
    if (!R) return;
    qkt_buf_printf(&r->md, "- **Robustness.** ");
    verdict_sentence(R, &r->md);
    qkt_buf_printf(&r->md, "\n\n");
}

void qkt__robust_free(qkt__report *r) {
    qkt__robust *R = r->robust;
    if (!R) return;
    for (int k = 0; k < R->n; k++)
        for (int i = 0; i < R->n_got[k]; i++) free(R->v[k][i]);
    qkt_buf_free(&R->which), qkt_buf_free(&R->absent);
    free(R);
    r->robust = NULL;
}
