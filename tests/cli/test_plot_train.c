/* qkt plot RUN [RUN ...] on qkt train runs: the page (report.html) holds one chart per
 * log.csv column with a series per run, every value one of log.csv; a run still being
 * written (a torn last line) is drawn up to its last complete row without its lock; bad
 * input is one line and a non-zero exit. The page in a browser: tests/html/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_test.h"

static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

int main(void) {
    const char *d = qkt_test_tmpdir("plot_train");
    static char out[65536];
    for (int i = 0; i < 2; i++) {
        int rc = qkt_test_qkt(d, NULL, out, sizeof out, "train " QKT_TEST_TINY_DATA " " QKT_TEST_TINY_MODEL
                              " --batch-size 4 --steps %d --eval-every 5 --eval-batches 1 --out run%d", 10 + 5 * i, i);
        EXPECT(rc == 0, "qkt train run%d (%d): %s", i, rc, out);
    }
    /* run1 is being written: a last row cut short, and its lock held by nobody we wait for */
    FILE *f = fopen(qkt_test_path(d, "run1/log.csv"), "a");
    fputs("16,2.5,0.00", f);
    fclose(f);
    int rc = qkt_test_qkt(d, NULL, out, sizeof out, "plot run0 run1");
    EXPECT(rc == 0 && strstr(out, "run0/report.html"), "qkt plot run0 run1 (%d): %s", rc, out);
    char *page = qkt_test_read_file(qkt_test_path(d, "run0/report.html"), NULL);
    EXPECT(page != NULL, "no run0/report.html");
    if (page) {
        /* the charts: log.csv's columns but step and elapsed_s; a series per run in each */
        const char *cols[] = {"loss", "lr", "grad_norm", "val_loss", "val_acc", "tokens_per_s"};
        for (int i = 0; i < 6; i++) {
            char id[64];
            snprintf(id, sizeof id, "{\"id\":\"%s\",", cols[i]);
            EXPECT(count(page, id) == 1, "chart %s: %d times", cols[i], count(page, id));
        }
        EXPECT(count(page, "\"type\":\"line\"") == 6, "%d charts, log.csv has 6 columns to draw", count(page, "\"type\":\"line\""));
        EXPECT(count(page, "{\"g\":\"run0\"") == 6 && count(page, "{\"g\":\"run1\"") == 6, "series: run0 %d, run1 %d (6 each)",
               count(page, "{\"g\":\"run0\""), count(page, "{\"g\":\"run1\""));
        /* run1's last complete row is step 15; the torn one (16) is left out and said */
        EXPECT(strstr(page, "step 15 of 15") && strstr(page, "partial last line"), "run1's progress note");
        EXPECT(strstr(page, "<script id=\"qkt-data\" type=\"application/json\">") && !strstr(page, "src="), "not self-contained");
        free(page);
    }
    rc = qkt_test_qkt(d, NULL, out, sizeof out, "plot run0 run1 --out %s", qkt_test_path(d, "cmp.html"));
    EXPECT(rc == 0 && qkt_file_exists(qkt_test_path(d, "cmp.html")), "--out (%d): %s", rc, out);

    /* bad input: one line each, non-zero */
    struct {
        const char *args, *want;
        int rc;
    } bad[] = {
        {"plot", "expected a run directory", 2},
        {"plot nowhere", "nowhere/config.json", 2},
        {"plot run0 nowhere", "nowhere: not a directory", 2},
        {"plot empty", "empty/config.json", 2},
        {"plot run0 empty", "empty/train.json: not found", 2},
        {"plot run0 badlog", "not a qkt train log", 1},
        {"plot run0 badrow", "line 3 is not a log row", 1},
        {"plot run0 nolog", "no log.csv", 1},
        {"plot run0 --out nodir/x.html", "nodir", 1},
    };
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && mkdir -p empty badlog badrow nolog && cp run0/train.json badlog/ && cp run0/train.json badrow/ && "
             "cp run0/train.json nolog/ && printf 'step,loss\\n0,1\\n' > badlog/log.csv && "
             "head -2 run0/log.csv > badrow/log.csv && printf '1,2.5,x,1,,,10,0.1\\n' >> badrow/log.csv", d);
    EXPECT(qkt_test_run(cmd, out, sizeof out) == 0, "setup: %s", out);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = qkt_test_qkt(d, NULL, out, sizeof out, "%s", bad[i].args);
        EXPECT(rc == bad[i].rc && strstr(out, bad[i].want) && qkt_test_one_line(out), "qkt %s: exit %d (want %d), %s", bad[i].args, rc,
               bad[i].rc, out);
    }
    return qkt_test_finish();
}
