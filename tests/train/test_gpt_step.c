/* qkt step's library half: reading a batch file (and refusing a bad one), the loss and
 * grads of one forward and backward, the gradient file, and one fresh optimizer step. */
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_test.h"

static char g_dir[256];
static const char *path_of(const char *name) { return qkt_test_path(g_dir, name); }

static void make(qkt_gpt *g, uint64_t seed) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 13, c.block_size = 9, c.n_layer = 2, c.n_head = 3, c.n_embd = 12;
    qkt_err err = {{0}};
    if (qkt_gpt_init(g, &c, &err)) {
        fprintf(stderr, "init: %s\n", err.msg);
        exit(1);
    }
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    qkt_gpt_init_weights(g, &r);
}

static void write_batch(const char *path, qkt_st_dtype dt, const void *idx, const void *tgt, int B, int T) {
    qkt_st_write w[] = {{"idx", dt, 2, {B, T}, idx}, {"targets", dt, 2, {B, T}, tgt}};
    qkt_err err = {{0}};
    EXPECT(qkt_safetensors_write(path, w, 2, NULL, 0, &err) == 0, "%s", err.msg);
}

enum { B = 2, T = 7, N = B * T };
static int32_t g_idx[N], g_tgt[N];

static void test_batch_read(const qkt_gpt_config *c) {
    const char *f = path_of("batch.safetensors");
    qkt_err err = {{0}};
    int32_t *idx, *tgt;
    int b, t;
    int64_t i64[N], t64[N];
    for (int i = 0; i < N; i++) i64[i] = g_idx[i], t64[i] = g_tgt[i];
    write_batch(f, QKT_ST_I64, i64, t64, B, T); /* torch's int64 reads as well */
    EXPECT(qkt_gpt_batch_read(f, c, &idx, &tgt, &b, &t, &err) == 0, "read: %s", err.msg);
    EXPECT(b == B && t == T && !memcmp(idx, g_idx, sizeof g_idx) && !memcmp(tgt, g_tgt, sizeof g_tgt), "batch read back wrong");
    free(idx), free(tgt);

    int32_t bad[N];
    memcpy(bad, g_idx, sizeof bad);
    bad[9] = 13;
    write_batch(f, QKT_ST_I32, bad, g_tgt, B, T);
    EXPECT(qkt_gpt_batch_read(f, c, &idx, &tgt, &b, &t, &err) == -1 && !idx && !tgt &&
               strstr(err.msg, "idx[1][2] = 13 is outside the vocabulary [0, 13)") && strstr(err.msg, f),
           "bad token: %s", err.msg);
    memcpy(bad, g_tgt, sizeof bad);
    bad[3] = -2;
    write_batch(f, QKT_ST_I32, g_idx, bad, B, T);
    EXPECT(qkt_gpt_batch_read(f, c, &idx, &tgt, &b, &t, &err) == -1 && strstr(err.msg, "targets[0][3] = -2"), "bad target: %s",
           err.msg);
    int32_t long_row[10] = {0};
    write_batch(f, QKT_ST_I32, long_row, long_row, 1, 10);
    EXPECT(qkt_gpt_batch_read(f, c, &idx, &tgt, &b, &t, &err) == -1 && strstr(err.msg, "exceeds the model's block_size 9"),
           "too long: %s", err.msg);
    qkt_st_write only[] = {{"idx", QKT_ST_I32, 2, {B, T}, g_idx}};
    EXPECT(qkt_safetensors_write(f, only, 1, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_gpt_batch_read(f, c, &idx, &tgt, &b, &t, &err) == -1 && strstr(err.msg, "no tensor 'targets'"), "no targets: %s",
           err.msg);
}

static void test_grads(void) {
    qkt_gpt g, ref;
    make(&g, 5), make(&ref, 5);
    qkt_ctx ctx, rctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_ctx_init(&rctx, 1 << 20, 1);
    for (int64_t i = 0; i < g.params.size; i++) g.params.grad[i] = 1; /* stale grads are zeroed first */
    int n = -1;
    qkt_real loss = qkt_gpt_loss_grads(&ctx, &g, g_idx, g_tgt, B, T, &n);
    qkt_tensor *rl = qkt_gpt_forward(&rctx, &ref, g_idx, g_tgt, B, T, NULL, NULL);
    qkt_params_zero_grad(&ref.params);
    qkt_backward(&rctx, rl, NULL);
    int counted = 0;
    for (int i = 0; i < N; i++) counted += g_tgt[i] != -1;
    EXPECT(n == counted && loss == rl->data[0], "loss %.9g over %d, reference %.9g over %d", (double)loss, n, (double)rl->data[0],
           counted);
    EXPECT(!memcmp(g.params.grad, ref.params.grad, (size_t)g.params.size * sizeof(qkt_real)), "grads differ from the reference");

    /* the gradient file: loss, every grad under its name, the config and n_counted */
    const char *f = path_of("grads.safetensors");
    qkt_err err = {{0}};
    EXPECT(qkt_gpt_grads_write(f, &g, loss, n, &err) == 0, "write: %s", err.msg);
    qkt_safetensors st;
    EXPECT(qkt_safetensors_read(f, &st, &err) == 0, "%s", err.msg);
    const qkt_st_tensor *lt = qkt_safetensors_find(&st, "loss");
    qkt_real l = 0;
    EXPECT(lt && lt->ndim == 0 && qkt_st_tensor_to_real(lt, &l, 1, f, &err) == 0 && l == loss, "scalar loss");
    char want[16];
    snprintf(want, sizeof want, "%d", n);
    const char *nc = qkt_safetensors_meta(&st, "n_counted"), *vs = qkt_safetensors_meta(&st, "vocab_size");
    EXPECT(nc && !strcmp(nc, want) && vs && !strcmp(vs, "13") && st.n == g.params.n + 1, "metadata n_counted %s, vocab_size %s",
           nc ? nc : "-", vs ? vs : "-");
    for (int i = 0; i < g.params.n; i++) {
        const qkt_tensor *t = g.params.t[i];
        const qkt_st_tensor *s = qkt_safetensors_find(&st, t->name);
        EXPECT(s && s->numel == t->size && s->ndim == t->ndim, "gradient %s missing or misshapen", t->name);
        if (!s || s->numel != t->size) continue;
        qkt_real *gv = malloc((size_t)t->size * sizeof *gv);
        qkt_st_tensor_to_real(s, gv, t->size, f, &err);
        EXPECT(!memcmp(gv, t->grad, (size_t)t->size * sizeof *gv), "gradient %s differs", t->name);
        free(gv);
    }
    qkt_safetensors_free(&st);

    /* one fresh AdamW step with clipping: the pre-clip norm, then torch's order of work */
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    double want_norm = qkt_grad_norm(&ref.params);
    double norm = qkt_gpt_update_once(&g, &oc, 1e-2, 0.5);
    qkt_clip_grad_norm(&ref.params, 0.5);
    qkt_optim opt;
    qkt_optim_init(&opt, &ref.params, &oc);
    qkt_optim_step(&opt, 1e-2);
    qkt_optim_free(&opt);
    EXPECT(norm == want_norm && norm > 0.5, "norm %.9g, expected %.9g", norm, want_norm);
    EXPECT(!memcmp(g.params.data, ref.params.data, (size_t)g.params.size * sizeof(qkt_real)), "update differs");

    /* no target counts: loss 0 and zero grads */
    int32_t none[N];
    for (int i = 0; i < N; i++) none[i] = -1;
    loss = qkt_gpt_loss_grads(&ctx, &g, g_idx, none, B, T, &n);
    int nonzero = 0;
    for (int64_t i = 0; i < g.params.size; i++) nonzero += g.params.grad[i] != 0;
    EXPECT(n == 0 && loss == 0 && nonzero == 0, "no counted target: loss %g, %d nonzero grads", (double)loss, nonzero);
    qkt_ctx_free(&ctx), qkt_ctx_free(&rctx);
    qkt_gpt_free(&g), qkt_gpt_free(&ref);
}

int main(void) {
    qkt_set_threads(1);
    snprintf(g_dir, sizeof g_dir, "%s", qkt_test_tmpdir("gptstep"));
    qkt_rng r;
    qkt_rng_seed(&r, 9);
    for (int i = 0; i < N; i++) g_idx[i] = (int32_t)qkt_rng_below(&r, 13), g_tgt[i] = i % 4 ? (int32_t)qkt_rng_below(&r, 13) : -1;
    qkt_gpt g;
    make(&g, 1);
    test_batch_read(&g.cfg);
    qkt_gpt_free(&g);
    test_grads();
    return qkt_test_finish();
}
