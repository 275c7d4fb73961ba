/* nn: the scale-variant registry (built-ins, power:ALPHA members, a program's own
 * variant, bad names), the new variants' init and state (cosine's temperature,
 * sigma_qk's u: advanced by training forwards only, sigma near the spectral norm;
 * sigma_reparam: every Linear reparametrised, the same function as sqrt_dk at init), and
 * tensors added to a model's store after finalize. */
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
    EXPECT(strstr(qkt_attn_scale_list(list, sizeof list), "cosine, sigma_reparam, sigma_qk, power:ALPHA") &&
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

/* ---------------------------------------------------------------- sigma_qk state */
static double spectral_norm_rc(const qkt_real *W, int R, int C) { /* 2000 power iterations in double */
    double *u = malloc(((size_t)R + C) * sizeof *u), *v = u + C, s = 0;
    for (int j = 0; j < C; j++) u[j] = 1.0 / (j + 1);
    for (int it = 0; it < 2000; it++) {
        double n = 0;
        for (int i = 0; i < R; i++) {
            v[i] = 0;
            for (int j = 0; j < C; j++) v[i] += W[i * C + j] * u[j];
            n += v[i] * v[i];
        }
        s = sqrt(n);
        for (int i = 0; i < R; i++) v[i] /= s;
        n = 0;
        for (int j = 0; j < C; j++) {
            u[j] = 0;
            for (int i = 0; i < R; i++) u[j] += W[i * C + j] * v[i];
            n += u[j] * u[j];
        }
        for (int j = 0; j < C; j++) u[j] /= sqrt(n);
    }
    free(u);
    return s;
}
static double spectral_norm(const qkt_real *W, int C) { return spectral_norm_rc(W, C, C); }

static void test_sigma_state(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SIGMA_QK);
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

/* ---------------------------------------------------------------- sigma_reparam (Zhai et al.) */
static const char *const sigma_linears[4] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};

/* Every Linear of every block has u (in) (a buffer) and gamma (1) = ||W u||, the spectral
 * norm of its initialised W; they come after every other tensor, which keeps its index and
 * init from the sqrt_dk model of the same seed; u moves in training forwards only. */
static void test_sigma_reparam(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SIGMA_REPARAM), cr = small_cfg(QKT_ATTN_SQRT_DK);
    c.mlp = cr.mlp = QKT_MLP_SWIGLU; /* c_fc (2F, C), c_proj (C, F): not square */
    c.qk_init = cr.qk_init = QKT_QK_INIT_UNIT;
    qkt_gpt g, ref;
    make_gpt(&g, &c, 9);
    make_gpt(&ref, &cr, 9);
    EXPECT(!qkt_params_find(&g.params, "transformer.h.0.attn.sigma_gamma"), "sigma_reparam has sigma_qk's tensors");
    EXPECT(g.params.n == ref.params.n + 8 * c.n_layer, "%d tensors, sqrt_dk %d", g.params.n, ref.params.n);
    for (int i = 0; i < ref.params.n; i++) {
        qkt_tensor *a = g.params.t[i], *b = ref.params.t[i];
        EXPECT(!strcmp(a->name, b->name) && a->size == b->size && !memcmp(a->data, b->data, (size_t)a->size * sizeof *a->data),
               "tensor %d: %s vs sqrt_dk's %s", i, a->name, b->name);
    }
    qkt_real *u0 = malloc((size_t)g.params.size * sizeof *u0);
    for (int l = 0; l < c.n_layer; l++)
        for (int k = 0; k < 4; k++) {
            char name[128];
            snprintf(name, sizeof name, "transformer.h.%d.%s.weight", l, sigma_linears[k]);
            qkt_tensor *w = qkt_params_find(&g.params, name);
            snprintf(name, sizeof name, "transformer.h.%d.%s.sigma_u", l, sigma_linears[k]);
            qkt_tensor *u = qkt_params_find(&g.params, name);
            snprintf(name, sizeof name, "transformer.h.%d.%s.sigma_gamma", l, sigma_linears[k]);
            qkt_tensor *gam = qkt_params_find(&g.params, name);
            EXPECT(w && u && gam && u->ndim == 1 && u->shape[0] == w->shape[1] && gam->size == 1 && gam->requires_grad &&
                       !u->requires_grad, "%s: u (in), gamma (1)", name);
            if (!(w && u && gam)) continue;
            int ui = -1, gi = -1;
            for (int i = 0; i < g.params.n; i++) ui = g.params.t[i] == u ? i : ui, gi = g.params.t[i] == gam ? i : gi;
            EXPECT((g.params.flags[ui] & QKT_PARAM_BUFFER) && !(g.params.flags[gi] & QKT_PARAM_DECAY) && gi == ui + 1,
                   "%s: u a buffer, gamma right after it, not decayed", name);
            double sn = spectral_norm_rc(w->data, w->shape[0], w->shape[1]);
            EXPECT(fabs(gam->data[0] - sn) < 1e-4 * sn, "%s: gamma %.7f vs the spectral norm %.7f", name, gam->data[0], sn);
            EXPECT(fabs(gam->data[0] - qkt_sigma_of(w->data, w->shape[0], w->shape[1], u->data)) < 1e-6 * sn,
                   "%s: gamma is not ||W u||", name);
        }
    memcpy(u0, g.params.data, (size_t)g.params.size * sizeof *u0);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    loss_of(&g, &ctx, QKT_MODE_EVAL);
    loss_of(&g, &ctx, QKT_MODE_GRAD);
    EXPECT(!memcmp(u0, g.params.data, (size_t)g.params.size * sizeof *u0), "an eval or GRAD forward moved the store");
    qkt_gpt g2;
    make_gpt(&g2, &c, 9);
    for (int i = ref.params.n; i < g.params.n; i++) /* every u a unit vector far from converged, so a step moves it */
        if (!g.params.t[i]->requires_grad)
            for (int64_t j = 0; j < g.params.t[i]->size; j++)
                g.params.t[i]->data[j] = g2.params.t[i]->data[j] = (qkt_real)(1 / sqrt((double)g.params.t[i]->size));
    memcpy(u0, g.params.data, (size_t)g.params.size * sizeof *u0);
    loss_of(&g, &ctx, QKT_MODE_TRAIN);
    for (int l = 0; l < c.n_layer; l++)
        for (int k = 0; k < 4; k++) {
            char name[128];
            snprintf(name, sizeof name, "transformer.h.%d.%s.sigma_u", l, sigma_linears[k]);
            qkt_tensor *u = qkt_params_find(&g.params, name);
            int64_t off = qkt_params_offset(&g.params, u);
            EXPECT(memcmp(u0 + off, u->data, (size_t)u->size * sizeof *u0), "%s: a training forward did not advance it", name);
        }
    qkt_gpt_advance_state(&g2);
    EXPECT(!memcmp(g.params.data, g2.params.data, (size_t)g.params.size * sizeof *u0),
           "qkt_gpt_advance_state differs from a training forward's advance");
    /* a training step's gradient reaches every gamma */
    qkt_ctx_reset(&ctx);
    int32_t idx[16], tgt[16];
    for (int i = 0; i < 16; i++) idx[i] = (int32_t)((i * 7 + 3) % 11), tgt[i] = (int32_t)((i * 5 + 1) % 11);
    qkt_params_zero_grad(&g2.params);
    qkt_backward(&ctx, qkt_gpt_forward(&ctx, &g2, idx, tgt, 2, 8, NULL, NULL), NULL);
    for (int i = ref.params.n; i < g2.params.n; i++)
        if (g2.params.t[i]->requires_grad)
            EXPECT(g2.params.t[i]->grad[0] != 0, "no gradient reached %s", g2.params.t[i]->name);
    qkt_ctx_free(&ctx);
    free(u0);
    qkt_gpt_free(&g);
    qkt_gpt_free(&g2);
    qkt_gpt_free(&ref);
}

/* max |logits(a) - logits(b)| / max |logits(b)| on one batch, eval mode, or a training
 * forward (which advances u first) when train. */
static double logit_gap(qkt_gpt *a, qkt_gpt *b, bool train) {
    int32_t idx[16];
    for (int i = 0; i < 16; i++) idx[i] = (int32_t)((i * 7 + 3) % 11);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_ctx_set_mode(&ctx, train ? QKT_MODE_TRAIN : QKT_MODE_EVAL);
    qkt_tensor *la, *lb;
    qkt_gpt_forward(&ctx, a, idx, NULL, 2, 8, &la, NULL);
    qkt_gpt_forward(&ctx, b, idx, NULL, 2, 8, &lb, NULL);
    double d = 0, m = 0;
    for (int64_t i = 0; i < la->size; i++) d = fmax(d, fabs((double)la->data[i] - lb->data[i])), m = fmax(m, fabs(lb->data[i]));
    qkt_ctx_free(&ctx);
    return d / m;
}

/* "The same function at init": sigma_reparam's logits are the sqrt_dk model's of the same
 * seed (the same weights) to float rounding, in eval and in the first training forward; with
 * gamma 1 instead of sigma(W_0) they are not (the check can fail), and sigma_qk's are not. */
static void test_sigma_same_function(void) {
    const qkt_qk_init inits[2] = {QKT_QK_INIT_UNIT, QKT_QK_INIT_GPT2};
    for (int k = 0; k < 2; k++) {
        qkt_gpt_config c = small_cfg(QKT_ATTN_SIGMA_REPARAM), cr = small_cfg(QKT_ATTN_SQRT_DK), cq = small_cfg(QKT_ATTN_SIGMA_QK);
        c.n_embd = cr.n_embd = cq.n_embd = 48, c.n_head = cr.n_head = cq.n_head = 3; /* d_k 16 */
        c.qk_init = cr.qk_init = cq.qk_init = inits[k];
        qkt_gpt g, ref, qk;
        make_gpt(&g, &c, 31);
        make_gpt(&ref, &cr, 31);
        make_gpt(&qk, &cq, 31);
        double e = logit_gap(&g, &ref, false), t = logit_gap(&g, &ref, true);
        EXPECT(e < 1e-5 && t < 1e-5, "qk_init %s: sigma_reparam's logits at init differ from sqrt_dk's by %.3g (eval), %.3g (train)",
               qkt_qk_init_name(inits[k]), e, t);
        for (int i = ref.params.n; i < g.params.n; i++)
            if (g.params.t[i]->requires_grad) g.params.t[i]->data[0] = 1; /* gamma 1, as sigma_qk's */
        double one = logit_gap(&g, &ref, false);
        EXPECT(one > 1e-2, "qk_init %s: gamma 1 gives sqrt_dk's logits too (%.3g): the check cannot fail",
               qkt_qk_init_name(inits[k]), one);
        for (int i = 0; i < qk.params.n; i++) /* sigma_qk with sqrt_dk's weights */
            if (qkt_params_find(&ref.params, qk.params.t[i]->name))
                memcpy(qk.params.t[i]->data, qkt_params_find(&ref.params, qk.params.t[i]->name)->data,
                       (size_t)qk.params.t[i]->size * sizeof(qkt_real));
        for (int it = 0; it < 50; it++) qkt_gpt_advance_state(&qk); /* u power-iterated on these weights */
        double q = logit_gap(&qk, &ref, false);
        EXPECT(q > 1e-2, "qk_init %s: sigma_qk gives sqrt_dk's logits at init (%.3g)", qkt_qk_init_name(inits[k]), q);
        printf("qk_init %-4s: sigma_reparam vs sqrt_dk logits at init: %.2e (eval) %.2e (train); gamma 1: %.2e; sigma_qk: %.2e\n",
               qkt_qk_init_name(inits[k]), e, t, one, q);
        qkt_gpt_free(&g);
        qkt_gpt_free(&ref);
        qkt_gpt_free(&qk);
    }
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
    test_sigma_reparam();
    test_sigma_same_function();
    test_grow();
    test_positions();
    return qkt_test_finish();
}
