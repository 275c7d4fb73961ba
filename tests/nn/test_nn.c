/* nn: parameter layout, init statistics, loss at init, causality, tied head,
 * scale variants' wiring, capture, key padding, dropout, generation, overfitting,
 * config validation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"
#include "qkt_test.h"
#include "nn_fixtures.h"

static void random_tokens(int32_t *x, int n, int V, uint64_t seed) {
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) x[i] = (int32_t)qkt_rng_below(&r, (uint32_t)V);
}

static double tensor_std(const qkt_real *x, int64_t n, double *mean_out) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    if (mean_out) *mean_out = m;
    return sqrt(v / (double)n);
}

/* ---------------------------------------------------------------- layout */
static void test_param_layout(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    qkt_gpt g;
    make_gpt(&g, &c, 1);
    const int C = 12, V = 11;
    struct {
        const char *suffix;
        int ndim, s0, s1;
    } per_layer[] = {
        {"ln_1.weight", 1, C, 0},          {"ln_1.bias", 1, C, 0},        {"attn.c_attn.weight", 2, 3 * C, C},
        {"attn.c_attn.bias", 1, 3 * C, 0}, {"attn.c_proj.weight", 2, C, C}, {"attn.c_proj.bias", 1, C, 0},
        {"ln_2.weight", 1, C, 0},          {"ln_2.bias", 1, C, 0},        {"mlp.c_fc.weight", 2, 4 * C, C},
        {"mlp.c_fc.bias", 1, 4 * C, 0},    {"mlp.c_proj.weight", 2, C, 4 * C}, {"mlp.c_proj.bias", 1, C, 0},
    };
    char names[64][128];
    int shapes[64][3], n = 0;
    snprintf(names[n], 128, "transformer.wte.weight"), shapes[n][0] = 2, shapes[n][1] = V, shapes[n++][2] = C;
    snprintf(names[n], 128, "transformer.wpe.weight"), shapes[n][0] = 2, shapes[n][1] = 8, shapes[n++][2] = C;
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 12; k++) {
            snprintf(names[n], 128, "transformer.h.%d.%s", l, per_layer[k].suffix);
            shapes[n][0] = per_layer[k].ndim, shapes[n][1] = per_layer[k].s0, shapes[n++][2] = per_layer[k].s1;
        }
    snprintf(names[n], 128, "transformer.ln_f.weight"), shapes[n][0] = 1, shapes[n][1] = C, shapes[n++][2] = 0;
    snprintf(names[n], 128, "transformer.ln_f.bias"), shapes[n][0] = 1, shapes[n][1] = C, shapes[n++][2] = 0;
    EXPECT(g.params.n == n, "%d params, expected %d", g.params.n, n);
    int64_t total = 0;
    for (int i = 0; i < n && i < g.params.n; i++) {
        qkt_tensor *t = g.params.t[i];
        EXPECT(!strcmp(t->name, names[i]), "param %d is %s, expected %s", i, t->name, names[i]);
        EXPECT(t->ndim == shapes[i][0] && t->shape[0] == shapes[i][1] && (t->ndim == 1 || t->shape[1] == shapes[i][2]),
               "%s has the wrong shape", t->name);
        EXPECT((g.params.flags[i] & QKT_PARAM_DECAY) == (t->ndim == 2 ? QKT_PARAM_DECAY : 0), "%s decay flag", t->name);
        EXPECT(qkt_params_offset(&g.params, t) == total, "%s not contiguous in order", t->name);
        total += t->size;
    }
    /* 2 embeddings + L (2 LN + 4 Linear) + ln_f */
    int64_t expect = (int64_t)V * C + 8 * C + 2 * (4 * C + (3 * C * C + 3 * C) + (C * C + C) + (4 * C * C + 4 * C) + (4 * C * C + C)) + 2 * C;
    EXPECT(g.params.size == expect, "param count %lld, expected %lld", (long long)g.params.size, (long long)expect);
    EXPECT(!qkt_params_find(&g.params, "lm_head.weight"), "the head must be tied, not a parameter");
    qkt_gpt_free(&g);

    /* Variant extras sit after attn.c_proj.bias of each layer. */
    c = small_cfg(QKT_ATTN_LEARNED);
    make_gpt(&g, &c, 1);
    EXPECT(g.params.n == n + 2, "learned: %d params", g.params.n);
    EXPECT(!strcmp(g.params.t[8]->name, "transformer.h.0.attn.log_scale") && g.params.t[8]->ndim == 1 &&
               g.params.t[8]->shape[0] == 3, "learned: param 8 is %s", g.params.t[8]->name);
    EXPECT(!strcmp(g.params.t[9]->name, "transformer.h.0.ln_2.weight"), "learned: param 9 is %s", g.params.t[9]->name);
    qkt_gpt_free(&g);
    c = small_cfg(QKT_ATTN_QK_LAYERNORM);
    make_gpt(&g, &c, 1);
    const char *qk[] = {"transformer.h.0.attn.q_ln.weight", "transformer.h.0.attn.q_ln.bias",
                        "transformer.h.0.attn.k_ln.weight", "transformer.h.0.attn.k_ln.bias"};
    EXPECT(g.params.n == n + 8, "qk_layernorm: %d params", g.params.n);
    for (int k = 0; k < 4; k++)
        EXPECT(!strcmp(g.params.t[8 + k]->name, qk[k]) && g.params.t[8 + k]->shape[0] == 4 &&
                   g.params.flags[8 + k] == 0, "qk_layernorm: param %d is %s", 8 + k, g.params.t[8 + k]->name);
    qkt_gpt_free(&g);
    /* bias off: no .bias anywhere */
    c = small_cfg(QKT_ATTN_QK_LAYERNORM);
    c.bias = false;
    make_gpt(&g, &c, 1);
    EXPECT(g.params.n == 2 + 2 * 8 + 1, "bias off: %d params", g.params.n);
    for (int i = 0; i < g.params.n; i++) EXPECT(!strstr(g.params.t[i]->name, "bias"), "bias off but %s", g.params.t[i]->name);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- init */
static void test_init_stats(void) {
    qkt_gpt_config c = qkt_gpt_config_default();
    c.vocab_size = 300, c.block_size = 64, c.n_layer = 4, c.n_head = 4, c.n_embd = 128, c.qk_init_mult = 3;
    c.attn_scale = QKT_ATTN_LEARNED;
    qkt_gpt g;
    make_gpt(&g, &c, 7);
    double m, s;
    qkt_tensor *wte = qkt_params_find(&g.params, "transformer.wte.weight");
    s = tensor_std(wte->data, wte->size, &m);
    EXPECT(fabs(s - 0.02) < 0.02 * 0.02 && fabs(m) < 3e-4, "wte std %g mean %g (want 0.02, 0)", s, m);
    qkt_tensor *fc = qkt_params_find(&g.params, "transformer.h.1.mlp.c_fc.weight");
    s = tensor_std(fc->data, fc->size, &m);
    EXPECT(fabs(s - 0.02) < 0.02 * 0.02, "c_fc std %g", s);
    double sr = 0.02 / sqrt(8.0);
    qkt_tensor *mp = qkt_params_find(&g.params, "transformer.h.2.mlp.c_proj.weight");
    s = tensor_std(mp->data, mp->size, NULL);
    EXPECT(fabs(s - sr) < sr * 0.02, "mlp.c_proj std %g, want %g", s, sr);
    qkt_tensor *ap = qkt_params_find(&g.params, "transformer.h.3.attn.c_proj.weight");
    s = tensor_std(ap->data, ap->size, NULL);
    EXPECT(fabs(s - sr) < sr * 0.05, "attn.c_proj std %g, want %g", s, sr);
    qkt_tensor *ca = qkt_params_find(&g.params, "transformer.h.0.attn.c_attn.weight");
    int64_t blk = (int64_t)128 * 128;
    double sq = tensor_std(ca->data, blk, NULL), sk = tensor_std(ca->data + blk, blk, NULL),
           sv = tensor_std(ca->data + 2 * blk, blk, NULL);
    EXPECT(fabs(sq - 0.06) < 0.06 * 0.03 && fabs(sk - 0.06) < 0.06 * 0.03, "W_q std %g, W_k std %g, want 0.06", sq, sk);
    EXPECT(fabs(sv - 0.02) < 0.02 * 0.03, "W_v std %g, want 0.02", sv);
    for (int i = 0; i < g.params.n; i++) {
        qkt_tensor *t = g.params.t[i];
        if (t->ndim != 1) continue;
        double want = strstr(t->name, "log_scale") ? log(1 / sqrt(32.0)) : strstr(t->name, ".weight") ? 1 : 0;
        int bad = 0;
        for (int64_t j = 0; j < t->size; j++) bad += fabs(t->data[j] - want) > 1e-6;
        EXPECT(!bad, "%s: %d values differ from %g", t->name, bad, want);
    }
    /* Deterministic in the seed; and a tensor's values do not depend on other tensors' sizes. */
    qkt_gpt g2;
    make_gpt(&g2, &c, 7);
    EXPECT(!memcmp(g.params.data, g2.params.data, (size_t)g.params.size * sizeof(qkt_real)), "same seed, other init");
    qkt_gpt_free(&g2);
    qkt_gpt_config c2 = c;
    c2.vocab_size = 301;
    make_gpt(&g2, &c2, 7);
    qkt_tensor *fc2 = qkt_params_find(&g2.params, "transformer.h.1.mlp.c_fc.weight");
    EXPECT(!memcmp(fc->data, fc2->data, (size_t)fc->size * sizeof(qkt_real)), "vocab size changed c_fc's init");
    qkt_gpt_free(&g2);
    make_gpt(&g2, &c, 8);
    EXPECT(memcmp(g.params.data, g2.params.data, (size_t)g.params.size * sizeof(qkt_real)), "seed ignored");
    qkt_gpt_free(&g2);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- loss, causality, head */
static void test_loss_at_init(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.vocab_size = 50, c.n_embd = 24;
    qkt_gpt g;
    make_gpt(&g, &c, 3);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int B = 4, T = 8;
    int32_t idx[32], tgt[32];
    random_tokens(idx, B * T, 50, 11);
    random_tokens(tgt, B * T, 50, 12);
    qkt_tensor *logits;
    qkt_tensor *loss = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, &logits, NULL);
    EXPECT_NEAR(loss->data[0], log(50.0), 0.05);
    EXPECT(logits->ndim == 3 && logits->shape[0] == B && logits->shape[1] == T && logits->shape[2] == 50, "logits shape");
    /* ignored targets: loss over the counted positions only */
    double manual = 0;
    int counted = 0;
    for (int i = 0; i < B * T; i++) {
        if (i % 3) continue;
        const qkt_real *l = logits->data + (int64_t)i * 50;
        double mx = l[0], s = 0;
        for (int j = 1; j < 50; j++) mx = l[j] > mx ? l[j] : mx;
        for (int j = 0; j < 50; j++) s += exp(l[j] - mx);
        manual += mx + log(s) - l[tgt[i]];
        counted++;
    }
    for (int i = 0; i < B * T; i++)
        if (i % 3) tgt[i] = -1;
    qkt_ctx_reset(&ctx);
    loss = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, NULL);
    EXPECT_NEAR(loss->data[0], manual / counted, 1e-5);
    EXPECT(qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, NULL, NULL) == NULL, "no targets: no loss");
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

static void test_causal_and_tied(void) {
    for (int s = 0; s < QKT_ATTN_SCALE_COUNT; s++) {
        qkt_gpt_config c = small_cfg((qkt_attn_scale)s);
        c.qk_init_mult = 20; /* sharp attention so a leak would show */
        qkt_gpt g;
        make_gpt(&g, &c, 5);
        qkt_ctx ctx;
        qkt_ctx_init(&ctx, 1 << 20, 1);
        int B = 2, T = 8, V = 11;
        int32_t idx[16];
        random_tokens(idx, B * T, V, 21);
        for (int t = 0; t + 1 < T; t++) {
            qkt_ctx_reset(&ctx);
            qkt_tensor *l0, *l1;
            qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, &l0, NULL);
            int32_t idx2[16];
            memcpy(idx2, idx, sizeof idx);
            idx2[t + 1] = (idx2[t + 1] + 1) % V;     /* batch 0, position t + 1 */
            idx2[T + t + 1] = (idx2[T + t + 1] + 5) % V; /* batch 1 */
            qkt_gpt_forward(&ctx, &g, idx2, NULL, B, T, &l1, NULL);
            double past = 0, fut = 0;
            for (int b = 0; b < B; b++)
                for (int u = 0; u < T; u++)
                    for (int v = 0; v < V; v++) {
                        int64_t i = ((int64_t)b * T + u) * V + v;
                        double dd = fabs(l0->data[i] - l1->data[i]);
                        if (u <= t) past = fmax(past, dd);
                        else fut = fmax(fut, dd);
                    }
            EXPECT(past < 1e-6, "%s: changing token %d moved logits before it by %g", qkt_attn_scale_name(s), t + 1, past);
            EXPECT(fut > 1e-4, "%s: changing token %d did not move its own logits", qkt_attn_scale_name(s), t + 1);
        }
        /* Tied head: logits = hidden wte^T */
        qkt_ctx_reset(&ctx);
        qkt_tensor *logits;
        qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, &logits, NULL);
        qkt_tensor *h = qkt_gpt_hidden(&ctx, &g, idx, B, T, NULL);
        double err = 0;
        for (int r = 0; r < B * T; r++)
            for (int v = 0; v < V; v++) {
                double acc = 0;
                for (int k = 0; k < 12; k++) acc += (double)h->data[r * 12 + k] * g.wte.weight->data[v * 12 + k];
                err = fmax(err, fabs(acc - logits->data[r * V + v]));
            }
        EXPECT(err < 1e-5, "%s: logits differ from hidden wte^T by %g", qkt_attn_scale_name(s), err);
        qkt_ctx_free(&ctx);
        qkt_gpt_free(&g);
    }
}

/* ---------------------------------------------------------------- scale wiring */
static void copy_by_name(qkt_gpt *dst, const qkt_gpt *src) {
    for (int i = 0; i < dst->params.n; i++) {
        qkt_tensor *t = dst->params.t[i], *s = qkt_params_find(&src->params, t->name);
        if (s) memcpy(t->data, s->data, (size_t)t->size * sizeof(qkt_real));
    }
}

/* wte x k: sharper logits than the 0.02 init, so differences upstream show in them. */
static void sharpen(qkt_gpt *g, double k) {
    for (int64_t j = 0; j < g->wte.weight->size; j++) g->wte.weight->data[j] *= (qkt_real)k;
}

static double max_logit_diff(qkt_gpt *a, qkt_gpt *b, const int32_t *idx, int B, int T) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_tensor *la, *lb;
    qkt_gpt_forward(&ctx, a, idx, NULL, B, T, &la, NULL);
    qkt_gpt_forward(&ctx, b, idx, NULL, B, T, &lb, NULL);
    double d = 0;
    for (int64_t i = 0; i < la->size; i++) d = fmax(d, fabs(la->data[i] - lb->data[i]));
    qkt_ctx_free(&ctx);
    return d;
}

/* Max difference of the captured attention probabilities of every layer. */
static double max_prob_diff(qkt_gpt *a, qkt_gpt *b, const int32_t *idx, int B, int T) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_attn_capture ca[2] = {{0}}, cb[2] = {{0}};
    qkt_gpt_opts oa = {.capture = ca, .capture_probs = true}, ob = {.capture = cb, .capture_probs = true};
    qkt_gpt_forward(&ctx, a, idx, NULL, B, T, NULL, &oa);
    qkt_gpt_forward(&ctx, b, idx, NULL, B, T, NULL, &ob);
    double d = 0;
    for (int l = 0; l < 2; l++)
        for (int64_t i = 0; i < (int64_t)B * a->cfg.n_head * T * T; i++) d = fmax(d, fabs(ca[l].probs[i] - cb[l].probs[i]));
    qkt_ctx_free(&ctx);
    return d;
}

/* Each variant equals sqrt_dk with a matching attn_temp (d_k = 4, C = 12), and learned
 * at init equals sqrt_dk; a wrong temperature does not, so the check has teeth. */
static void test_scale_variants(void) {
    int32_t idx[16];
    random_tokens(idx, 16, 11, 31);
    const double d = 4, C = 12;
    struct {
        qkt_attn_scale s;
        double temp_ref;
    } cases[] = {{QKT_ATTN_NONE, sqrt(d)}, {QKT_ATTN_DK, 1 / sqrt(d)}, {QKT_ATTN_SQRT_DMODEL, sqrt(d / C)},
                 {QKT_ATTN_LEARNED, 1}, {QKT_ATTN_SQRT_DK, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        qkt_gpt_config cv = small_cfg(cases[k].s), cr = small_cfg(QKT_ATTN_SQRT_DK);
        cv.qk_init_mult = cr.qk_init_mult = 30;
        cv.attn_temp = 1.5, cr.attn_temp = 1.5 * cases[k].temp_ref;
        qkt_gpt gv, gr, gw;
        make_gpt(&gr, &cr, 9);
        sharpen(&gr, 50);
        make_gpt(&gv, &cv, 9);
        copy_by_name(&gv, &gr);
        double dd = fmax(max_logit_diff(&gv, &gr, idx, 2, 8), max_prob_diff(&gv, &gr, idx, 2, 8));
        EXPECT(dd < 1e-5, "%s: differs from sqrt_dk with temp %g by %g", qkt_attn_scale_name(cases[k].s),
               cr.attn_temp, dd);
        cr.attn_temp *= 1.3;
        make_gpt(&gw, &cr, 9);
        sharpen(&gw, 50);
        double dw = max_prob_diff(&gv, &gw, idx, 2, 8);
        EXPECT(dw > 1e-2, "%s: a 1.3x temperature changed nothing (%g)", qkt_attn_scale_name(cases[k].s), dw);
        qkt_gpt_free(&gv), qkt_gpt_free(&gr), qkt_gpt_free(&gw);
    }
    /* learned: log_scale shifted by log 2 equals attn_temp x2 */
    qkt_gpt_config cl = small_cfg(QKT_ATTN_LEARNED), cr = small_cfg(QKT_ATTN_SQRT_DK);
    cl.qk_init_mult = cr.qk_init_mult = 30, cr.attn_temp = 2;
    qkt_gpt gl, gr;
    make_gpt(&gr, &cr, 9);
    make_gpt(&gl, &cl, 9);
    copy_by_name(&gl, &gr);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 3; h++) gl.h[l].attn.log_scale->data[h] += (qkt_real)log(2.0);
    EXPECT(max_prob_diff(&gl, &gr, idx, 2, 8) < 1e-5, "learned log_scale + log 2 != temp 2");
    qkt_gpt_free(&gl), qkt_gpt_free(&gr);
    /* qk_layernorm: q and k rows of every head are normalised before the product, so the
     * captured logits are bounded by s * sum |q||k| <= s * d_k (unit LN weights, zero biases). */
    qkt_gpt_config cq = small_cfg(QKT_ATTN_QK_LAYERNORM);
    cq.qk_init_mult = 30;
    qkt_gpt gq;
    make_gpt(&gq, &cq, 9);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    qkt_attn_capture cap[2] = {{0}};
    qkt_gpt_opts o = {.capture = cap, .capture_logits = true};
    qkt_gpt_forward(&ctx, &gq, idx, NULL, 2, 8, NULL, &o);
    double mx = 0;
    for (int l = 0; l < 2; l++)
        for (int64_t i = 0; i < 2 * 3 * 8 * 8; i++)
            if (isfinite(cap[l].logits[i])) mx = fmax(mx, fabs(cap[l].logits[i]));
    EXPECT(mx <= 4 / sqrt(4.0) + 1e-4 && mx > 0.1, "qk_layernorm: |logit| max %g, bound %g", mx, 4 / sqrt(4.0));
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&gq);
}

/* ---------------------------------------------------------------- capture, padding */
static void test_capture(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.qk_init_mult = 10;
    qkt_gpt g;
    make_gpt(&g, &c, 4);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int B = 2, T = 8, H = 3;
    int32_t idx[16];
    random_tokens(idx, 16, 11, 41);
    int64_t n = (int64_t)B * H * T * T;
    qkt_real *mine = malloc((size_t)n * sizeof *mine);
    qkt_attn_capture cap[2] = {{.probs = mine, .logits = NULL}, {0}};
    qkt_gpt_opts o = {.capture = cap, .capture_probs = true, .capture_logits = true};
    qkt_tensor *l0, *l1;
    qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, &l0, &o);
    EXPECT(cap[0].probs == mine && cap[0].logits && cap[1].probs && cap[1].logits, "capture buffers not set");
    double worst_sum = 0, worst_above = 0, worst_softmax = 0;
    int bad_logit = 0;
    for (int l = 0; l < 2; l++)
        for (int bh = 0; bh < B * H; bh++)
            for (int i = 0; i < T; i++) {
                const qkt_real *p = cap[l].probs + ((int64_t)bh * T + i) * T, *z = cap[l].logits + ((int64_t)bh * T + i) * T;
                double s = 0, mx = -INFINITY, se = 0;
                for (int j = 0; j < T; j++) {
                    s += p[j];
                    if (j > i) worst_above = fmax(worst_above, fabs(p[j])), bad_logit += !(isinf(z[j]) && z[j] < 0);
                    else mx = fmax(mx, z[j]);
                }
                worst_sum = fmax(worst_sum, fabs(s - 1));
                for (int j = 0; j <= i; j++) se += exp(z[j] - mx);
                for (int j = 0; j <= i; j++) worst_softmax = fmax(worst_softmax, fabs(exp(z[j] - mx) / se - p[j]));
            }
    EXPECT(worst_sum < 1e-5, "capture: a row sums to 1 +- %g", worst_sum);
    EXPECT(worst_above == 0, "capture: probability %g above the diagonal", worst_above);
    EXPECT(bad_logit == 0, "capture: %d logits above the diagonal are not -inf", bad_logit);
    EXPECT(worst_softmax < 1e-5, "capture: probs != softmax(logits) by %g", worst_softmax);
    /* Capture changes nothing in the output. */
    qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, &l1, NULL);
    EXPECT(!memcmp(l0->data, l1->data, (size_t)l0->size * sizeof(qkt_real)), "capture changed the logits");

    /* Key padding: padded keys get probability 0, and their tokens do not reach the others. */
    uint8_t pad[16] = {0};
    pad[2] = pad[5] = 1;     /* batch 0, keys 2 and 5 */
    pad[8 + 0] = 1;          /* batch 1, key 0: query 0 of batch 1 sees no key */
    qkt_attn_capture cap2[2] = {{0}};
    qkt_gpt_opts op = {.key_pad = pad, .capture = cap2, .capture_probs = true};
    qkt_ctx_reset(&ctx);
    qkt_gpt_forward(&ctx, &g, idx, NULL, B, T, &l0, &op);
    double pad_p = 0;
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                pad_p = fmax(pad_p, fabs(cap2[l].probs[(((int64_t)0 * H + h) * T + i) * T + 2]));
                pad_p = fmax(pad_p, fabs(cap2[l].probs[(((int64_t)0 * H + h) * T + i) * T + 5]));
                pad_p = fmax(pad_p, fabs(cap2[l].probs[(((int64_t)1 * H + h) * T + i) * T + 0]));
            }
    EXPECT(pad_p == 0, "padded key has probability %g", pad_p);
    int32_t idx2[16];
    memcpy(idx2, idx, sizeof idx);
    idx2[2] = (idx2[2] + 3) % 11, idx2[5] = (idx2[5] + 3) % 11, idx2[8] = (idx2[8] + 3) % 11;
    qkt_gpt_forward(&ctx, &g, idx2, NULL, B, T, &l1, &op);
    double moved = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            if ((b == 0 && (t == 2 || t == 5)) || (b == 1 && t == 0)) continue;
            for (int v = 0; v < 11; v++) {
                int64_t i = ((int64_t)b * T + t) * 11 + v;
                moved = fmax(moved, fabs(l0->data[i] - l1->data[i]));
            }
        }
    EXPECT(moved < 1e-6, "a padded token moved other positions' logits by %g", moved);
    free(mine);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

/* The dL/dz probe of qkt_attn_capture: a zero (B, H, T, T) bias per layer whose grad after
 * backward is dL/dz; against central differences of the loss, 0 on blocked entries, and the
 * zero probe leaves the loss as it was. */
static void test_dz_probe(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.qk_init_mult = 10; /* peaked attention: dL/dz far from uniform */
    qkt_gpt g;
    make_gpt(&g, &c, 5);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int B = 2, T = 8, H = 3, L = 2;
    int32_t idx[16], tgt[16];
    random_tokens(idx, 16, 11, 43);
    random_tokens(tgt, 16, 11, 44);
    qkt_params probe;
    qkt_params_init(&probe);
    qkt_tensor *dz[2];
    for (int l = 0; l < L; l++) dz[l] = qkt_params_add(&probe, l ? "dz.1" : "dz.0", 4, (int[]){B, H, T, T}, 0);
    qkt_params_finalize(&probe);
    qkt_attn_capture cap[2] = {{.dz = dz[0]}, {.dz = dz[1]}};
    qkt_gpt_opts o = {.capture = cap};
    qkt_tensor *loss = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, &o);
    double l0 = loss->data[0];
    qkt_backward(&ctx, loss, NULL);
    int64_t best = -1, per = (int64_t)B * H * T * T;
    double blocked = 0;
    for (int64_t e = 0; e < probe.size; e++) {
        int64_t r = e % per, i = r / T % T, j = r % T;
        if (j > i) blocked = fmax(blocked, fabs(probe.grad[e]));
        else if (best < 0 || fabs(probe.grad[e]) > fabs(probe.grad[best])) best = e;
    }
    EXPECT(blocked == 0, "dL/dz of a blocked entry: %g", blocked);
    EXPECT(best >= 0 && fabs(probe.grad[best]) > 1e-4, "dL/dz is all but zero (largest %g)", best >= 0 ? probe.grad[best] : 0);
    qkt_ctx_reset(&ctx);
    int mode = qkt_ctx_set_mode(&ctx, QKT_MODE_EVAL);
    double plain = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, NULL)->data[0];
    EXPECT(fabs(plain - l0) <= 1e-6 * fabs(l0), "the zero probe moved the loss: %.9g vs %.9g", l0, plain);
    const double eps = 1e-2;
    double f[2];
    for (int k = 0; k < 2; k++) {
        probe.data[best] = (qkt_real)(k ? -eps : eps);
        qkt_ctx_reset(&ctx);
        qkt_attn_capture c2[2] = {{.dz = dz[0]}, {.dz = dz[1]}};
        qkt_gpt_opts o2 = {.capture = c2};
        f[k] = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, &o2)->data[0];
    }
    probe.data[best] = 0;
    qkt_ctx_set_mode(&ctx, mode);
    double fd = (f[0] - f[1]) / (2 * eps);
    EXPECT(fabs(fd - probe.grad[best]) <= 0.02 * fabs(probe.grad[best]) + 1e-5, "dL/dz %g, central difference %g", (double)probe.grad[best], fd);
    qkt_params_free(&probe);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- dropout */
static void test_dropout(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.dropout = 0.3;
    qkt_gpt g;
    make_gpt(&g, &c, 4);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int32_t idx[16];
    random_tokens(idx, 16, 11, 51);
    qkt_tensor *a, *b, *e1, *e2;
    qkt_gpt_forward(&ctx, &g, idx, NULL, 2, 8, &a, NULL);
    qkt_gpt_forward(&ctx, &g, idx, NULL, 2, 8, &b, NULL);
    EXPECT(memcmp(a->data, b->data, (size_t)a->size * sizeof(qkt_real)), "training with dropout: two passes equal");
    ctx.training = false;
    qkt_gpt_forward(&ctx, &g, idx, NULL, 2, 8, &e1, NULL);
    qkt_gpt_forward(&ctx, &g, idx, NULL, 2, 8, &e2, NULL);
    EXPECT(!memcmp(e1->data, e2->data, (size_t)e1->size * sizeof(qkt_real)), "eval: two passes differ");
    /* eval with dropout equals the dropout-free model */
    qkt_gpt_config c0 = c;
    c0.dropout = 0;
    qkt_gpt g0;
    make_gpt(&g0, &c0, 4);
    qkt_tensor *z;
    qkt_gpt_forward(&ctx, &g0, idx, NULL, 2, 8, &z, NULL);
    EXPECT(!memcmp(e1->data, z->data, (size_t)z->size * sizeof(qkt_real)), "eval with dropout != no dropout");
    qkt_gpt_free(&g0);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- fused residual adds */
/* qkt_block_forward without dropout adds each residual in the output projection's product
 * (qkt_attn_forward_add, qkt_mlp_forward_add): its output and every grad equal, bit for bit,
 * those of the block written out with qkt_add, for each scale variant, both MLP kinds, with
 * grads kept or not, and in eval. x is the embedding's output, so its grad is handed over. */
static qkt_real *block_run(qkt_gpt *g, bool fused, bool keep, bool train, int64_t *n) {
    int B = 2, T = 8, C = g->cfg.n_embd;
    int32_t idx[16];
    random_tokens(idx, B * T, g->cfg.vocab_size, 61);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    ctx.keep_grads = keep, ctx.training = train, ctx.no_grad = !train;
    qkt_attn_call call = {.hold_state = true}; /* the two runs see the same sigmaReparam state */
    const qkt_block *b = &g->h[0];
    qkt_tensor *x = qkt_embed_forward(&ctx, &g->wte, idx, 2, (int[]){B, T}), *y;
    if (fused) {
        y = qkt_block_forward(&ctx, b, x, &call);
    } else {
        x = qkt_add(&ctx, x, qkt_attn_forward(&ctx, &b->attn, qkt_ln_forward(&ctx, &b->ln_1, x), &call));
        y = qkt_add(&ctx, x, qkt_mlp_forward(&ctx, &b->mlp, qkt_ln_forward(&ctx, &b->ln_2, x)));
    }
    *n = y->size + (train ? g->params.size : 0);
    qkt_real *out = malloc(sizeof *out * (size_t)*n);
    memcpy(out, y->data, sizeof *out * (size_t)y->size);
    if (train) {
        qkt_real *seed = malloc(sizeof *seed * (size_t)B * T * C);
        for (int i = 0; i < B * T * C; i++) seed[i] = (qkt_real)((i % 7) - 3) / 4;
        qkt_params_zero_grad(&g->params);
        qkt_backward(&ctx, y, seed);
        memcpy(out + y->size, g->params.grad, sizeof *out * (size_t)g->params.size);
        free(seed);
    }
    qkt_ctx_free(&ctx);
    return out;
}

static void test_residual_fused(void) {
    for (int s = 0; s < QKT_ATTN_SCALE_COUNT; s++)
        for (int mk = 0; mk < 2; mk++) {
            qkt_gpt_config c = small_cfg((qkt_attn_scale)s);
            c.mlp = mk ? QKT_MLP_SWIGLU : QKT_MLP_GELU;
            qkt_gpt g;
            make_gpt(&g, &c, 8);
            for (int mode = 0; mode < 3; mode++) { /* 0 train, 1 train keeping grads, 2 eval */
                int64_t n0, n1;
                qkt_real *ref = block_run(&g, false, mode == 1, mode != 2, &n0);
                qkt_real *fus = block_run(&g, true, mode == 1, mode != 2, &n1);
                int64_t at = -1;
                for (int64_t i = 0; n0 == n1 && at < 0 && i < n0; i++)
                    if (memcmp(&ref[i], &fus[i], sizeof *ref)) at = i;
                EXPECT(n0 == n1 && at < 0, "%s, %s MLP, mode %d: the block differs from its ops written out at %lld of %lld",
                       qkt_attn_scale_name(s), mk ? "SwiGLU" : "GELU", mode, (long long)at, (long long)n0);
                free(ref), free(fus);
            }
            qkt_gpt_free(&g);
        }
}

/* ---------------------------------------------------------------- generation */
static void count_tok(int32_t tok, void *user) {
    (void)tok;
    (*(int *)user)++;
}

static void test_generate(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    qkt_gpt g;
    make_gpt(&g, &c, 6);
    for (int i = 0; i < g.params.n; i++) /* sharper logits than the 0.02 init */
        if (!strcmp(g.params.t[i]->name, "transformer.wte.weight"))
            for (int64_t j = 0; j < g.params.t[i]->size; j++) g.params.t[i]->data[j] *= 50;
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int32_t prompt[3] = {1, 4, 7}, out[20], out2[20];
    int calls = 0;
    qkt_sample_opts greedy = {.temperature = 0, .on_token = count_tok, .user = &calls};
    qkt_rng r;
    qkt_rng_seed(&r, 1);
    qkt_gpt_generate(&ctx, &g, prompt, 3, 17, &greedy, &r, out); /* 20 > block_size 8: cropping */
    EXPECT(calls == 17, "on_token called %d times", calls);
    EXPECT(ctx.training && !ctx.no_grad, "generate did not restore the ctx mode");
    EXPECT(out[0] == 1 && out[1] == 4 && out[2] == 7, "prompt not copied");
    /* greedy token n = argmax of the forward's last logits over the cropped context */
    int ok = 1;
    for (int n = 3; n < 20; n++) {
        int T = n < 8 ? n : 8;
        qkt_ctx_reset(&ctx);
        qkt_tensor *logits;
        qkt_gpt_forward(&ctx, &g, out + n - T, NULL, 1, T, &logits, NULL);
        const qkt_real *l = logits->data + (int64_t)(T - 1) * 11;
        int best = 0;
        for (int v = 1; v < 11; v++)
            if (l[v] > l[best]) best = v;
        ok &= best == out[n];
    }
    EXPECT(ok, "greedy generation is not the argmax of the forward");
    qkt_sample_opts k1 = {.temperature = 1.0, .top_k = 1};
    qkt_gpt_generate(&ctx, &g, prompt, 3, 17, &k1, &r, out2);
    EXPECT(!memcmp(out, out2, sizeof out), "top_k 1 differs from greedy");
    /* seeded sampling is reproducible and in range */
    qkt_sample_opts s = {.temperature = 1.0, .top_k = 5};
    qkt_rng_seed(&r, 42);
    qkt_gpt_generate(&ctx, &g, prompt, 3, 17, &s, &r, out);
    qkt_rng_seed(&r, 42);
    qkt_gpt_generate(&ctx, &g, prompt, 3, 17, &s, &r, out2);
    EXPECT(!memcmp(out, out2, sizeof out), "same seed, other samples");
    for (int i = 0; i < 20; i++) EXPECT(out[i] >= 0 && out[i] < 11, "token %d out of range", out[i]);
    /* qkt_sample_logits: top_k excludes the rest; frequencies follow the softmax */
    qkt_real logits[4] = {0, (qkt_real)log(2.0), (qkt_real)log(3.0), 5}, scratch[4];
    qkt_sample_opts t2 = {.temperature = 1.0, .top_k = 3};
    int counts[4] = {0};
    for (int i = 0; i < 60000; i++) counts[qkt_sample_logits(logits, 4, &t2, &r, scratch)]++;
    EXPECT(counts[0] == 0, "top_k 3 drew the smallest logit %d times", counts[0]);
    qkt_sample_opts t1 = {.temperature = 1.0};
    logits[3] = (qkt_real)log(4.0);
    memset(counts, 0, sizeof counts);
    for (int i = 0; i < 100000; i++) counts[qkt_sample_logits(logits, 4, &t1, &r, scratch)]++;
    for (int v = 0; v < 4; v++) EXPECT_NEAR(counts[v] / 100000.0, (v + 1) / 10.0, 0.01);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- overfitting */
static void test_overfit(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK);
    c.n_embd = 24, c.vocab_size = 16;
    qkt_gpt g;
    make_gpt(&g, &c, 2);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 1);
    int B = 2, T = 8;
    int32_t data[2 * 9], idx[16], tgt[16];
    random_tokens(data, 18, 16, 61);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) idx[b * T + t] = data[b * 9 + t], tgt[b * T + t] = data[b * 9 + t + 1];
    double first = 0, last = 0;
    for (int step = 0; step < 100; step++) {
        qkt_ctx_reset(&ctx);
        qkt_tensor *loss = qkt_gpt_forward(&ctx, &g, idx, tgt, B, T, NULL, NULL);
        if (step == 0) first = loss->data[0];
        last = loss->data[0];
        qkt_params_zero_grad(&g.params);
        qkt_backward(&ctx, loss, NULL);
        for (int64_t i = 0; i < g.params.size; i++) g.params.data[i] -= (qkt_real)0.5 * g.params.grad[i];
    }
    EXPECT(first > 2.5 && last < 0.5 * first, "overfit: loss %g -> %g", first, last);
    printf("overfit one batch: loss %.4f -> %.4f in 100 SGD steps\n", first, last);
    qkt_ctx_free(&ctx);
    qkt_gpt_free(&g);
}

/* ---------------------------------------------------------------- config */
static void expect_invalid(qkt_gpt_config c, const char *field) {
    qkt_err err = {{0}};
    qkt_gpt g;
    int rc = qkt_gpt_init(&g, &c, &err);
    EXPECT(rc == -1 && strstr(err.msg, field) && !strchr(err.msg, '\n'), "%s: rc %d, message '%s'", field, rc, err.msg);
}

static void test_config(void) {
    qkt_gpt_config c = small_cfg(QKT_ATTN_SQRT_DK), b;
    qkt_err err = {{0}};
    EXPECT(qkt_gpt_config_validate(&c, &err) == 0, "valid config rejected: %s", err.msg);
    b = c, b.n_embd = 13;
    expect_invalid(b, "n_embd 13 is not divisible by n_head 3");
    b = c, b.n_head = 0;
    expect_invalid(b, "n_head");
    b = c, b.n_layer = -1;
    expect_invalid(b, "n_layer");
    b = c, b.vocab_size = 0;
    expect_invalid(b, "vocab_size");
    b = c, b.block_size = 0;
    expect_invalid(b, "block_size");
    b = c, b.dropout = 1;
    expect_invalid(b, "dropout");
    b = c, b.attn_temp = 0;
    expect_invalid(b, "attn_temp");
    b = c, b.attn_temp = NAN;
    expect_invalid(b, "attn_temp");
    b = c, b.qk_init_mult = -1;
    expect_invalid(b, "qk_init_mult");
    b = c, b.ln_eps = 0;
    expect_invalid(b, "ln_eps");
    b = c, b.attn_scale = (qkt_attn_scale)99;
    expect_invalid(b, "attn_scale");
    const char *names[] = {"sqrt_dk", "none", "dk", "sqrt_dmodel", "learned", "qk_layernorm", "cosine", "sigma_reparam", "sigma_qk"};
    for (int i = 0; i < QKT_ATTN_SCALE_COUNT; i++) {
        qkt_attn_scale s = QKT_ATTN_SCALE_COUNT;
        EXPECT(!strcmp(qkt_attn_scale_name((qkt_attn_scale)i), names[i]), "name of %d", i);
        EXPECT(qkt_attn_scale_parse(names[i], &s, &err) == 0 && s == (qkt_attn_scale)i, "parse %s", names[i]);
    }
    qkt_attn_scale s;
    EXPECT(qkt_attn_scale_parse("sqrt_d", &s, &err) == -1 && strstr(err.msg, "sqrt_d") && strstr(err.msg, "qk_layernorm"),
           "bad name: %s", err.msg);
    EXPECT(!strcmp(qkt_attn_scale_name((qkt_attn_scale)42), "?"), "name of a bad enum");
    qkt_gpt_config d = qkt_gpt_config_default();
    EXPECT(d.attn_temp == 1 && d.qk_init_mult == 1 && d.ln_eps == 1e-5 && d.bias && d.attn_scale == QKT_ATTN_SQRT_DK,
           "defaults");
}

int main(void) {
    test_dz_probe();
    qkt_set_threads(1);
    test_param_layout();
    test_init_stats();
    test_loss_at_init();
    test_causal_and_tied();
    test_scale_variants();
    test_capture();
    test_dropout();
    test_residual_fused();
    test_generate();
    test_overfit();
    test_config();
    return qkt_test_finish();
}
