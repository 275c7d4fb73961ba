/* Autoregressive sampling from a GPT (no_grad, eval mode). */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "qkt_nn.h"

int32_t qkt_sample_logits(const qkt_real *logits, int V, const qkt_sample_opts *o, qkt_rng *rng, qkt_real *scratch) {
    if (o->temperature <= 0) { /* greedy; ties go to the lowest id */
        int best = 0;
        for (int j = 1; j < V; j++)
            if (logits[j] > logits[best]) best = j;
        return best;
    }
    /* Keep the top_k largest logits: threshold = the k-th largest value (ties kept). */
    double thresh = -INFINITY;
    if (o->top_k > 0 && o->top_k < V) {
        memcpy(scratch, logits, (size_t)V * sizeof *scratch);
        /* partial selection sort of the k largest; k is small in practice */
        for (int a = 0; a < o->top_k; a++) {
            int m = a;
            for (int j = a + 1; j < V; j++)
                if (scratch[j] > scratch[m]) m = j;
            qkt_real tmp = scratch[a];
            scratch[a] = scratch[m], scratch[m] = tmp;
        }
        thresh = scratch[o->top_k - 1];
    }
    /* p_j proportional to exp((l_j - max) / temperature) over the kept entries */
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; j++)
        if (logits[j] >= thresh && logits[j] > mx) mx = logits[j];
    for (int j = 0; j < V; j++) {
        double p = logits[j] >= thresh ? exp((logits[j] - mx) / o->temperature) : 0;
        scratch[j] = (qkt_real)p;
        sum += p;
    }
    double u = qkt_rng_uniform(rng) * sum, acc = 0;
    int last = 0;
    for (int j = 0; j < V; j++) {
        if (scratch[j] <= 0) continue;
        acc += scratch[j];
        last = j;
        if (u < acc) return j;
    }
    return last; /* rounding: u landed past the final partial sum */
}

int qkt_gpt_generate(qkt_ctx *ctx, qkt_gpt *g, const int32_t *prompt, int n_prompt, int n_new,
                      const qkt_sample_opts *o, qkt_rng *rng, int32_t *out) {
    const qkt_gpt_config *c = &g->cfg;
    QKT_CHECK(n_prompt >= 1 && n_new >= 0, "generate: prompt of %d tokens, %d new (need a prompt)", n_prompt, n_new);
    int mode = qkt_ctx_set_mode(ctx, QKT_MODE_EVAL);
    memmove(out, prompt, (size_t)n_prompt * sizeof *out);
    int V = c->vocab_size, C = c->n_embd, n;
    for (n = n_prompt; n < n_prompt + n_new; n++) {
        qkt_ctx_reset(ctx);
        int T = n < c->block_size ? n : c->block_size;
        qkt_tensor *h = qkt_gpt_hidden(ctx, g, out + n - T, 1, T, NULL); /* (1, T, C) */
        /* Only the last position's logits: l = h_last wte^T (V) */
        qkt_real *logits = qkt_arena_alloc(&ctx->arena, (size_t)V * sizeof *logits);
        qkt_real *scratch = qkt_arena_alloc(&ctx->arena, (size_t)V * sizeof *scratch);
        qkt_gemm(false, true, 1, V, C, 1, h->data + (int64_t)(T - 1) * C, C, g->wte.weight->data, C, 0, logits, V);
        bool finite = true;
        for (int j = 0; j < V; j++) finite &= isfinite(logits[j]) != 0;
        if (!finite) break;
        out[n] = qkt_sample_logits(logits, V, o, rng, scratch);
        if (o->on_token) o->on_token(out[n], o->user);
    }
    qkt_ctx_reset(ctx);
    qkt_ctx_set_mode(ctx, mode);
    return n - n_prompt;
}
