/* Synthetic tasks. Each writes one sequence s[0..used] and its answer flags; data.c
 * turns that into (idx, targets) rows, pads to T and keeps train and val apart.
 * Token 0 is the blank "." in every task but bigram (filler, BOS and padding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "data_internal.h"

/* log2(n! / (n-k)!) and log2 C(n, k), for the size of a task's sequence space. */
static double log2_perm(int n, int k) { return (lgamma(n + 1.0) - lgamma(n - k + 1.0)) / log(2.0); }
static double log2_choose(int n, int k) { return log2_perm(n, k) - lgamma(k + 1.0) / log(2.0); }

static int natural_T(const qkt_data *d) { return d->T_req ? d->T_req : QKT_DATA_DEFAULT_T; }

static int32_t *scratch_alloc(int n) {
    int32_t *p = qkt_malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    return p;
}

/* ------------------------------------------------------------------ mqar */
/* Multi-query associative recall (Zoology, Arora et al. 2023). Keys are tokens
 * 1..nk, values nk+1..V-1 (disjoint halves), nk = (V-1)/2. Layout of s (L+1 tokens):
 *   k_1 v_1 ... k_N v_N | query region of L+1-2N tokens, blank except Q query
 *   slots: slot j (2 tokens at 2N+2j) holds a key k_i and then its value v_i.
 * Keys, values and slots are drawn without replacement; the queried pairs too
 * while Q <= N, beyond that each pair is asked about Q/N times. The values after
 * the query keys are the answers. */
enum { MQ_VOCAB, MQ_LEN, MQ_PAIRS, MQ_QUERIES };

static int mqar_setup(qkt_data *d, qkt_err *err) {
    int V = d->p[MQ_VOCAB], N = d->p[MQ_PAIRS], Q = d->p[MQ_QUERIES];
    int nk = (V - 1) / 2, nv = V - 1 - nk;
    if (N > nk)
        return qkt_err_set(err, "mqar: n_pairs=%d exceeds the %d keys of vocab=%d (keys are tokens 1..%d); raise vocab",
                           N, nk, V, nk);
    if (d->p[MQ_LEN] < 0) d->p[MQ_LEN] = natural_T(d);
    int L = d->p[MQ_LEN];
    if (Q < 0) { /* default: 4 queries per pair (more answers per sequence), as many as fit */
        Q = 4 * N < (L + 1 - 2 * N) / 2 ? 4 * N : (L + 1 - 2 * N) / 2;
        d->p[MQ_QUERIES] = Q = Q > 1 ? Q : 1;
    }
    int need = 2 * N + 2 * Q - 1;
    if (L < need)
        return qkt_err_set(err, "mqar: seq_len=%d is too short for n_pairs=%d and n_queries=%d: expected >= %d", L, N,
                           Q, need);
    int S = (L + 1 - 2 * N) / 2;
    d->used = L, d->vocab = V, d->answer_k = nv;
    d->best_loss = 0, d->best_acc = 1;
    /* Query orders: P(N, Q) while Q <= N; beyond, at least Q! / (R!)^N (multinomial
     * with every count <= R). */
    int R = (Q + N - 1) / N;
    double log2_queries = Q <= N ? log2_perm(N, Q) : (lgamma(Q + 1.0) - N * lgamma(R + 1.0)) / log(2.0);
    d->log2_space = log2_perm(nk, N) + log2_perm(nv, N) + log2_queries + log2_choose(S, Q);
    int m = nk > nv ? nk : nv;
    m = m > S ? m : S;
    d->scratch = scratch_alloc(m > R * N ? m : R * N);
    d->scratch2 = scratch_alloc(S > N ? S : N);
    return 0;
}

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void mqar_gen(qkt_data *d, qkt_rng *r) {
    int V = d->p[MQ_VOCAB], L = d->p[MQ_LEN], N = d->p[MQ_PAIRS], Q = d->p[MQ_QUERIES];
    int nk = (V - 1) / 2, nv = V - 1 - nk, S = (L + 1 - 2 * N) / 2, R = (Q + N - 1) / N;
    int32_t *s = d->seq, *a = d->scratch, *slot = d->scratch2;
    for (int i = 0; i <= L; i++) s[i] = 0, d->ans[i] = 0;
    qkt__sample_distinct(r, a, nk, N);
    for (int i = 0; i < N; i++) s[2 * i] = 1 + a[i];
    qkt__sample_distinct(r, a, nv, N);
    for (int i = 0; i < N; i++) s[2 * i + 1] = 1 + nk + a[i];
    /* Which pairs are queried, in order: the first Q of a random permutation of
     * every pair repeated R = ceil(Q/N) times, so distinct pairs while Q <= N and
     * each pair asked about Q/N times (at most R) beyond. */
    qkt__sample_distinct(r, a, R * N, Q);
    for (int j = 0; j < Q; j++) a[j] %= N;
    qkt__sample_distinct(r, slot, S, Q);  /* where: Q distinct slots, ascending */
    qsort(slot, (size_t)Q, sizeof *slot, cmp_int32);
    for (int j = 0; j < Q; j++) {
        int pos = 2 * N + 2 * slot[j];
        s[pos] = s[2 * a[j]];
        s[pos + 1] = s[2 * a[j] + 1];
        d->ans[pos + 1] = 1;
    }
}

static void mqar_token(const qkt_data *d, int32_t tok, char buf[16]) {
    int nk = (d->p[MQ_VOCAB] - 1) / 2;
    if (tok == 0)
        snprintf(buf, 16, ".");
    else
        snprintf(buf, 16, "%c%d", tok <= nk ? 'k' : 'v', (int)tok);
}

/* ------------------------------------------------------------------ induction */
/* s = [blank] x_1..x_n x_1..x_n with x_i iid uniform over tokens 1..V-1; the
 * repeated half are the answers (Olsson et al. 2022's repeated random tokens). */
enum { IND_VOCAB, IND_LEN };

static int induction_setup(qkt_data *d, qkt_err *err) {
    if (d->p[IND_LEN] < 0) d->p[IND_LEN] = natural_T(d) / 2;
    if (d->p[IND_LEN] < 1) return qkt_err_set(err, "induction: seq_len %d is too short: expected >= 2", d->T_req);
    int V = d->p[IND_VOCAB], n = d->p[IND_LEN];
    d->used = 2 * n, d->vocab = V, d->answer_k = V - 1;
    d->best_loss = 0, d->best_acc = 1;
    d->log2_space = n * log2(V - 1.0);
    return 0;
}

static void induction_gen(qkt_data *d, qkt_rng *r) {
    int V = d->p[IND_VOCAB], n = d->p[IND_LEN];
    int32_t *s = d->seq;
    s[0] = 0, d->ans[0] = 0;
    for (int i = 1; i <= n; i++) s[i] = 1 + (int32_t)qkt_rng_below(r, (uint32_t)(V - 1)), d->ans[i] = 0;
    for (int i = 1; i <= n; i++) s[n + i] = s[i], d->ans[n + i] = 1;
}

static void plain_token(const qkt_data *d, int32_t tok, char buf[16]) {
    (void)d;
    if (tok == 0)
        snprintf(buf, 16, ".");
    else
        snprintf(buf, 16, "%d", (int)tok);
}

/* ------------------------------------------------------------------ sort, copy, reverse */
/* s = x_1..x_n | y_1..y_n, x iid uniform digits; y = sorted(x) (minGPT's demo task),
 * x, or x reversed. Tokens: 0 blank, 1 separator "|", 2+d digit d. */
enum { SEQ_LEN, SEQ_DIGITS };
enum { OUT_SORT, OUT_COPY, OUT_REVERSE };

static int list_setup(qkt_data *d, qkt_err *err) {
    (void)err;
    int n = d->p[SEQ_LEN], D = d->p[SEQ_DIGITS];
    d->used = 2 * n, d->vocab = D + 2, d->answer_k = D;
    d->best_loss = 0, d->best_acc = 1;
    d->log2_space = n * log2((double)D);
    return 0;
}

static void list_gen(qkt_data *d, qkt_rng *r, int kind) {
    int n = d->p[SEQ_LEN], D = d->p[SEQ_DIGITS];
    int32_t *s = d->seq;
    for (int i = 0; i < n; i++) s[i] = 2 + (int32_t)qkt_rng_below(r, (uint32_t)D), d->ans[i] = 0;
    s[n] = 1, d->ans[n] = 0;
    int32_t *y = s + n + 1;
    for (int i = 0; i < n; i++) y[i] = kind == OUT_REVERSE ? s[n - 1 - i] : s[i], d->ans[n + 1 + i] = 1;
    if (kind == OUT_SORT) qsort(y, (size_t)n, sizeof *y, cmp_int32);
}
static void sort_gen(qkt_data *d, qkt_rng *r) { list_gen(d, r, OUT_SORT); }
static void copy_gen(qkt_data *d, qkt_rng *r) { list_gen(d, r, OUT_COPY); }
static void reverse_gen(qkt_data *d, qkt_rng *r) { list_gen(d, r, OUT_REVERSE); }

static void list_token(const qkt_data *d, int32_t tok, char buf[16]) {
    (void)d;
    if (tok == 0)
        snprintf(buf, 16, ".");
    else if (tok == 1)
        snprintf(buf, 16, "|");
    else
        snprintf(buf, 16, "%d", (int)tok - 2);
}

/* ------------------------------------------------------------------ bigram */
/* A fixed random Markov chain over V states, drawn from chain_seed (not the run
 * seed, so every run sees the same chain): each state has `branch` distinct
 * successors with integer weights 1..100. s_0 is uniform, s_{t+1} ~ P(. | s_t);
 * every position is an answer. Predicting it needs only the current token. */
enum { BG_VOCAB, BG_BRANCH, BG_CHAIN_SEED };

static int bigram_setup(qkt_data *d, qkt_err *err) {
    int V = d->p[BG_VOCAB], K = d->p[BG_BRANCH];
    if (K > V) return qkt_err_set(err, "bigram: branch=%d exceeds vocab=%d (successors are distinct states)", K, V);
    int T = natural_T(d);
    d->used = T, d->vocab = V, d->answer_k = V;
    d->log2_space = log2((double)V) + T * log2((double)K);
    d->succ = scratch_alloc(V * K);
    d->cum = qkt_malloc((size_t)V * (size_t)K * sizeof *d->cum);
    d->scratch = scratch_alloc(V);
    qkt_rng cr;
    qkt_rng_seed(&cr, (uint64_t)d->p[BG_CHAIN_SEED]);
    for (int i = 0; i < V; i++) {
        qkt__sample_distinct(&cr, d->scratch, V, K);
        uint32_t c = 0;
        for (int j = 0; j < K; j++) {
            d->succ[i * K + j] = d->scratch[j];
            c += 1 + qkt_rng_below(&cr, 100);
            d->cum[i * K + j] = c;
        }
    }
    /* Best loss/accuracy: E over answer positions t of sum_i p_t(i) H(P(.|i)) (and of
     * max_j P(j|i)), with p_0 uniform and p_{t+1} = p_t P, propagated exactly until it
     * settles (then every remaining position contributes the same). */
    double *p = qkt_calloc((size_t)V * 3, sizeof *p), *q = p + V, *h = p + 2 * V;
    double *mx = qkt_malloc((size_t)V * sizeof *mx);
    for (int i = 0; i < V; i++) {
        double tot = d->cum[i * K + K - 1], prev = 0, H = 0, m = 0;
        for (int j = 0; j < K; j++) {
            double pj = (d->cum[i * K + j] - prev) / tot;
            prev = d->cum[i * K + j];
            H -= pj * log(pj);
            m = pj > m ? pj : m;
        }
        h[i] = H, mx[i] = m, p[i] = 1.0 / V;
    }
    double loss = 0, acc = 0;
    for (int t = 0; t < T; t++) {
        double lt = 0, at = 0, delta = 0;
        for (int i = 0; i < V; i++) lt += p[i] * h[i], at += p[i] * mx[i], q[i] = 0;
        for (int i = 0; i < V; i++) {
            double tot = d->cum[i * K + K - 1], prev = 0;
            for (int j = 0; j < K; j++) {
                q[d->succ[i * K + j]] += p[i] * (d->cum[i * K + j] - prev) / tot;
                prev = d->cum[i * K + j];
            }
        }
        for (int i = 0; i < V; i++) delta += fabs(q[i] - p[i]), p[i] = q[i];
        if (delta < 1e-15) { /* stationary: the rest of the positions repeat this term */
            loss += lt * (T - t), acc += at * (T - t);
            break;
        }
        loss += lt, acc += at;
    }
    d->best_loss = loss / T, d->best_acc = acc / T;
    free(p);
    free(mx);
    return 0;
}

static void bigram_gen(qkt_data *d, qkt_rng *r) {
    int V = d->p[BG_VOCAB], K = d->p[BG_BRANCH], T = d->used;
    int32_t *s = d->seq;
    s[0] = (int32_t)qkt_rng_below(r, (uint32_t)V), d->ans[0] = 0;
    for (int t = 0; t < T; t++) {
        const uint32_t *c = d->cum + (size_t)s[t] * K;
        uint32_t u = qkt_rng_below(r, c[K - 1]);
        int j = 0;
        while (u >= c[j]) j++;
        s[t + 1] = d->succ[(size_t)s[t] * K + j], d->ans[t + 1] = 1;
    }
}

static void bigram_token(const qkt_data *d, int32_t tok, char buf[16]) {
    (void)d;
    snprintf(buf, 16, "%d", (int)tok);
}

/* ------------------------------------------------------------------ recall */
/* Noisy one-token associative recall, graded by the number of pairs. Tokens: 0 blank,
 * keys 1..K, values K+1..K+W, pair tokens K+W+1 + k*W + v (key k and value v in one
 * token, so one attention step that matches the query's key finds the answer: no
 * induction circuit, no plateau). Layout of s (L+1 tokens, L = T):
 *   p_1 .. p_n | q_1 a_1 q_2 a_2 ... [blank if one position is left]
 * n ~ uniform 1..n_pairs; the pairs' keys are distinct, their values iid uniform; each
 * query key is uniform among the n pair keys, and its answer a_j is the pair's value
 * with probability 1 - noise/100, else a uniform value (possibly the same). Answers
 * are the a_j. With n pairs visible, attention spread evenly over them gives the right
 * value probability ~1/n; sharpening it lowers the loss continuously. */
enum { RC_KEYS, RC_VALUES, RC_PAIRS, RC_NOISE };

static int recall_setup(qkt_data *d, qkt_err *err) {
    int K = d->p[RC_KEYS], W = d->p[RC_VALUES], N = d->p[RC_PAIRS];
    if (N > K) return qkt_err_set(err, "recall: n_pairs=%d exceeds keys=%d (the pairs' keys are distinct); raise keys", N, K);
    if ((int64_t)K * W + K + W + 1 > QKT_DATA_MAX_VOCAB)
        return qkt_err_set(err, "recall: keys=%d x values=%d pair tokens exceed the vocabulary limit %d", K, W, QKT_DATA_MAX_VOCAB);
    int L = natural_T(d);
    if (L < N + 1)
        return qkt_err_set(err, "recall: seq_len %d is too short for n_pairs=%d: expected >= %d (one query after the pairs)", L, N, N + 1);
    d->used = L, d->vocab = 1 + K + W + K * W, d->answer_k = W;
    double e = d->p[RC_NOISE] / 100.0, pt = 1 - e + e / W; /* the Bayes predictor: the pair's value with pt */
    d->best_acc = pt;
    d->best_loss = -pt * log(pt) - (e > 0 ? (1 - pt) * log(e / W) : 0);
    /* Sequences with n = N pairs alone: keys, values, query keys (noise only adds). */
    d->log2_space = log2_perm(K, N) + N * log2((double)W) + ((L + 1 - N) / 2) * log2((double)N);
    d->scratch = scratch_alloc(K);
    d->scratch2 = scratch_alloc(2 * N);
    return 0;
}

static void recall_gen(qkt_data *d, qkt_rng *r) {
    int K = d->p[RC_KEYS], W = d->p[RC_VALUES], N = d->p[RC_PAIRS], L = d->used;
    uint32_t noise = (uint32_t)d->p[RC_NOISE];
    int32_t *s = d->seq, *key = d->scratch, *val = d->scratch2;
    int n = 1 + (int)qkt_rng_below(r, (uint32_t)N);
    for (int i = 0; i <= L; i++) s[i] = 0, d->ans[i] = 0;
    qkt__sample_distinct(r, key, K, n);
    for (int i = 0; i < n; i++) {
        val[i] = (int32_t)qkt_rng_below(r, (uint32_t)W);
        s[i] = 1 + K + W + key[i] * W + val[i];
    }
    for (int pos = n; pos + 1 <= L; pos += 2) {
        int j = (int)qkt_rng_below(r, (uint32_t)n);
        int32_t a = val[j];
        if (noise && qkt_rng_below(r, 100) < noise) a = (int32_t)qkt_rng_below(r, (uint32_t)W);
        s[pos] = 1 + key[j];
        s[pos + 1] = 1 + K + a, d->ans[pos + 1] = 1;
    }
}

static void recall_token(const qkt_data *d, int32_t tok, char buf[16]) {
    int K = d->p[RC_KEYS], W = d->p[RC_VALUES];
    if (tok == 0)
        snprintf(buf, 16, ".");
    else if (tok <= K)
        snprintf(buf, 16, "k%d", (int)tok - 1);
    else if (tok <= K + W)
        snprintf(buf, 16, "v%d", (int)tok - 1 - K);
    else
        snprintf(buf, 16, "%d:%d", (int)(tok - 1 - K - W) / W, (int)(tok - 1 - K - W) % W);
}

/* ------------------------------------------------------------------ table */
#define VOCAB_MAX QKT_DATA_MAX_VOCAB
#define LEN_MAX (QKT_DATA_MAX_T / 2)
const qkt_data_task qkt__tasks[] = {
    {"mqar", "multi-query associative recall: key-value pairs, then queries of earlier keys",
     {{"vocab", 32, 5, VOCAB_MAX, "vocabulary size: token 0 blank, keys 1..(vocab-1)/2, values after"},
      {"seq_len", QKT_PARAM_AUTO, 3, QKT_DATA_MAX_T, "positions used (default T)"},
      {"n_pairs", 4, 1, VOCAB_MAX, "key-value pairs at the start"},
      {"n_queries", QKT_PARAM_AUTO, 1, VOCAB_MAX,
       "queries at random slots after the pairs (default 4 per pair, as many as fit)"},
      {0}},
     mqar_setup, mqar_gen, mqar_token, true},
    {"induction", "random tokens followed by their repetition; answers are the repeated half",
     {{"vocab", 64, 3, VOCAB_MAX, "vocabulary size: token 0 blank (BOS), 1..vocab-1 random"},
      {"len", QKT_PARAM_AUTO, 1, LEN_MAX, "length of the random half (default T/2)"},
      {0}},
     induction_setup, induction_gen, plain_token, true},
    {"sort", "a list of digits, a separator, then the list sorted",
     {{"len", 8, 1, LEN_MAX, "list length"}, {"digits", 10, 2, VOCAB_MAX - 2, "distinct digit values"}, {0}},
     list_setup, sort_gen, list_token, false},
    {"reverse", "a list of digits, a separator, then the list reversed",
     {{"len", 12, 1, LEN_MAX, "list length"}, {"digits", 10, 2, VOCAB_MAX - 2, "distinct digit values"}, {0}},
     list_setup, reverse_gen, list_token, false},
    {"copy", "a list of digits, a separator, then the list again",
     {{"len", 12, 1, LEN_MAX, "list length"}, {"digits", 10, 2, VOCAB_MAX - 2, "distinct digit values"}, {0}},
     list_setup, copy_gen, list_token, false},
    {"bigram", "a fixed random Markov chain (control: needs no attention); every position counts",
     {{"vocab", 64, 2, 4096, "states"},
      {"branch", 4, 1, 4096, "successors per state"},
      {"chain_seed", 1, 0, 2147483647, "seed of the chain (fixed across runs)"},
      {0}},
     bigram_setup, bigram_gen, bigram_token, false},
    {"recall", "noisy one-token key-value recall, graded by the number of pairs: the loss falls smoothly",
     {{"keys", 8, 1, 4096, "distinct keys (tokens 1..keys)"},
      {"values", 8, 2, 4096, "distinct values; a pair token holds one key and one value"},
      {"n_pairs", 8, 1, 4096, "most pairs at the start (each sequence draws 1..n_pairs)"},
      {"noise", 5, 0, 100, "percent of answers drawn uniformly instead of the pair's value"},
      {0}},
     recall_setup, recall_gen, recall_token, true},
};
const int qkt__n_tasks = (int)(sizeof qkt__tasks / sizeof qkt__tasks[0]);
