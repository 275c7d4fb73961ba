/* qkt ablate's robustness reruns end to end on a tiny study: --robust-seeds 2 and
 * --robust-isa (a path other than the study's: its cells' numbers differ from the study's,
 * so QKT_ISA reached them) rerun the verdict-carrying cells in RUN/robust/<rerun>/; the
 * findings table gets a "holds under" column naming both; the same command again runs no
 * cell; a rerun cell deleted is named ("Incomplete rerun") by --report-only and qkt plot and
 * its verdicts are not compared; a kernel path this CPU lacks is one line and exit 2. */
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"

static char out[1 << 17];

static bool exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

/* Every row of the findings table (between its header and the paragraph after it) has cell. */
static void check_rows(const char *md, const char *cell, const char *when) {
    const char *head = md ? strstr(md, "| verdict | holds under | source |") : NULL;
    EXPECT(head != NULL, "%s: report.md has no \"holds under\" column", when);
    if (!head) return;
    int rows = 0, with = 0;
    for (const char *l = strchr(head, '\n') + 1; l && *l == '|'; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *end = strchr(l, '\n');
        if (!strncmp(l, "|---", 4)) continue;
        rows++;
        const char *hit = strstr(l, cell);
        with += hit && (!end || hit < end);
    }
    EXPECT(rows >= 10 && with == rows, "%s: %d of %d findings rows say '%s'", when, with, rows, cell);
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("robust");
    const char *study = "--name t --variants sqrt_dk,none --d-k 8 --seeds 2 --steps 2 --task2 none --lr-grid 0.001 --lr-variants sqrt_dk "
                        "--lr-steps 2 --init-d-k 4,64 --growth-d-k 8 --workers 2";
    /* a kernel path other than the one the study runs on */
    qkt_test_qkt(NULL, NULL, out, sizeof out, "version");
    const bool on_baseline = strstr(out, "kernels baseline") != NULL;
    const char *isa = on_baseline ? NULL : "baseline";
    char robust[128], cell[128];
    snprintf(robust, sizeof robust, "--robust-seeds 2%s%s", isa ? " --robust-isa " : "", isa ? isa : "");
    snprintf(cell, sizeof cell, "holds under seed 2%s%s", isa ? ", isa " : "", isa ? isa : "");
    if (on_baseline) printf("this build runs the baseline path only: the kernel-path rerun is left out\n");

    int rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s %s --out %s", study, robust, tmp);
    EXPECT(rc == 0, "qkt ablate with reruns: exit %d\n%s", rc, out);
    char *md = qkt_test_read_file(qkt_test_path(tmp, "t/report.md"), NULL);
    check_rows(md, cell, "after the run");
    EXPECT(md && strstr(md, "**Robustness reruns.**") && strstr(md, "- **Robustness.**"), "report.md lacks the reruns' paragraph or reading");
    free(md);
    /* report.html reads the table with its extra column: the verdicts stay verdicts */
    char *html = qkt_test_read_file(qkt_test_path(tmp, "t/report.html"), NULL);
    EXPECT(html && strstr(html, "\"findings\":[{\"id\":\"2\"") && !strstr(html, "\"verdict\":\"holds under") &&
               !strstr(html, "\"verdict\":\"Vaswani"),
           "report.html's findings do not parse with the \"holds under\" column");
    free(html);
    char *fm = qkt_test_read_file(qkt_test_path(tmp, "t/robust/seed2/findings.md"), NULL);
    EXPECT(fm && strstr(fm, "| verdict | source |"), "robust/seed2/findings.md missing or without its findings table");
    free(fm);
    /* a rerun plans no GPT-at-init cell; the study does */
    EXPECT(exists(qkt_test_path(tmp, "t/cells/init_none_dk4.csv")), "the study has no init cell");
    EXPECT(!exists(qkt_test_path(tmp, "t/robust/seed2/cells/init_none_dk4.csv")), "a rerun ran an init cell");
#ifndef QKT_DOUBLE
    /* (in float64 the paths' roundings differ below the 9 digits a cell file prints: only the
     * float32 suite can see this) */
    if (isa) { /* QKT_ISA reached the rerun's cells: the same draws, other roundings */
        char *a = qkt_test_read_file(qkt_test_path(tmp, "t/cells/train_none_dk8_s0.csv"), NULL);
        char *b = qkt_test_read_file(qkt_test_path(tmp, "t/robust/isa_baseline/cells/train_none_dk8_s0.csv"), NULL);
        EXPECT(a && b && strcmp(a, b) != 0, "the baseline rerun's cell is %s the study's", a && b ? "identical to" : "missing, or");
        free(a), free(b);
    }
#endif

    /* the same command again: every cell, the reruns' too, is kept */
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s %s --out %s", study, robust, tmp);
    EXPECT(rc == 0 && !strstr(out, " done (") && strstr(out, "already done, kept"), "resumed: exit %d, cells ran again:\n%s", rc, out);

    /* a planted difference: seed 2's part-1 file removed, its claim 2 reads no iid numbers and
     * reaches another verdict: row 2 is fragile, and the paragraph and the reading say why */
    remove(qkt_test_path(tmp, "t/robust/seed2/cells/init_iid.csv"));
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s %s --out %s --report-only", study, robust, tmp);
    EXPECT(rc == 0, "--report-only after the plant: exit %d\n%s", rc, out);
    md = qkt_test_read_file(qkt_test_path(tmp, "t/report.md"), NULL);
    const char *row2 = md ? strstr(md, "\n| 2 | ") : NULL, *end2 = row2 ? strchr(row2 + 1, '\n') : NULL;
    const char *mark = row2 ? strstr(row2, "(**fragile**) | **fragile**: seed 2 gives ") : NULL;
    EXPECT(mark && mark < end2, "row 2 is not marked fragile by seed 2:\n%.*s", row2 && end2 ? (int)(end2 - row2) : 0, row2 ? row2 : "");
    EXPECT(md && strstr(md, "**fragile** (a rerun reached another verdict): 2 (seed 2: ") && strstr(md, "- **Robustness.** "),
           "the paragraph or the reading does not name row 2 and seed 2");
    if (md && row2) { /* the other rows still hold */
        int fragile = 0;
        for (const char *q = strstr(md, "| verdict | holds under |"); q && (q = strstr(q, "(**fragile**) |")); q++) fragile++;
        EXPECT(fragile == 1, "%d rows fragile, expected row 2 alone", fragile);
    }
    free(md);

    /* a rerun cell deleted: named, and that rerun is not compared */
    remove(qkt_test_path(tmp, "t/robust/seed2/cells/train_none_dk8_s1.csv"));
    const char *redraw[] = {"ablate --report-only", "plot"};
    for (int i = 0; i < 2; i++) {
        if (i == 0) rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s %s --out %s --report-only", study, robust, tmp);
        else rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "plot %s/t", tmp);
        EXPECT(rc == 0, "%s: exit %d\n%s", redraw[i], rc, out);
        EXPECT(strstr(out, "warning: robustness rerun seed 2 (robust/seed2/): 1 planned cell is missing or unfinished (train_none_dk8_s1"),
               "%s: stderr does not name the missing rerun cell:\n%s", redraw[i], out);
        md = qkt_test_read_file(qkt_test_path(tmp, "t/report.md"), NULL);
        EXPECT(md && strstr(md, "**Incomplete rerun seed 2: 1 planned cell is missing or unfinished** (train_none_dk8_s1"),
               "%s: report.md does not name the missing rerun cell", redraw[i]);
        check_rows(md, isa ? "holds under isa baseline; not rerun: seed 2" : "not rerun", redraw[i]);
        free(md);
    }

    /* a rerun's config.json edited: said on stderr and in report.md, that rerun not compared */
    {
        const char *cj = qkt_test_path(tmp, "t/robust/seed2/config.json");
        size_t n = 0;
        char *text = qkt_test_read_file(cj, &n), *at = text ? strstr(text, "\"steps\":\t") : NULL;
        EXPECT(at != NULL, "no steps in %s", cj);
        if (at) {
            char was = at[9];
            at[9] = was == '9' ? '8' : (char)(was + 1);
            FILE *f = fopen(cj, "wb");
            EXPECT(f && fwrite(text, 1, n, f) == n && fclose(f) == 0, "cannot write %s", cj);
            rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "plot %s/t", tmp);
            md = qkt_test_read_file(qkt_test_path(tmp, "t/report.md"), NULL);
            EXPECT(rc == 0 && strstr(out, "warning: robustness rerun seed 2 cannot be read: ") && strstr(out, "edited or damaged") &&
                       md && strstr(md, "**Rerun seed 2 cannot be read**"),
                   "an edited rerun config.json (%d): %s", rc, out);
            free(md);
            at[9] = was;
            f = fopen(cj, "wb");
            EXPECT(f && fwrite(text, 1, n, f) == n && fclose(f) == 0, "cannot write %s back", cj);
        }
        free(text);
    }

    /* kernel paths: an unknown one, the study's own */
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --robust-isa sse9 --out %s", study, tmp);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "--robust-isa") && strstr(out, "sse9"), "--robust-isa sse9: exit %d: %s", rc, out);
    qkt_test_qkt(NULL, NULL, out, sizeof out, "version");
    char own[32] = "";
    const char *k = strstr(out, "kernels ");
    if (k) sscanf(k + 8, "%31[a-z0-9]", own);
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --robust-isa %s --out %s", study, own, tmp);
    EXPECT(rc == 2 && qkt_test_one_line(out) && strstr(out, "already"), "--robust-isa %s (the study's own): exit %d: %s", own, rc, out);

    return qkt_test_finish();
}
