/* A trainer: init from a config, one optimizer step, validation, attention maps. Its
 * loop is qkt_session_run (`qkt train`) or the ablation cells' own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"
#include "qkt_trainer.h"

int qkt_trainer_init(qkt_trainer *t, const qkt_train_config *c, qkt_err *err) {
    qkt_train_config r = *c;
    qkt_train_config_resolve(&r);
    if (qkt__train_config_check(&r, err)) return memset(t, 0, sizeof *t), qkt__err_call(err, "qkt_trainer_init");
    return qkt__trainer_init_valid(t, &r, err);
}

int qkt__trainer_init_valid(qkt_trainer *t, const qkt_train_config *c, qkt_err *err) {
    memset(t, 0, sizeof *t);
    t->cfg = *c;
    c = &t->cfg;
    t->T = c->model.block_size; /* without data: the caller's (B, T) batches */
    if (c->data) {
        qkt_data_opts dopts = {.seq_len = c->model.block_size, .seed = c->seed};
        if (qkt_data_open(&t->data, c->data, &dopts, err) != 0) return -1;
        t->T = qkt_data_seq_len(t->data);
        t->cfg.model.vocab_size = qkt_data_vocab_size(t->data);
    }
    if (qkt_gpt_init(&t->gpt, &t->cfg.model, err) != 0) {
        if (t->data) qkt_data_free(t->data);
        t->data = NULL;
        return -1;
    }
    qkt_rng r;
    qkt_rng_seed_stream(&r, c->seed, QKT_STREAM_INIT);
    qkt_gpt_init_weights(&t->gpt, &r);
    qkt_optim_config oc = qkt_optim_defaults(c->optim);
    oc.beta1 = c->beta1, oc.beta2 = c->beta2, oc.weight_decay = c->weight_decay;
    qkt_optim_init(&t->opt, &t->gpt.params, &oc);
    t->sched = (qkt_schedule){c->schedule, c->lr, c->min_lr, c->warmup_steps, c->lr_decay_steps > 0 ? c->lr_decay_steps : c->steps};
    qkt_ctx_init(&t->ctx, 1 << 20, 0);
    qkt_rng_seed_stream(&t->ctx.rng, c->seed, QKT_STREAM_DROPOUT);
    qkt_dp_init(&t->dp, &t->ctx, &t->gpt.params, c->replicas);
    size_t n = (size_t)c->batch_size * t->T;
    t->idx = qkt_malloc(n * sizeof *t->idx);
    t->tgt = qkt_malloc(n * sizeof *t->tgt);
    return 0;
}

void qkt_trainer_free(qkt_trainer *t) {
    if (t->data) qkt_data_free(t->data);
    if (t->gpt.h) {
        qkt_optim_free(&t->opt);
        qkt_dp_free(&t->dp);
        qkt_gpt_free(&t->gpt);
        qkt_ctx_free(&t->ctx);
    }
    free(t->idx);
    free(t->tgt);
    memset(t, 0, sizeof *t);
}

/* sqrt of the sum of squares of the W_q (or W_k) row block of every layer's c_attn. */
static double qk_grad_norm(const qkt_gpt *g, int which) {
    int C = g->cfg.n_embd;
    double s = 0;
    for (int l = 0; l < g->cfg.n_layer; l++) {
        double n = qkt_grad_norm_range(g->h[l].attn.c_attn.weight->grad + (size_t)which * C * C, (int64_t)C * C);
        s += n * n;
    }
    return sqrt(s);
}

void qkt_trainer_grads(qkt_trainer *t, qkt_step_stats *st) {
    int B = t->cfg.batch_size;
    if (t->data) qkt_data_batch(t->data, QKT_SPLIT_TRAIN, B, t->idx, t->tgt, NULL);
    t->ctx.training = true;
    st->loss = t->ranks > 1 ? qkt__trainer_dist_forward_backward(t, B)
                            : qkt_dp_forward_backward(&t->dp, &t->gpt, t->idx, t->tgt, B, t->T);
    st->grad_norm_wq = qk_grad_norm(&t->gpt, 0);
    st->grad_norm_wk = qk_grad_norm(&t->gpt, 1);
    st->grad_norm = qkt_clip_grad_norm(&t->gpt.params, t->cfg.grad_clip);
    st->lr = qkt_schedule_lr(&t->sched, t->step);
    st->finite = isfinite(st->loss) && isfinite(st->grad_norm);
}

void qkt_trainer_step(qkt_trainer *t, qkt_step_stats *st) {
    qkt_trainer_grads(t, st);
    if (st->finite) qkt_optim_step(&t->opt, st->lr);
    t->step++;
}

void qkt_gpt_eval(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *targets, int B, int T, qkt_eval *ev) {
    QKT_CHECK(g && idx && targets && ev, "qkt_gpt_eval: the model, tokens, targets and result must be given");
    const qkt_gpt_config *mc = &g->cfg;
    int H = mc->n_head, L = mc->n_layer;
    qkt_ctx_reset(ctx);
    int mode = qkt_ctx_set_mode(ctx, QKT_MODE_EVAL);
    qkt_attn_capture *cap = NULL;
    qkt_gpt_opts opts = {0};
    if (ev->heads) {
        cap = qkt_arena_calloc(&ctx->arena, (size_t)L * sizeof *cap);
        opts.capture = cap, opts.capture_probs = true, opts.capture_logits = true;
    }
    qkt_tensor *logits = NULL;
    qkt_tensor *l = qkt_gpt_forward(ctx, g, idx, targets, B, T, &logits, &opts);
    int64_t n = 0;
    double acc = qkt_data_accuracy(logits->data, targets, (int64_t)B * T, mc->vocab_size, &n);
    ev->loss = n ? l->data[0] : NAN;
    ev->acc = n ? acc : NAN;
    ev->counted = n;
    ev->interrupted = false;
    if (cap)
        for (int layer = 0; layer < L; layer++)
            qkt_attn_stats_compute(cap[layer].probs, cap[layer].logits, B, H, T, ev->heads + (size_t)layer * H);
    qkt_ctx_set_mode(ctx, mode);
}

void qkt_trainer_eval(qkt_trainer *t, int n_batches, int B, qkt_eval *ev) {
    qkt_trainer_eval_seqs(t, (int64_t)n_batches * B, B, ev);
}

void qkt_trainer_eval_seqs(qkt_trainer *t, int64_t n_seqs, int B, qkt_eval *ev) {
    QKT_CHECK(t->data, "qkt_trainer_eval: the trainer has no data source (cfg.data NULL)");
    QKT_CHECK(B > 0 && n_seqs >= 0, "qkt_trainer_eval_seqs: %lld sequences in batches of %d", (long long)n_seqs, B);
    int T = t->T;
    int32_t *idx = qkt_malloc((size_t)B * T * sizeof *idx), *tgt = qkt_malloc((size_t)B * T * sizeof *tgt);
    qkt_data_reset(t->data, QKT_SPLIT_VAL);
    double loss = 0, correct = 0;
    int64_t counted = 0;
    ev->interrupted = false;
    for (int64_t done = 0; done < n_seqs; done += B) {
        if (t->stop && *t->stop) {
            ev->interrupted = true;
            break;
        }
        int b = n_seqs - done < B ? (int)(n_seqs - done) : B; /* the val stream draws row by row: any split gives the same rows */
        qkt_data_batch(t->data, QKT_SPLIT_VAL, b, idx, tgt, NULL);
        qkt_eval one = {.heads = done == 0 ? ev->heads : NULL}; /* attention statistics of the first batch */
        qkt_gpt_eval(&t->ctx, &t->gpt, idx, tgt, b, T, &one);
        if (one.counted) {
            loss += one.loss * (double)one.counted;
            correct += one.acc * (double)one.counted;
            counted += one.counted;
        }
    }
    ev->loss = counted ? loss / (double)counted : NAN;
    ev->acc = counted ? correct / (double)counted : NAN;
    ev->counted = counted;
    free(idx);
    free(tgt);
}

void qkt_trainer_attention_map(qkt_trainer *t, qkt_real *out) {
    QKT_CHECK(t->data, "qkt_trainer_attention_map: the trainer has no data source (cfg.data NULL)");
    const qkt_gpt_config *mc = &t->gpt.cfg;
    int T = t->T, H = mc->n_head, L = mc->n_layer;
    int32_t *idx = qkt_malloc((size_t)T * sizeof *idx), *tgt = qkt_malloc((size_t)T * sizeof *tgt);
    qkt_data_reset(t->data, QKT_SPLIT_VAL);
    qkt_data_batch(t->data, QKT_SPLIT_VAL, 1, idx, tgt, NULL);
    qkt_ctx_reset(&t->ctx);
    int mode = qkt_ctx_set_mode(&t->ctx, QKT_MODE_EVAL);
    qkt_attn_capture *cap = qkt_arena_calloc(&t->ctx.arena, (size_t)L * sizeof *cap);
    for (int l = 0; l < L; l++) cap[l].probs = out + (size_t)l * H * T * T;
    qkt_gpt_opts opts = {.capture = cap};
    qkt_gpt_forward(&t->ctx, &t->gpt, idx, NULL, 1, T, NULL, &opts);
    qkt_ctx_set_mode(&t->ctx, mode);
    free(idx);
    free(tgt);
}
