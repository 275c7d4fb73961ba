/* GPT checkpoints (config in __metadata__, refusal of another config) and the
 * `qkt step` command: flags, batch validation, and gradients equal to the in-process
 * backward. */
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_test.h"

static char g_dir[256];
static const char *path_of(const char *name) { return qkt_test_path(g_dir, name); }

static qkt_gpt_config cfg_of(qkt_attn_scale s) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 13, c.block_size = 9, c.n_layer = 2, c.n_head = 3, c.n_embd = 12, c.attn_scale = s;
    c.attn_temp = 0.1 + 0.2, c.ln_eps = 3e-5; /* reals that need all 17 digits */
    return c;
}

static void make(qkt_gpt *g, const qkt_gpt_config *c, uint64_t seed) {
    qkt_err err = {{0}};
    if (qkt_gpt_init(g, c, &err)) {
        fprintf(stderr, "init: %s\n", err.msg);
        exit(1);
    }
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    qkt_gpt_init_weights(g, &r);
    for (int64_t i = 0; i < g->params.size; i++) g->params.data[i] += (qkt_real)(0.01 * (double)(i % 7)); /* biases too */
}

static bool same_cfg(const qkt_gpt_config *a, const qkt_gpt_config *b) {
    return a->vocab_size == b->vocab_size && a->block_size == b->block_size && a->n_layer == b->n_layer &&
           a->n_head == b->n_head && a->n_embd == b->n_embd && a->dropout == b->dropout && a->bias == b->bias &&
           a->attn_scale == b->attn_scale && a->attn_temp == b->attn_temp && a->qk_init_mult == b->qk_init_mult &&
           a->ln_eps == b->ln_eps;
}

static void test_round_trip(void) {
    qkt_attn_scale pw;
    qkt_err perr = {{0}};
    EXPECT(qkt_attn_scale_parse("power:0.75", &pw, &perr) == 0, "%s", perr.msg);
    /* every built-in, then a family member named at run time */
    for (int k = 0; k <= QKT_ATTN_SCALE_COUNT; k++) {
        qkt_attn_scale s = k == QKT_ATTN_SCALE_COUNT ? pw : (qkt_attn_scale)k;
        qkt_gpt_config c = cfg_of(s);
        c.bias = s != 3, c.dropout = 0.25, c.qk_init_mult = 2;
        qkt_gpt a, b, o;
        make(&a, &c, 1);
        make(&b, &c, 2);
        qkt_err err = {{0}};
        const char *f = path_of("rt.safetensors");
        qkt_st_meta extra_meta[] = {{"step", "12"}};
        EXPECT(qkt_gpt_save(f, &a, extra_meta, 1, NULL, 0, &err) == 0, "save: %s", err.msg);
        EXPECT(qkt_gpt_load(f, &b, NULL, 0, &err) == 0, "load %s: %s", qkt_attn_scale_name(s), err.msg);
        EXPECT(!memcmp(a.params.data, b.params.data, (size_t)a.params.size * sizeof(qkt_real)), "%s: load not exact",
               qkt_attn_scale_name(s));
        EXPECT(qkt_gpt_open(f, &o, &err) == 0, "open: %s", err.msg);
        EXPECT(same_cfg(&o.cfg, &a.cfg), "%s: config did not round-trip", qkt_attn_scale_name(s));
        EXPECT(o.params.size == a.params.size &&
                   !memcmp(o.params.data, a.params.data, (size_t)a.params.size * sizeof(qkt_real)),
               "open: weights differ");
        qkt_checkpoint ck;
        EXPECT(qkt_checkpoint_open(f, &ck, &err) == 0, "%s", err.msg);
        EXPECT(!strcmp(qkt_checkpoint_meta(&ck, "attn_scale"), qkt_attn_scale_name(s)) &&
                   !strcmp(qkt_checkpoint_meta(&ck, "n_embd"), "12") && !strcmp(qkt_checkpoint_meta(&ck, "step"), "12"),
               "metadata strings");
        qkt_checkpoint_close(&ck);
        qkt_gpt_free(&a), qkt_gpt_free(&b), qkt_gpt_free(&o);
    }
}

/* A model of another config refuses the file with one line naming the field. */
static void expect_refused(const char *file, qkt_gpt_config c, const char *what) {
    qkt_gpt g;
    make(&g, &c, 3);
    qkt_real *snap = malloc((size_t)g.params.size * sizeof *snap);
    memcpy(snap, g.params.data, (size_t)g.params.size * sizeof *snap);
    qkt_err err = {{0}};
    int rc = qkt_gpt_load(file, &g, NULL, 0, &err);
    EXPECT(rc == -1 && strstr(err.msg, what) && !strchr(err.msg, '\n'), "%s: rc %d, '%s'", what, rc, err.msg);
    EXPECT(!memcmp(snap, g.params.data, (size_t)g.params.size * sizeof *snap), "%s: a refused load changed the model", what);
    free(snap);
    qkt_gpt_free(&g);
}

static void test_refusals(void) {
    qkt_gpt_config c = cfg_of(QKT_ATTN_SQRT_DK), d;
    qkt_gpt a;
    make(&a, &c, 1);
    qkt_err err = {{0}};
    const char *f = path_of("base.safetensors");
    EXPECT(qkt_gpt_save(f, &a, NULL, 0, NULL, 0, &err) == 0, "save: %s", err.msg);
    d = c, d.n_layer = 3;
    expect_refused(f, d, "n_layer=2, this model has 3");
    d = c, d.n_embd = 24;
    expect_refused(f, d, "n_embd=12, this model has 24");
    d = c, d.vocab_size = 14;
    expect_refused(f, d, "vocab_size");
    d = c, d.block_size = 8;
    expect_refused(f, d, "block_size");
    d = c, d.n_head = 4;
    expect_refused(f, d, "n_head");
    d = c, d.attn_scale = QKT_ATTN_NONE;
    expect_refused(f, d, "attn_scale=sqrt_dk, this model has none");
    d = c, d.attn_temp = 0.3; /* not bit-equal to 0.1 + 0.2 */
    expect_refused(f, d, "attn_temp");
    d = c, d.bias = false;
    expect_refused(f, d, "bias=true");
    d = c, d.ln_eps = 1e-5;
    expect_refused(f, d, "ln_eps");
    /* A file without the config: every model refuses it, naming the missing key. */
    const char *raw = path_of("raw.safetensors");
    EXPECT(qkt_checkpoint_save(raw, &a.params, NULL, 0, NULL, 0, &err) == 0, "%s", err.msg);
    expect_refused(raw, c, "no metadata 'vocab_size'");
    qkt_gpt o;
    EXPECT(qkt_gpt_open(raw, &o, &err) == -1 && strstr(err.msg, "vocab_size"), "open without config: %s", err.msg);
    /* A bad config value in the file. */
    qkt_st_meta bad[] = {{"vocab_size", "13"}, {"block_size", "9"}, {"n_layer", "2"}, {"n_head", "5"},
                         {"n_embd", "12"},     {"attn_scale", "sqrt_dk"}, {"attn_temp", "1"}};
    const char *bf = path_of("bad.safetensors");
    EXPECT(qkt_checkpoint_save(bf, &a.params, bad, 7, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_gpt_open(bf, &o, &err) == -1 && strstr(err.msg, "not divisible by n_head 5"), "bad config: %s", err.msg);
    bad[5].value = "sqrt";
    EXPECT(qkt_checkpoint_save(bf, &a.params, bad, 7, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_gpt_open(bf, &o, &err) == -1 && strstr(err.msg, "'sqrt'"), "bad scale name: %s", err.msg);
    bad[5].value = "my_variant"; /* a program's variant, not registered in this one */
    EXPECT(qkt_checkpoint_save(bf, &a.params, bad, 7, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_gpt_open(bf, &o, &err) == -1 && strstr(err.msg, "'my_variant'") && strstr(err.msg, "qkt_attn_variant_register"),
           "unregistered scale name: %s", err.msg);
    EXPECT(qkt_gpt_open(path_of("missing.safetensors"), &o, &err) == -1 && strstr(err.msg, "missing.safetensors"),
           "missing file: %s", err.msg);
    qkt_gpt_free(&a);
}

/* ---------------------------------------------------------------- qkt step */
static int run(const char *args, char *out, size_t n) { return qkt_test_qkt(NULL, NULL, out, n, "step %s", args); }

static void write_batch(const char *path, const int32_t *idx, const int32_t *tgt, int B, int T) {
    qkt_st_write w[] = {{"idx", QKT_ST_I32, 2, {B, T}, idx}, {"targets", QKT_ST_I32, 2, {B, T}, tgt}};
    qkt_err err = {{0}};
    EXPECT(qkt_safetensors_write(path, w, 2, NULL, 0, &err) == 0, "%s", err.msg);
}

static void test_step(void) {
    char out[4096], args[2048];
    EXPECT(run("--help", out, sizeof out) == 0 && strstr(out, "--ckpt"), "--help: %s", out);
    EXPECT(run("--bogus 1", out, sizeof out) == 2 && strstr(out, "--bogus"), "bad flag: %s", out);
    EXPECT(run("--ckpt a --batch b", out, sizeof out) == 2 && strstr(out, "--out is required"), "missing flag: %s", out);

    qkt_gpt_config c = cfg_of(QKT_ATTN_LEARNED);
    qkt_gpt g;
    make(&g, &c, 5);
    qkt_err err = {{0}};
    const char *model = path_of("m.safetensors"), *batch = path_of("b.safetensors"), *grads = path_of("g.safetensors");
    EXPECT(qkt_gpt_save(model, &g, NULL, 0, NULL, 0, &err) == 0, "%s", err.msg);
    int B = 2, T = 7;
    int32_t idx[14], tgt[14];
    qkt_rng r;
    qkt_rng_seed(&r, 9);
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)qkt_rng_below(&r, 13), tgt[i] = i % 4 ? (int32_t)qkt_rng_below(&r, 13) : -1;
    write_batch(batch, idx, tgt, B, T);
    snprintf(args, sizeof args, "--ckpt %s --batch %s --out %s --threads 1", model, batch, grads);
    EXPECT(run(args, out, sizeof out) == 0, "step failed: %s", out);

    /* in-process reference */
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_tensor *loss = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, NULL);
    qkt_params_zero_grad(&g.params);
    qkt_backward(&ctx, loss, NULL);
    qkt_safetensors st;
    EXPECT(qkt_safetensors_read(grads, &st, &err) == 0, "%s", err.msg);
    const qkt_st_tensor *lt = qkt_safetensors_find(&st, "loss");
    qkt_real l = 0;
    EXPECT(lt && lt->ndim == 0 && qkt_st_tensor_to_real(lt, &l, 1, grads, &err) == 0, "no scalar loss");
    EXPECT(l == loss->data[0], "loss %g, in-process %g", (double)l, (double)loss->data[0]);
    EXPECT(st.n == g.params.n + 1, "%d tensors in the gradient file", st.n);
    for (int i = 0; i < g.params.n; i++) {
        qkt_tensor *t = g.params.t[i];
        const qkt_st_tensor *s = qkt_safetensors_find(&st, t->name);
        EXPECT(s && s->numel == t->size && s->ndim == t->ndim, "gradient %s missing or misshapen", t->name);
        if (!s || s->numel != t->size) continue;
        qkt_real *gv = malloc((size_t)t->size * sizeof *gv);
        qkt_st_tensor_to_real(s, gv, t->size, grads, &err);
        EXPECT(!memcmp(gv, t->grad, (size_t)t->size * sizeof *gv), "gradient %s differs from the in-process one", t->name);
        free(gv);
    }
    qkt_safetensors_free(&st);

    /* unusable input files: one line naming the flag, exit 2 (like a bad flag) */
    int32_t bad_idx[14];
    memcpy(bad_idx, idx, sizeof idx);
    bad_idx[9] = 13;
    write_batch(batch, bad_idx, tgt, B, T);
    EXPECT(run(args, out, sizeof out) == 2 && strstr(out, "idx[1][2] = 13 is outside the vocabulary [0, 13)") &&
               !strchr(strchr(out, '\n') + 1, '\n'), "bad token: %s", out);
    int32_t bad_t[14];
    memcpy(bad_t, tgt, sizeof tgt);
    bad_t[3] = -2;
    write_batch(batch, idx, bad_t, B, T);
    EXPECT(run(args, out, sizeof out) == 2 && strstr(out, "targets[0][3] = -2"), "bad target: %s", out);
    int32_t long_idx[10] = {0}, long_t[10] = {0};
    write_batch(batch, long_idx, long_t, 1, 10);
    EXPECT(run(args, out, sizeof out) == 2 && strstr(out, "exceeds the model's block_size 9"), "too long: %s", out);
    qkt_st_write only[] = {{"idx", QKT_ST_I32, 2, {B, T}, idx}};
    EXPECT(qkt_safetensors_write(batch, only, 1, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(run(args, out, sizeof out) == 2 && strstr(out, "--batch: ") && strstr(out, "no tensor 'targets'"), "no targets: %s", out);
    snprintf(args, sizeof args, "--ckpt %s/nope.safetensors --batch %s --out %s", g_dir, batch, grads);
    EXPECT(run(args, out, sizeof out) == 2 && strstr(out, "--ckpt: ") && strstr(out, "nope.safetensors"), "missing ckpt: %s", out);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s", qkt_test_tmpdir("gptio"));
    test_round_trip();
    test_refusals();
    test_step();
    return qkt_test_finish();
}
