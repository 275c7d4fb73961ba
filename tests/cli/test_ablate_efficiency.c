/* qkt ablate's efficiency line and report.md's part 5: the number printed equals the
 * cells' FLOPs over their CPU seconds and the peak, as this test computes them from the
 * run's files (cells/<id>.cost, sgemm_peak.txt); a resumed study sums the cells of both
 * runs; a cell without a record is named, not counted; a record or peak file that fails its
 * seal or holds a value out of range is named and not counted; a damaged peak file is reported. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_sweep.h"
#include "qkt_test.h"

static char out[1 << 16];

typedef struct {
    double flops, cpu, peak;
    int cells;
} sums;

/* A cell id's kind (its first word) and d_k (the digits after the "_dk" that a digit follows). */
static bool id_part(const char *id, char *kind, size_t n, int *dk) {
    const char *u = strchr(id, '_');
    if (!u || (size_t)(u - id) >= n) return false;
    memcpy(kind, id, (size_t)(u - id)), kind[u - id] = 0;
    for (const char *q = strstr(id, "_dk"); q; q = strstr(q + 1, "_dk"))
        if (q[3] >= '0' && q[3] <= '9') return (*dk = atoi(q + 3)) > 0;
    return false;
}

/* The sums over the cells/<id>.cost whose cells/<id>.csv exists: all of them (kind NULL), or
 * one part's (kind, d_k). */
static sums read_cells(const char *run, const char *kind, int dk) {
    sums s = {0, 0, 0, 0};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cells", run);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".cost")) continue;
        char k[32];
        int cdk;
        if (kind && (!id_part(e->d_name, k, sizeof k, &cdk) || strcmp(k, kind) || cdk != dk)) continue;
        char path[1300], csv[1300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(csv, sizeof csv, "%s/%.*s.csv", dir, (int)(n - 5), e->d_name);
        char *c = qkt_test_read_file(csv, NULL), *t = qkt_test_read_file(path, NULL);
        double f, ev, cpu;
        if (c && t && sscanf(t, "train_flops=%lf eval_flops=%lf cpu_s=%lf", &f, &ev, &cpu) == 3)
            s.flops += f + ev, s.cpu += cpu, s.cells++;
        EXPECT(!c || (t && f > 0 && cpu > 0), "%s: '%s'", path, t ? t : "(unreadable)");
        free(c), free(t);
    }
    if (d) closedir(d);
    return s;
}

/* The whole run's sums, and the peak. */
static sums read_run(const char *run) {
    sums s = read_cells(run, NULL, 0);
    char *p = qkt_test_read_file(qkt_test_path(run, "sgemm_peak.txt"), NULL);
    EXPECT(p && sscanf(p, "gflops=%lf", &s.peak) == 1 && s.peak > 0, "sgemm_peak.txt: '%s'", p ? p : "(missing)");
    free(p);
    return s;
}

/* report.md's table of parts: a row per part with counted cells, each row's numbers those of
 * its cells' files, the costliest first, and every counted cell in one row. */
static void check_parts(const char *what, const char *run, const char *md, sums all) {
    const char *head = "| part | d_k | cells | CPU-s | share of CPU-s | efficiency | floor, CPU-s |\n|---|---:|---:|---:|---:|---:|---:|\n";
    const char *t = md ? strstr(md, head) : NULL;
    EXPECT(t != NULL, "%s: report.md has no table of parts", what);
    if (!t) return;
    t += strlen(head);
    int rows = 0, cells = 0;
    double prev = INFINITY;
    while (*t == '|') {
        char kind[32], line[256];
        int dk, nc;
        double cpu;
        const char *nl = strchr(t, '\n');
        size_t len = nl ? (size_t)(nl - t) : strlen(t);
        snprintf(line, sizeof line, "%.*s", (int)len, t);
        EXPECT(sscanf(line, "| %31s | %d | %d | %lf |", kind, &dk, &nc, &cpu) == 4, "%s: a row of parts: '%s'", what, line);
        sums p = read_cells(run, kind, dk);
        char want[256];
        snprintf(want, sizeof want, "| %s | %d | %d | %.2f | %.3f | %.3f | %.2f |", kind, dk, p.cells, p.cpu, p.cpu / all.cpu,
                 p.flops / p.cpu / (all.peak * 1e9), p.flops / (all.peak * 1e9));
        EXPECT(!strcmp(line, want), "%s: the row of %s d_k %d is\n  %s\nwhere its cells' files give\n  %s", what, kind, dk, line, want);
        EXPECT(cpu <= prev, "%s: %s d_k %d (%.2f CPU-s) after a part of %.2f: not the costliest first", what, kind, dk, cpu, prev);
        prev = cpu, rows++, cells += nc;
        t += len + (nl ? 1 : 0);
    }
    EXPECT(rows > 1 && cells == all.cells, "%s: %d rows of parts count %d cells, the run %d", what, rows, cells, all.cells);
}

/* run/rel := text, with its seal (qkt_cell_seal) if `seal`. */
static void put(const char *run, const char *rel, const char *text, bool seal) {
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", text);
    if (seal) qkt_cell_seal(&b);
    FILE *f = fopen(qkt_test_path(run, rel), "wb");
    EXPECT(f && fwrite(b.s, 1, b.n, f) == b.n && fclose(f) == 0, "could not write %s", rel);
    qkt_buf_free(&b);
}

/* The file's text with the first `from` after its start changed to `to`. */
static void edit(const char *run, const char *rel, const char *from, const char *to) {
    char *t = qkt_test_read_file(qkt_test_path(run, rel), NULL), *at = t ? strstr(t, from) : NULL;
    EXPECT(at != NULL, "%s has no '%s'", rel, from);
    if (!at) return free(t);
    memcpy(at, to, strlen(to));
    put(run, rel, t, false);
    free(t);
}

/* scripts/study_parts.py on the run (skipped without python3): its efficiency is the one qkt
 * printed, so it leaves out the records qkt leaves out. */
static void check_script(const char *what, const char *run) {
    const char *src = getenv("QKT_SOURCE_DIR");
    if (!src || system("command -v python3 >/dev/null 2>&1") != 0)
        return (void)printf("%s: python3 or QKT_SOURCE_DIR absent: scripts/study_parts.py not run\n", what);
    char cmd[4096], text[8192];
    snprintf(cmd, sizeof cmd, "python3 '%s/scripts/study_parts.py' '%s' 2>/dev/null", src, run);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(text, 1, sizeof text - 1, p) : 0;
    text[n] = 0;
    if (p) pclose(p);
    const char *a = strstr(out, "efficiency "), *b = strstr(text, "| efficiency | | | ");
    double qkt = a ? atof(a + strlen("efficiency ")) : -1, script = b ? atof(b + strlen("| efficiency | | | ")) : -2;
    EXPECT(fabs(qkt - script) < 0.0015, "%s: scripts/study_parts.py's efficiency %.3f, qkt's %.3f:\n%s", what, script,
           qkt, text);
}

/* --report-only after a cost record was damaged: the line names it and counts it out. */
static void check_damaged(const char *what, const char *study, const char *tmp, const char *why) {
    int rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
    EXPECT(rc == 0, "%s: --report-only: exit %d: %s", what, rc, out);
    char want[256];
    snprintf(
        want, sizeof want,
        "1 finished cell has a damaged cost record and is not counted (the first: cells/train_sqrt_dk_dk8_s0.cost %s)",
        why);
    EXPECT(strstr(out, want) != NULL, "%s: the output lacks '%s':\n%s", what, want, out);
    check_script(what, qkt_test_path(tmp, "t"));
}

/* The printed line and report.md both say "efficiency E" with E = flops / cpu / peak. */
static void check(const char *what, const char *run, const char *printed) {
    sums s = read_run(run);
    char want[128];
    snprintf(want, sizeof want, "efficiency %.3f (", s.flops / s.cpu / (s.peak * 1e9));
    EXPECT(strstr(printed, want) != NULL, "%s: the output lacks '%s' (%d cells, %g FLOPs, %g CPU-s, peak %g):\n%s", what, want,
           s.cells, s.flops, s.cpu, s.peak, printed);
    char cells[64];
    snprintf(cells, sizeof cells, "of %d cells", s.cells);
    EXPECT(strstr(printed, cells) != NULL, "%s: the output lacks '%s'", what, cells);
    char *md = qkt_test_read_file(qkt_test_path(run, "report.md"), NULL);
    EXPECT(md && strstr(md, "## 5. The study's own efficiency") && strstr(md, want), "%s: report.md lacks '%s'", what, want);
    check_parts(what, run, md, s);
    free(md);
}

int main(void) {
    const char *tmp = qkt_test_tmpdir("efficiency");
    const char *study = "--name t --variants sqrt_dk,none --d-k 8 --seeds 1 --steps 6 --eval-every 3 --lr-grid 0.001 "
                        "--lr-variants sqrt_dk --lr-steps 2 --lr-d-k 8 --init-d-k 4 --growth-d-k 8 --workers 2";
    char run[1024];
    snprintf(run, sizeof run, "%s/t", tmp);
    int rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s", study, tmp);
    EXPECT(rc == 0, "the study: exit %d: %s", rc, out);
    check("a straight run", run, out);
    check_script("a straight run", run);
    char *rec = qkt_test_read_file(qkt_test_path(run, "cells/train_sqrt_dk_dk8_s0.cost"), NULL),
         *pk = qkt_test_read_file(qkt_test_path(run, "sgemm_peak.txt"), NULL);
    EXPECT(rec && strstr(rec, "\n#end rows=1 crc32c="), "a cost record without its seal: '%s'",
           rec ? rec : "(missing)");
    EXPECT(pk && strstr(pk, "\n#end rows=1 crc32c="), "sgemm_peak.txt without its seal: '%s'", pk ? pk : "(missing)");

    /* The same command again after one cell's files went: it reruns that cell, and the
     * sum covers the cells of both runs. */
    remove(qkt_test_path(run, "cells/train_none_dk8_s0.csv"));
    remove(qkt_test_path(run, "cells/train_none_dk8_s0.cost"));
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s", study, tmp);
    EXPECT(rc == 0, "the resumed study: exit %d: %s", rc, out);
    char *cost = qkt_test_read_file(qkt_test_path(run, "cells/train_none_dk8_s0.cost"), NULL);
    EXPECT(cost != NULL, "the rerun cell wrote no cells/train_none_dk8_s0.cost");
    free(cost);
    check("a resumed run", run, out);

    /* A finished cell without its record (a run of an older qkt): named, not counted. */
    remove(qkt_test_path(run, "cells/lr_sqrt_dk_dk8_lr0.001.cost"));
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
    EXPECT(rc == 0, "--report-only: exit %d: %s", rc, out);
    check("a cell without a record", run, out);
    EXPECT(strstr(out, "1 finished cell has no cells/<id>.cost and is not counted") != NULL,
           "the uncounted cell is not named:\n%s", out);

    /* A cost record damaged in place: a digit of its CPU time changed (the seal catches it),
     * its seal gone or doubled, a sealed CPU time of 0 or NaN: named, not counted. A record
     * without a seal, as an older qkt wrote it, is counted. */
    const char *cell = "cells/train_sqrt_dk_dk8_s0.cost";
    char *cpu = rec ? strstr(rec, "cpu_s=") : NULL, line[256];
    EXPECT(cpu != NULL, "no cpu_s in '%s'", rec ? rec : "(missing)");
    if (cpu) {
        edit(run, cell, "cpu_s=", "cpu_s=9");
        check_damaged("a changed digit", study, tmp, "fails its checksum (edited or damaged)");
        snprintf(line, sizeof line, "%.*s%s", (int)(strchr(rec, '\n') + 1 - rec), rec, "#end\n");
        put(run, cell, line, false);
        check_damaged("a broken seal", study, tmp, "has no seal line (cut short, or written by an older qkt)");
        snprintf(line, sizeof line, "%s%s", rec, strchr(rec, '\n') + 1);
        put(run, cell, line, false);
        check_damaged("a doubled seal", study, tmp, "holds 2 rows, its seal says 1");
        snprintf(line, sizeof line, "%.*s%s", (int)(strchr(rec, '\n') + 1 - rec), rec,
                 "train_flops=1 eval_flops=1 cpu_s=1\n");
        put(run, cell, line, true);
        check_damaged("two sealed lines", study, tmp, "holds more than one line before its seal");
        put(run, cell, "train_flops=1000 eval_flops=10 cpu_s=1", false);
        check_damaged("no newline", study, tmp, "is not one complete line");
        put(run, cell, "train_flops=1000 eval_flops=10 cpu_s=0\n", true);
        check_damaged("no CPU time", study, tmp,
                      "is not 'train_flops=F eval_flops=E cpu_s=S' with F, E >= 0 and S > 0");
        put(run, cell, "train_flops=1000 eval_flops=nan cpu_s=1\n", true);
        check_damaged("NaN FLOPs", study, tmp, "is not 'train_flops=F eval_flops=E cpu_s=S' with F, E >= 0 and S > 0");
        snprintf(line, sizeof line, "%.*s", (int)(strchr(rec, '\n') + 1 - rec), rec);
        put(run, cell, line, false);
        rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
        EXPECT(rc == 0 && !strstr(out, "damaged"), "an unsealed record of an older qkt is not counted: exit %d: %s", rc,
               out);
        check("an unsealed record", run, out);
        put(run, cell, rec, false);
    }

    /* sgemm_peak.txt with a digit changed: no number, and why. */
    if (pk && strstr(pk, "gflops=")) {
        edit(run, "sgemm_peak.txt", "gflops=", "gflops=9");
        rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
        EXPECT(rc == 0 && strstr(out, "efficiency unknown: ") &&
                   strstr(out, "sgemm_peak.txt fails its checksum (edited or damaged)"),
               "a changed peak is not reported: exit %d: %s", rc, out);
        put(run, "sgemm_peak.txt", pk, false);
    }
    free(rec), free(pk);

    /* The same command on a finished study (as when robustness reruns are added): no cell
     * runs, so the peak of the run that trained the cells is kept, not measured again. */
    FILE *f = fopen(qkt_test_path(run, "sgemm_peak.txt"), "w");
    if (f) fputs("gflops=123.25 n=1024 isa=baseline\n", f), fclose(f);
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s", study, tmp);
    EXPECT(rc == 0, "the finished study again: exit %d: %s", rc, out);
    char *peak = qkt_test_read_file(qkt_test_path(run, "sgemm_peak.txt"), NULL);
    EXPECT(peak && !strcmp(peak, "gflops=123.25 n=1024 isa=baseline\n"), "a resume with no cell to run measured the peak again: '%s'",
           peak ? peak : "(missing)");
    free(peak);
    check("a finished study resumed", run, out);

    char *md;
    /* An unsealed peak (as older builds wrote it) edited far below the cells' rate: the ratio
     * would be above 1, which no study reaches, so no number is printed, and why. */
    f = fopen(qkt_test_path(run, "sgemm_peak.txt"), "w");
    if (f) fputs("gflops=0.01 n=1024 isa=baseline\n", f), fclose(f);
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
    EXPECT(rc == 0 &&
               strstr(out, "efficiency unknown, above 1 with unsealed records (as older builds wrote them): a cost record or "
                           "sgemm_peak.txt is wrong (") &&
               strstr(out, "single-core sgemm peak 0.01 GFLOP/s"),
           "a peak below the cells' rate: exit %d: %s", rc, out);
    md = qkt_test_read_file(qkt_test_path(run, "report.md"), NULL);
    EXPECT(md && strstr(md, "efficiency unknown, above 1") && strstr(md, "| unknown | - |"), "report.md with a peak below the cells' rate");
    free(md);
    /* Sealed, the same peak is a measurement (an instrumented build's sgemm slows more than its
     * cells): the ratio above 1 is printed as it is */
    put(run, "sgemm_peak.txt", "gflops=0.01 n=1024 isa=baseline\n", true);
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
    double shown = 0;
    const char *at = strstr(out, "qkt ablate: efficiency ");
    EXPECT(rc == 0 && at && sscanf(at, "qkt ablate: efficiency %lf (", &shown) == 1 && shown > 1, "a sealed peak below the cells' rate: exit %d: %s",
           rc, out);

    /* A damaged peak file: the report is still written and says why there is no number. */
    f = fopen(qkt_test_path(run, "sgemm_peak.txt"), "w");
    if (f) fputs("gflops=x\n", f), fclose(f);
    rc = qkt_test_qkt(NULL, NULL, out, sizeof out, "ablate %s --out %s --report-only", study, tmp);
    EXPECT(rc == 0, "--report-only with a damaged sgemm_peak.txt: exit %d: %s", rc, out);
    EXPECT(strstr(out, "efficiency unknown: ") && strstr(out, "sgemm_peak.txt: expected 'gflops=G n=N isa=I'"),
           "a damaged sgemm_peak.txt is not reported:\n%s", out);
    md = qkt_test_read_file(qkt_test_path(run, "report.md"), NULL);
    EXPECT(md && strstr(md, "Not computed: ") && strstr(md, "sgemm_peak.txt"), "report.md does not say why part 5 has no number");
    free(md);

    /* The library's part reader refuses a kind or d_k out of range in one line. */
    qkt_ablate_cfg cfg;
    qkt_err err;
    qkt_ablate_efficiency pe;
    EXPECT(qkt_ablate_preset("quick", &cfg, &err) == 0, "the quick preset: %s", err.msg);
    EXPECT(qkt_ablate_efficiency_read_part(run, &cfg, (qkt_cell_kind)99, 8, &pe, &err) == -1 && strstr(err.msg, "kind 99 and d_k 8"),
           "a kind of 99 is not refused: '%s'", err.msg);
    EXPECT(qkt_ablate_efficiency_read_part(run, &cfg, QKT_CELL_TRAIN, 0, &pe, &err) == -1 && strstr(err.msg, "d_k 0"),
           "a d_k of 0 is not refused: '%s'", err.msg);

    return qkt_test_finish();
}
