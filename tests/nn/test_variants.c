/* nn: the scale-variant registry (built-ins, power:ALPHA members, a program's own
 * variant, bad names), the new variants' init and state (cosine's temperature,
 * sigma_reparam's u: advanced by training forwards only, sigma near the spectral norm),
 * and tensors added to a model's store after finalize. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"
#include "qkt_test.h"
#include "nn_fixtures.h"

static double loss_of(qkt_gpt *g, qkt_ctx *ctx, int mode) {
    int32_t idx[16], tgt[16];
    for (int i = 0; i < 16; i++) idx[i] = (int32_t)((i * 7 + 3) % 11), tgt[i] = (int32_t)((i * 5 + 1) % 11);
    int prev = qkt_ctx_set_mode(ctx, mode);
    qkt_ctx_reset(ctx);
    double l = qkt_gpt_forward(ctx, g, idx, tgt, 2, 8, NULL, NULL)->data[0];
    qkt_ctx_set_mode(ctx, prev);
    return l;
}

/* ---------------------------------------------------------------- names */
static void test_names(void) {
    qkt_err err = {{0}};
    qkt_attn_scale a, b, c;
    EXPECT(qkt_attn_scale_parse("power:0.75", &a, &err) == 0, "%s", err.msg);
    EXPECT(a >= QKT_ATTN_SCALE_COUNT && !strcmp(qkt_attn_scale_name(a), "power:0.75"), "power:0.75 -> %d %s", (int)a,
           qkt_attn_scale_name(a));
    EXPECT(qkt_attn_scale_parse("power:.75", &b, &err) == 0 && b == a, "power:.75 is power:0.75 (%d vs %d)", (int)b, (int)a);
    EXPECT(qkt_attn_scale_parse("power:0.5", &c, &err) == 0 && c != a, "power:0.5 is its own variant");
    EXPECT(fabs(qkt_attn_scale_at_init(a, 64, 16) - pow(16, -0.75)) < 1e-15, "power:0.75 at d_k 16");
    EXPECT(fabs(qkt_attn_scale_at_init(c, 64, 16) - 0.25) < 1e-15, "power:0.5 = 1/sqrt(d_k)");
    EXPECT(fabs(qkt_attn_scale_at_init(QKT_ATTN_COSINE, 64, 16) - 10) < 1e-12, "cosine at init: 10");
    EXPECT(qkt_attn_scale_parse("power", &a, &err) == -1 && strstr(err.msg, "power:ALPHA"), "bare family: %s", err.msg);
    EXPECT(qkt_attn_scale_parse("power:x", &a, &err) == -1 && strstr(err.msg, "finite number"), "power:x: %s", err.msg);
    EXPECT(qkt_attn_scale_parse("power:inf", &a, &err) == -1, "power:inf accepted");
    EXPECT(qkt_attn_scale_parse("cosine:2", &a, &err) == -1 && strstr(err.msg, "takes no argument"), "cosine:2: %s", err.msg);
    EXPECT(qkt_attn_scale_parse("cube", &a, &err) == -1 && strstr(err.msg, "sigma_reparam") && strstr(err.msg, "power:ALPHA"),
           "unknown: %s", err.msg);
    char list[512];
    EXPECT(strstr(qkt_attn_scale_list(list, sizeof list), "cosine, sigma_reparam, power:ALPHA") &&
               !strstr(list, "power:0.75"),
           "list: %s", list);
}

/* ---------------------------------------------------------------- a program's variant */
/* "half_learned": s_h = exp(g[h]) / (2 sqrt(d_k)), g (H) its own tensor, init 0. */
static void hl_add(qkt_attn *a, qkt_params *p, const qkt_gpt_config *c) {
    (void)c;
    qkt_attn_param(a, p, "hl_gain", 1, (int[]){a->n_head}, 0);
}
static void hl_init(const qkt_attn *a, int i, qkt_tensor *t, qkt_rng *r) {
    (void)a, (void)i, (void)r;
    for (int64_t j = 0; j < t->size; j++) t->data[j] = 0.25f;
}
static double hl_scale(const qkt_attn_variant *v, int C, int d) { (void)v, (void)C; return 0.5 / sqrt((double)d); }
static void hl_forward(qkt_ctx *ctx, const qkt_attn *a, qkt_attn_qk *io) {
    io->packed = qkt_attn_project(ctx, a, io->x);
    io->log_scale = a->vp[0];
}

static void test_register(void) {
    qkt_err err = {{0}};
    qkt_attn_variant v = {.name = "half_learned", .summary = "exp(g_h) / (2 sqrt(d_k))", .scale = hl_scale,
                          .add = hl_add, .init = hl_init, .forward = hl_forward};
    qkt_attn_scale id;
    int n0 = qkt_attn_scale_count();
    EXPECT(qkt_attn_variant_register(&v, &id, &err) == 0, "%s", err.msg);
    EXPECT((int)id == n0 && qkt_attn_scale_count() == n0 + 1, "id %d count %d", (int)id, qkt_attn_scale_count());
    qkt_attn_scale p;
    EXPECT(qkt_attn_scale_parse("half_learned", &p, &err) == 0 && p == id, "parse the registered name");
    EXPECT(qkt_attn_variant_register(&v, &id, &err) == -1 && strstr(err.msg, "already registered"), "twice: %s", err.msg);
    qkt_attn_variant bad = v;
    bad.name = "sqrt_dk";
    EXPECT(qkt_attn_variant_register(&bad, NULL, &err) == -1 && strstr(err.msg, "already registered"), "built-in name");
    bad.name = "a,b";
    EXPECT(qkt_attn_variant_register(&bad, NULL, &err) == -1 && strstr(err.msg, "only a-z"), "comma: %s", err.msg);
    bad.name = "Half:2";
    EXPECT(qkt_attn_variant_register(&bad, NULL, &err) == -1, "colon accepted");
    bad.name = "";
    EXPECT(qkt_attn_variant_register(&bad, NULL, &err) == -1, "empty name accepted");
    char list[512];
    EXPECT(strstr(qkt_attn_scale_list(list, sizeof list), "half_learned"), "list: %s", list);

    /* A model with it: its tensor after c_proj, its init, and the same logits as sqrt_dk
     * with temperature exp(0.25)/2 (the fused op applies exp(g_h) per head). */
    qkt_gpt_config c = small_cfg(id), r = small_cfg(QKT_ATTN_SQRT_DK);
    r.attn_temp = exp(0.25) / 2;
    qkt_gpt g, h;
    make_gpt(&g, &c, 5);
    make_gpt(&h, &r, 5);
    qkt_tensor *t = qkt_params_find(&g.params, "transformer.h.1.attn.hl_gain");
    EXPECT(t && t->size == 3 && t->data[2] == 0.25f, "hl_gain registered and initialised");
    int ip = -1, ig = -1;
    for (int i = 0; i < g.params.n; i++) {
        if (!strcmp(g.params.t[i]->name, "transformer.h.0.attn.c_proj.bias")) ip = i;
        if (!strcmp(g.params.t[i]->name, "transformer.h.0.attn.hl_gain")) ig = i;
    }
    EXPECT(ip >= 0 && ig == ip + 1, "hl_gain right after c_proj (%d, %d)", ip, ig);
    for (int i = 0; i < h.params.n; i++) { /* same weights (init streams go by tensor index) */
        qkt_tensor *src = h.params.t[i], *dst = qkt_params_find(&g.params, src->name);
        memcpy(dst->data, src->data, (size_t)src->size * sizeof(qkt_real));
    }
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    double lg = loss_of(&g, &ctx, QKT_MODE_EVAL), lh = loss_of(&h, &ctx, QKT_MODE_EVAL);
    EXPECT(fabs(lg - lh) < 1e-5, "registered variant %.7f vs sqrt_dk with its temperature %.7f", lg, lh);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
    qkt_gpt_free(&h);
}

/* ---------------------------------------------------------------- sigma_reparam state */
static double spectral_norm(const qkt_real *W, int C) { /* 2000 power iterations in double */
    double *u = malloc(2 * (size_t)C * sizeof *u), *v = u + C, s = 0;
    for (int j = 0; j < C; j++) u[j] = 1.0 / (j + 1);
    for (int it = 0; it < 2000; it++) {
        double n = 0;
        for (int i = 0; i < C; i++) {
            v[i] = 0;
            for (int j = 0; j < C; j++) v[i] += W[i * C + j] * u[j];
            n += v[i] * v[i];
        }
        s = sqrt(n);
        for (int i = 0; i < C; i++) v[i] /= s;
        n = 0;
        for (int j = 0; j < C; j++) {
            u[j] = 0;
            for (int i = 0; i < C; i++) u[j] += W[i * C + j] * v[i];
            n += u[j] * u[j];
        }
        for (int j = 0; j < C; j++) u[j] /= sqrt(n);
    }
    free(u);
    return s;
}

static void test_sigma_state(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SIGMA_REPARAM);
    qkt_gpt g;
    make_gpt(&g, &c, 9);
    int C = c.n_embd;
    qkt_tensor *u = qkt_params_find(&g.params, "transformer.h.0.attn.sigma_u"),
               *gam = qkt_params_find(&g.params, "transformer.h.0.attn.sigma_gamma");
    EXPECT(u && u->ndim == 2 && u->shape[0] == 2 && u->shape[1] == C && !u->requires_grad, "sigma_u (2, C), no grad");
    EXPECT(gam && gam->data[0] == 1 && gam->data[1] == 1, "gamma init 1");
    int ui = -1;
    for (int i = 0; i < g.params.n; i++)
        if (g.params.t[i] == u) ui = i;
    EXPECT(ui >= 0 && (g.params.flags[ui] & QKT_PARAM_BUFFER), "sigma_u is a buffer");
    /* u at init: 50 power iterations, so ||W u|| is the spectral norm to ~1e-3 */
    const qkt_real *W = g.h[0].attn.c_attn.weight->data;
    double wu = 0;
    for (int i = 0; i < C; i++) {
        double s = 0;
        for (int j = 0; j < C; j++) s += W[i * C + j] * u->data[j];
        wu += s * s;
    }
    double sn = spectral_norm(W, C);
    EXPECT(fabs(sqrt(wu) - sn) < 2e-2 * sn, "||W_q u|| %.6f vs spectral norm %.6f", sqrt(wu), sn);

    qkt_real *u0 = malloc((size_t)u->size * sizeof *u0);
    memcpy(u0, u->data, (size_t)u->size * sizeof *u0);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    loss_of(&g, &ctx, QKT_MODE_EVAL);
    EXPECT(!memcmp(u0, u->data, (size_t)u->size * sizeof *u0), "an eval forward moved u");
    loss_of(&g, &ctx, QKT_MODE_GRAD); /* recording, dropout off: not a training forward */
    EXPECT(!memcmp(u0, u->data, (size_t)u->size * sizeof *u0), "a GRAD-mode forward moved u");
    loss_of(&g, &ctx, QKT_MODE_TRAIN);
    EXPECT(memcmp(u0, u->data, (size_t)u->size * sizeof *u0), "a training forward did not advance u");
    /* qkt_gpt_advance_state is the same step */
    memcpy(u0, u->data, (size_t)u->size * sizeof *u0);
    qkt_gpt g2;
    make_gpt(&g2, &c, 9);
    qkt_gpt_advance_state(&g2);
    EXPECT(!memcmp(u0, qkt_params_find(&g2.params, "transformer.h.0.attn.sigma_u")->data, (size_t)u->size * sizeof *u0),
           "qkt_gpt_advance_state differs from a training forward's advance");
    qkt_ctx_free(&ctx);
    free(u0);
    qkt_gpt_free(&g);
    qkt_gpt_free(&g2);
}

/* ---------------------------------------------------------------- growing the store */
static void test_grow(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    qkt_gpt g;
    make_gpt(&g, &c, 3);
    int64_t n0 = g.params.size;
    qkt_real *before = malloc((size_t)n0 * sizeof *before);
    memcpy(before, g.params.data, (size_t)n0 * sizeof *before);
    qkt_tensor *wte = g.wte.weight, *extra = qkt_params_add(&g.params, "user.probe.weight", 2, (int[]){4, 12}, QKT_PARAM_DECAY);
    EXPECT(g.params.size == n0 + 48 && g.params.generation == 1 && g.n_model == g.params.n - 1, "grown store");
    EXPECT(!memcmp(before, g.params.data, (size_t)n0 * sizeof *before), "old values kept");
    EXPECT(wte->data == g.params.data && extra->data == g.params.data + n0 && extra->grad == g.params.grad + n0,
           "tensors repointed");
    for (int64_t i = 0; i < extra->size; i++) EXPECT(extra->data[i] == 0 && extra->grad[i] == 0, "new tensor zeroed");
    /* init_weights leaves the user's tensor alone */
    qkt_rng r;
    qkt_rng_seed(&r, 3);
    extra->data[0] = 7;
    qkt_gpt_init_weights(&g, &r);
    EXPECT(!memcmp(before, g.params.data, (size_t)n0 * sizeof *before) && extra->data[0] == 7, "init is per model tensor");
    free(before);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- positions */
/* Logits (1, T, V) of a sequence under pos = kind, the weights copied from `src` by name. */
static void logits_of(qkt_gpt *g, const int32_t *idx, int T, qkt_real *out) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    qkt_tensor *lg;
    qkt_gpt_forward(&ctx, g, idx, NULL, 1, T, &lg, NULL);
    memcpy(out, lg->data, (size_t)lg->size * sizeof *out);
    qkt_ctx_free(&ctx);
}

/* rope, alibi and none keep causality (a later token moves no earlier logit), and with
 * the same weights rope and alibi give other logits than none: the positions reach the
 * scores. A model without learned positions has no wpe and is shift-blind only under none. */
static void test_positions(void) {
    enum { T = 8, V = 11 };
    int32_t idx[T] = {3, 1, 4, 1, 5, 9, 2, 6}, idx2[T];
    qkt_real a[T * V], b[T * V], none[T * V];
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.n_head = 2; /* d_k 6: even, for rope */
    qkt_gpt ref;
    c.pos = QKT_POS_NONE;
    make_gpt(&ref, &c, 21);
    EXPECT(!qkt_params_find(&ref.params, "transformer.wpe.weight"), "pos none has a wpe");
    for (int64_t i = 0; i < ref.params.size; i++) ref.params.data[i] += (qkt_real)(0.05 * sin((double)i)); /* non-trivial */
    logits_of(&ref, idx, T, none);
    const qkt_pos_kind kinds[] = {QKT_POS_ROPE, QKT_POS_ALIBI, QKT_POS_NONE};
    for (int k = 0; k < 3; k++) {
        c.pos = kinds[k];
        qkt_gpt g;
        make_gpt(&g, &c, 21);
        EXPECT(g.params.size == ref.params.size, "%s: store size", qkt_pos_name(kinds[k]));
        memcpy(g.params.data, ref.params.data, (size_t)g.params.size * sizeof(qkt_real));
        logits_of(&g, idx, T, a);
        double diff = 0;
        for (int i = 0; i < T * V; i++) diff = fmax(diff, fabs((double)a[i] - none[i]));
        if (kinds[k] == QKT_POS_NONE) EXPECT(diff == 0, "none: logits differ from themselves (%g)", diff);
        else EXPECT(diff > 1e-3, "%s: the same logits as pos none (%g)", qkt_pos_name(kinds[k]), diff);
        for (int t = 0; t + 1 < T; t++) { /* change token t+1: positions <= t must not move */
            memcpy(idx2, idx, sizeof idx2);
            idx2[t + 1] = (idx2[t + 1] + 1) % V;
            logits_of(&g, idx2, T, b);
            double past = 0;
            for (int i = 0; i < (t + 1) * V; i++) past = fmax(past, fabs((double)a[i] - b[i]));
            EXPECT(past < 1e-6, "%s: token %d moved earlier logits by %g", qkt_pos_name(kinds[k]), t + 1, past);
        }
        qkt_gpt_free(&g);
    }
    qkt_gpt_free(&ref);
    qkt_err err;
    c.pos = QKT_POS_ROPE, c.n_head = 4; /* d_k 3 */
    EXPECT(qkt_gpt_config_validate(&c, &err) == -1 && strstr(err.msg, "even d_k"), "odd d_k with rope: %s", err.msg);
    qkt_pos_kind pk;
    EXPECT(qkt_pos_parse("sinusoidal", &pk, &err) == -1 && strstr(err.msg, "alibi"), "bad pos: %s", err.msg);
    EXPECT(qkt_swiglu_hidden(768) == 2048 && qkt_swiglu_hidden(16) == 48 && qkt_swiglu_hidden(64) == 176, "swiglu widths %d %d %d",
           qkt_swiglu_hidden(768), qkt_swiglu_hidden(16), qkt_swiglu_hidden(64));
}

int main(void) {
    qkt_set_threads(1);
    test_names();
    test_register();
    test_sigma_state();
    test_grow();
    test_positions();
    return qkt_test_finish();
}
