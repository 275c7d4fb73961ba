/* A build whose field table has one more row (test_extra, train/train_fields.def under
 * QKT_TEST_EXTRA_FIELD) and no other change: the option is a flag of qkt train (with its
 * bounds and default in --help), a key of train.json and of the checkpoint metadata, and
 * resumes; it is a flag of qkt ablate and a key of the study's config.json too. So adding
 * an option is a row of the table, not an edit of every file format. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_test.h"
#include "qkt_train_fields.h"

static char out[1 << 16];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "QKT_THREADS=1 %s %s", qkt_test_bin(), args);
    return qkt_test_run(cmd, out, sizeof out);
}

#define TINY "--data mqar:n_pairs=4,n_queries=4 --n-layer 1 --n-head 2 --n-embd 16 --block-size 32 --batch-size 4 --eval-batches 2"

int main(void) {
    const qkt_train_field *f = qkt_train_field_find("test_extra");
    EXPECT(f && f == qkt_train_field_find("test-extra"), "the table has no test_extra row: not the fixture build?");
    /* the flag, its default and its bounds */
    int rc = run("train --help");
    EXPECT(rc == 0 && strstr(out, "--test-extra X") && strstr(out, "a dummy option of the test build (default 0.5)"), "%s", out);
    rc = run("train " TINY " --test-extra 11 --out /nonexistent/x");
    EXPECT(rc == 2 && strstr(out, "--test-extra '11'") && strstr(out, "[0, 10]"), "(%d) %s", rc, out);
    /* train.json and the checkpoint */
    const char *dir = qkt_test_tmpdir("fields_extra");
    char args[4096];
    snprintf(args, sizeof args, "train " TINY " --steps 4 --test-extra 0.25 --out %s/a", dir);
    rc = run(args);
    EXPECT(rc == 0, "(%d) %s", rc, out);
    char *json = qkt_test_read_file(qkt_test_path(qkt_test_path(dir, "a"), "train.json"), NULL);
    EXPECT(json && strstr(json, "\"test_extra\":\t0.25"), "train.json: %s", json ? json : "(none)");
    free(json);
    qkt_checkpoint ck;
    qkt_err err = {{0}};
    EXPECT(qkt_checkpoint_open(qkt_test_path(qkt_test_path(dir, "a"), "ckpt.safetensors"), &ck, &err) == 0, "%s", err.msg);
    const char *v = qkt_checkpoint_meta(&ck, "test_extra");
    EXPECT(v && !strcmp(v, "0.25"), "checkpoint metadata test_extra = %s", v ? v : "(none)");
    qkt_checkpoint_close(&ck);
    /* and it resumes from them */
    snprintf(args, sizeof args, "train --resume %s/a", dir);
    rc = run(args);
    EXPECT(rc == 0 && strstr(out, "finished already"), "(%d) %s", rc, out);
    /* the study: a flag, and config.json (written and read back) */
    rc = run("ablate --help");
    EXPECT(rc == 0 && strstr(out, "--test-extra X"), "%s", out);
    qkt_ablate_cfg c, back;
    EXPECT(qkt_ablate_preset("quick", &c, &err) == 0 && c.run.tc.model.test_extra == 0.5, "preset: %s", err.msg);
    EXPECT(qkt_ablate_set(&c, "test_extra", "0.75", &err) == 0, "%s", err.msg);
    EXPECT(qkt_ablate_set(&c, "test_extra", "12", &err) == -1 && strstr(err.msg, "test_extra"), "out of bounds: %s", err.msg);
    char *cj = qkt_ablate_config_json(&c);
    EXPECT(strstr(cj, "\"test_extra\":\t0.75"), "config.json: %s", cj);
    EXPECT(qkt_ablate_parse_config(cj, strlen(cj), "config.json", &back, &err) == 0 && back.run.tc.model.test_extra == 0.75, "%s",
           err.msg);
    free(cj);
    return qkt_test_finish();
}
