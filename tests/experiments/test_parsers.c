/* Regressions from fuzzing the readers of user files (tests/fuzz/) and from the
 * sanitizer build, checked directly: each case failed, crashed, leaked or was undefined
 * behaviour before its fix. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_data.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_test.h"


/* config.json: 1e999 parses to infinity, which cJSON writes back as null, so the run
 * could not load its own config again: refused when read. */
static void test_ablate_config_nonfinite(void) {
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0, "%s", err.msg);
    char *json = qkt_ablate_config_json(&c);
    EXPECT(qkt_ablate_parse_config(json, strlen(json), "cfg", &c, &err) == 0, "%s", err.msg);
    const char *keys[] = {"\"weight_decay\":", "\"growth_lr\":", "\"grad_clip\":"};
    for (int k = 0; k < 3; k++) {
        char *at = strstr(json, keys[k]);
        EXPECT(at != NULL, "no %s in %s", keys[k], json);
        if (!at) continue;
        at += strlen(keys[k]);
        at += strspn(at, " \t");
        size_t old = strcspn(at, ",\n");
        qkt_buf b = {0};
        qkt_buf_printf(&b, "%.*s1e999%s", (int)(at - json), json, at + old);
        int rc = qkt_ablate_parse_config(b.s, b.n, "cfg", &c, &err);
        EXPECT(rc == -1 && !strncmp(err.msg, "cfg: ", 5) && strstr(err.msg, "finite") && qkt_test_one_msg(err.msg), "%s: %d %s", keys[k], rc,
               err.msg);
        qkt_buf_free(&b);
    }
    free(json);
}

static const char *hdr = "run,experiment,variant,d_k,seed,lr,step,metric,layer,head,value\n";

static int parse_csv(const char *body, qkt_table *t, qkt_err *err) {
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s%s", hdr, body);
    int rc = qkt_table_parse(b.s, b.n, "m.csv", t, err);
    qkt_buf_free(&b);
    return rc;
}

/* metrics.csv: more than 64 metric names aborted the program (QKT_CHECK); an error
 * after some rows leaked them; an infinite lr made its run unfindable; fields were read
 * with atoi (garbage became 0); ids longer than the table's field were truncated. */
static void test_metrics_csv(void) {
    qkt_table t;
    qkt_err err;
    qkt_buf b = {0};
    for (int i = 0; i < 65; i++) qkt_buf_printf(&b, "r,train,none,4,0,0.01,%d,metric%d,-1,-1,1.5\n", i, i);
    EXPECT(parse_csv(b.s, &t, &err) == -1 && strstr(err.msg, "more than 64 metric names") && !t.rows && !t.runs, "%s", err.msg);
    qkt_buf_free(&b);
    const char *bad[][2] = {
        {"r,train,none,4,0,inf,1,val_loss,-1,-1,1\n", "field lr"},
        {"r,train,none,4,0,0.01,1x,val_loss,-1,-1,1\n", "field step"},
        {"r,train,none,4,0,0.01,1,val_loss,40000,-1,1\n", "field layer"},
        {"r,train,none,four,0,0.01,1,val_loss,-1,-1,1\n", "field d_k"},
        {"r,train,none,4,0,0.01,1,,-1,-1,1\n", "field metric"},
        {"r,train,none,4,0,0.01,1,val_loss,-1,-1,\n", "field value"},
        {"r,train,none,4,0,0.01,1,val_loss,-1,-1,1\nr2,train,none,4,0,0.01,1,val_loss,-1,-1,1\nr,train,none,4,0,0.01,2,val_loss,-1,-1,1\n",
         "not contiguous"},
        {"a_run_id_that_is_longer_than_the_ninety_six_characters_a_run_id_may_have_in_the_table_xxxxxxxxxxxxxx,train,none,4,0,0.01,1,"
         "val_loss,-1,-1,1\n",
         "field run"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = parse_csv(bad[i][0], &t, &err);
        EXPECT(rc == -1 && strstr(err.msg, bad[i][1]) && !strncmp(err.msg, "m.csv: line ", 12) && qkt_test_one_msg(err.msg) && !t.rows,
               "case %zu: %d %s", i, rc, err.msg);
    }
    /* nan and inf are values (a diverged run), and the table answers for them */
    EXPECT(parse_csv("r,train,none,4,0,0.01,1,val_loss,-1,-1,nan\nr,train,none,4,0,0.01,2,val_loss,-1,-1,inf\n", &t, &err) == 0,
           "%s", err.msg);
    EXPECT(t.n_runs == 1 && t.n_rows == 2 && qkt_table_find_run(&t, "train", "none", 4, 0, 0.01) == 0 &&
               qkt_table_last_step(&t, 0, "val_loss") == 2,
           "%d runs, %d rows", t.n_runs, t.n_rows);
    qkt_table_free(&t);
}

/* text: the canonical spec printed val_frac with %g (6 digits), so reopening it (what
 * train.json keeps for --resume) could give another split. */
static void test_text_val_frac(void) {
    const char *dir = qkt_test_tmpdir("parsers");
    char path[600], spec[700];
    snprintf(path, sizeof path, "%s/t.txt", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1000; i++) fputc('a' + i % 7, f);
    fclose(f);
    snprintf(spec, sizeof spec, "text:%s,val_frac=0.2999996", path); /* 1000 x: 299.9996 -> 299, 0.3 -> 300 */
    qkt_data *a, *b;
    qkt_err err;
    qkt_data_opts o = {.seq_len = 8};
    EXPECT(qkt_data_open(&a, spec, &o, &err) == 0, "%s", err.msg);
    EXPECT(qkt_data_open(&b, qkt_data_spec(a), &o, &err) == 0, "%s", err.msg);
    EXPECT(qkt_data_split_tokens(a, QKT_SPLIT_VAL) == 299 && qkt_data_split_tokens(b, QKT_SPLIT_VAL) == 299,
           "val split %lld, reopened from '%s': %lld", (long long)qkt_data_split_tokens(a, QKT_SPLIT_VAL), qkt_data_spec(a),
           (long long)qkt_data_split_tokens(b, QKT_SPLIT_VAL));
    qkt_data_free(a), qkt_data_free(b);
    snprintf(spec, sizeof spec, "text:%s,val_frac=0.1", path); /* and the short form stays short */
    EXPECT(qkt_data_open(&a, spec, &o, &err) == 0 && strstr(qkt_data_spec(a), ",val_frac=0.1") &&
               !strstr(qkt_data_spec(a), "0.10000"),
           "%s", qkt_data_spec(a));
    qkt_data_free(a);
}

/* Error messages are one line even when they quote a newline (a spec, a JSON string). */
static void test_one_line_errors(void) {
    qkt_data *d;
    qkt_err err;
    EXPECT(qkt_data_open(&d, "mq\nar", NULL, &err) == -1 && qkt_test_one_msg(err.msg) && strstr(err.msg, "'mq?ar'"), "%s", err.msg);
    EXPECT(qkt_err_set(&err, "a\tb\nc\r%s", "\x1b[2J") == -1 && !strcmp(err.msg, "a?b?c??[2J"), "%s", err.msg);
}

/* `qkt plot` of a run whose cells/ is empty sorted a NULL list (qsort(NULL, 0) is
 * undefined; UBSan stops there): the report of no results is written. */
static void test_report_no_cells(void) {
    const char *dir = qkt_test_tmpdir("emptyrun");
    char cells[600];
    snprintf(cells, sizeof cells, "%s/cells", dir);
    qkt_ablate_cfg c;
    qkt_err err;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0 && qkt_ablate_save_config(dir, &c, &err) == 0 && qkt_mkdirs(cells, &err) == 0,
           "%s", err.msg);
    EXPECT(qkt_ablate_report(dir, &err) == 0, "%s", err.msg);
}

int main(void) {
    test_ablate_config_nonfinite();
    test_metrics_csv();
    test_text_val_frac();
    test_one_line_errors();
    test_report_no_cells();
    return qkt_test_finish();
}
