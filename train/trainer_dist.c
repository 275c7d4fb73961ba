/* A trainer's step split over the ranks of an MPI job (qkt_trainer_distribute): rank r
 * of N computes exactly what replica r of `qkt_dp` with N replicas computes in one
 * process (nn/dp.c), and the grads are summed in replica order (qkt_dist_sum_ordered),
 * so `mpirun -np N qkt train` gives the bits of `qkt train --replicas N`:
 *   - every rank draws the whole batch (the data streams stay equal everywhere) and
 *     runs rows [B r / N, B (r + 1) / N) of it;
 *   - the batch loss is sum_r (n_r / n) loss_r over the counted targets n_r of shard r:
 *     rank r's backward is seeded with n_r / n;
 *   - dropout: replica r > 0 draws from qkt_rng_split(ctx0's rng, r), the splits taken
 *     in replica order before replica 0 draws from what is left of ctx0's stream; after
 *     the step every rank takes rank 0's stream (the one a checkpoint saves). */
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"
#include "qkt_dist.h"
#include "qkt_io.h"
#include "qkt_trainer.h"
#include "qkt_train_fields.h"

int qkt_trainer_distribute(qkt_trainer *t, qkt_err *err) {
    int n = qkt_dist_size();
    if (n < 2) return 0;
    char l[64];
    const char *rep = qkt_train_field_label(qkt_train_field_find("replicas"), l, sizeof l);
    if (t->cfg.replicas != n)
        return qkt_err_set(err, "%s %d, but the MPI job has %d ranks: under MPI the ranks are the replicas (start %d "
                                "ranks, or leave %s out of a new run)", rep, t->cfg.replicas, n, t->cfg.replicas, rep);
    qkt_dp_free(&t->dp);
    qkt_dp_init(&t->dp, &t->ctx, &t->gpt.params, 1); /* this rank's shard: one replica */
    t->ranks = n;
    t->rank = qkt_dist_rank();
    return 0;
}

static int64_t counted(const int32_t *tgt, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += tgt[i] != QKT_IGNORE;
    return c;
}

static int shard_b0(int B, int R, int r) { return (int)((int64_t)B * r / R); }

/* What every rank shares after a step: its share of the loss, its dropout stream (rank
 * 0's is kept) and the CRC-32C of the parameters it started the step from: they must be
 * the same everywhere, or the ranks have drifted apart (hosts running different kernel
 * paths round differently: qkt version's "kernels"), which is said rather than trained on. */
typedef struct {
    double loss;
    qkt_rng rng;
    uint32_t params_crc;
} rank_out;

double qkt__trainer_dist_forward_backward(qkt_trainer *t, int B) {
    const int R = t->ranks, me = t->rank, T = t->T;
    QKT_CHECK(B >= R, "qkt_trainer_step: batch %d is smaller than the %d ranks", B, R);
    qkt_gpt *g = &t->gpt;
    qkt_ctx *c = &t->ctx;
    uint32_t crc = qkt_crc32c(0, g->params.data, (size_t)g->params.size * sizeof(qkt_real));
    qkt_params_zero_grad(&g->params);
    int64_t n_r[QKT_DP_MAX], total = 0;
    for (int r = 0; r < R; r++) {
        int b0 = shard_b0(B, R, r), b1 = shard_b0(B, R, r + 1);
        total += n_r[r] = counted(t->tgt + (size_t)b0 * T, (int64_t)(b1 - b0) * T);
    }
    /* Persistent state (sigma_reparam's u) advances once per step before the shards run,
     * as in qkt_dp, even when nothing is counted; the forward then only reads it. */
    if (c->training) qkt_gpt_advance_state(g);
    if (!total) return 0; /* nothing counted anywhere: loss 0, grads 0 (as qkt_dp) */
    /* the splits of replicas 1 .. R-1, in order, from ctx0's stream; replica 0 keeps the rest */
    qkt_rng mine;
    for (int r = 1; r < R; r++) {
        qkt_rng s;
        qkt_rng_split(&c->rng, (uint64_t)r, &s);
        if (r == me) mine = s;
    }
    if (me > 0) c->rng = mine;
    int b0 = shard_b0(B, R, me), b1 = shard_b0(B, R, me + 1);
    qkt_ctx_reset(c);
    qkt_gpt_opts hold = {.hold_state = true};
    qkt_tensor *loss = qkt_gpt_forward(c, g, t->idx + (size_t)b0 * T, t->tgt + (size_t)b0 * T, b1 - b0, T, NULL, &hold);
    double share = (double)n_r[me] / (double)total;
    qkt_real w = (qkt_real)share;
    if (n_r[me]) qkt_backward(c, loss, &w);
    rank_out out = {share * (double)loss->data[0], c->rng, crc}, all[QKT_DP_MAX];
    /* The ranks meet first, so the sum's time (qkt_dist_stats) is communication alone and
     * the wait for the slowest shard shows apart; the sum would wait for it anyway. */
    qkt_dist_barrier();
    qkt_dist_sum_ordered(g->params.grad, g->params.size);
    qkt_dist_allgather(&out, all, sizeof out);
    c->rng = all[0].rng;
    for (int r = 1; r < R; r++) /* an anomaly (exit 3 in qkt): the run cannot go on meaningfully */
        if (all[r].params_crc != all[0].params_crc)
            qkt_fatalf(QKT_FATAL_ANOMALY, "step %lld: the parameters of MPI rank %d differ from rank 0's (crc32c %08x vs %08x): "
                       "do the hosts run different kernel paths (qkt version; QKT_ISA forces one)?", (long long)t->step + 1, r,
                       (unsigned)all[r].params_crc, (unsigned)all[0].params_crc);
    double sum = 0;
    for (int r = 0; r < R; r++) sum += all[r].loss;
    return sum;
}

void qkt_trainer_share_state(qkt_trainer *t, int root) {
    if (qkt_dist_size() < 2) return;
    qkt_params *p = &t->gpt.params;
    qkt_dist_bcast(p->data, (size_t)p->size * sizeof(qkt_real), root);
    if (t->opt.m) qkt_dist_bcast(t->opt.m, (size_t)t->opt.size * sizeof(qkt_real), root);
    if (t->opt.v) qkt_dist_bcast(t->opt.v, (size_t)t->opt.size * sizeof(qkt_real), root);
    struct {
        int64_t step, opt_step;
        qkt_rng train, val, drop;
    } s = {t->step, t->opt.step, {{0}}, {{0}}, t->ctx.rng};
    qkt_data_get_rng(t->data, QKT_SPLIT_TRAIN, &s.train);
    qkt_data_get_rng(t->data, QKT_SPLIT_VAL, &s.val);
    qkt_dist_bcast(&s, sizeof s, root);
    t->step = s.step, t->opt.step = s.opt_step, t->ctx.rng = s.drop;
    qkt_data_set_rng(t->data, QKT_SPLIT_TRAIN, &s.train);
    qkt_data_set_rng(t->data, QKT_SPLIT_VAL, &s.val);
}
