/* qkt_sampler: a trainer's checkpoint opened for generation reads its tokens as the run
 * did (text: the stored vocabulary; a task: reopened from the metadata; otherwise ids),
 * refuses a damaged vocabulary, and generates what qkt_gpt_generate does with the seed. */
#include <stdlib.h>
#include <string.h>

#include "qkt_gpt_io.h"
#include "qkt_test.h"
#include "qkt_trainer.h"

static char g_dir[256];
static const char *path_of(const char *name) { return qkt_test_path(g_dir, name); }

/* A few steps of a tiny model on spec, saved to file; the trainer stays open. */
static void train(qkt_trainer *t, const char *spec, const char *file) {
    qkt_train_config c = qkt_train_config_default();
    c.data = spec;
    c.model.n_layer = 1, c.model.n_head = 2, c.model.n_embd = 16, c.model.block_size = 16;
    c.batch_size = 4, c.steps = 3;
    qkt_err err = {{0}};
    if (qkt_trainer_init(t, &c, &err)) {
        fprintf(stderr, "init %s: %s\n", spec, err.msg);
        exit(1);
    }
    qkt_step_stats st;
    for (int i = 0; i < 3; i++) qkt_trainer_step(t, &st);
    EXPECT(qkt_trainer_save(t, file, NULL, 0, &err) == 0, "save: %s", err.msg);
}

static void test_text(void) {
    const char *txt = path_of("tiny.txt"), *ck = path_of("text.safetensors");
    FILE *f = fopen(txt, "w");
    for (int i = 0; i < 200; i++) fputs("the cat sat on a mat\n", f);
    fclose(f);
    char spec[300];
    snprintf(spec, sizeof spec, "text:%s", txt);
    qkt_trainer t;
    train(&t, spec, ck);
    qkt_err err = {{0}};
    qkt_sampler s;
    EXPECT(qkt_sampler_open(&s, ck, &err) == 0, "open: %s", err.msg);
    int nv = 0, ns = 0;
    const uint8_t *v = qkt_data_vocab(t.data, &nv), *sv = s.tokens ? qkt_data_vocab(s.tokens, &ns) : NULL;
    EXPECT(s.text && s.checksummed && sv && ns == nv && !memcmp(sv, v, (size_t)nv), "text vocabulary: %d bytes, text %d", ns,
           s.text);
    EXPECT(s.gpt.params.size == t.gpt.params.size &&
               !memcmp(s.gpt.params.data, t.gpt.params.data, (size_t)t.gpt.params.size * sizeof(qkt_real)),
           "weights differ from the trainer's");
    /* the file format: the vocabulary is the tensor named train.vocab */
    qkt_checkpoint c;
    EXPECT(qkt_checkpoint_open(ck, &c, &err) == 0, "%s", err.msg);
    EXPECT(qkt_safetensors_find(&c.st, "train.vocab") && !strcmp(qkt_checkpoint_meta(&c, "data"), qkt_data_spec(t.data)),
           "train.vocab or data missing");
    qkt_checkpoint_close(&c);

    /* generation: the seed decides, as with qkt_gpt_generate on a context and RNG of that seed */
    int32_t prompt[3], a[23], b[23], ref[23];
    EXPECT(qkt_data_encode(s.tokens, (const uint8_t *)"cat", 3, prompt, &err) == 0, "%s", err.msg);
    qkt_sample_opts o = {.temperature = 1.0, .top_k = 0};
    qkt_sampler_generate(&s, prompt, 3, 20, &o, 7, a);
    qkt_sampler_generate(&s, prompt, 3, 20, &o, 7, b);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 1 << 20, 7);
    qkt_rng rng;
    qkt_rng_seed(&rng, 7);
    qkt_gpt_generate(&ctx, &t.gpt, prompt, 3, 20, &o, &rng, ref);
    qkt_ctx_free(&ctx);
    EXPECT(!memcmp(a, b, sizeof a) && !memcmp(a, ref, sizeof a), "generation is not the seeded qkt_gpt_generate");
    qkt_sampler_generate(&s, prompt, 3, 20, &o, 8, b);
    EXPECT(memcmp(a + 3, b + 3, 20 * sizeof *a), "seeds 7 and 8 drew the same 20 tokens");

    /* a vocabulary of the wrong size is refused with one line; the sampler is left empty */
    uint8_t bytes[64];
    memcpy(bytes, v, (size_t)nv);
    qkt_st_write bad = {QKT_CKPT_VOCAB, QKT_ST_U8, 1, {nv - 1}, bytes};
    const char *bf = path_of("badvocab.safetensors");
    EXPECT(qkt_gpt_save(bf, &t.gpt, NULL, 0, &bad, 1, &err) == 0, "%s", err.msg);
    qkt_sampler_free(&s);
    EXPECT(qkt_sampler_open(&s, bf, &err) == -1 && strstr(err.msg, "badvocab.safetensors") &&
               strstr(err.msg, "train.vocab must be U8") && !strchr(err.msg, '\n') && s.gpt.h == NULL && s.tokens == NULL,
           "bad vocabulary: %s", err.msg);
    EXPECT(qkt_sampler_open(&s, path_of("missing.safetensors"), &err) == -1 && strstr(err.msg, "missing.safetensors"),
           "missing file: %s", err.msg);
    qkt_sampler_free(&s); /* after a failed open: a no-op */
    qkt_trainer_free(&t);
}

static void test_task_and_ids(void) {
    qkt_trainer t;
    const char *ck = path_of("mqar.safetensors"), *plain = path_of("plain.safetensors");
    train(&t, "mqar", ck);
    qkt_err err = {{0}};
    qkt_sampler s;
    EXPECT(qkt_sampler_open(&s, ck, &err) == 0, "open: %s", err.msg);
    EXPECT(!s.text && s.tokens && !strcmp(qkt_data_name(s.tokens), "mqar") && qkt_data_vocab_size(s.tokens) == 32,
           "mqar: the task was not reopened");
    qkt_sampler_free(&s);
    /* the model alone (no data metadata): plain ids */
    EXPECT(qkt_gpt_save(plain, &t.gpt, NULL, 0, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_sampler_open(&s, plain, &err) == 0 && !s.text && !s.tokens, "plain: %s", err.msg);
    qkt_sampler_free(&s);
    /* a task of another vocabulary than the model's: ids too */
    qkt_st_meta m[] = {{QKT_CKPT_META_DATA, "mqar:vocab=40"}};
    EXPECT(qkt_gpt_save(plain, &t.gpt, m, 1, NULL, 0, &err) == 0, "%s", err.msg);
    EXPECT(qkt_sampler_open(&s, plain, &err) == 0 && !s.text && !s.tokens, "other vocabulary: %s", err.msg);
    qkt_sampler_free(&s);
    qkt_trainer_free(&t);
}

int main(void) {
    qkt_set_threads(1);
    snprintf(g_dir, sizeof g_dir, "%s", qkt_test_tmpdir("sampler"));
    test_text();
    test_task_and_ids();
    return qkt_test_finish();
}
