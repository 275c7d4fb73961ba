/* Part 1 of the study: attention at initialisation, no training. With q and k iid
 * N(0, 1) of width d_k, the raw logit q.k has variance d_k; each variant's scale
 * then sets the softmax temperature. Measured per (variant, d_k) over B x T rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"
#include "qkt_study.h"

const qkt_attn_scale qkt_study_fixed_scales[QKT_STUDY_N_FIXED] = {QKT_ATTN_SQRT_DK, QKT_ATTN_NONE, QKT_ATTN_DK,
                                                                 QKT_ATTN_SQRT_DMODEL};
const qkt_attn_scale qkt_study_growth_scales[QKT_STUDY_N_GROWTH] = {QKT_ATTN_SQRT_DK, QKT_ATTN_DK};

const char *qkt_study_variant_list(char *buf, size_t n) { return qkt_attn_scale_list(buf, n); }

/* Fraction of rows whose order of keys differs between raw and scaled logits. */
static double rank_changes(const qkt_real *raw, double s, int B, int T) {
    int64_t changed = 0, rows = 0;
    for (int b = 0; b < B; b++)
        for (int i = 1; i < T; i++) {
            const qkt_real *r = raw + ((size_t)b * T + i) * T;
            bool diff = false;
            for (int j = 0; j <= i && !diff; j++)
                for (int k = 0; k <= i && !diff; k++)
                    diff = (r[j] < r[k]) != (s * r[j] < s * r[k]);
            changed += diff;
            rows++;
        }
    return rows ? (double)changed / rows : 0;
}

int qkt_init_study_iid(const qkt_init_opts *o, qkt_init_row *out) {
    int n = 0, B = o->batch, T = o->seq_len;
    for (int vi = 0; vi < o->n_variants; vi++)
        for (int di = 0; di < o->n_dk; di++) {
            int d = o->dks[di], C = d; /* one head of width d_k; sqrt_dmodel uses n_embd = n_head_ref * d_k */
            double s = qkt_attn_scale_at_init(o->variants[vi], o->n_head_ref * d, d);
            qkt_params p;
            qkt_params_init(&p);
            qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, T, C}, 0);
            qkt_tensor *k = qkt_params_add(&p, "k", 3, (int[]){B, T, C}, 0);
            qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, T, C}, 0);
            qkt_params_finalize(&p);
            qkt_rng r;
            qkt_rng_seed(&r, o->seed + 1000003ull * (uint64_t)d); /* same q, k for every variant */
            for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)qkt_rng_normal(&r);
            qkt_ctx ctx;
            qkt_ctx_init(&ctx, 1 << 22, o->seed);
            size_t tt = (size_t)B * T * T;
            qkt_real *probs = qkt_malloc(tt * sizeof *probs), *logits = qkt_malloc(tt * sizeof *logits);
            qkt_attn_capture cap = {.probs = probs, .logits = logits};
            qkt_attn_opts ao = {.scale = s, .capture = &cap};
            qkt_tensor *y = qkt_attention(&ctx, q, k, v, 1, &ao);
            /* Gradient reaching q for a random upstream gradient of unit variance. */
            qkt_real *seed = qkt_malloc((size_t)y->size * sizeof *seed);
            for (int64_t i = 0; i < y->size; i++) seed[i] = (qkt_real)qkt_rng_normal(&r);
            qkt_backward(&ctx, y, seed);
            double g2 = 0;
            for (int64_t i = 0; i < q->size; i++) g2 += (double)q->grad[i] * q->grad[i];

            qkt_attn_stats st;
            qkt_attn_stats_compute(probs, logits, B, 1, T, &st);
            /* Raw logits (s = 1) for the ranking check: logits / s. */
            for (size_t i = 0; i < tt; i++) logits[i] = isfinite(logits[i]) ? (qkt_real)(logits[i] / s) : logits[i];
            qkt_init_row *row = &out[n++];
            memset(row, 0, sizeof *row);
            row->variant = o->variants[vi];
            row->d_k = d;
            row->scale = s;
            row->logit_std = st.logit_std;
            row->raw_logit_std = st.logit_std / s;
            row->entropy = st.entropy;
            row->norm_entropy = st.norm_entropy;
            row->max_weight = st.max_weight;
            row->frac_peaked = st.frac_peaked;
            row->jacobian_norm = st.jacobian_norm;
            row->grad_q_rms = sqrt(g2 / (double)q->size);
            row->rank_changed = rank_changes(logits, s, B < 2 ? B : 2, T);
            free(seed);
            free(probs);
            free(logits);
            qkt_ctx_free(&ctx);
            qkt_params_free(&p);
        }
    return n;
}
