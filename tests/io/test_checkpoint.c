/* Checkpoints over a qkt_params store: exact round trip of parameters, optimizer
 * moments and RNG; F32 <-> F64; every way a checkpoint can fail to fit the model
 * (each leaving the store untouched); config checks on the metadata; and a
 * resumed toy training run that is bit-identical to an uninterrupted one. */
#include <stdlib.h>
#include <string.h>

#include "qkt_safetensors.h"
#include "qkt_test.h"

static char g_dir[256];
static const char *path_of(const char *name) { return qkt_test_path(g_dir, name); }

/* A tiny model: w (4, 3) with decay, b (3), log_scale (2). */
static void make_params(qkt_params *p, int wrows) {
    qkt_params_init(p);
    qkt_params_add(p, "w", 2, (int[]){wrows, 3}, QKT_PARAM_DECAY);
    qkt_params_add(p, "b", 1, (int[]){3}, 0);
    qkt_params_add(p, "log_scale", 1, (int[]){2}, 0);
    qkt_params_finalize(p);
}

static void fill(qkt_params *p, uint64_t seed) {
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    for (int64_t i = 0; i < p->size; i++) p->data[i] = (qkt_real)qkt_rng_normal(&r);
}

static bool same_data(const qkt_params *a, const qkt_real *snap) {
    return !memcmp(a->data, snap, (size_t)a->size * sizeof(qkt_real));
}

/* ---------------------------------------------------------------- round trip */
static void test_round_trip(void) {
    qkt_params p, q;
    make_params(&p, 4);
    make_params(&q, 4);
    fill(&p, 1);
    qkt_real *m = malloc((size_t)p.size * sizeof *m), *v = malloc((size_t)p.size * sizeof *v);
    for (int64_t i = 0; i < p.size; i++) m[i] = (qkt_real)(0.001 * (double)i), v[i] = (qkt_real)(1e-8 * (double)(i + 1));
    qkt_rng rng;
    qkt_rng_seed(&rng, 77);
    qkt_rng_u64(&rng);
    qkt_st_meta meta[] = {{"n_layer", "4"}, {"attn_scale", "sqrt_dk"}, {"attn_temp", "0.5"}, {"step", "10"}};
    qkt_st_write extra[] = {{"optim.m", QKT_ST_REAL, 1, {p.size}, m},
                            {"optim.v", QKT_ST_REAL, 1, {p.size}, v},
                            {"rng.state", QKT_ST_U64, 1, {4}, rng.s}};
    qkt_err err = {{0}};
    const char *f = path_of("rt.safetensors");
    EXPECT(qkt_checkpoint_save(f, &p, meta, 4, extra, 3, &err) == 0, "%s", err.msg);

    qkt_real *m2 = calloc((size_t)p.size, sizeof *m2), *v2 = calloc((size_t)p.size, sizeof *v2);
    qkt_rng rng2 = {{0}};
    qkt_ckpt_slot slots[] = {{"optim.m", QKT_ST_REAL, 1, {q.size}, m2},
                             {"optim.v", QKT_ST_REAL, 1, {q.size}, v2},
                             {"rng.state", QKT_ST_U64, 1, {4}, rng2.s}};
    qkt_checkpoint ck;
    EXPECT(qkt_checkpoint_open(f, &ck, &err) == 0, "%s", err.msg);
    const qkt_st_tensor *w = qkt_safetensors_find(&ck.st, "w");
    EXPECT(w && w->dtype == QKT_ST_REAL && w->ndim == 2 && w->shape[0] == 4 && w->shape[1] == 3, "w stored as (4, 3)");
    EXPECT(qkt_checkpoint_restore(&ck, &q, slots, 3, 0, &err) == 0, "%s", err.msg);
    EXPECT(same_data(&q, p.data), "parameters differ after the round trip");
    EXPECT(!memcmp(m, m2, (size_t)p.size * sizeof *m) && !memcmp(v, v2, (size_t)p.size * sizeof *v), "moments differ");
    EXPECT(!memcmp(&rng, &rng2, sizeof rng), "RNG state differs");
    EXPECT(qkt_rng_u64(&rng) == qkt_rng_u64(&rng2), "RNG streams diverge");

    /* metadata: config checks */
    long long step = 0;
    EXPECT(qkt_checkpoint_meta_int(&ck, "step", &step, &err) == 0 && step == 10, "step %lld", step);
    EXPECT(qkt_checkpoint_expect_int(&ck, "n_layer", 4, &err) == 0, "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_int(&ck, "n_layer", 2, &err) == -1 &&
               strstr(err.msg, "rt.safetensors was saved for n_layer=4, this model has 2"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_int(&ck, "vocab_size", 65, &err) == -1 && strstr(err.msg, "has no metadata 'vocab_size'"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_int(&ck, "attn_scale", 1, &err) == -1 && strstr(err.msg, "attn_scale='sqrt_dk' is not an integer"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_str(&ck, "attn_scale", "sqrt_dk", &err) == 0, "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_str(&ck, "attn_scale", "learned", &err) == -1 &&
               strstr(err.msg, "was saved for attn_scale=sqrt_dk, this model has learned"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_real(&ck, "attn_temp", 0.5, &err) == 0, "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_real(&ck, "attn_temp", 1.0, &err) == -1 && strstr(err.msg, "attn_temp=0.5, this model has 1"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_real(&ck, "attn_temp", 0.1, &err) == -1 && strstr(err.msg, "this model has 0.1") &&
               !strstr(err.msg, "0.10000"),
           "%s", err.msg);
    EXPECT(qkt_checkpoint_expect_real(&ck, "attn_scale", 0.5, &err) == -1 && strstr(err.msg, "attn_scale='sqrt_dk' is not a number"),
           "%s", err.msg);
    const char *sc = qkt_checkpoint_meta(&ck, "attn_scale");
    EXPECT(sc && !strcmp(sc, "sqrt_dk"), "meta getter");
    qkt_checkpoint_close(&ck);

    /* a weights-only load (sampling) ignores the optimizer and RNG state */
    fill(&q, 2);
    EXPECT(qkt_checkpoint_load(f, &q, NULL, 0, 0, &err) == 0 && same_data(&q, p.data), "%s", err.msg);
    free(m), free(v), free(m2), free(v2);
    qkt_params_free(&p);
    qkt_params_free(&q);
}

/* ---------------------------------------------------------------- F32 <-> F64 */
static void test_other_precision(void) {
#ifdef QKT_DOUBLE
    typedef float other;
    const qkt_st_dtype od = QKT_ST_F32;
#else
    typedef double other;
    const qkt_st_dtype od = QKT_ST_F64;
#endif
    other w[12], b[3], ls[2];
    for (int i = 0; i < 12; i++) w[i] = (other)(0.1 * i - 0.3);
    for (int i = 0; i < 3; i++) b[i] = (other)(1.0 / 3 + i);
    ls[0] = (other)-1.5, ls[1] = (other)1e-3;
    qkt_st_write t[] = {{"w", od, 2, {4, 3}, w}, {"b", od, 1, {3}, b}, {"log_scale", od, 1, {2}, ls}};
    qkt_err err;
    const char *f = path_of("other.safetensors");
    EXPECT(qkt_safetensors_write(f, t, 3, NULL, 0, &err) == 0, "%s", err.msg);
    qkt_params p;
    make_params(&p, 4);
    EXPECT(qkt_checkpoint_load(f, &p, NULL, 0, 0, &err) == 0, "%s", err.msg);
    bool ok = true;
    for (int i = 0; i < 12; i++) ok &= p.t[0]->data[i] == (qkt_real)w[i];
    for (int i = 0; i < 3; i++) ok &= p.t[1]->data[i] == (qkt_real)b[i];
    ok &= p.t[2]->data[0] == (qkt_real)ls[0] && p.t[2]->data[1] == (qkt_real)ls[1];
    EXPECT(ok, "%s checkpoint not converted exactly into %s", qkt_st_dtype_name(od), QKT_REAL_NAME);
    qkt_params_free(&p);
}

/* ---------------------------------------------------------------- mismatches */
/* Loads `file` into a filled store; expects -1, `want` in the message, and the
 * store (parameters and slot) unchanged. */
static void expect_reject(const char *file, const qkt_ckpt_slot *slots, int n_slots, int flags, const char *want, int line) {
    qkt_params p;
    make_params(&p, 4);
    fill(&p, 9);
    qkt_real *snap = malloc((size_t)p.size * sizeof *snap);
    memcpy(snap, p.data, (size_t)p.size * sizeof *snap);
    qkt_err err = {{0}};
    int rc = qkt_checkpoint_load(file, &p, slots, n_slots, flags, &err);
    EXPECT(rc == -1 && strstr(err.msg, want) && !strchr(err.msg, '\n'), "line %d: rc %d, '%s' lacks '%s'", line, rc, err.msg,
           want);
    EXPECT(same_data(&p, snap), "line %d: a failed load modified the parameters", line);
    free(snap);
    qkt_params_free(&p);
}

static void test_mismatch(void) {
    qkt_params src;
    qkt_err err;
    make_params(&src, 4);
    fill(&src, 3);
    qkt_real *p = src.data;
    int32_t ints[3] = {1, 2, 3};
    int64_t big[2] = {5, 1ll << 40};
    const char *good = path_of("good.safetensors");
    qkt_st_write ex[] = {{"optim.m", QKT_ST_REAL, 1, {src.size}, p}, {"train.counter", QKT_ST_I64, 1, {2}, big}};
    EXPECT(qkt_checkpoint_save(good, &src, NULL, 0, ex, 2, &err) == 0, "%s", err.msg);

    /* a parameter missing from the file (a deeper model's store would say the same) */
    qkt_st_write miss[] = {{"w", QKT_ST_REAL, 2, {4, 3}, p}, {"b", QKT_ST_REAL, 1, {3}, p}};
    const char *f = path_of("missing.safetensors");
    EXPECT(qkt_safetensors_write(f, miss, 2, NULL, 0, &err) == 0, "%s", err.msg);
    expect_reject(f, NULL, 0, 0, "missing.safetensors has no parameter 'log_scale' (2,)", __LINE__);
    /* wrong shape: names the tensor, the file's shape and the expected one */
    qkt_st_write shp[] = {{"w", QKT_ST_REAL, 2, {3, 4}, p}, {"b", QKT_ST_REAL, 1, {3}, p}, {"log_scale", QKT_ST_REAL, 1, {2}, p}};
    f = path_of("shape.safetensors");
    EXPECT(qkt_safetensors_write(f, shp, 3, NULL, 0, &err) == 0, "%s", err.msg);
    expect_reject(f, NULL, 0, 0, "parameter 'w' has shape (3, 4) in the file, expected (4, 3)", __LINE__);
    /* wrong rank */
    shp[0] = (qkt_st_write){"w", QKT_ST_REAL, 1, {12}, p};
    EXPECT(qkt_safetensors_write(f, shp, 3, NULL, 0, &err) == 0, "%s", err.msg);
    expect_reject(f, NULL, 0, 0, "parameter 'w' has shape (12,) in the file, expected (4, 3)", __LINE__);
    /* wrong dtype */
    shp[0] = (qkt_st_write){"w", QKT_ST_REAL, 2, {4, 3}, p};
    shp[1] = (qkt_st_write){"b", QKT_ST_I32, 1, {3}, ints};
    EXPECT(qkt_safetensors_write(f, shp, 3, NULL, 0, &err) == 0, "%s", err.msg);
    expect_reject(f, NULL, 0, 0, "parameter 'b' has dtype I32, expected F32 or F64", __LINE__);
    /* an extra parameter-like tensor: the file is for another model */
    qkt_st_write more[] = {{"w", QKT_ST_REAL, 2, {4, 3}, p},
                           {"b", QKT_ST_REAL, 1, {3}, p},
                           {"log_scale", QKT_ST_REAL, 1, {2}, p},
                           {"h.1.w", QKT_ST_REAL, 1, {3}, p}};
    f = path_of("more.safetensors");
    EXPECT(qkt_safetensors_write(f, more, 4, NULL, 0, &err) == 0, "%s", err.msg);
    expect_reject(f, NULL, 0, 0, "has tensor 'h.1.w' that this model does not have", __LINE__);
    qkt_params q;
    make_params(&q, 4);
    EXPECT(qkt_checkpoint_load(f, &q, NULL, 0, QKT_CKPT_ALLOW_UNUSED, &err) == 0, "ALLOW_UNUSED: %s", err.msg);
    qkt_params_free(&q);

    /* slots: missing, wrong shape, wrong kind, out of range; each leaves params untouched */
    qkt_real mbuf[64];
    int32_t i32[2];
    qkt_ckpt_slot s1 = {"optim.v", QKT_ST_REAL, 1, {src.size}, mbuf};
    expect_reject(good, &s1, 1, 0, "has no tensor 'optim.v'", __LINE__);
    qkt_ckpt_slot s2 = {"optim.m", QKT_ST_REAL, 1, {src.size + 1}, mbuf};
    expect_reject(good, &s2, 1, 0, "tensor 'optim.m' has shape (17,) in the file, expected (18,)", __LINE__);
    qkt_ckpt_slot s3 = {"optim.m", QKT_ST_I64, 1, {src.size}, mbuf};
    expect_reject(good, &s3, 1, 0, "tensor 'optim.m' has dtype " "F", __LINE__);
    qkt_ckpt_slot s4 = {"train.counter", QKT_ST_I32, 1, {2}, i32};
    expect_reject(good, &s4, 1, 0, "value 1099511627776 at index 1 does not fit I32", __LINE__);
    /* the same slot as I64 works; the unrequested "optim." tensor is state, not an error */
    int64_t c64[2] = {0, 0};
    qkt_ckpt_slot s5 = {"train.counter", QKT_ST_I64, 1, {2}, c64};
    make_params(&q, 4);
    EXPECT(qkt_checkpoint_load(good, &q, &s5, 1, 0, &err) == 0 && c64[0] == 5 && c64[1] == (1ll << 40), "%s", err.msg);
    EXPECT(same_data(&q, src.data), "params");
    qkt_params_free(&q);

    /* corrupted files: truncated, a flipped header byte, random bytes */
    size_t n;
    FILE *fp = fopen(good, "rb");
    uint8_t buf[4096];
    n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    f = path_of("corrupt.safetensors");
    fp = fopen(f, "wb");
    fwrite(buf, 1, n - 5, fp);
    fclose(fp);
    expect_reject(f, NULL, 0, 0, "corrupt.safetensors: tensor 'train.counter' offsets", __LINE__);
    buf[12] = '}';
    fp = fopen(f, "wb");
    fwrite(buf, 1, n, fp);
    fclose(fp);
    expect_reject(f, NULL, 0, 0, "corrupt.safetensors: header", __LINE__);
    qkt_rng r;
    qkt_rng_seed(&r, 5);
    for (size_t i = 0; i < 1000; i++) buf[i] = (uint8_t)qkt_rng_u64(&r);
    fp = fopen(f, "wb");
    fwrite(buf, 1, 1000, fp);
    fclose(fp);
    expect_reject(f, NULL, 0, 0, "corrupt.safetensors: header length", __LINE__);
    expect_reject(path_of("nonexistent.safetensors"), NULL, 0, 0, "nonexistent.safetensors: cannot open", __LINE__);
    qkt_params_free(&src);
}

/* ---------------------------------------------------------------- resume */
/* Toy regression y = x W + b trained with Adam on batches drawn from the RNG; the
 * state a resume needs is parameters, both moments, the step and the RNG. */
typedef struct {
    qkt_params p;
    qkt_real *m, *v;
    qkt_rng rng;
    long long step;
} toy;

static void toy_init(toy *t) {
    make_params(&t->p, 4);
    fill(&t->p, 11);
    t->m = calloc((size_t)t->p.size, sizeof(qkt_real));
    t->v = calloc((size_t)t->p.size, sizeof(qkt_real));
    qkt_rng_seed(&t->rng, 1234);
    t->step = 0;
}

static void toy_free(toy *t) {
    qkt_params_free(&t->p);
    free(t->m), free(t->v);
}

static void toy_step(toy *t, qkt_ctx *ctx) {
    qkt_ctx_reset(ctx);
    qkt_tensor *x = qkt_tensor_2d(ctx, 8, 4), *y = qkt_tensor_2d(ctx, 8, 3);
    for (int i = 0; i < 32; i++) x->data[i] = (qkt_real)qkt_rng_normal(&t->rng);
    for (int i = 0; i < 24; i++) y->data[i] = (qkt_real)qkt_rng_normal(&t->rng);
    qkt_tensor *d = qkt_sub(ctx, qkt_add(ctx, qkt_matmul(ctx, x, t->p.t[0], false, false), t->p.t[1]), y);
    qkt_tensor *loss = qkt_mean(ctx, qkt_mul(ctx, d, d));
    qkt_params_zero_grad(&t->p);
    qkt_backward(ctx, loss, NULL);
    t->step++;
    double b1 = 0.9, b2 = 0.999, lr = 0.01;
    for (int64_t i = 0; i < t->p.size; i++) {
        double g = t->p.grad[i];
        t->m[i] = (qkt_real)(b1 * t->m[i] + (1 - b1) * g);
        t->v[i] = (qkt_real)(b2 * t->v[i] + (1 - b2) * g * g);
        double mh = t->m[i] / (1 - pow(b1, (double)t->step)), vh = t->v[i] / (1 - pow(b2, (double)t->step));
        t->p.data[i] -= (qkt_real)(lr * mh / (sqrt(vh) + 1e-8));
    }
}

static void test_resume(void) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 16, 0);
    toy a, b;
    toy_init(&a);
    for (int s = 0; s < 20; s++) toy_step(&a, &ctx);

    toy_init(&b);
    for (int s = 0; s < 10; s++) toy_step(&b, &ctx);
    char stepbuf[32];
    snprintf(stepbuf, sizeof stepbuf, "%lld", b.step);
    qkt_st_meta meta[] = {{"step", stepbuf}};
    qkt_st_write ex[] = {{"optim.m", QKT_ST_REAL, 1, {b.p.size}, b.m},
                         {"optim.v", QKT_ST_REAL, 1, {b.p.size}, b.v},
                         {"rng.state", QKT_ST_U64, 1, {4}, b.rng.s}};
    qkt_err err;
    const char *f = path_of("resume.safetensors");
    EXPECT(qkt_checkpoint_save(f, &b.p, meta, 1, ex, 3, &err) == 0, "%s", err.msg);
    toy_free(&b);

    toy c; /* a fresh process: different init, zero moments, another seed */
    make_params(&c.p, 4);
    fill(&c.p, 99);
    c.m = calloc((size_t)c.p.size, sizeof(qkt_real));
    c.v = calloc((size_t)c.p.size, sizeof(qkt_real));
    qkt_rng_seed(&c.rng, 1);
    qkt_ckpt_slot slots[] = {{"optim.m", QKT_ST_REAL, 1, {c.p.size}, c.m},
                             {"optim.v", QKT_ST_REAL, 1, {c.p.size}, c.v},
                             {"rng.state", QKT_ST_U64, 1, {4}, c.rng.s}};
    qkt_checkpoint ck;
    EXPECT(qkt_checkpoint_open(f, &ck, &err) == 0, "%s", err.msg);
    EXPECT(qkt_checkpoint_meta_int(&ck, "step", &c.step, &err) == 0 && c.step == 10, "%s", err.msg);
    EXPECT(qkt_checkpoint_restore(&ck, &c.p, slots, 3, 0, &err) == 0, "%s", err.msg);
    qkt_checkpoint_close(&ck);
    for (int s = 0; s < 10; s++) toy_step(&c, &ctx);
    EXPECT(c.step == 20, "step %lld", c.step);
    EXPECT(same_data(&c.p, a.p.data), "resumed parameters are not bit-identical");
    EXPECT(!memcmp(c.m, a.m, (size_t)a.p.size * sizeof(qkt_real)) && !memcmp(c.v, a.v, (size_t)a.p.size * sizeof(qkt_real)),
           "resumed moments differ");
    EXPECT(!memcmp(&c.rng, &a.rng, sizeof a.rng), "resumed RNG differs");
    toy_free(&a);
    toy_free(&c);
    qkt_ctx_free(&ctx);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s", qkt_test_tmpdir("ckpt"));
    test_round_trip();
    test_other_precision();
    test_mismatch();
    test_resume();
    return qkt_test_finish();
}
