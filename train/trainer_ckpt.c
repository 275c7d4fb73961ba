/* Save and restore the whole state of a qkt_trainer, so that a run resumed from a
 * checkpoint continues bit-identically: parameters, AdamW moments and step, the RNG
 * streams of the data (train, val) and of dropout, plus (text data) the vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_io.h"
#include "qkt_trainer.h"

#define MAX_META 8

/* The CRC-32C of the text data (once: the data does not change after it was read). */
static uint32_t data_crc(qkt_trainer *t) {
    if (!t->data_crc_known) {
        size_t n;
        const uint8_t *b = qkt_data_text(t->data, &n);
        t->data_crc = qkt_crc32c(0, b, n);
        t->data_crc_known = true;
    }
    return t->data_crc;
}

int qkt_trainer_save(qkt_trainer *t, const char *path, const qkt_st_meta *meta, int n_meta, qkt_err *err) {
    QKT_CHECK(n_meta >= 0 && n_meta <= MAX_META, "qkt_trainer_save: %d metadata pairs (at most %d)", n_meta, MAX_META);
    QKT_CHECK(t->data, "qkt_trainer_save: the trainer has no data source (cfg.data NULL)");
    qkt_rng rtrain, rval;
    qkt_data_get_rng(t->data, QKT_SPLIT_TRAIN, &rtrain);
    qkt_data_get_rng(t->data, QKT_SPLIT_VAL, &rval);
    int64_t ostep = t->opt.step;
    qkt_st_write ex[8];
    int n = 0;
    if (t->opt.m) ex[n++] = (qkt_st_write){QKT_CKPT_OPTIM_M, QKT_ST_REAL, 1, {t->opt.size}, t->opt.m};
    if (t->opt.v) ex[n++] = (qkt_st_write){QKT_CKPT_OPTIM_V, QKT_ST_REAL, 1, {t->opt.size}, t->opt.v};
    ex[n++] = (qkt_st_write){QKT_CKPT_OPTIM_STEP, QKT_ST_I64, 0, {0}, &ostep};
    ex[n++] = (qkt_st_write){QKT_CKPT_RNG_DATA_TRAIN, QKT_ST_U64, 1, {4}, rtrain.s};
    ex[n++] = (qkt_st_write){QKT_CKPT_RNG_DATA_VAL, QKT_ST_U64, 1, {4}, rval.s};
    ex[n++] = (qkt_st_write){QKT_CKPT_RNG_DROPOUT, QKT_ST_U64, 1, {4}, t->ctx.rng.s};
    int nv = 0;
    const uint8_t *vocab = qkt_data_vocab(t->data, &nv);
    if (vocab) ex[n++] = (qkt_st_write){QKT_CKPT_VOCAB, QKT_ST_U8, 1, {nv}, vocab};

    char step[32], bytes[32], crc[16];
    snprintf(step, sizeof step, "%lld", (long long)t->step);
    qkt_st_meta m[MAX_META + 4] = {{QKT_CKPT_META_STEP, step}, {QKT_CKPT_META_DATA, qkt_data_spec(t->data)}};
    int k = 2;
    size_t nb = 0;
    if (qkt_data_text(t->data, &nb)) {
        snprintf(bytes, sizeof bytes, "%zu", nb);
        snprintf(crc, sizeof crc, "%08x", (unsigned)data_crc(t));
        m[k++] = (qkt_st_meta){QKT_CKPT_META_DATA_BYTES, bytes};
        m[k++] = (qkt_st_meta){QKT_CKPT_META_DATA_CRC32C, crc};
    }
    if (n_meta) memcpy(m + k, meta, (size_t)n_meta * sizeof *m); /* meta may be NULL when n_meta is 0 */
    return qkt_gpt_save(path, &t->gpt, m, n_meta + k, ex, n, err);
}

/* The vocabulary stored in the checkpoint must be the data's: a text file that changed
 * since the run started would silently remap every token. Newer checkpoints also hold
 * the file's size and checksum: a file edited with the same vocabulary is other data. */
static int check_vocab(const qkt_checkpoint *ck, qkt_trainer *t, qkt_err *err) {
    const qkt_data *d = t->data;
    int nv = 0;
    const uint8_t *vocab = qkt_data_vocab(d, &nv);
    const qkt_st_tensor *tv = qkt_safetensors_find(&ck->st, QKT_CKPT_VOCAB);
    if (!vocab) {
        const char *spec = qkt_checkpoint_meta(ck, QKT_CKPT_META_DATA);
        if (spec && strcmp(spec, qkt_data_spec(d)))
            return qkt_err_set(err, "checkpoint %s was trained on data '%.200s', not '%.200s'", ck->path, spec, qkt_data_spec(d));
        return 0;
    }
    if (!tv) return qkt_err_set(err, "checkpoint %s has no tensor '" QKT_CKPT_VOCAB "' (not trained on text?)", ck->path);
    if (tv->dtype != QKT_ST_U8 || tv->ndim != 1 || tv->numel != nv || memcmp(tv->data, vocab, (size_t)nv))
        return qkt_err_set(err, "checkpoint %s: its vocabulary differs from the text file's (%d bytes now): has the file changed?",
                           ck->path, nv);
    const char *nb = qkt_checkpoint_meta(ck, QKT_CKPT_META_DATA_BYTES), *crc = qkt_checkpoint_meta(ck, QKT_CKPT_META_DATA_CRC32C);
    if (!nb && !crc) return 0; /* written before the data was checksummed */
    size_t have = 0;
    qkt_data_text(d, &have);
    char hb[32], hc[16];
    snprintf(hb, sizeof hb, "%zu", have);
    snprintf(hc, sizeof hc, "%08x", (unsigned)data_crc(t));
    if (!nb || strcmp(nb, hb))
        return qkt_err_set(err, "checkpoint %s was trained on %s bytes of %s, the file has %s bytes now: has it changed?", ck->path,
                           nb ? nb : "?", qkt_data_spec(d), hb);
    if (!crc || strcmp(crc, hc))
        return qkt_err_set(err, "checkpoint %s: the text file %s has the same size but other content than it was trained on "
                           "(crc32c %s then, %s now): has it changed?", ck->path, qkt_data_spec(d), crc ? crc : "?", hc);
    return 0;
}

/* xoshiro256 maps the all-zero state to itself: such a stream would give zeros for ever
 * (and a rejection sampler over it never returns). */
static int check_rng(const qkt_checkpoint *ck, const char *name, const qkt_rng *r, qkt_err *err) {
    if (r->s[0] | r->s[1] | r->s[2] | r->s[3]) return 0;
    return qkt_err_set(err, "checkpoint %s: RNG state '%s' is all zeros, which no run produces: the file is damaged", ck->path, name);
}

int qkt_trainer_restore(qkt_trainer *t, const qkt_checkpoint *ck, qkt_err *err) {
    QKT_CHECK(t->data, "qkt_trainer_restore: the trainer has no data source (cfg.data NULL)");
    long long step;
    if (qkt_checkpoint_meta_int(ck, QKT_CKPT_META_STEP, &step, err)) return -1;
    if (step < 0) return qkt_err_set(err, "checkpoint %s: step %lld is negative: edited or damaged?", ck->path, step);
    if (check_vocab(ck, t, err)) return -1;
    int64_t ostep = 0;
    qkt_rng rtrain, rval, rdrop;
    qkt_ckpt_slot s[6];
    int n = 0;
    if (t->opt.m) s[n++] = (qkt_ckpt_slot){QKT_CKPT_OPTIM_M, QKT_ST_REAL, 1, {t->opt.size}, t->opt.m};
    if (t->opt.v) s[n++] = (qkt_ckpt_slot){QKT_CKPT_OPTIM_V, QKT_ST_REAL, 1, {t->opt.size}, t->opt.v};
    s[n++] = (qkt_ckpt_slot){QKT_CKPT_OPTIM_STEP, QKT_ST_I64, 0, {0}, &ostep};
    s[n++] = (qkt_ckpt_slot){QKT_CKPT_RNG_DATA_TRAIN, QKT_ST_U64, 1, {4}, rtrain.s};
    s[n++] = (qkt_ckpt_slot){QKT_CKPT_RNG_DATA_VAL, QKT_ST_U64, 1, {4}, rval.s};
    s[n++] = (qkt_ckpt_slot){QKT_CKPT_RNG_DROPOUT, QKT_ST_U64, 1, {4}, rdrop.s};
    /* All or nothing for the parameters and slots; only an inconsistent optim.step
     * fails after the copy, and callers drop the trainer on any error. */
    if (qkt_gpt_restore(ck, &t->gpt, s, n, err)) return -1;
    /* Adam's second moments are means of squares: a negative one (an unchecksummed file edited)
     * would make sqrt(v) NaN at the next step */
    for (int64_t i = 0; t->opt.v && i < t->opt.size; i++)
        if (!(t->opt.v[i] >= 0))
            return qkt_err_set(err, "checkpoint %s: tensor '%s' holds %g at index %lld, where every value is a mean of squares "
                               "(>= 0): edited or damaged?", ck->path, QKT_CKPT_OPTIM_V, (double)t->opt.v[i], (long long)i);
    /* after the model's checks: a checkpoint of another model says so, not this */
    if (step > t->cfg.steps)
        return qkt_err_set(err, "checkpoint %s is at step %lld, past the run's last step %lld (a run resumes to its own step or further)",
                           ck->path, step, (long long)t->cfg.steps);
    /* every saved step was applied (a non-finite one stops the run unsaved), so the
     * optimizer's own count (a checksummed tensor) vouches for the metadata */
    if (ostep != step)
        return qkt_err_set(err, "checkpoint %s: metadata step %lld does not match the optimizer's step %lld: edited or damaged?",
                           ck->path, step, (long long)ostep);
    if (check_rng(ck, QKT_CKPT_RNG_DATA_TRAIN, &rtrain, err) || check_rng(ck, QKT_CKPT_RNG_DATA_VAL, &rval, err) ||
        check_rng(ck, QKT_CKPT_RNG_DROPOUT, &rdrop, err))
        return -1;
    t->opt.step = ostep;
    t->step = step;
    qkt_data_set_rng(t->data, QKT_SPLIT_TRAIN, &rtrain);
    qkt_data_set_rng(t->data, QKT_SPLIT_VAL, &rval);
    t->ctx.rng = rdrop;
    return 0;
}
