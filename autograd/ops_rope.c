/* Rotary position embeddings (RoPE, Su et al. 2021), fused, on q or k in the (B, T, C)
 * = (B, T, H, d) layout: per head, channel pairs (i, i + d/2) (the "rotate half" pairing of
 * GPT-NeoX and LLaMA) are rotated by the angle t theta_i, theta_i = base^(-2i/d). */
#include "ops_internal.h"

/* cos and sin of t theta_i for t < T, i < d/2: (T, d/2) each, computed in double. */
static void rope_table(qkt_ctx *ctx, int T, int d, double base, qkt_real **cs, qkt_real **sn) {
    int h = d / 2;
    *cs = qkt_arena_alloc(&ctx->arena, (size_t)T * h * sizeof(qkt_real));
    *sn = qkt_arena_alloc(&ctx->arena, (size_t)T * h * sizeof(qkt_real));
    for (int i = 0; i < h; i++) {
        double theta = pow(base, -2.0 * i / d);
        for (int t = 0; t < T; t++) {
            (*cs)[(int64_t)t * h + i] = (qkt_real)cos(t * theta);
            (*sn)[(int64_t)t * h + i] = (qkt_real)sin(t * theta);
        }
    }
}

/* Row r (one position of one sequence, every head) of rotate. */
static inline void rotate_row(const qkt_real *X, qkt_real *Y, int64_t r, int T, int H, int d, const qkt_real *cs,
                              const qkt_real *sn, qkt_real sign, bool acc) {
    int h = d / 2;
    const qkt_real *c = cs + (r % T) * h, *s = sn + (r % T) * h;
    for (int k = 0; k < H; k++) {
        const qkt_real *x = X + (r * H + k) * d;
        qkt_real *y = Y + (r * H + k) * d;
        for (int i = 0; i < h; i++) {
            qkt_real a = x[i], b = x[i + h], si = sign * s[i];
            qkt_real ya = a * c[i] - b * si, yb = b * c[i] + a * si;
            if (acc) y[i] += ya, y[i + h] += yb;
            else y[i] = ya, y[i + h] = yb;
        }
    }
}

/* y = R x (forward, sign +1) or R^T x (backward, sign -1), accumulating into y when acc. */
static void rotate(const qkt_real *X, qkt_real *Y, int64_t BT, int T, int H, int d, const qkt_real *cs, const qkt_real *sn,
                   qkt_real sign, bool acc) {
    QKT_PAR_FOR(qkt_parallel_worth(BT * H * d > QKT_PAR_MIN), r, BT, rotate_row(X, Y, r, T, H, d, cs, sn, sign, acc));
}

typedef struct {
    qkt_real *cs, *sn;
} rope_saved;

qkt_tensor *qkt_rope(qkt_ctx *ctx, qkt_tensor *x, int n_head, double base) {
    QKT_LIVE(ctx, "rope", x);
    QKT_CHECK(x->ndim == 3, "rope: x must be (B, T, C), got %d dims", x->ndim);
    int T = x->shape[1], C = x->shape[2];
    QKT_CHECK(n_head > 0 && C % n_head == 0 && (C / n_head) % 2 == 0, "rope: C %d over %d heads must give an even d", C, n_head);
    QKT_CHECK(base > 1, "rope: base %g must be > 1", base);
    int d = C / n_head;
    rope_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    rope_table(ctx, T, d, base, &s->cs, &s->sn);
    qkt_tensor *y = qkt__op_output(ctx, 3, x->shape);
    rotate(x->data, y->data, (int64_t)x->shape[0] * T, T, n_head, d, s->cs, s->sn, 1, false);
    qkt_node *n = qkt_op_record(ctx, QKT_OP_ROPE, y, 1, (qkt_tensor *[]){x});
    if (n) n->saved = s, n->p.i[0] = n_head;
    qkt_op_done(ctx, QKT_OP_ROPE, y);
    return y;
}

/* The rotation is orthogonal: dx += R^T dy (the angle negated). */
void qkt__rope_backward(qkt_ctx *ctx, qkt_node *n) {
    qkt_tensor *x = n->in[0];
    if (!qkt__needs_grad(x)) return;
    rope_saved *s = n->saved;
    int T = x->shape[1], H = n->p.i[0], d = x->shape[2] / H;
    rotate(n->out->grad, qkt_grad(ctx, x), (int64_t)x->shape[0] * T, T, H, d, s->cs, s->sn, -1, true);
}
