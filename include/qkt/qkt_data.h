/* qkt data: synthetic attention tasks and character-level text behind one batch
 * interface, picked by a spec string ("mqar", "sort:len=6", "text:input.txt").
 *
 *     qkt_data *d;
 *     qkt_data_opts o = {.seq_len = T, .seed = 1};
 *     if (qkt_data_open(&d, "mqar:n_pairs=6", &o, &err)) -> err.msg
 *     V = qkt_data_vocab_size(d);
 *     qkt_data_batch(d, QKT_SPLIT_TRAIN, B, idx, targets, NULL);   // (B, T) each
 *     ... eval: qkt_data_reset(d, QKT_SPLIT_VAL); then the same val batches every time
 *     qkt_data_free(d);
 *
 * Every task is a sequence s[0..T] of T+1 tokens; the model reads idx[t] = s[t] and
 * predicts targets[t] = s[t+1] where s[t+1] is an answer, else -1 (QKT_IGNORE): for
 * synthetic tasks only answer positions count, for text every position does.
 * All randomness comes from two qkt_rng streams (train, val) derived from the seed.
 * Synthetic train and val streams never share a sequence: a sequence belongs to val
 * iff the top 3 bits of a fixed 64-bit hash of its tokens are 0 (1/8 of all
 * sequences), and each stream rejects sequences of the other class.
 * docs/data.md describes every task, its parameters and its chance levels.
 */
#ifndef QKT_DATA_H
#define QKT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qkt_data qkt_data;
typedef enum { QKT_SPLIT_TRAIN = 0, QKT_SPLIT_VAL = 1 } qkt_data_split;

/* seq_len: the model's T (tokens per row of a batch). 0 = the source's natural
 * length (64 for text, mqar, induction, bigram and recall; 2*len for sort, copy, reverse).
 * A task shorter than T is padded at the end (token 0, target -1); one longer than T
 * is an error. mqar's seq_len and induction's len default to fill T. */
typedef struct qkt_data_opts {
    int seq_len;
    uint64_t seed;
} qkt_data_opts;

#define QKT_DATA_DEFAULT_T 64
#define QKT_DATA_MAX_T (1 << 22)

/* spec: a task's name (qkt_data_task_name lists them), optionally followed by
 * ":name=value,name=value" task parameters, or text:PATH[,val_frac=F]. opts may be
 * NULL (seq_len 0, seed 0). Returns 0, or -1 with a one-line message naming the
 * parameter (or file) and what was expected; *out is then NULL. */
int qkt_data_open(qkt_data **out, const char *spec, const qkt_data_opts *opts, qkt_err *err);
/* A text encoder/decoder from an exported vocabulary (sorted unique bytes, e.g. read
 * back from a checkpoint), without the file: encode/decode/vocab only, no batches. */
int qkt_data_from_vocab(qkt_data **out, const uint8_t *bytes, int n, qkt_err *err);
void qkt_data_free(qkt_data *d);

const char *qkt_data_name(const qkt_data *d); /* "mqar", ..., "text" */
/* Canonical spec with every parameter resolved, e.g.
 * "mqar:vocab=32,seq_len=64,n_pairs=4,n_queries=16": reopening it gives the same task. */
const char *qkt_data_spec(const qkt_data *d);
int qkt_data_vocab_size(const qkt_data *d);
int qkt_data_seq_len(const qkt_data *d); /* T */
int qkt_data_is_text(const qkt_data *d);
/* Tokens in a split (text: bytes of the split; synthetic: -1, unbounded). */
int64_t qkt_data_split_tokens(const qkt_data *d, qkt_data_split split);

/* Fill idx and targets, each (B, T) row-major, from the split's stream; if
 * answer_mask is non-NULL it gets (B, T) with 1 where targets != -1. No allocation. */
void qkt_data_batch(qkt_data *d, qkt_data_split split, int B, int32_t *idx, int32_t *targets, uint8_t *answer_mask);
/* Restart a split's stream from the seed (evaluation sees the same val batches). */
void qkt_data_reset(qkt_data *d, qkt_data_split split);
/* Restart a split's stream from another seed, the stream qkt_data_open gives that split
 * for `seed` (and what qkt_data_reset returns to from now on); the other split is left
 * alone. Runs with different training seeds validate on the same sequences when each
 * seeds its val split with one fixed validation seed (`qkt ablate` does). */
void qkt_data_seed_split(qkt_data *d, qkt_data_split split, uint64_t seed);
/* The stream's exact state, for checkpoints: set(get()) resumes bit-identically. */
void qkt_data_get_rng(const qkt_data *d, qkt_data_split split, qkt_rng *out);
void qkt_data_set_rng(qkt_data *d, qkt_data_split split, const qkt_rng *in);

/* Chance level: loss ln(K) and accuracy 1/K of a uniform guess over the K tokens
 * that can appear at an answer position (text and bigram: K = vocab size). */
void qkt_data_chance(const qkt_data *d, double *loss, double *acc);
/* Best achievable expected loss and accuracy per answer position: 0 and 1 for the
 * deterministic tasks, the chain's conditional entropy for bigram; text: -1, -1
 * (unknown). */
void qkt_data_best(const qkt_data *d, double *loss, double *acc);

/* Text only. Vocabulary = the sorted unique bytes of the file; token i is byte
 * vocab[i]. qkt_data_vocab returns NULL (and *n = 0) for a synthetic task. */
const uint8_t *qkt_data_vocab(const qkt_data *d, int *n);
/* The text file's bytes as read when the source was opened (NULL and *n = 0 for a
 * task or a vocabulary-only source): what a checkpoint's data checksum covers. */
const uint8_t *qkt_data_text(const qkt_data *d, size_t *n);
/* bytes -> token ids (n of each); -1 with a message naming the first byte that is
 * not in the vocabulary (or if d is not text). */
int qkt_data_encode(const qkt_data *d, const uint8_t *bytes, size_t n, int32_t *ids, qkt_err *err);
/* token ids -> bytes (n of each); an id outside [0, V) is a programmer error. */
void qkt_data_decode(const qkt_data *d, const int32_t *ids, size_t n, uint8_t *bytes);

/* A short readable name of one token into buf (at most 15 chars + NUL):
 * mqar "k7"/"v40"/".", sort/copy/reverse digits and "|", text the byte ("\n" escaped). */
const char *qkt_data_token_str(const qkt_data *d, int32_t tok, char buf[16]);
/* Positions of the task inside T: the first `used` positions hold the task, the rest
 * is padding. */
int qkt_data_used_len(const qkt_data *d);

/* Accuracy over counted rows (targets != -1): argmax of each logits row (V values,
 * first max on ties) equals the target. Returns correct / counted (0 if none);
 * *n_counted (may be NULL) gets the count, so callers can weight batches. */
double qkt_data_accuracy(const qkt_real *logits, const int32_t *targets, int64_t n_rows, int V, int64_t *n_counted);
/* The same from predicted tokens: pred[i] == targets[i] over targets[i] != -1. */
double qkt_data_accuracy_tokens(const int32_t *pred, const int32_t *targets, int64_t n, int64_t *n_counted);
/* Sequence-level exact match: fraction of the B rows (T positions each) whose every
 * counted position is right (rows with nothing counted are skipped). */
double qkt_data_seq_accuracy(const qkt_real *logits, const int32_t *targets, int B, int T, int V);

/* The synthetic tasks, from the one task table: names 0 .. count-1 (NULL outside).
 * Error messages, help and the tests loop over it, so a new task cannot go unlisted. */
int qkt_data_task_count(void);
const char *qkt_data_task_name(int i);
/* 1 if the task's answers are retrieved by content: each is the token stored with an earlier
 * key, or the one after an earlier occurrence, so answering needs attention focused on one
 * earlier position (mqar, induction, recall); 0 for the others (and i outside the table). */
int qkt_data_task_retrieval(int i);

/* Help text for every source and parameter (with defaults), generated from the task
 * tables; written into buf (truncated to n), returns the full length like snprintf. */
int qkt_data_help(char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
