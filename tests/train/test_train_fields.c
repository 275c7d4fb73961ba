/* The field table (train/train_fields.def) is consistent and its functions round-trip:
 * names, flags, aliases and metadata positions are unique (positions 1..N without gaps),
 * every field's value prints and reads back to the same bytes, text out of bounds or of
 * the wrong kind is refused in one line naming the field, qkt_train_config_default has
 * the table's defaults, and the fields a resumed run may change are the four
 * qkt_session_open lets change. */
#include <stdlib.h>
#include <string.h>

#include "qkt_train_fields.h"
#include "qkt_test.h"

static void test_unique(void) {
    int n = qkt_train_field_count(), max_meta = 0, n_meta = 0;
    EXPECT(n > 20, "%d fields", n);
    for (int i = 0; i < n; i++) {
        const qkt_train_field *a = qkt_train_field_at(i);
        EXPECT(qkt_train_field_find(a->name) == a, "find(%s)", a->name);
        if (a->flag) EXPECT(qkt_train_field_find(a->flag) == a, "find(--%s)", a->flag);
        EXPECT(a->help && a->help[0] && !strchr(a->help, '|') && !strchr(a->help, '\n'), "%s: help '%s'", a->name, a->help);
        if (a->meta) n_meta++, max_meta = a->meta > max_meta ? a->meta : max_meta;
        for (int j = i + 1; j < n; j++) {
            const qkt_train_field *b = qkt_train_field_at(j);
            EXPECT(strcmp(a->name, b->name), "two rows named %s", a->name);
            EXPECT(!a->flag || !b->flag || strcmp(a->flag, b->flag), "two rows with --%s", a->flag);
            EXPECT(!a->alias || !b->alias || strcmp(a->alias, b->alias), "two rows with alias %s", a->alias);
            EXPECT(!a->meta || a->meta != b->meta, "%s and %s at metadata position %d", a->name, b->name, a->meta);
            EXPECT(!a->ab || !b->ab || (strcmp(a->ab, b->ab) && a->ab_order != b->ab_order), "%s and %s: config.json key", a->name, b->name);
        }
    }
    EXPECT(n_meta == max_meta, "metadata positions 1..%d with gaps (%d fields)", max_meta, n_meta);
    EXPECT(qkt_train_field_at(n) == NULL && qkt_train_field_at(-1) == NULL && !qkt_train_field_find("nosuch"), "out of the table");
}

static void test_round_trip(void) {
    qkt_train_run r, back;
    qkt_train_run_default(&r);
    qkt_train_run_default(&back);
    r.tc.model.norm = QKT_NORM_RMSNORM, r.tc.lr = 0.1 + 0.2, r.tc.seed = 18446744073709551615ull, r.tc.model.bias = false;
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        char text[128], again[128];
        qkt_train_field_format(qkt_train_field_ptr(f, &r), f, text, sizeof text);
        qkt_err err = {{0}};
        bool inside = qkt_train_field_check(qkt_train_field_ptr(f, &r), f, NULL, &err) == 0;
        if (!inside) continue; /* an auto field (-1) is outside its bounds until resolved */
        EXPECT(qkt_train_field_set(&back, f, text, &err) == 0, "%s '%s': %s", f->name, text, err.msg);
        qkt_train_field_format(qkt_train_field_ptr(f, &back), f, again, sizeof again);
        EXPECT(!strcmp(text, again), "%s: '%s' read back as '%s'", f->name, text, again);
    }
}

static void expect_refused(const char *name, const char *text) {
    qkt_train_run r;
    qkt_train_run_default(&r);
    qkt_err err = {{0}};
    const qkt_train_field *f = qkt_train_field_find(name);
    int rc = f ? qkt_train_field_set(&r, f, text, &err) : 0;
    EXPECT(rc == -1 && strstr(err.msg, name) && !strchr(err.msg, '\n'), "%s '%s': rc %d, '%s'", name, text, rc, err.msg);
}

static void test_refused(void) {
    expect_refused("n_layer", "0"), expect_refused("n_layer", "1025"), expect_refused("n_layer", "4x");
    expect_refused("steps", "-3"), expect_refused("seed", "-1"), expect_refused("dropout", "1");
    expect_refused("beta2", "nan"), expect_refused("lr", "0"), expect_refused("ln_eps", "0");
    expect_refused("norm", "batchnorm"), expect_refused("attn_scale", "cube"), expect_refused("bias", "maybe");
    expect_refused("data", "");
    qkt_err err = {{0}};
    const qkt_train_field *f = qkt_train_field_find("n_layer");
    int bad = 0;
    EXPECT(qkt_train_field_check(&bad, f, "--n-layer", &err) == -1 && strstr(err.msg, "--n-layer 0: expected an integer in [1, 1024]"),
           "check: '%s'", err.msg);
}

static void test_defaults(void) {
    qkt_train_config a = qkt_train_config_default(), b;
    memset(&b, 0, sizeof b);
    b.model = qkt_gpt_config_default();
    qkt_train_fields_default(&b);
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        void *pa = qkt_train_field_ptr_tc(f, &a), *pb = qkt_train_field_ptr_tc(f, &b);
        if (!pa) continue;
        char va[128], vb[128];
        qkt_train_field_format(pa, f, va, sizeof va), qkt_train_field_format(pb, f, vb, sizeof vb);
        EXPECT(!strcmp(va, vb), "%s: qkt_train_config_default has %s, the table %s", f->name, va, vb);
    }
    EXPECT(a.model.n_layer == 4 && a.steps == 2000 && a.seed == 1337 && a.min_lr == QKT_TRAIN_AUTO, "defaults");
    char resume[256] = "";
    for (int i = 0; i < qkt_train_field_count(); i++)
        if (qkt_train_field_at(i)->where & QKT_FIELD_RESUME) strcat(strcat(resume, " "), qkt_train_field_at(i)->name);
    EXPECT(!strcmp(resume, " steps lr_decay_steps eval_every eval_batches ckpt_every"), "may change on resume:%s", resume);
}

int main(void) {
    test_unique();
    test_round_trip();
    test_refused();
    test_defaults();
    return qkt_test_finish();
}
