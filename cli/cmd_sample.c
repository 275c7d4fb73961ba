/* qkt sample: generate from a `qkt train` checkpoint (qkt_sampler, qkt_trainer.h). Text
 * models print characters, synthetic tasks their token names, anything else token ids. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "qkt_data.h"
#include "flags.h"
#include "qkt_trainer.h"

#define CMD "qkt sample"

typedef struct {
    const qkt_data *d; /* NULL: plain ids */
    bool text;
    int n;
    const int32_t *prompt; /* echoed before the first new token (none: nothing printed) */
    int n_prompt;
} printer;

static void put_one(printer *p, int32_t tok) {
    if (p->text) {
        uint8_t b;
        qkt_data_decode(p->d, &tok, 1, &b);
        fputc(b, stdout);
    } else {
        char buf[16];
        if (p->d) printf("%s%s", p->n ? " " : "", qkt_data_token_str(p->d, tok, buf));
        else printf("%s%d", p->n ? " " : "", (int)tok);
    }
    p->n++;
}

static void put_token(int32_t tok, void *user) {
    printer *p = user;
    for (int i = 0; i < p->n_prompt; i++) put_one(p, p->prompt[i]);
    p->n_prompt = 0;
    put_one(p, tok);
    fflush(stdout);
}

/* Synthetic prompts: token ids in [0, V), separated by spaces or commas. */
static int parse_ids(const char *s, int V, int32_t *ids, int *n, qkt_err *err) {
    *n = 0;
    while (*s) {
        if (*s == ' ' || *s == ',') {
            s++;
            continue;
        }
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || (*end && *end != ' ' && *end != ',') || v < 0 || v >= V)
            return qkt_err_set(err, "--prompt: '%.32s' is not a token id in [0, %d) (this model is not a text model)", s, V);
        ids[(*n)++] = (int32_t)v;
        s = end;
    }
    if (!*n) return qkt_err_set(err, "--prompt: expected token ids separated by spaces");
    return 0;
}

/* The numeric flags and their defaults. */
typedef struct {
    int tokens, top_k, threads;
    double temperature;
    uint64_t seed;
} sample_args;
static const sample_args sample_defaults = {.tokens = 500, .top_k = 0, .threads = 0, .temperature = 0.8, .seed = 1337};
#define MAX_TOKENS (1 << 24)  /* --tokens and --top-k */
#define MAX_TEMPERATURE 1e6

/* The prompt as token ids (room for strlen(prompt) or 1): text through the vocabulary
 * (default a newline, else the first byte of it), a task's ids as given (default token 0).
 * 0, or 2 after a one-line error. */
static int encode_prompt(const char *prompt, const qkt_data *d, bool text, int V, int32_t *ids, int *n_prompt) {
    qkt_err err;
    *n_prompt = 1;
    if (text) {
        int n;
        const uint8_t *vocab = qkt_data_vocab(d, &n);
        const char *pr = prompt ? prompt : memchr(vocab, '\n', (size_t)n) ? "\n" : (const char *)vocab;
        size_t plen = prompt ? strlen(prompt) : 1;
        if (qkt_data_encode(d, (const uint8_t *)pr, plen, ids, &err)) return qkt_cli_err(CMD ": --prompt: %s\n", err.msg), 2;
        *n_prompt = (int)plen;
    } else if (prompt) {
        if (parse_ids(prompt, V, ids, n_prompt, &err)) return qkt_cli_err(CMD ": %s\n", err.msg), 2;
    } else {
        ids[0] = 0;
    }
    return 0;
}

int qkt_cmd_sample(int argc, char **argv) {
    const char *ckpt = NULL, *prompt = NULL;
    sample_args a = sample_defaults;
    qkt_flag f[] = {
        {"ckpt", QKT_FLAG_STRING, &ckpt, "checkpoint written by qkt train (OUT/ckpt.safetensors)", 1, 0, false, false},
        {"prompt", QKT_FLAG_STRING, &prompt, "text models: start text (default a newline); task models: token ids, e.g. \"3 17 5\" (default token 0)", 1, 0, false, false},
        {"tokens", QKT_FLAG_INT, &a.tokens, "tokens to generate", 1, MAX_TOKENS, true, false},
        {"temperature", QKT_FLAG_DOUBLE, &a.temperature, "softmax temperature (0 = greedy)", 0, MAX_TEMPERATURE, false, false},
        {"top-k", QKT_FLAG_INT, &a.top_k, "sample among the k most likely tokens (0 = all)", 0, MAX_TOKENS, false, false},
        {"seed", QKT_FLAG_U64, &a.seed, "seed of the sampling stream", 1, 0, false, false},
        {"threads", QKT_FLAG_INT, &a.threads, "threads (0 = all cores; default env QKT_THREADS, else all cores)", 0, QKT_FLAGS_MAX_THREADS, false, false},
    };
    int nf = (int)(sizeof f / sizeof *f);
    int rc = qkt_flags_parse("sample", "Generate from a qkt train checkpoint; text models print characters, tasks their tokens.", f,
                             nf, argc, argv, NULL, 0, NULL);
    if (!rc) rc = qkt_flags_threads("sample", f, nf, &a.threads);
    if (rc) return rc == 1 ? 0 : 2;
    if (!ckpt) return qkt_cli_err(CMD ": --ckpt is required (run 'qkt sample --help')\n"), 2;
    qkt_set_threads(a.threads);

    qkt_err err;
    qkt_sampler smp;
    int32_t *ids = NULL;
    /* an unusable checkpoint is refused like a bad flag: exit 2 */
    if (qkt_sampler_open(&smp, ckpt, &err)) return qkt_cli_err(CMD ": --ckpt: %s\n", err.msg), 2;
    /* (after every refusal: those are one line) */
    if (!smp.checksummed)
        qkt_cli_err(CMD ": note: %s has no checksums (written by an older qkt or another tool): its tensors are not verified\n",
                    ckpt);
    ids = qkt_malloc((strlen(prompt ? prompt : "\n") + 1 + (size_t)a.tokens) * sizeof *ids);
    int n_prompt;
    if ((rc = encode_prompt(prompt, smp.tokens, smp.text, smp.gpt.cfg.vocab_size, ids, &n_prompt))) goto done;
    int32_t *prompt_ids = qkt_malloc((size_t)n_prompt * sizeof *prompt_ids); /* generate writes into ids */
    memcpy(prompt_ids, ids, (size_t)n_prompt * sizeof *ids);
    printer p = {smp.tokens, smp.text, 0, prompt_ids, n_prompt};
    qkt_sample_opts so = {.temperature = a.temperature, .top_k = a.top_k, .on_token = put_token, .user = &p};
    int made = qkt_sampler_generate(&smp, ids, n_prompt, a.tokens, &so, a.seed, ids);
    free(prompt_ids);
    if (made < a.tokens) { /* finite weights can still overflow to NaN logits: a diverged model */
        if (made) printf("\n");
        qkt_cli_err(CMD ": %s: the model's outputs are not finite at token %d (a diverged model?): %d of %d tokens made\n",
                    ckpt, n_prompt + made + 1, made, a.tokens);
        rc = 1;
        goto done;
    }
    printf("\n");
    rc = 0;
done:
    free(ids);
    qkt_sampler_free(&smp);
    return rc;
}
