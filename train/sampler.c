/* A checkpoint opened for generation (qkt sample): the model, and how its tokens read.
 * Text models carry their vocabulary (QKT_CKPT_VOCAB); synthetic tasks are reopened from
 * the data spec in the metadata; anything else is plain token ids. */
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_trainer.h"

/* The reader of the checkpoint's tokens: a text vocabulary, the task, or NULL (ids). */
static int open_tokens(const qkt_checkpoint *ck, int V, qkt_data **d, bool *text, qkt_err *err) {
    *d = NULL, *text = false;
    const qkt_st_tensor *tv = qkt_safetensors_find(&ck->st, QKT_CKPT_VOCAB);
    if (tv) {
        if (tv->dtype != QKT_ST_U8 || tv->ndim != 1 || tv->numel != V)
            return qkt_err_set(err, "checkpoint %s: " QKT_CKPT_VOCAB " must be U8 (%d) for vocab_size %d", ck->path, V, V);
        qkt_err e2;
        if (qkt_data_from_vocab(d, tv->data, V, &e2)) return qkt_err_set(err, "checkpoint %s: %s", ck->path, e2.msg);
        *text = true;
        return 0;
    }
    const char *spec = qkt_checkpoint_meta(ck, QKT_CKPT_META_DATA);
    if (spec && strncmp(spec, "text", 4)) {
        qkt_data_opts o = {0};
        qkt_err e2; /* a task this build does not know, or another vocabulary: plain ids */
        if (qkt_data_open(d, spec, &o, &e2) == 0 && qkt_data_vocab_size(*d) != V) qkt_data_free(*d), *d = NULL;
    }
    return 0;
}

int qkt_sampler_open(qkt_sampler *s, const char *path, qkt_err *err) {
    memset(s, 0, sizeof *s);
    qkt_checkpoint ck;
    if (qkt_checkpoint_open(path, &ck, err)) return -1;
    qkt_gpt_config cfg;
    int rc = -1;
    if (qkt_gpt_config_from_checkpoint(&ck, &cfg, err) || qkt_gpt_init(&s->gpt, &cfg, err) ||
        qkt_gpt_restore(&ck, &s->gpt, NULL, 0, err) || open_tokens(&ck, cfg.vocab_size, &s->tokens, &s->text, err))
        goto done;
    s->checksummed = ck.st.checksummed;
    rc = 0;
done:
    qkt_checkpoint_close(&ck);
    if (rc) qkt_sampler_free(s);
    return rc;
}

void qkt_sampler_free(qkt_sampler *s) {
    if (s->tokens) qkt_data_free(s->tokens);
    if (s->gpt.h) qkt_gpt_free(&s->gpt);
    memset(s, 0, sizeof *s);
}

int qkt_sampler_generate(qkt_sampler *s, const int32_t *prompt, int n_prompt, int n_new, const qkt_sample_opts *o,
                         uint64_t seed, int32_t *out) {
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, seed);
    qkt_rng rng;
    qkt_rng_seed(&rng, seed);
    int made = qkt_gpt_generate(&ctx, &s->gpt, prompt, n_prompt, n_new, o, &rng, out);
    qkt_ctx_free(&ctx);
    return made;
}
