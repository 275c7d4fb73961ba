/* The training config's one set of defaults and its one validator: the defaults resolve
 * and validate, the QKT_TRAIN_AUTO fields follow their formulas, each bound accepts its
 * limit and refuses one past it naming the struct field and the call (the CLI's flag
 * spelling under QKT_NAMES_FLAGS), and train.json round-trips. */
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_train_run.h"
#include "qkt_test.h"

/* r with one field changed must fail naming the call and `field` (or pass when field is
 * NULL). */
static void expect_validate(const qkt_train_run *r, const char *field, int line) {
    qkt_err err = {{0}};
    int rc = qkt_train_run_validate(r, &err);
    if (!field) EXPECT(rc == 0, "line %d: %s", line, err.msg);
    else EXPECT(rc == -1 && !strncmp(err.msg, "qkt_train_run_validate: ", 24) && strstr(err.msg, field) && !strstr(err.msg, "--") &&
                    !strchr(err.msg, '\n'), "line %d: rc %d, '%s' lacks %s", line, rc, err.msg, field);
}

static qkt_train_run resolved_default(void) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    qkt_train_config_resolve(&r.tc);
    return r;
}

static void test_defaults(void) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    EXPECT(r.tc.min_lr < 0 && r.tc.warmup_steps < 0, "min_lr %g, warmup %lld: not auto", r.tc.min_lr, (long long)r.tc.warmup_steps);
    EXPECT(r.tc.data == r.data && !strcmp(r.data, "mqar"), "data '%s'", r.data);
    qkt_train_config_resolve(&r.tc);
    EXPECT(r.tc.min_lr == r.tc.lr / 10 && r.tc.warmup_steps == 100, "resolved: min_lr %g, warmup %lld", r.tc.min_lr,
           (long long)r.tc.warmup_steps);
    expect_validate(&r, NULL, __LINE__);
    /* warmup = min(100, steps / 10); given values stay */
    qkt_train_config c = qkt_train_config_default();
    c.steps = 55;
    qkt_train_config_resolve(&c);
    EXPECT(c.warmup_steps == 5, "steps 55: warmup %lld", (long long)c.warmup_steps);
    c.min_lr = 0, c.warmup_steps = 0, c.lr = 0.5;
    qkt_train_config_resolve(&c);
    EXPECT(c.min_lr == 0 && c.warmup_steps == 0, "given values changed: %g %lld", c.min_lr, (long long)c.warmup_steps);
    /* lr_decay_steps = steps; warmup follows it, not steps; warmup past it is refused */
    c = qkt_train_config_default();
    c.steps = 55;
    qkt_train_config_resolve(&c);
    EXPECT(c.lr_decay_steps == 55, "steps 55: lr_decay_steps %lld", (long long)c.lr_decay_steps);
    c = qkt_train_config_default();
    c.steps = 2000, c.lr_decay_steps = 300;
    qkt_train_config_resolve(&c);
    EXPECT(c.warmup_steps == 30 && c.lr_decay_steps == 300, "lr_decay_steps 300: warmup %lld", (long long)c.warmup_steps);
    qkt_train_run rd = resolved_default();
    rd.tc.lr_decay_steps = 10, rd.tc.warmup_steps = 11;
    expect_validate(&rd, "lr_decay_steps 10", __LINE__);
    /* unresolved, the auto fields are refused */
    qkt_train_run_default(&r);
    expect_validate(&r, "min_lr", __LINE__);
}

static void test_bounds(void) {
    /* each int field (f[i] below) at its limit, one past it, and at 0 */
    struct {
        int max;
        const char *field;
    } ints[] = {{QKT_TRAIN_MAX_N_LAYER, "n_layer"},
                {QKT_TRAIN_MAX_BLOCK_SIZE, "block_size"},
                {QKT_TRAIN_MAX_BATCH_SIZE, "batch_size"},
                {QKT_TRAIN_MAX_EVAL_BATCHES, "eval_batches"}};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        qkt_train_run r = resolved_default();
        int *f[] = {&r.tc.model.n_layer, &r.tc.model.block_size, &r.tc.batch_size, &r.eval_batches};
        if (i == 2) r.tc.model.block_size = 1; /* batch x block stays within QKT_TRAIN_MAX_BATCH_TOKENS */
        *f[i] = ints[i].max;
        expect_validate(&r, NULL, __LINE__);
        *f[i] = ints[i].max + 1;
        expect_validate(&r, ints[i].field, __LINE__);
        *f[i] = 0;
        expect_validate(&r, ints[i].field, __LINE__);
    }
    qkt_train_run r = resolved_default();
    r.tc.model.n_head = QKT_TRAIN_MAX_N_HEAD, r.tc.model.n_embd = QKT_TRAIN_MAX_N_EMBD;
    expect_validate(&r, NULL, __LINE__);
    r.tc.model.n_head = 3, r.tc.model.n_embd = 128;
    expect_validate(&r, "n_head", __LINE__);
    r = resolved_default();
    r.tc.batch_size = QKT_TRAIN_MAX_BATCH_TOKENS / r.tc.model.block_size + 1;
    expect_validate(&r, "batch_size", __LINE__);
    r = resolved_default();
    r.tc.steps = QKT_TRAIN_MAX_STEPS, r.tc.warmup_steps = 0;
    expect_validate(&r, NULL, __LINE__);
    r.tc.steps = (int64_t)QKT_TRAIN_MAX_STEPS + 1;
    expect_validate(&r, "steps", __LINE__);
    r = resolved_default();
    r.tc.replicas = QKT_DP_MAX + 1;
    expect_validate(&r, "replicas", __LINE__);
    r = resolved_default();
    r.tc.optim = QKT_OPTIM_ADAM;
    expect_validate(&r, "adamw", __LINE__);
    r.tc.optim = (qkt_optim_kind)7;
    expect_validate(&r, "optim", __LINE__);
}

/* The trainer resolves the auto fields itself and refuses a config the validator refuses. */
static void test_trainer_init(void) {
    qkt_train_config c = qkt_train_config_default();
    c.data = "mqar:n_pairs=4,n_queries=4";
    c.model.n_layer = 1, c.model.n_head = 2, c.model.n_embd = 16, c.model.block_size = 32, c.batch_size = 4, c.steps = 30;
    qkt_trainer t;
    qkt_err err = {{0}};
    EXPECT(qkt_trainer_init(&t, &c, &err) == 0, "%s", err.msg);
    EXPECT(t.cfg.min_lr == c.lr / 10 && t.cfg.warmup_steps == 3 && t.sched.warmup_steps == 3, "trainer: min_lr %g, warmup %lld",
           t.cfg.min_lr, (long long)t.cfg.warmup_steps);
    EXPECT(t.sched.total_steps == 30, "schedule over %lld steps, want 30", (long long)t.sched.total_steps);
    qkt_trainer_free(&t);
    c.lr_decay_steps = 20; /* the schedule's length, not the run's */
    EXPECT(qkt_trainer_init(&t, &c, &err) == 0 && t.sched.total_steps == 20 && t.sched.warmup_steps == 2, "%s: %lld", err.msg,
           (long long)t.sched.total_steps);
    qkt_trainer_free(&t);
    c.lr_decay_steps = QKT_TRAIN_AUTO;
    c.model.n_layer = QKT_TRAIN_MAX_N_LAYER + 1;
    EXPECT(qkt_trainer_init(&t, &c, &err) == -1 && strstr(err.msg, "n_layer"), "'%s'", err.msg);
    qkt_trainer_free(&t);
}

/* A C caller's bad field is named as the struct field it set, after the call it made;
 * under QKT_NAMES_FLAGS (the qkt program) as the flag, with no call. */
static void test_names(void) {
    qkt_train_config c = qkt_train_config_default();
    c.data = "mqar:n_pairs=4,n_queries=4";
    c.model.n_embd = 0;
    qkt_trainer t;
    qkt_err err = {{0}};
    EXPECT(qkt_trainer_init(&t, &c, &err) == -1 && !strcmp(err.msg, "qkt_trainer_init: n_embd 0: expected an integer in [1, 65536]"),
           "'%s'", err.msg);
    c.model.n_embd = 30, c.model.n_head = 4;
    qkt_train_config_resolve(&c);
    EXPECT(qkt_train_config_validate(&c, &err) == -1 &&
               !strcmp(err.msg, "qkt_train_config_validate: n_embd 30 is not divisible by n_head 4"), "'%s'", err.msg);
    c = qkt_train_config_default();
    c.data = "mqar:n_pairs=4,n_queries=4";
    c.steps = 10, c.warmup_steps = 11;
    EXPECT(qkt_trainer_init(&t, &c, &err) == -1 && !strcmp(err.msg, "qkt_trainer_init: warmup_steps 11: expected an integer in [0, lr_decay_steps 10]"),
           "'%s'", err.msg);
    /* a warmup longer than the run (resumed to fewer steps) is a schedule, not an error */
    c.lr_decay_steps = 20, c.warmup_steps = 15;
    EXPECT(qkt_trainer_init(&t, &c, &err) == 0, "warmup 15 of 10 steps, decay over 20: '%s'", err.msg);
    qkt_trainer_free(&t);
    qkt_train_run r = resolved_default();
    r.tc.batch_size = 4, r.tc.replicas = 5;
    qkt_session s;
    EXPECT(qkt_session_open(&s, &r, "unused_dir", false, &err) == QKT_SESSION_ERR_CONFIG &&
               !strcmp(err.msg, "qkt_session_open: replicas 5: expected an integer in [1, 64] and at most batch_size 4"), "'%s'", err.msg);
    qkt_session_close(&s);
    EXPECT(qkt_set_names(QKT_NAMES_FLAGS) == QKT_NAMES_FIELDS, "the default names are not the fields'");
    c = qkt_train_config_default();
    c.model.n_embd = 0;
    EXPECT(qkt_trainer_init(&t, &c, &err) == -1 && !strcmp(err.msg, "--n-embd 0: expected an integer in [1, 65536]"), "flags: '%s'", err.msg);
    EXPECT(qkt_session_open(&s, &r, "unused_dir", false, &err) == QKT_SESSION_ERR_CONFIG &&
               !strcmp(err.msg, "--replicas 5: expected an integer in [1, 64] and at most --batch-size 4"), "flags: '%s'", err.msg);
    qkt_session_close(&s);
    qkt_set_names(QKT_NAMES_FIELDS);
}

static void test_json(void) {
    qkt_train_run r = resolved_default(), back;
    r.tc.steps = 77, r.tc.warmup_steps = 7, r.tc.seed = 18446744073709551615ull, r.tc.lr = 0.1 + 0.2, r.tc.min_lr = 0.01;
    char *a = qkt_train_run_json(&r);
    qkt_err err = {{0}};
    EXPECT(qkt_train_run_parse(a, strlen(a), "a.json", &back, &err) == 0, "%s", err.msg);
    char *b = qkt_train_run_json(&back);
    EXPECT(!strcmp(a, b), "round trip:\n%s\nvs\n%s", a, b);
    EXPECT(back.tc.data == back.data, "tc.data does not point at data[]");
    free(a), free(b);
    /* bounds come from the validator, with the file name first and the key it holds */
    static const char *const bad[][2] = {{"\"n_layer\":\t4", "\"n_layer\":\t1025"}, {"\"steps\":\t77", "\"steps\":\t0"},
                                         {"\"eval_batches\":\t20", "\"eval_batches\":\t1048577"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *s = qkt_train_run_json(&r), *at = strstr(s, bad[i][0]);
        EXPECT(at != NULL, "%s not in the JSON", bad[i][0]);
        if (at) {
            char buf[8192];
            snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - s), s, bad[i][1], at + strlen(bad[i][0]));
            char want[64];
            snprintf(want, sizeof want, "b.json: %.*s ", (int)(strchr(bad[i][1] + 1, '"') - bad[i][1] - 1), bad[i][1] + 1);
            EXPECT(qkt_train_run_parse(buf, strlen(buf), "b.json", &back, &err) == -1 && !strncmp(err.msg, want, strlen(want)),
                   "%s: '%s', expected '%s...'", bad[i][1], err.msg, want);
        }
        free(s);
    }
}

/* log.csv cut to a step: what goes is said (rows after it, a torn last line), a bad
 * row among those kept is an error naming the file and the line, nothing is dropped silently. */
static void test_log_truncate(void) {
    const char *dir = qkt_test_tmpdir("logcut");
    const char *p = qkt_test_path(dir, "log.csv");
    qkt_err err = {{0}};
    qkt_log_cut cut;
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", QKT_TRAIN_LOG_HEADER);
    for (int s = 0; s <= 6; s++) qkt_buf_printf(&b, "%d,1,2,3,,,4,5\n", s);
    qkt_buf_printf(&b, "7,1,2");
    EXPECT(qkt_write_atomic(p, b.s, b.n, &err) == 0, "%s", err.msg);
    EXPECT(qkt_train_log_truncate(p, 4, &cut, &err) == 0 && cut.last_kept == 4 && cut.dropped == 2 && cut.dropped_first == 5 && cut.torn,
           "cut: %s; kept to %lld, dropped %lld from %lld, torn %d", err.msg, (long long)cut.last_kept, (long long)cut.dropped,
           (long long)cut.dropped_first, cut.torn);
    char *s = qkt_test_read_file(p, NULL);
    EXPECT(s && strstr(s, "\n4,1,2,3,,,4,5\n") && !strstr(s, "\n5,"), "after the cut: %s", s ? s : "");
    free(s);
    /* a garbage row among the kept ones: refused, the file untouched */
    b.n = 0;
    qkt_buf_printf(&b, "%s0,1,2,3,,,4,5\n1,1,2,3,,,4,5\ngarbage\n3,1,2,3,,,4,5\n", QKT_TRAIN_LOG_HEADER);
    EXPECT(qkt_write_atomic(p, b.s, b.n, &err) == 0, "%s", err.msg);
    EXPECT(qkt_train_log_truncate(p, 3, &cut, &err) == -1 && strstr(err.msg, "log.csv line 4 is not a log row"), "%s", err.msg);
    s = qkt_test_read_file(p, NULL);
    EXPECT(s && !strcmp(s, b.s), "a refused cut changed the file");
    free(s);
    /* a gap in the steps is refused too; past the cut anything goes */
    b.n = 0;
    qkt_buf_printf(&b, "%s0,1,2,3,,,4,5\n2,1,2,3,,,4,5\n", QKT_TRAIN_LOG_HEADER);
    EXPECT(qkt_write_atomic(p, b.s, b.n, &err) == 0, "%s", err.msg);
    EXPECT(qkt_train_log_truncate(p, 3, &cut, &err) == -1 && strstr(err.msg, "step 2 after step 0"), "%s", err.msg);
    EXPECT(qkt_train_log_truncate(p, 0, &cut, &err) == 0 && cut.last_kept == 0 && cut.dropped == 1, "%s", err.msg);
    qkt_buf_free(&b);
}

/* One damaged byte in a row before the cut (a NUL, 0xff, '\r', a 1 MB number, a letter, a space):
 * an error naming the file and the line, quoting that line only (no byte of the next
 * one), and the file untouched: never "a torn last line" and rows dropped after it. */
static void test_log_damage(void) {
    const char *dir = qkt_test_tmpdir("logdamage");
    const char *p = qkt_test_path(dir, "log.csv");
    static const char *const kinds[] = {"nul", "0xff", "cr", "huge", "letter", "space"};
    for (int k = 0; k < 6; k++) {
        qkt_buf b = {0};
        qkt_buf_printf(&b, "%s0,,,,2.5,0.1,,0.012\n", QKT_TRAIN_LOG_HEADER);
        size_t row5 = 0;
        for (int s = 1; s <= 20; s++) {
            if (s == 5) row5 = b.n;
            qkt_buf_printf(&b, "%d,2.25,0.003,-nan,%s,31.5,0.250\n", s, s % 7 ? "," : "inf,0.25");
        }
        if (k == 0) b.s[row5 + 4] = 0;
        if (k == 1) b.s[row5 + 4] = (char)0xff;
        if (k == 2) b.s[row5 + 4] = '\r';
        if (k == 4) b.s[row5 + 4] = 'x';
        if (k == 5) b.s[row5 + 2] = ' ';
        if (k == 3) { /* a 1 MB number in the loss column of row 5 */
            qkt_buf c = {0};
            qkt_buf_printf(&c, "%.*s", (int)(row5 + 2), b.s);
            for (int i = 0; i < 1 << 20; i++) qkt_buf_printf(&c, "1");
            qkt_buf_printf(&c, "%s", b.s + row5 + 2);
            qkt_buf_free(&b);
            b = c;
        }
        qkt_err err = {{0}};
        qkt_log_cut cut;
        EXPECT(qkt_write_atomic(p, b.s, b.n, &err) == 0, "%s", err.msg);
        EXPECT(qkt_train_log_truncate(p, 20, &cut, &err) == -1 && strstr(err.msg, "log.csv line 7 is not a log row") &&
                   strstr(err.msg, "nothing was changed") && !strstr(err.msg, "6,2.25") && !strchr(err.msg, '\n') &&
                   strlen(err.msg) < 400,
               "%s: '%s'", kinds[k], err.msg);
        size_t n = 0;
        char *s = qkt_test_read_file(p, &n);
        EXPECT(s && n == b.n && !memcmp(s, b.s, n), "%s: a refused cut changed the file", kinds[k]);
        free(s);
        /* the same damage past the cut: discarded with the rows it is among */
        EXPECT(qkt_train_log_truncate(p, 3, &cut, &err) == 0 && cut.last_kept == 3 && cut.dropped == 17 && !cut.torn,
               "%s past the cut: %s; kept to %lld, dropped %lld", kinds[k], err.msg, (long long)cut.last_kept, (long long)cut.dropped);
        qkt_buf_free(&b);
    }
}

/* train.json with a key twice, or text after its closing brace: refused naming the file (and the key). */
static void test_json_strict(void) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    qkt_train_config_resolve(&r.tc);
    char *s = qkt_train_run_json(&r);
    qkt_err err = {{0}};
    EXPECT(qkt_train_run_parse(s, strlen(s), "t.json", &r, &err) == 0, "%s", err.msg);
    char buf[8192];
    char *at = strstr(s, "\"steps\"");
    snprintf(buf, sizeof buf, "%.*s\"steps\": 60, %s", (int)(at - s), s, at);
    EXPECT(qkt_train_run_parse(buf, strlen(buf), "t.json", &r, &err) == -1 && !strcmp(err.msg, "t.json: key 'steps' appears twice"),
           "'%s'", err.msg);
    snprintf(buf, sizeof buf, "%s\n{}", s);
    EXPECT(qkt_train_run_parse(buf, strlen(buf), "t.json", &r, &err) == -1 && strstr(err.msg, "t.json: text after the JSON value"),
           "'%s'", err.msg);
    snprintf(buf, sizeof buf, "%s \n\t", s); /* white space after it is fine */
    EXPECT(qkt_train_run_parse(buf, strlen(buf), "t.json", &r, &err) == 0, "%s", err.msg);
    free(s);
}

int main(void) {
    test_log_truncate();
    test_log_damage();
    test_json_strict();
    test_defaults();
    test_bounds();
    test_trainer_init();
    test_names();
    test_json();
    return qkt_test_finish();
}
