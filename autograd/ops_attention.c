/* Causal multi-head attention as one op (see qkt_attention in qkt_autograd.h).
 * This version materialises P (B, H, T, T) for backward; per (b, h) it runs three
 * gemms forward and four backward through the one wrapper, reading q, k, v in place
 * with leading dimension C (no permute copies). */
#include "ops_internal.h"

typedef struct {
    int B, T, C, H, d;
    qkt_real *P;      /* (B, H, T, T) probabilities */
    qkt_real *s;      /* (H) per-head scale used */
    uint8_t *key_pad; /* copy of the (B, T) mask, or NULL */
} attn_saved;

static inline bool key_blocked(const attn_saved *a, int b, int i, int j) {
    return j > i || (a->key_pad && a->key_pad[b * a->T + j]);
}

qkt_tensor *qkt_attention(qkt_ctx *ctx, qkt_tensor *q, qkt_tensor *k, qkt_tensor *v, int n_head, const qkt_attn_opts *o) {
    QKT_CHECK_SHAPES(q->ndim == 3 && k->ndim == 3 && v->ndim == 3, "attention (q, k)", q, k);
    for (int d = 0; d < 3; d++) {
        QKT_CHECK_SHAPES(q->shape[d] == k->shape[d], "attention (q, k)", q, k);
        QKT_CHECK_SHAPES(q->shape[d] == v->shape[d], "attention (q, v)", q, v);
    }
    int B = q->shape[0], T = q->shape[1], C = q->shape[2], H = n_head;
    QKT_CHECK(H > 0 && C % H == 0, "attention: %d channels do not split into %d heads", C, H);
    QKT_CHECK(!o->log_scale || o->log_scale->size == H, "attention: log_scale has %lld values for %d heads",
              (long long)(o->log_scale ? o->log_scale->size : 0), H);
    int d = C / H;
    attn_saved *a = qkt_arena_alloc(&ctx->arena, sizeof *a);
    *a = (attn_saved){B, T, C, H, d, NULL, NULL, NULL};
    a->P = qkt_arena_alloc(&ctx->arena, (size_t)B * H * T * T * sizeof(qkt_real));
    a->s = qkt_arena_alloc(&ctx->arena, (size_t)H * sizeof(qkt_real));
    for (int h = 0; h < H; h++) a->s[h] = (qkt_real)(o->scale * (o->log_scale ? exp(o->log_scale->data[h]) : 1.0));
    if (o->key_pad) {
        a->key_pad = qkt_arena_alloc(&ctx->arena, (size_t)B * T);
        memcpy(a->key_pad, o->key_pad, (size_t)B * T);
    }
    qkt_tensor *y = qkt_op_output(ctx, 3, q->shape);
    qkt_attn_capture *cap = o->capture;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t off = (size_t)b * T * C + (size_t)h * d, poff = ((size_t)b * H + h) * T * T;
            qkt_real *P = a->P + poff, s = a->s[h];
            /* S = s Q K^T (T, T) */
            qkt_gemm(false, true, T, T, d, s, q->data + off, C, k->data + off, C, 0, P, T);
            for (int i = 0; i < T; i++) {
                qkt_real *row = P + (size_t)i * T, mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    if (key_blocked(a, b, i, j)) row[j] = -INFINITY;
                    else if (row[j] > mx) mx = row[j];
                }
                if (cap && cap->logits) memcpy(cap->logits + poff + (size_t)i * T, row, (size_t)T * sizeof(qkt_real));
                if (mx == -INFINITY) { /* every key blocked */
                    memset(row, 0, (size_t)T * sizeof(qkt_real));
                    continue;
                }
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    row[j] = row[j] == -INFINITY ? 0 : (qkt_real)exp(row[j] - mx);
                    sum += row[j];
                }
                qkt_real inv = (qkt_real)(1.0 / sum);
                for (int j = 0; j < T; j++) row[j] *= inv;
            }
            if (cap && cap->probs) memcpy(cap->probs + poff, P, (size_t)T * T * sizeof(qkt_real));
            /* Y_h = P V_h (T, d), written in place into (B, T, C) */
            qkt_gemm(false, false, T, d, T, 1, P, T, v->data + off, C, 0, y->data + off, C);
        }
    qkt_node *n = qkt_op_record(ctx, QKT_OP_ATTENTION, y, 4, (qkt_tensor *[]){q, k, v, o->log_scale});
    if (n) n->saved = a;
    qkt_op_done(ctx, QKT_OP_ATTENTION, y);
    return y;
}

/* With z = s_h Q K^T + mask, P = softmax(z), Y = P V:
 *   dV += P^T dY;  dP = dY V^T;  dZ = P * (dP - rowsum(P * dP));
 *   dQ += s_h dZ K;  dK += s_h dZ^T Q;  ds_h = sum(dZ * Q K^T) = sum(Q * (dZ K));
 *   dlog_scale[h] += s_h ds_h. Blocked entries have P = 0, hence dZ = 0. */
void qkt__attention_backward(qkt_ctx *ctx, qkt_node *n) {
    attn_saved *a = n->saved;
    qkt_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2], *ls = n->in[3];
    int T = a->T, C = a->C, d = a->d;
    const qkt_real *dY = n->out->grad;
    qkt_real *dQ = qkt_grad(ctx, q), *dK = qkt_grad(ctx, k), *dV = qkt_grad(ctx, v);
    qkt_real *dP = qkt_arena_alloc(&ctx->arena, (size_t)T * T * sizeof(qkt_real));
    qkt_real *tmp = qkt_arena_alloc(&ctx->arena, (size_t)T * d * sizeof(qkt_real));
    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->H; h++) {
            size_t off = (size_t)b * T * C + (size_t)h * d;
            const qkt_real *P = a->P + ((size_t)b * a->H + h) * T * T;
            qkt_real s = a->s[h];
            qkt_gemm(true, false, T, d, T, 1, P, T, dY + off, C, 1, dV + off, C);
            qkt_gemm(false, true, T, T, d, 1, dY + off, C, v->data + off, C, 0, dP, T);
            for (int i = 0; i < T; i++) {
                const qkt_real *pr = P + (size_t)i * T;
                qkt_real *gr = dP + (size_t)i * T;
                double dot = 0;
                for (int j = 0; j < T; j++) dot += (double)pr[j] * gr[j];
                for (int j = 0; j < T; j++) gr[j] = pr[j] * (gr[j] - (qkt_real)dot);
            }
            /* tmp = dZ K (T, d); dQ += s tmp */
            qkt_gemm(false, false, T, d, T, 1, dP, T, k->data + off, C, 0, tmp, d);
            for (int i = 0; i < T; i++)
                for (int c = 0; c < d; c++) dQ[off + (size_t)i * C + c] += s * tmp[(size_t)i * d + c];
            qkt_gemm(true, false, T, d, T, s, dP, T, q->data + off, C, 1, dK + off, C);
            if (qkt__needs_grad(ls)) {
                double ds = 0;
                for (int i = 0; i < T; i++)
                    for (int c = 0; c < d; c++) ds += (double)q->data[off + (size_t)i * C + c] * tmp[(size_t)i * d + c];
                qkt_grad(ctx, ls)[h] += s * (qkt_real)ds;
            }
        }
}
