/* Fused cross-entropy with integer targets and an ignore index. */
#include "kern_table.h"
#include "ops_internal.h"

typedef struct {
    int32_t *targets;
    qkt_real *lse; /* per row: log sum exp of the logits */
    int64_t rows;
    int V, n_counted;
} ce_saved;

qkt_tensor *qkt_cross_entropy(qkt_ctx *ctx, qkt_tensor *logits, const int32_t *targets, int *n_counted) {
    QKT_LIVE(ctx, "cross_entropy", logits);
    QKT_CHECK(logits->ndim >= 1, "cross_entropy of a scalar");
    int V = qkt__last(logits);
    int64_t rows = logits->size / V;
    ce_saved *s = qkt_arena_alloc(&ctx->arena, sizeof *s);
    s->targets = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(int32_t));
    s->lse = qkt_arena_alloc(&ctx->arena, (size_t)rows * sizeof(qkt_real));
    s->rows = rows, s->V = V, s->n_counted = 0;
    for (int64_t r = 0; r < rows; r++) {
        QKT_CHECK(targets[r] == QKT_IGNORE || (targets[r] >= 0 && targets[r] < V),
                  "cross_entropy: target %d at row %lld is outside [0, %d) and not %d (ignore)", targets[r], (long long)r, V, QKT_IGNORE);
        s->targets[r] = targets[r];
        s->n_counted += targets[r] != QKT_IGNORE;
    }
    double total = qkt__kern_get()->cross_entropy_forward(logits->data, s->targets, s->lse, rows, V);
    qkt_tensor *y = qkt__op_output(ctx, 0, NULL);
    y->data[0] = s->n_counted ? (qkt_real)(total / s->n_counted) : 0;
    if (n_counted) *n_counted = s->n_counted;
    qkt_node *n = qkt_op_record(ctx, QKT_OP_CROSS_ENTROPY, y, 1, &logits);
    if (n) n->saved = s;
    qkt_op_done(ctx, QKT_OP_CROSS_ENTROPY, y);
    return y;
}

/* L = (1/n) sum_counted (lse_r - x_r[t_r]):  dx_rj += dL/n (softmax_rj - [j == t_r]);
 * ignored rows get nothing. */
void qkt__cross_entropy_backward(qkt_ctx *ctx, qkt_node *n) {
    ce_saved *s = n->saved;
    if (!s->n_counted) return;
    qkt_tensor *x = n->in[0];
    qkt_real *dX = qkt_grad(ctx, x);
    qkt_real g = n->out->grad[0] / (qkt_real)s->n_counted;
    qkt__kern_get()->cross_entropy_backward(x->data, s->targets, s->lse, g, dX, s->rows, s->V);
}
