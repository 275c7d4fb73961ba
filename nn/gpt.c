/* Pre-LN Transformer block and the GPT model: registration, forward, loss. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"

#define QKT_NAME_LEN 256

/* ---------------------------------------------------------------- block */
void qkt_block_add(qkt_block *b, qkt_params *p, const char *prefix, const qkt_gpt_config *c) {
    char name[QKT_NAME_LEN];
    snprintf(name, sizeof name, "%s.ln_1", prefix);
    qkt_norm_add(&b->ln_1, p, name, c->n_embd, c);
    snprintf(name, sizeof name, "%s.attn", prefix);
    qkt_attn_add(&b->attn, p, name, c);
    snprintf(name, sizeof name, "%s.ln_2", prefix);
    qkt_norm_add(&b->ln_2, p, name, c->n_embd, c);
    snprintf(name, sizeof name, "%s.mlp", prefix);
    qkt_mlp_add_kind(&b->mlp, p, name, c->n_embd, c->bias, c->mlp);
    b->dropout = c->dropout;
    b->scope[0] = 0;
}

/* x (B, T, C) -> x + drop(attn(ln_1(x))) -> x + drop(mlp(ln_2(x))) */
static void block_advance(const qkt_block *b) {
    const qkt_linear *l[4] = {&b->attn.c_attn, &b->attn.c_proj, &b->mlp.c_fc, &b->mlp.c_proj};
    for (int i = 0; i < 4; i++) qkt_linear_advance(l[i]);
}

qkt_tensor *qkt_block_forward(qkt_ctx *ctx, const qkt_block *b, qkt_tensor *x, const qkt_attn_call *call) {
    if (ctx->training && !ctx->no_grad && !(call && call->hold_state)) block_advance(b);
    if (!ctx->training || b->dropout == 0) { /* dropout is the identity: each residual add in its
                                                * output projection's product (the same bits) */
        x = qkt_attn_forward_add(ctx, &b->attn, qkt_ln_forward(ctx, &b->ln_1, x), call, x);
        return qkt_mlp_forward_add(ctx, &b->mlp, qkt_ln_forward(ctx, &b->ln_2, x), x);
    }
    qkt_tensor *a = qkt_attn_forward(ctx, &b->attn, qkt_ln_forward(ctx, &b->ln_1, x), call);
    x = qkt_add(ctx, x, qkt_dropout(ctx, a, b->dropout));
    qkt_tensor *m = qkt_mlp_forward(ctx, &b->mlp, qkt_ln_forward(ctx, &b->ln_2, x));
    return qkt_add(ctx, x, qkt_dropout(ctx, m, b->dropout));
}

/* ---------------------------------------------------------------- GPT */
int qkt_gpt_init(qkt_gpt *g, const qkt_gpt_config *cfg, qkt_err *err) {
    memset(g, 0, sizeof *g);
    if (qkt_gpt_config_validate(cfg, err)) return -1;
    g->cfg = *cfg;
    const qkt_gpt_config *c = &g->cfg;
    qkt_params_init(&g->params);
    qkt_embed_add(&g->wte, &g->params, QKT_GPT_WTE, c->vocab_size, c->n_embd);
    if (c->pos == QKT_POS_LEARNED) qkt_embed_add(&g->wpe, &g->params, QKT_GPT_WPE, c->block_size, c->n_embd);
    g->h = qkt_calloc((size_t)c->n_layer, sizeof *g->h);
    for (int i = 0; i < c->n_layer; i++) {
        char name[QKT_NAME_LEN];
        snprintf(name, sizeof name, QKT_GPT_BLOCK, i);
        qkt_block_add(&g->h[i], &g->params, name, c);
        snprintf(g->h[i].scope, sizeof g->h[i].scope, "h.%d", i);
    }
    qkt_norm_add(&g->ln_f, &g->params, "transformer.ln_f", c->n_embd, c);
    if (qkt_attn_variant_get(c->attn_scale)->sigma_linears) /* last, so the other tensors keep their indices */
        for (int i = 0; i < c->n_layer; i++) {
            qkt_block *b = &g->h[i];
            qkt_linear *l[4] = {&b->attn.c_attn, &b->attn.c_proj, &b->mlp.c_fc, &b->mlp.c_proj};
            for (int k = 0; k < 4; k++) {
                char name[QKT_NAME_LEN];
                size_t n = strlen(l[k]->weight->name) - strlen(".weight");
                snprintf(name, sizeof name, "%.*s", (int)n, l[k]->weight->name);
                qkt_linear_sigma_add(l[k], &g->params, name);
            }
        }
    qkt_params_finalize(&g->params);
    g->n_model = g->params.n;
    return 0;
}

void qkt_gpt_advance_state(qkt_gpt *g) {
    for (int l = 0; l < g->cfg.n_layer; l++) {
        const qkt_attn *a = &g->h[l].attn;
        if (a->variant->advance) a->variant->advance(a);
        block_advance(&g->h[l]);
    }
}

void qkt_gpt_free(qkt_gpt *g) {
    qkt_params_free(&g->params);
    free(g->h);
    memset(g, 0, sizeof *g);
}

qkt_tensor *qkt_gpt_hidden(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, int B, int T, const qkt_gpt_opts *opts) {
    const qkt_gpt_config *c = &g->cfg;
    QKT_CHECK(B > 0 && T > 0, "gpt forward: batch %d x length %d", B, T);
    QKT_CHECK(T <= c->block_size, "gpt forward: sequence length %d exceeds block_size %d", T, c->block_size);
    for (int64_t i = 0; i < (int64_t)B * T; i++)
        QKT_CHECK(idx[i] >= 0 && idx[i] < c->vocab_size, "gpt forward: token %d at (%lld, %lld) is outside [0, %d)",
                  idx[i], (long long)(i / T), (long long)(i % T), c->vocab_size);
    const char *outer_scope = ctx->scope;
    ctx->scope = "embeddings";
    qkt_tensor *x = qkt_embed_forward(ctx, &g->wte, idx, 2, (int[]){B, T}); /* (B, T, C) */
    if (g->wpe.weight) {
        int32_t *pos = qkt_arena_alloc(&ctx->arena, (size_t)T * sizeof *pos);
        for (int t = 0; t < T; t++) pos[t] = t;
        x = qkt_add(ctx, x, qkt_embed_forward(ctx, &g->wpe, pos, 1, (int[]){T})); /* (T, C), broadcast over B */
    }
    x = qkt_dropout(ctx, x, c->dropout);
    for (int l = 0; l < c->n_layer; l++) {
        qkt_attn_capture *cap = NULL;
        if (opts && opts->capture) {
            cap = &opts->capture[l];
            size_t bytes = (size_t)B * c->n_head * T * T * sizeof(qkt_real);
            /* A buffer this function took from an earlier step's arena is dead: take a new one. */
            if (cap->probs_gen && cap->probs_gen != ctx->gen) cap->probs = NULL, cap->probs_gen = 0;
            if (cap->logits_gen && cap->logits_gen != ctx->gen) cap->logits = NULL, cap->logits_gen = 0;
            if (!cap->probs && opts->capture_probs) cap->probs = qkt_arena_alloc(&ctx->arena, bytes), cap->probs_gen = ctx->gen;
            if (!cap->logits && opts->capture_logits) cap->logits = qkt_arena_alloc(&ctx->arena, bytes), cap->logits_gen = ctx->gen;
            if (!cap->probs && !cap->logits && !cap->dz) cap = NULL;
        }
        ctx->scope = g->h[l].scope;
        qkt_attn_call call = {.key_pad = opts ? opts->key_pad : NULL, .capture = cap, .hold_state = opts && opts->hold_state};
        x = qkt_block_forward(ctx, &g->h[l], x, &call);
    }
    ctx->scope = "ln_f";
    x = qkt_ln_forward(ctx, &g->ln_f, x);
    ctx->scope = outer_scope;
    return x;
}

qkt_tensor *qkt_gpt_forward(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *targets, int B, int T,
                            qkt_tensor **logits_out, const qkt_gpt_opts *opts) {
    qkt_tensor *x = qkt_gpt_hidden(ctx, g, idx, B, T, opts);
    const char *outer_scope = ctx->scope;
    ctx->scope = "lm_head";
    qkt_tensor *logits = qkt_matmul(ctx, x, g->wte.weight, false, true); /* (B, T, V): tied head */
    if (logits_out) *logits_out = logits;
    qkt_tensor *loss = NULL;
    if (targets) {
        for (int64_t i = 0; i < (int64_t)B * T; i++)
            QKT_CHECK(targets[i] == QKT_IGNORE || (targets[i] >= 0 && targets[i] < g->cfg.vocab_size),
                      "gpt forward: target %d at (%lld, %lld) is outside [0, %d) and not -1", targets[i],
                      (long long)(i / T), (long long)(i % T), g->cfg.vocab_size);
        loss = qkt_cross_entropy(ctx, logits, targets, NULL);
    }
    ctx->scope = outer_scope;
    return loss;
}
