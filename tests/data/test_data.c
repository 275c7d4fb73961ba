/* Synthetic tasks: determinism, streams, train/val disjointness, a brute-force
 * checker that recomputes every answer from the input, chance levels, accuracy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_data.h"
#include "qkt_test.h"

#define MAXT 256

static qkt_data *open_ok(const char *spec, int T, uint64_t seed) {
    qkt_data *d = NULL;
    qkt_err err = {{0}};
    qkt_data_opts o = {.seq_len = T, .seed = seed};
    int rc = qkt_data_open(&d, spec, &o, &err);
    EXPECT(rc == 0 && d, "open '%s' (T %d): %s", spec, T, err.msg);
    if (rc) exit(qkt_test_finish() | 1);
    return d;
}

/* B rows of the split into x, y (B*T each). */
static void batch(qkt_data *d, qkt_data_split s, int B, int32_t *x, int32_t *y) {
    static uint8_t m[64 * MAXT];
    int T = qkt_data_seq_len(d);
    qkt_data_batch(d, s, B, x, y, m);
    for (int i = 0; i < B * T; i++)
        if (m[i] != (y[i] != -1)) {
            EXPECT(0, "%s: answer mask disagrees with targets at %d", qkt_data_spec(d), i);
            return;
        }
}

/* Every task of the table, with its defaults: a new task is tested without editing this file
 * (check_row refuses a task it has no checker for). */
#define N_DEFAULT qkt_data_task_count()
#define default_specs(k) qkt_data_task_name(k)

/* ------------------------------------------------------------------ determinism and streams */
static void test_determinism(void) {
    static int32_t x1[16 * MAXT], y1[16 * MAXT], x2[16 * MAXT], y2[16 * MAXT];
    for (int k = 0; k < N_DEFAULT; k++) {
        qkt_data *a = open_ok(default_specs(k), 0, 7), *b = open_ok(default_specs(k), 0, 7);
        qkt_data *c = open_ok(default_specs(k), 0, 8);
        int T = qkt_data_seq_len(a), n = 16 * T;
        for (int s = 0; s < 2; s++) {
            batch(a, s, 16, x1, y1), batch(b, s, 16, x2, y2);
            EXPECT(!memcmp(x1, x2, n * 4) && !memcmp(y1, y2, n * 4), "%s split %d: same seed, different batch",
                   default_specs(k), s);
            batch(c, s, 16, x2, y2);
            EXPECT(memcmp(x1, x2, n * 4), "%s split %d: seeds 7 and 8 gave the same batch", default_specs(k), s);
        }
        /* Train and val streams differ, and val draws never shift the train stream. */
        qkt_data_reset(a, QKT_SPLIT_TRAIN), qkt_data_reset(a, QKT_SPLIT_VAL);
        batch(a, QKT_SPLIT_TRAIN, 16, x1, y1);
        batch(a, QKT_SPLIT_VAL, 16, x2, y2);
        EXPECT(memcmp(x1, x2, n * 4), "%s: train and val batches equal", default_specs(k));
        batch(a, QKT_SPLIT_TRAIN, 16, x1, y1); /* 2nd train batch after a val batch */
        qkt_data_reset(b, QKT_SPLIT_TRAIN);
        batch(b, QKT_SPLIT_TRAIN, 16, x2, y2), batch(b, QKT_SPLIT_TRAIN, 16, x2, y2);
        EXPECT(!memcmp(x1, x2, n * 4), "%s: a val batch changed the train stream", default_specs(k));
        /* reset(val) replays the same validation batches. */
        qkt_data_reset(a, QKT_SPLIT_VAL);
        batch(a, QKT_SPLIT_VAL, 16, x1, y1);
        batch(a, QKT_SPLIT_VAL, 16, x2, y2);
        qkt_data_reset(a, QKT_SPLIT_VAL);
        batch(a, QKT_SPLIT_VAL, 16, x2, y2);
        EXPECT(!memcmp(x1, x2, n * 4) && !memcmp(y1, y2, n * 4), "%s: reset(val) did not replay", default_specs(k));
        /* get/set rng resumes exactly in a fresh object. */
        qkt_rng r;
        qkt_data_get_rng(a, QKT_SPLIT_TRAIN, &r);
        batch(a, QKT_SPLIT_TRAIN, 16, x1, y1);
        qkt_data_set_rng(c, QKT_SPLIT_TRAIN, &r);
        batch(c, QKT_SPLIT_TRAIN, 16, x2, y2);
        EXPECT(!memcmp(x1, x2, n * 4) && !memcmp(y1, y2, n * 4), "%s: set_rng(get_rng) did not resume",
               default_specs(k));
        qkt_data_free(a), qkt_data_free(b), qkt_data_free(c);
    }
}

/* ------------------------------------------------------------------ train/val disjoint */
/* A set of rows (x and y of one sequence), open addressing on a local hash. */
typedef struct {
    int32_t *rows;
    uint8_t *used;
    int cap, len, n;
} rowset;
static uint64_t row_hash(const int32_t *r, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)r[i]) * 1099511628211ull;
    return h;
}
static int rowset_has(rowset *s, const int32_t *r, int add) {
    uint64_t i = row_hash(r, s->len) % (uint64_t)s->cap;
    for (;; i = (i + 1) % (uint64_t)s->cap) {
        if (!s->used[i]) break;
        if (!memcmp(s->rows + i * s->len, r, (size_t)s->len * 4)) return 1;
    }
    if (add) memcpy(s->rows + i * s->len, r, (size_t)s->len * 4), s->used[i] = 1, s->n++;
    return 0;
}

static void check_disjoint(const char *spec, int n_seq, int expect_small) {
    qkt_data *d = open_ok(spec, 0, 3);
    int T = qkt_data_seq_len(d), len = 2 * T;
    rowset tr = {malloc((size_t)4 * n_seq * len * 4), calloc((size_t)4 * n_seq, 1), 4 * n_seq, len, 0};
    static int32_t x[64 * MAXT], y[64 * MAXT], row[2 * MAXT];
    for (int i = 0; i < n_seq; i += 64) {
        batch(d, QKT_SPLIT_TRAIN, 64, x, y);
        for (int b = 0; b < 64; b++) {
            memcpy(row, x + b * T, T * 4), memcpy(row + T, y + b * T, T * 4);
            rowset_has(&tr, row, 1);
        }
    }
    int shared = 0, n_val = 0;
    rowset va = {malloc((size_t)4 * n_seq * len * 4), calloc((size_t)4 * n_seq, 1), 4 * n_seq, len, 0};
    for (int i = 0; i < n_seq; i += 64) {
        batch(d, QKT_SPLIT_VAL, 64, x, y);
        for (int b = 0; b < 64; b++, n_val++) {
            memcpy(row, x + b * T, T * 4), memcpy(row + T, y + b * T, T * 4);
            shared += rowset_has(&tr, row, 0);
            rowset_has(&va, row, 1);
        }
    }
    EXPECT(shared == 0, "%s: %d of %d val sequences also occur in train", spec, shared, n_val);
    if (expect_small) {
        /* A small space: the train stream revisits sequences many times, so an
         * overlap would be certain without the partition; val holds about 1/8. */
        EXPECT(tr.n < n_seq / 2 && va.n > 8, "%s: %d distinct train, %d distinct val sequences", spec, tr.n, va.n);
        double frac = (double)va.n / (tr.n + va.n);
        EXPECT(frac > 0.05 && frac < 0.25, "%s: val class holds %.3f of the sequences seen, expected ~1/8", spec, frac);
    }
    free(tr.rows), free(tr.used), free(va.rows), free(va.used);
    qkt_data_free(d);
}

static void test_disjoint(void) {
    for (int k = 0; k < N_DEFAULT; k++) check_disjoint(default_specs(k), 4096, 0);
    check_disjoint("sort:len=4,digits=4", 4096, 1);   /* 256 sequences */
    check_disjoint("copy:len=8,digits=2", 4096, 1);   /* 256 */
    check_disjoint("reverse:len=4,digits=5", 4096, 1); /* 625 */
    check_disjoint("induction:vocab=5,len=4", 4096, 1); /* 256 */
    check_disjoint("mqar:vocab=9,seq_len=8,n_pairs=2,n_queries=2", 4096, 1); /* 288 */
    check_disjoint("bigram:vocab=4,branch=2", 4096, 0);
}

/* ------------------------------------------------------------------ brute-force checker */
static int get_param(const char *spec, const char *name) {
    const char *p = strstr(spec, name);
    QKT_CHECK(p, "no %s in %s", name, spec);
    return atoi(p + strlen(name) + 1);
}

/* recall: answers seen, answers other than the pair's value, sequences per pair count */
static long recall_answers, recall_wrong, recall_hist[4097];

/* Recomputes each row's answers from its input tokens alone; returns the number of
 * problems (and reports the first). */
static int check_row(qkt_data *d, const int32_t *x, const int32_t *y, char *why) {
    const char *spec = qkt_data_spec(d), *name = qkt_data_name(d);
    int T = qkt_data_seq_len(d), U = qkt_data_used_len(d), V = qkt_data_vocab_size(d);
    for (int t = 0; t < T; t++) {
        if (x[t] < 0 || x[t] >= V || y[t] < -1 || y[t] >= V) return sprintf(why, "token out of range at %d", t), 1;
        if (t >= U && (x[t] != 0 || y[t] != -1)) return sprintf(why, "padding at %d is %d/%d", t, x[t], y[t]), 1;
    }
    if (!strcmp(name, "mqar")) {
        int N = get_param(spec, "n_pairs"), Q = get_param(spec, "n_queries"), L = get_param(spec, "seq_len");
        static int val_of[65536];
        int nk = (V - 1) / 2;
        if (L != U) return sprintf(why, "used %d != seq_len %d", U, L), 1;
        memset(val_of, 0, sizeof(int) * (size_t)V);
        for (int i = 0; i < N; i++) {
            int k = x[2 * i], v = 2 * i + 1 < T ? x[2 * i + 1] : -1;
            if (k < 1 || k > nk || v <= nk || v >= V) return sprintf(why, "pair %d = (%d, %d) outside key/value ranges", i, k, v), 1;
            if (val_of[k]) return sprintf(why, "key %d repeated", k), 1;
            val_of[k] = v;
            for (int j = 0; j < i; j++)
                if (x[2 * j + 1] == v) return sprintf(why, "value %d repeated", v), 1;
        }
        static int seen[65536];
        int queries = 0;
        memset(seen, 0, sizeof(int) * (size_t)V);
        for (int t = 0; t < U; t++) {
            int is_query = t >= 2 * N && x[t] >= 1 && x[t] <= nk;
            if (!is_query) {
                if (y[t] != -1) return sprintf(why, "target %d at non-query position %d", y[t], t), 1;
                if (t >= 2 * N && x[t] != 0 && !(x[t] > nk && x[t - 1] >= 1 && x[t - 1] <= nk))
                    return sprintf(why, "stray token %d at %d", x[t], t), 1;
                continue;
            }
            queries++;
            if ((t - 2 * N) % 2) return sprintf(why, "query at odd offset %d", t), 1;
            if (!val_of[x[t]]) return sprintf(why, "query key %d not among the pairs", x[t]), 1;
            if (seen[x[t]]++ >= (Q + N - 1) / N) /* distinct while Q <= N, else <= ceil(Q/N) each */
                return sprintf(why, "key %d queried %d times", x[t], seen[x[t]]), 1;
            if (y[t] != val_of[x[t]]) return sprintf(why, "query %d at %d: target %d, expected %d", x[t], t, y[t], val_of[x[t]]), 1;
            if (t + 1 < U && x[t + 1] != y[t]) return sprintf(why, "value after query at %d is %d", t, x[t + 1]), 1;
        }
        if (queries != Q) return sprintf(why, "%d queries, expected %d", queries, Q), 1;
    } else if (!strcmp(name, "induction")) {
        int n = get_param(spec, "len");
        if (U != 2 * n || x[0] != 0) return sprintf(why, "layout: used %d, x0 %d", U, x[0]), 1;
        for (int t = 1; t <= n; t++)
            if (x[t] < 1) return sprintf(why, "blank inside the random half at %d", t), 1;
        for (int t = 0; t < U; t++) {
            int expect = t < n ? -1 : x[t + 1 - n]; /* s[t+1] = s[t+1-n] in the repeat */
            if (y[t] != expect) return sprintf(why, "target %d at %d, expected %d", y[t], t, expect), 1;
            if (t > n && x[t] != x[t - n]) return sprintf(why, "repeat breaks at %d", t), 1;
        }
    } else if (!strcmp(name, "sort") || !strcmp(name, "copy") || !strcmp(name, "reverse")) {
        int n = get_param(spec, "len"), D = get_param(spec, "digits");
        int out[MAXT], cnt[64] = {0};
        if (U != 2 * n || x[n] != 1) return sprintf(why, "layout: used %d, separator %d", U, x[n]), 1;
        for (int i = 0; i < n; i++) {
            if (x[i] < 2 || x[i] >= D + 2) return sprintf(why, "digit token %d at %d", x[i], i), 1;
            cnt[x[i] - 2]++;
        }
        if (name[0] == 's') /* counting sort, independent of the generator's qsort */
            for (int v = 0, k = 0; v < D; v++)
                for (int c = 0; c < cnt[v]; c++) out[k++] = v + 2;
        for (int i = 0; i < n; i++)
            if (name[0] != 's') out[i] = name[0] == 'c' ? x[i] : x[n - 1 - i];
        for (int t = 0; t < U; t++) {
            int expect = t < n ? -1 : out[t - n];
            if (y[t] != expect) return sprintf(why, "target %d at %d, expected %d", y[t], t, expect), 1;
            if (t > n && x[t] != out[t - n - 1]) return sprintf(why, "input %d at %d, expected %d", x[t], t, out[t - n - 1]), 1;
        }
    } else if (!strcmp(name, "bigram")) {
        for (int t = 0; t < T; t++) {
            if (y[t] < 0) return sprintf(why, "uncounted position %d", t), 1;
            if (t + 1 < T && y[t] != x[t + 1]) return sprintf(why, "target %d at %d is not the next token %d", y[t], t, x[t + 1]), 1;
        }
    } else if (!strcmp(name, "recall")) {
        int K = get_param(spec, "keys"), W = get_param(spec, "values"), N = get_param(spec, "n_pairs");
        int noise = get_param(spec, "noise"), n = 0;
        static int val_of[4097];
        if (V != 1 + K + W + K * W || U != T) return sprintf(why, "vocab %d / used %d", V, U), 1;
        for (int k = 0; k < K; k++) val_of[k] = -1;
        while (n < U && x[n] > K + W) { /* the leading pair tokens */
            int k = (x[n] - 1 - K - W) / W, v = (x[n] - 1 - K - W) % W;
            if (val_of[k] >= 0) return sprintf(why, "key %d in two pairs", k), 1;
            val_of[k] = v, n++;
        }
        if (n < 1 || n > N) return sprintf(why, "%d pairs, expected 1..%d", n, N), 1;
        recall_hist[n]++;
        for (int t = n; t < U; t++) {
            if ((t - n) % 2 == 0) { /* a query key; its target is the answer */
                if (x[t] < 1 || x[t] > K || val_of[x[t] - 1] < 0) return sprintf(why, "query %d at %d is not a pair's key", x[t], t), 1;
                if (y[t] <= K || y[t] > K + W) return sprintf(why, "answer %d at %d is not a value", y[t], t), 1;
                int want = 1 + K + val_of[x[t] - 1];
                recall_answers++, recall_wrong += y[t] != want;
                if (noise == 0 && y[t] != want) return sprintf(why, "noise=0: answer %d at %d, pair says %d", y[t], t, want), 1;
                if (t + 1 < U && x[t + 1] != y[t]) return sprintf(why, "token after the query at %d is %d, answer %d", t, x[t + 1], y[t]), 1;
            } else if (y[t] != -1) {
                return sprintf(why, "target %d at non-query position %d", y[t], t), 1;
            } else if (x[t] <= K || x[t] > K + W) {
                return sprintf(why, "expected a value token at %d, got %d", t, x[t]), 1;
            }
        }
        for (int t = 0; t < n; t++)
            if (y[t] != -1) return sprintf(why, "target %d inside the pairs at %d", y[t], t), 1;
    } else {
        return sprintf(why, "no checker for task '%s': add one to check_row", name), 1;
    }
    return 0;
}

static void check_task(const char *spec, int T, int n_seq) {
    qkt_data *d = open_ok(spec, T, 11);
    static int32_t x[64 * MAXT], y[64 * MAXT];
    int Tm = qkt_data_seq_len(d), bad = 0, counted = 0;
    char why[256] = "";
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < n_seq; i += 64) {
            batch(d, s, 64, x, y);
            for (int b = 0; b < 64; b++) {
                bad += check_row(d, x + b * Tm, y + b * Tm, why);
                for (int t = 0; t < Tm; t++) counted += y[b * Tm + t] != -1;
            }
        }
    EXPECT(bad == 0, "%s (T %d): %d bad sequences, e.g. %s", qkt_data_spec(d), Tm, bad, why);
    EXPECT(counted > 0, "%s: nothing counted", spec);
    qkt_data_free(d);
}

static void test_checker(void) {
    for (int k = 0; k < N_DEFAULT; k++) check_task(default_specs(k), 0, 2048);
    check_task("mqar", 128, 1024);            /* seq_len follows T */
    check_task("mqar:seq_len=40", 64, 1024);  /* padded */
    check_task("mqar:vocab=20,seq_len=31,n_pairs=8,n_queries=8", 0, 1024); /* tightest layout */
    check_task("mqar:vocab=256,n_pairs=16,n_queries=5", 96, 1024);
    check_task("mqar:n_queries=4", 0, 1024);   /* queries ask distinct pairs */
    check_task("mqar:vocab=9,seq_len=41,n_pairs=2,n_queries=19", 0, 1024); /* every slot a query */
    check_task("induction", 65, 1024);        /* odd T: one pad */
    check_task("induction:vocab=3,len=20", 48, 1024);
    check_task("sort:len=20,digits=3", 64, 1024);
    check_task("reverse:len=5,digits=30", 11, 1024);
    check_task("copy:len=30,digits=2", 0, 1024);
    check_task("bigram:vocab=16,branch=3,chain_seed=9", 100, 1024);
    check_task("recall:noise=0", 0, 1024);              /* every answer is the pair's value */
    check_task("recall:keys=4,values=4,n_pairs=3,noise=0", 5, 1024); /* tightest: 3 pairs, one query */
    check_task("recall:keys=40,values=30,n_pairs=20", 64, 1024);
    /* noise=5: 5 % of answers are a uniform value, so 5 % x (1 - 1/values) differ from the pair */
    recall_answers = recall_wrong = 0;
    memset(recall_hist, 0, sizeof recall_hist);
    check_task("recall:noise=5", 0, 4096);
    double rate = (double)recall_wrong / (double)recall_answers;
    EXPECT(fabs(rate - 0.05 * 7 / 8) < 0.006, "recall noise=5: %.4f of %ld answers differ from the pair (expected 0.044)", rate, recall_answers);
    for (int n = 1; n <= 8; n++) /* the pair count is uniform on 1..8: 8192 sequences, ~1024 each */
        EXPECT(recall_hist[n] > 850 && recall_hist[n] < 1200, "recall: %ld sequences with %d pairs", recall_hist[n], n);

    /* A planted bug must be caught: corrupt one answer of a valid row. */
    qkt_data *d = open_ok("sort", 0, 1);
    int32_t x[MAXT], y[MAXT];
    char why[256];
    batch(d, QKT_SPLIT_TRAIN, 1, x, y);
    EXPECT(check_row(d, x, y, why) == 0, "valid row rejected: %s", why);
    y[qkt_data_seq_len(d) - 1] ^= 1;
    EXPECT(check_row(d, x, y, why) == 1, "checker missed a corrupted answer");
    qkt_data_free(d);
    EXPECT(qkt_data_task_count() >= 6 && !qkt_data_task_name(qkt_data_task_count()) && !qkt_data_task_name(-1),
           "task table: %d tasks", qkt_data_task_count());
    /* the tasks answered by a content lookup at one earlier position (claim 10 of the study tests only these) */
    char ret[256] = "";
    for (int k = -1; k <= qkt_data_task_count(); k++)
        if (qkt_data_task_retrieval(k)) snprintf(ret + strlen(ret), sizeof ret - strlen(ret), "%s ", qkt_data_task_name(k));
    EXPECT(!strcmp(ret, "mqar induction recall "), "retrieval tasks: %s", ret);
}

/* bigram: the chain is fixed by chain_seed (not the run seed); empirical conditional
 * entropy and best accuracy match qkt_data_best. */
static void test_bigram_stats(void) {
    enum { V = 64 };
    static double cnt[3][V][V];
    static int32_t x[64 * 64], y[64 * 64];
    const char *specs[3] = {"bigram", "bigram", "bigram:chain_seed=2"};
    uint64_t seeds[3] = {1, 2, 1};
    for (int k = 0; k < 3; k++) {
        qkt_data *d = open_ok(specs[k], 0, seeds[k]);
        for (int i = 0; i < 200; i++) {
            batch(d, QKT_SPLIT_TRAIN, 64, x, y);
            for (int j = 0; j < 64 * 64; j++) cnt[k][x[j]][y[j]]++;
        }
        if (k == 0) {
            double H = 0, A = 0, tot = 0, bl, ba;
            int max_succ = 0;
            for (int i = 0; i < V; i++) {
                double row = 0, mx = 0;
                int ns = 0;
                for (int j = 0; j < V; j++) row += cnt[0][i][j], mx = cnt[0][i][j] > mx ? cnt[0][i][j] : mx, ns += cnt[0][i][j] > 0;
                for (int j = 0; j < V; j++)
                    if (cnt[0][i][j] > 0) H -= cnt[0][i][j] * log(cnt[0][i][j] / row);
                A += mx, tot += row;
                max_succ = ns > max_succ ? ns : max_succ;
            }
            qkt_data_best(d, &bl, &ba);
            EXPECT(max_succ == 4, "a state has %d successors, expected branch = 4", max_succ);
            EXPECT_NEAR(H / tot, bl, 0.02);
            EXPECT_NEAR(A / tot, ba, 0.01);
            EXPECT(bl > 0.5 && bl < log(4.0), "best loss %g", bl);
        }
        qkt_data_free(d);
    }
    int same_edges = 1, diff_edges = 0;
    for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) {
            same_edges &= (cnt[0][i][j] > 0) == (cnt[1][i][j] > 0);
            diff_edges += (cnt[0][i][j] > 0) != (cnt[2][i][j] > 0);
        }
    EXPECT(same_edges, "run seeds 1 and 2 saw different chains");
    EXPECT(diff_edges > 100, "chain_seed 1 and 2 share almost every edge (%d differ)", diff_edges);
}

/* ------------------------------------------------------------------ chance, spec, padding */
static void test_chance_and_spec(void) {
    struct {
        const char *spec;
        double k, best_loss;
        int V, T;
    } c[] = {{"mqar", 16, 0, 32, 64},       {"induction", 63, 0, 64, 64}, {"sort", 10, 0, 12, 16},
             {"reverse", 10, 0, 12, 24},    {"copy", 10, 0, 12, 24},      {"bigram", 64, -1, 64, 64},
             {"copy:digits=3", 3, 0, 5, 24}, {"mqar:vocab=101", 50, 0, 101, 64}, {"recall:noise=0", 8, 0, 81, 64},
             {"recall", 8, -1, 81, 64}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        qkt_data *d = open_ok(c[i].spec, 0, 1);
        double l, a, bl, ba;
        qkt_data_chance(d, &l, &a);
        qkt_data_best(d, &bl, &ba);
        EXPECT_NEAR(l, log(c[i].k), 1e-12);
        EXPECT_NEAR(a, 1 / c[i].k, 1e-12);
        if (c[i].best_loss == 0) EXPECT(bl == 0 && ba == 1, "%s best %g %g", c[i].spec, bl, ba);
        EXPECT(qkt_data_vocab_size(d) == c[i].V, "%s vocab %d", c[i].spec, qkt_data_vocab_size(d));
        EXPECT(qkt_data_seq_len(d) == c[i].T, "%s T %d", c[i].spec, qkt_data_seq_len(d));
        EXPECT(qkt_data_split_tokens(d, QKT_SPLIT_TRAIN) == -1, "%s split tokens", c[i].spec);
        EXPECT(!qkt_data_is_text(d) && qkt_data_vocab(d, NULL) == NULL, "%s is not text", c[i].spec);
        /* The canonical spec reopens to the same task and batches. */
        qkt_data *e = open_ok(qkt_data_spec(d), 0, 1);
        EXPECT(!strcmp(qkt_data_spec(d), qkt_data_spec(e)), "%s vs %s", qkt_data_spec(d), qkt_data_spec(e));
        static int32_t x1[8 * MAXT], y1[8 * MAXT], x2[8 * MAXT], y2[8 * MAXT];
        batch(d, QKT_SPLIT_TRAIN, 8, x1, y1), batch(e, QKT_SPLIT_TRAIN, 8, x2, y2);
        EXPECT(!memcmp(x1, x2, sizeof(int32_t) * 8 * qkt_data_seq_len(d)), "%s: canonical spec differs", c[i].spec);
        qkt_data_free(d), qkt_data_free(e);
    }
    { /* recall with noise 5 %: the Bayes predictor gives the pair's value p = 0.95 + 0.05/8, each other value 0.05/8 */
        qkt_data *r = open_ok("recall", 0, 1);
        double bl, ba, pt = 0.95 + 0.05 / 8;
        qkt_data_best(r, &bl, &ba);
        EXPECT_NEAR(ba, pt, 1e-12);
        EXPECT_NEAR(bl, -pt * log(pt) - (1 - pt) * log(0.05 / 8), 1e-12);
        char buf[16];
        EXPECT(!strcmp(qkt_data_token_str(r, 3, buf), "k2") && !strcmp(qkt_data_token_str(r, 9, buf), "v0") &&
                   !strcmp(qkt_data_token_str(r, 17 + 2 * 8 + 5, buf), "2:5") && !strcmp(qkt_data_token_str(r, 0, buf), "."),
               "recall token names");
        EXPECT(!strcmp(qkt_data_spec(r), "recall:keys=8,values=8,n_pairs=8,noise=5"), "recall spec %s", qkt_data_spec(r));
        qkt_data_free(r);
    }
    qkt_data *d = open_ok("mqar:n_pairs=4,n_queries=2", 32, 1);
    EXPECT(!strcmp(qkt_data_spec(d), "mqar:vocab=32,seq_len=32,n_pairs=4,n_queries=2"), "spec %s", qkt_data_spec(d));
    EXPECT(!strcmp(qkt_data_name(d), "mqar"), "name %s", qkt_data_name(d));
    char buf[16];
    EXPECT(!strcmp(qkt_data_token_str(d, 0, buf), ".") && !strcmp(qkt_data_token_str(d, 5, buf), "k5") &&
               !strcmp(qkt_data_token_str(d, 20, buf), "v20"),
           "mqar token names");
    qkt_data_free(d);
    d = open_ok("sort", 0, 1);
    EXPECT(!strcmp(qkt_data_token_str(d, 1, buf), "|") && !strcmp(qkt_data_token_str(d, 2, buf), "0"), "sort names");
    qkt_data_free(d);
    /* opts == NULL: natural length, seed 0. */
    qkt_err err;
    EXPECT(qkt_data_open(&d, "copy", NULL, &err) == 0 && qkt_data_seq_len(d) == 24, "open with NULL opts");
    qkt_data_free(d);
    char help[4096];
    int n = qkt_data_help(help, sizeof help);
    EXPECT(n > 0 && n < (int)sizeof help && strstr(help, "n_queries") && strstr(help, "val_frac") &&
               strstr(help, "chain_seed"),
           "help text");
}

static void test_errors(void) {
    struct {
        const char *spec;
        int T;
        const char *want; /* substring of the message */
    } c[] = {
        {"", 0, "empty data spec"},
        {"nope", 0, "unknown data source 'nope'"},
        {"MQAR", 0, "unknown data source"},
        {"mqar:n_pair=3", 0, "unknown parameter 'n_pair'"},
        {"mqar:n_pairs", 0, "'n_pairs' needs a value"},
        {"mqar:n_pairs=", 0, "n_pairs=: expected an integer"},
        {"mqar:n_pairs=abc", 0, "n_pairs=abc: expected an integer in [1, 65536]"},
        {"mqar:n_pairs=3x", 0, "n_pairs=3x"},
        {"mqar:n_pairs=0", 0, "n_pairs=0"},
        {"mqar:n_pairs=99999999999", 0, "n_pairs=99999999999"},
        {"mqar:n_pairs=4,n_pairs=4", 0, "given twice"},
        {"mqar:n_pairs=4,", 0, "empty parameter"},
        {"mqar:", 0, "empty parameter"},
        {"mqar:n_pairs=40", 0, "n_pairs=40 exceeds the 15 keys of vocab=32"},
        {"mqar:n_queries=40", 0, "seq_len=64 is too short for n_pairs=4 and n_queries=40: expected >= 87"},
        {"mqar:seq_len=8", 0, "seq_len=8 is too short for n_pairs=4 and n_queries=1: expected >= 9"},
        {"mqar:seq_len=100", 64, "needs seq_len >= 100, got 64"},
        {"mqar:vocab=4", 0, "vocab=4: expected an integer in [5"},
        {"sort", 10, "needs seq_len >= 16, got 10"},
        {"sort:len=-3", 0, "len=-3"},
        {"sort:len=2,digits=3", 0, "only about 9 distinct sequences"},
        {"copy:digits=1", 0, "digits=1"},
        {"induction", 1, "too short"},
        {"induction:vocab=2", 0, "vocab=2"},
        {"bigram:branch=9,vocab=8", 0, "branch=9 exceeds vocab=8"},
        {"recall:n_pairs=9", 0, "n_pairs=9 exceeds keys=8"},
        {"recall", 8, "seq_len 8 is too short for n_pairs=8: expected >= 9"},
        {"recall:noise=101", 0, "noise=101"},
        {"recall:keys=4096,values=4096", 0, "exceed the vocabulary limit"},
        {"bigram:vocab=64,branch=1", 0, "distinct sequences"},
        {"mqar", -1, "seq_len -1"},
        {"mqar", QKT_DATA_MAX_T + 1, "seq_len"},
        {"text", 0, "missing file path"},
        {"text:", 0, "missing file path"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        qkt_data *d = (qkt_data *)&c; /* must be reset to NULL */
        qkt_err err = {{0}};
        qkt_data_opts o = {.seq_len = c[i].T, .seed = 1};
        int rc = qkt_data_open(&d, c[i].spec, &o, &err);
        EXPECT(rc == -1 && d == NULL, "'%s' should fail (rc %d)", c[i].spec, rc);
        EXPECT(strstr(err.msg, c[i].want) != NULL, "'%s': message '%s' lacks '%s'", c[i].spec, err.msg, c[i].want);
        EXPECT(!strchr(err.msg, '\n'), "'%s': message has a newline", c[i].spec);
        if (rc == 0) qkt_data_free(d);
    }
    /* NULL spec */
    qkt_data *d;
    qkt_err err;
    EXPECT(qkt_data_open(&d, NULL, NULL, &err) == -1 && d == NULL, "NULL spec");
}

/* ------------------------------------------------------------------ accuracy helpers */
static void test_accuracy(void) {
    /* 4 rows, V = 3; targets: 2, ignored, 0, 1. Row 0 argmax 2 (right), row 2 has a
     * tie between 0 and 1 -> first max (0, right), row 3 argmax 2 (wrong). */
    qkt_real logits[12] = {0, 1, 5, 9, 9, 9, 3, 3, 1, 0, 1, 2};
    int32_t tg[4] = {2, -1, 0, 1};
    int64_t n;
    EXPECT_NEAR(qkt_data_accuracy(logits, tg, 4, 3, &n), 2.0 / 3, 1e-12);
    EXPECT(n == 3, "counted %lld", (long long)n);
    int32_t pred[4] = {2, 0, 0, 2};
    EXPECT_NEAR(qkt_data_accuracy_tokens(pred, tg, 4, &n), 2.0 / 3, 1e-12);
    int32_t none[4] = {-1, -1, -1, -1};
    EXPECT(qkt_data_accuracy(logits, none, 4, 3, &n) == 0 && n == 0, "nothing counted");
    /* NaN compares false: one at 0 is never beaten, one later never wins; the first of
     * equal largest values wins. */
    qkt_real nl[12] = {NAN, 7, 8, 1, NAN, 2, 4, 9, 9, 5, 5, 1};
    int32_t t0[4] = {0, 2, 1, 0}, t1[4] = {2, 0, 2, 1};
    EXPECT(qkt_data_accuracy(nl, t0, 4, 3, &n) == 1.0 && n == 4, "argmax with NaN and ties: %g", qkt_data_accuracy(nl, t0, 4, 3, &n));
    EXPECT(qkt_data_accuracy(nl, t1, 4, 3, &n) == 0.0 && n == 4, "argmax with NaN and ties: %g", qkt_data_accuracy(nl, t1, 4, 3, &n));
    /* Sequences: B = 2 rows of T = 2: row 0 = (2 right, ignored) all right; row 1 = (0 right, 1 wrong). */
    EXPECT_NEAR(qkt_data_seq_accuracy(logits, tg, 2, 2, 3), 0.5, 1e-12);
    tg[3] = 2;
    EXPECT_NEAR(qkt_data_seq_accuracy(logits, tg, 2, 2, 3), 1.0, 1e-12);
}

int main(void) {
    test_determinism();
    test_disjoint();
    test_checker();
    test_bigram_stats();
    test_chance_and_spec();
    test_errors();
    test_accuracy();
    return qkt_test_finish();
}
