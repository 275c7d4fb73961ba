/* Data-parallel training step inside one process (see qkt_dp in qkt_nn.h).
 *
 * Why: a small model's step is ~100 ops, each its own OpenMP region; on 2 threads the
 * wake-ups and the serial tails of those regions cost more than the work they split.
 * Replicas make one region per step: each thread runs whole shards of the batch with
 * single-threaded ops, and the grads are summed once, in replica order. */
#include <stdlib.h>
#include <string.h>

#include "qkt_nn.h"

void qkt_dp_init(qkt_dp *dp, qkt_ctx *ctx0, const qkt_params *p, int n) {
    QKT_CHECK(n >= 1 && n <= QKT_DP_MAX, "qkt_dp_init: %d replicas (expected 1 .. %d)", n, QKT_DP_MAX);
    QKT_CHECK(p->finalized, "qkt_dp_init before the parameters are finalized");
    memset(dp, 0, sizeof *dp);
    dp->n = n;
    dp->size = p->size;
    dp->ctx = qkt_malloc((size_t)n * sizeof *dp->ctx);
    dp->ctx[0] = ctx0;
    if (n > 1) {
        dp->own = qkt_malloc((size_t)(n - 1) * sizeof *dp->own);
        dp->grad = qkt_aligned_alloc(64, (size_t)(n - 1) * (size_t)p->size * sizeof(qkt_real));
        for (int r = 1; r < n; r++) {
            qkt_ctx_init(&dp->own[r - 1], 1 << 20, 0); /* its RNG is re-split from ctx0's every step */
            qkt_ctx_redirect_param_grads(&dp->own[r - 1], p, dp->grad + (size_t)(r - 1) * p->size);
            dp->ctx[r] = &dp->own[r - 1];
        }
    }
}

void qkt_dp_free(qkt_dp *dp) {
    for (int r = 1; r < dp->n; r++) qkt_ctx_free(&dp->own[r - 1]);
    free(dp->own);
    free(dp->grad);
    free(dp->ctx);
    memset(dp, 0, sizeof *dp);
}

static int64_t counted(const int32_t *tgt, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += tgt[i] != QKT_IGNORE;
    return c;
}

/* Shard r of R is rows [shard_b0(r), shard_b0(r + 1)) of a batch of B. */
static int shard_b0(int B, int R, int r) { return (int)((int64_t)B * r / R); }

/* What every shard's pass reads, and where it leaves its loss share. */
typedef struct {
    qkt_dp *dp;
    qkt_gpt *g;
    const int32_t *idx, *tgt;
    int B, T;
    const int64_t *n_r; /* counted targets per shard */
    int64_t total;
    double *loss_r;
} shard_job;

/* Replica r's forward and backward on its shard, into its own grad buffer. */
static void shard_pass(const shard_job *j, int r) {
    int R = j->dp->n, T = j->T, b0 = shard_b0(j->B, R, r), b1 = shard_b0(j->B, R, r + 1);
    qkt_ctx *c = j->dp->ctx[r];
    if (r > 0) memset(j->dp->grad + (size_t)(r - 1) * j->dp->size, 0, (size_t)j->dp->size * sizeof(qkt_real));
    qkt_ctx_reset(c);
    qkt_gpt_opts hold = {.hold_state = true};
    qkt_tensor *loss = qkt_gpt_forward(c, j->g, j->idx + (size_t)b0 * T, j->tgt + (size_t)b0 * T, b1 - b0, T, NULL, &hold);
    /* The batch loss is sum_r (n_r / total) loss_r: replica r's backward is seeded with
     * its weight. */
    double share = (double)j->n_r[r] / (double)j->total;
    qkt_real w = (qkt_real)share;
    if (j->n_r[r]) qkt_backward(c, loss, &w);
    j->loss_r[r] = share * (double)loss->data[0];
}

/* Block blk (4096 parameters) of the replicas' sum: home += g_1, then += g_2, ... */
static void sum_block(qkt_real *home, const qkt_real *gr, int64_t size, int R, int64_t blk) {
    int64_t i0 = blk * 4096, i1 = i0 + 4096 < size ? i0 + 4096 : size;
    for (int r = 1; r < R; r++) {
        const qkt_real *gi = gr + (size_t)(r - 1) * size;
#pragma omp simd
        for (int64_t i = i0; i < i1; i++) home[i] += gi[i];
    }
}

double qkt_dp_forward_backward(qkt_dp *dp, qkt_gpt *g, const int32_t *idx, const int32_t *tgt, int B, int T) {
    const int R = dp->n;
    QKT_CHECK(B >= R, "qkt_dp_forward_backward: batch %d is smaller than the %d replicas", B, R);
    QKT_CHECK(dp->size == g->params.size, "qkt_dp_forward_backward: the replicas were made for another model");
    qkt_ctx *c0 = dp->ctx[0];
    qkt_params_zero_grad(&g->params);
    if (R == 1) { /* the plain step, exactly */
        qkt_ctx_reset(c0);
        qkt_tensor *loss = qkt_gpt_forward(c0, g, idx, tgt, B, T, NULL, NULL);
        if (counted(tgt, (int64_t)B * T)) qkt_backward(c0, loss, NULL);
        return loss->data[0];
    }
    /* n_r: the counted targets of shard r */
    int64_t n_r[QKT_DP_MAX], total = 0;
    for (int r = 0; r < R; r++) {
        int b0 = shard_b0(B, R, r), b1 = shard_b0(B, R, r + 1);
        total += n_r[r] = counted(tgt + (size_t)b0 * T, (int64_t)(b1 - b0) * T);
    }
    /* Persistent state advances once, here, as the plain step's forward does; the
     * replicas then only read it (they run at once on the same model). */
    if (c0->training) qkt_gpt_advance_state(g);
    if (!total) return 0; /* nothing counted: loss 0, grads 0 (as the plain step) */
    double loss_r[QKT_DP_MAX];
    /* Replica r's dropout stream comes from ctx0's, so a checkpoint of ctx0's RNG
     * is the whole RNG state. */
    for (int r = 1; r < R; r++) {
        qkt_rng_split(&c0->rng, (uint64_t)r, &dp->ctx[r]->rng);
        dp->ctx[r]->training = c0->training;
        dp->ctx[r]->detect_anomaly = c0->detect_anomaly;
    }
    int nt = qkt_get_threads() < R ? qkt_get_threads() : R;
    shard_job job = {dp, g, idx, tgt, B, T, n_r, total, loss_r};
    if (qkt_parallel_worth(nt > 1)) {
#pragma omp parallel for num_threads(nt) schedule(static, 1)
        for (int r = 0; r < R; r++) shard_pass(&job, r);
    } else {
        for (int r = 0; r < R; r++) shard_pass(&job, r);
    }
    /* Sum the replicas' grads into the store, in replica order whatever the threads: each
     * element is ((home + g_1) + g_2) + ..., a vector pass per replica over blocks of 4096. */
    int64_t nblk = (dp->size + 4095) / 4096;
    if (qkt_parallel_worth(dp->size > (1 << 16))) {
#pragma omp parallel for schedule(static)
        for (int64_t blk = 0; blk < nblk; blk++) sum_block(g->params.grad, dp->grad, dp->size, R, blk);
    } else {
        for (int64_t blk = 0; blk < nblk; blk++) sum_block(g->params.grad, dp->grad, dp->size, R, blk);
    }
    double loss = 0;
    for (int r = 0; r < R; r++) loss += loss_r[r];
    return loss;
}
