/* One forward and backward of a GPT on a batch file, its gradients out, one fresh optimizer
 * step: what `qkt step` runs to check qkt against another framework (tests/torch/). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qkt_gpt_io.h"

int qkt_gpt_batch_read(const char *path, const qkt_gpt_config *c, int32_t **idx, int32_t **tgt, int *B, int *T,
                       qkt_err *err) {
    qkt_safetensors st;
    *idx = *tgt = NULL;
    if (qkt_safetensors_read(path, &st, err)) return -1;
    int rc = -1;
    const qkt_st_tensor *ti = qkt_safetensors_find(&st, "idx"), *tt = qkt_safetensors_find(&st, "targets");
    if (!ti || !tt) {
        qkt_err_set(err, "batch %s has no tensor '%s' (expected idx and targets, int32 (B, T))", path, ti ? "targets" : "idx");
        goto done;
    }
    if (ti->ndim != 2 || tt->ndim != 2 || ti->shape[0] != tt->shape[0] || ti->shape[1] != tt->shape[1] ||
        ti->numel == 0) {
        qkt_err_set(err, "batch %s: idx and targets must both be (B, T) with B, T > 0", path);
        goto done;
    }
    if (ti->shape[1] > c->block_size || ti->shape[0] > (1 << 24)) {
        qkt_err_set(err, "batch %s: sequence length %lld exceeds the model's block_size %d", path,
                    (long long)ti->shape[1], c->block_size);
        goto done;
    }
    *B = (int)ti->shape[0], *T = (int)ti->shape[1];
    *idx = qkt_malloc((size_t)ti->numel * sizeof **idx);
    *tgt = qkt_malloc((size_t)ti->numel * sizeof **tgt);
    if (qkt_st_tensor_to_i32(ti, *idx, ti->numel, path, err) || qkt_st_tensor_to_i32(tt, *tgt, tt->numel, path, err))
        goto done;
    for (int64_t i = 0; i < ti->numel; i++) {
        if ((*idx)[i] < 0 || (*idx)[i] >= c->vocab_size) {
            qkt_err_set(err, "batch %s: idx[%lld][%lld] = %d is outside the vocabulary [0, %d)", path, (long long)(i / *T),
                        (long long)(i % *T), (*idx)[i], c->vocab_size);
            goto done;
        }
        if ((*tgt)[i] < -1 || (*tgt)[i] >= c->vocab_size) {
            qkt_err_set(err, "batch %s: targets[%lld][%lld] = %d is outside [0, %d) and not -1 (ignored)", path,
                        (long long)(i / *T), (long long)(i % *T), (*tgt)[i], c->vocab_size);
            goto done;
        }
    }
    rc = 0;
done:
    if (rc) free(*idx), free(*tgt), *idx = *tgt = NULL;
    qkt_safetensors_free(&st);
    return rc;
}

qkt_real qkt_gpt_loss_grads(qkt_ctx *ctx, qkt_gpt *g, const int32_t *idx, const int32_t *tgt, int B, int T,
                            int *n_counted) {
    qkt_tensor *logits;
    qkt_tensor *loss = qkt_gpt_forward(ctx, g, idx, tgt, B, T, &logits, NULL);
    int n = 0;
    for (int64_t i = 0; i < (int64_t)B * T; i++) n += tgt[i] != QKT_IGNORE;
    qkt_params_zero_grad(&g->params);
    if (n) qkt_backward(ctx, loss, NULL); /* no counted target: loss 0, grads 0 */
    *n_counted = n;
    return loss->data[0];
}

int qkt_gpt_grads_write(const char *path, const qkt_gpt *g, qkt_real loss, int n_counted, qkt_err *err) {
    /* a NaN or Inf among them: the model's outputs overflow (a diverged checkpoint); nothing is written */
    if (!isfinite(loss))
        return qkt_err_set(err, "the loss is %g: the model's outputs are not finite (a diverged checkpoint?); nothing written", (double)loss);
    for (int i = 0; i < g->params.n; i++)
        for (int64_t j = 0; j < g->params.t[i]->size; j++)
            if (!isfinite(g->params.t[i]->grad[j]))
                return qkt_err_set(err, "the gradient of '%s' is not finite at index %lld (a diverged checkpoint?); nothing written",
                                   g->params.t[i]->name, (long long)j);
    int n = g->params.n + 1;
    qkt_st_write *w = qkt_calloc((size_t)n, sizeof *w);
    w[0] = (qkt_st_write){.name = "loss", .dtype = QKT_ST_REAL, .ndim = 0, .data = &loss};
    for (int i = 0; i < g->params.n; i++) {
        const qkt_tensor *t = g->params.t[i];
        w[i + 1] = (qkt_st_write){.name = t->name, .dtype = QKT_ST_REAL, .ndim = t->ndim, .data = t->grad};
        for (int d = 0; d < t->ndim; d++) w[i + 1].shape[d] = t->shape[d];
    }
    qkt_gpt_meta m;
    qkt_gpt_meta_fill(&m, &g->cfg);
    char counted[32];
    snprintf(counted, sizeof counted, "%d", n_counted);
    m.kv[m.n++] = (qkt_st_meta){"n_counted", counted};
    int rc = qkt_safetensors_write(path, w, n, m.kv, m.n, err);
    free(w);
    return rc;
}

double qkt_gpt_update_once(qkt_gpt *g, const qkt_optim_config *oc, double lr, double clip) {
    double norm = qkt_clip_grad_norm(&g->params, clip);
    qkt_optim opt;
    qkt_optim_init(&opt, &g->params, oc);
    qkt_optim_step(&opt, lr);
    qkt_optim_free(&opt);
    return norm;
}
