/* GPT-2 initialisation (as nanoGPT's _init_weights plus the c_proj rule), with the
 * qk_init_mult, width-consistent W_q/W_k (qk_init "unit") and learned-scale extras. */
#include <math.h>
#include <string.h>

#include "qkt_nn.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* (qkt_real)(std z_i): qkt_rng_fill_normal's mean + std z_i with mean 0, the same float but
 * for z_i = -0 (a first uniform of exactly 0, 2^-53 a draw), which gives +0 there. */
static void fill_normal(qkt_real *x, int64_t n, double std, qkt_rng *r) { qkt_rng_fill_normal(r, x, n, 0.0, std); }

static void fill_const(qkt_real *x, int64_t n, double v) {
    for (int64_t i = 0; i < n; i++) x[i] = (qkt_real)v;
}

/* The index of t among its attention layer's variant tensors (*owner set), or -1. */
static int variant_tensor(const qkt_gpt *g, const qkt_tensor *t, const qkt_attn **owner) {
    for (int l = 0; l < g->cfg.n_layer; l++)
        for (int k = 0; k < g->h[l].attn.n_vp; k++)
            if (g->h[l].attn.vp[k] == t) return *owner = &g->h[l].attn, k;
    return -1;
}

/* The sigmaReparam Linear whose sigma_u or sigma_gamma t is, or NULL. */
static const qkt_linear *sigma_linear(const qkt_gpt *g, const qkt_tensor *t) {
    for (int l = 0; l < g->cfg.n_layer; l++) {
        const qkt_block *b = &g->h[l];
        const qkt_linear *ls[4] = {&b->attn.c_attn, &b->attn.c_proj, &b->mlp.c_fc, &b->mlp.c_proj};
        for (int k = 0; k < 4; k++)
            if (ls[k]->sigma_u && (ls[k]->sigma_u == t || ls[k]->sigma_gamma == t)) return ls[k];
    }
    return NULL;
}

/* Variants' tensors are initialised by their variant; the others are recognised by name and rank (the names are fixed by the checkpoint
 * format): 2-D = a Linear or embedding weight, 1-D "*.weight" = a LayerNorm weight. */
void qkt_gpt_init_weights(qkt_gpt *g, qkt_rng *rng) {
    const qkt_gpt_config *c = &g->cfg;
    const double std = c->init_std > 0 ? c->init_std : 0.02, std_resid = std / sqrt(2.0 * c->n_layer);
    const int C = c->n_embd;
    for (int i = 0; i < g->n_model; i++) {
        qkt_tensor *t = g->params.t[i];
        qkt_rng r;
        qkt_rng_split(rng, (uint64_t)i, &r); /* one stream per tensor, independent of other sizes */
        const qkt_attn *owner = NULL;
        int k = variant_tensor(g, t, &owner);
        const qkt_linear *sl = owner ? NULL : sigma_linear(g, t);
        if (sl) { /* registered after every weight, u before gamma: both read what is already set */
            qkt_linear_sigma_init(sl, t, &r);
        } else if (owner) {
            if (owner->variant->init) owner->variant->init(owner, k, t, &r);
            else fill_const(t->data, t->size, 0.0);
        } else if (t->ndim == 2 && ends_with(t->name, "c_proj.weight")) {
            fill_normal(t->data, t->size, std_resid, &r);
        } else if (t->ndim == 2 && ends_with(t->name, "c_attn.weight")) {
            /* rows [0, C) = W_q, [C, 2C) = W_k, [2C, 3C) = W_v; each row has C inputs.
             * "unit": std 1/sqrt(C), so q_i = sum_j W_ij x_j has variance ~1 for unit-variance x. */
            double qk_std = c->qk_init == QKT_QK_INIT_UNIT ? 1.0 / sqrt((double)C) : std;
            fill_normal(t->data, (int64_t)2 * C * C, qk_std * c->qk_init_mult, &r);
            fill_normal(t->data + (int64_t)2 * C * C, (int64_t)C * C, std, &r);
        } else if (t->ndim == 2) {
            fill_normal(t->data, t->size, std, &r);
        } else if (ends_with(t->name, ".weight")) {
            fill_const(t->data, t->size, 1.0);
        } else {
            QKT_CHECK(ends_with(t->name, ".bias"), "init: no rule for parameter %s", t->name);
            fill_const(t->data, t->size, 0.0);
        }
    }
}
