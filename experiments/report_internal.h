/* Internal to the report writer. The dependency runs one way:
 *   report.c (gather metrics.csv, summary.csv, report.md: calls the parts)
 *     -> report_init.c, report_train.c, report_maps.c, report_lr.c, report_growth.c,
 *        report_reading.c (one section each; no part calls another)
 *       -> report_common.c (queries and statistics every part shares). */
#ifndef QKT_REPORT_INTERNAL_H
#define QKT_REPORT_INTERNAL_H
#include <stdbool.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QKT_REPORT_MAXS 4096 /* longest metric series read back */
/* A metric's name in metrics.csv, from the study's table: QKT_M(VAL_LOSS) = "val_loss". */
#define QKT_M(id) qkt_metric_name(QKT_METRIC_##id)
/* An experiment's name in metrics.csv: QKT_KIND(TRAIN) = "train". */
#define QKT_KIND(k) qkt_cell_kind_name(QKT_CELL_##k)

/* The report being written: its inputs (config, metrics table, run directory) and report.md. */
typedef struct {
    const qkt_ablate_cfg *c;
    const qkt_table *t;
    const char *dir;
    qkt_buf md; /* report.md being written */
    qkt_err *err;
    int n_plots_failed;
    double chance; /* the main task's chance validation loss (NaN if its data cannot be opened) */
    int seeds_used; /* the fewest seeds present in a training cell (c->seeds when none is missing) */
    struct qkt__finding *rows; /* the findings table's rows, printed together (report_table.c) */
    int n_rows;
    struct qkt__robust *robust; /* the reruns' verdicts to compare each row's with (report_robust.c), or NULL */
    qkt_buf *verdicts;          /* non-NULL: each row's verdict is also appended here as "id\tverdict\n" */
} qkt__report;

/* ---------------------------------------------------------------- report_common.c */
/* Counts (and prints) a failed plot; the report goes on without it. */
void qkt__report_plot_done(qkt__report *r, int rc, const char *file);
/* The run whose id is `id`, or -1. */
int qkt__report_run_by_id(const qkt_table *t, const char *id);
/* The metric at the run's last step, or NAN. */
double qkt__report_final_val(const qkt_table *t, int run, const char *metric);
/* Did the run diverge (and at which step, if at is non-NULL)? */
bool qkt__report_diverged(const qkt_table *t, int run, int *at);
/* First eval step with val_acc >= 0.9, or -1. */
int qkt__report_steps_to_90(const qkt_table *t, int run);
/* Wortsman et al.'s LR sensitivity of a variant over the grid, against the best final loss of
 * every variant of the sweep (qkt__report_lr_best_all); *best_lr gets the variant's best LR. */
double qkt__report_lr_best_all(const qkt_table *t, const qkt_ablate_cfg *c);
double qkt__report_lr_sensitivity(const qkt_table *t, const qkt_ablate_cfg *c, const char *variant, double *best_lr);

/* One training cell (variant, d_k, lr) summarised over its seeds. */
typedef struct {
    double loss_m, loss_sd, acc_m, acc_sd; /* final validation loss and accuracy: mean, sample sd */
    double init_std, init_ent;             /* logit std and normalised entropy at step 0, mean */
    double s90;                            /* mean steps to 90 % over the runs that got there */
    int n_s90, n_div, n_runs, first_div;
} qkt__cell_sum;
qkt__cell_sum qkt__report_summarize(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds,
                                    double lr);

/* ---------------------------------------------------------------- report_compare.c */
#define QKT_REPORT_MAX_SEEDS 100 /* qkt_ablate_validate's limit */
#define QKT_REPORT_LEVEL 0.95    /* confidence level of every interval */
#define QKT_REPORT_BOOT 4000     /* bootstrap resamples */
/* One variant at one d_k, per seed (index = seed; NaN / -1 where the run is missing). */
typedef struct {
    int n, n_present, n_diverged, n_escaped;
    bool present[QKT_REPORT_MAX_SEEDS], diverged[QKT_REPORT_MAX_SEEDS], escaped[QKT_REPORT_MAX_SEEDS];
    double final_loss[QKT_REPORT_MAX_SEEDS]; /* NaN if diverged */
    double auc[QKT_REPORT_MAX_SEEDS];        /* mean validation loss over the run (area / steps); NaN if diverged */
    int t90[QKT_REPORT_MAX_SEEDS];           /* first eval step with val accuracy >= 0.9; -1 = never (censored) */
    double init_std[QKT_REPORT_MAX_SEEDS], init_ent[QKT_REPORT_MAX_SEEDS]; /* scaled logit std, norm. entropy at step 0 */
    double grad0[QKT_REPORT_MAX_SEEDS], grad_early[QKT_REPORT_MAX_SEEDS], grad_late[QKT_REPORT_MAX_SEEDS]; /* |grad W_q, W_k|: step 0, mean over the first half, the second */
    double dz0[QKT_REPORT_MAX_SEEDS]; /* |dL/dz| at the softmax input at init (every layer; NaN in runs made before it) */
} qkt__seeds;
void qkt__report_seeds(const qkt_table *t, const char *exp, const char *variant, int d_k, int seeds, double lr, int steps, qkt__seeds *o);
/* Variant a against b at one d_k, paired by seed (same data and, for the fixed-scale
 * variants, the same init): differences a - b. */
typedef struct {
    qkt_attn_scale a, b;
    int d_k;
    qkt__seeds sa, sb;
    qkt_paired loss, auc, ent0;
    qkt_paired grad[3]; /* log(|grad_a| / |grad_b|) at step 0, early, late */
    qkt_censored t90;   /* wins = a reached 90 % first */
    double fisher_p;    /* escaped (reached 90 %) counts, a vs b */
} qkt__cmp;
void qkt__report_compare(const qkt__report *r, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o);
/* The same for the train cells of experiment `exp` ("train" or "train2": part 2c's second task). */
void qkt__report_compare_exp(const qkt__report *r, const char *exp, qkt_attn_scale a, qkt_attn_scale b, int d_k, qkt__cmp *o);
typedef enum { QKT_V_REPRODUCED, QKT_V_CONTRADICTED, QKT_V_NOT_DETECTABLE, QKT_V_UNTESTABLE, QKT_V_NEGLIGIBLE } qkt__verdict;
/* From a paired interval: the claim expects sign(a - b) = sign (+1 or -1). Reproduced if
 * the interval excludes 0 on that side and the exact sign-flip p <= 1 - level,
 * contradicted if both hold on the other side, else not detectable; untestable without
 * an interval (fewer than 2 pairs). */
qkt__verdict qkt__report_verdict(const qkt_paired *p, int sign);
/* The smallest difference of losses (nats) a loss claim counts: a difference that the test
 * detects but whose mean is smaller is *negligible*, neither reproduced nor contradicted
 * (a model that learns the task to ~0 loss in both arms ends "worse" by 0.0003 in every seed). */
#define QKT_REPORT_MIN_LOSS 0.01
#define QKT__REPORT_STR(x) #x
#define QKT__REPORT_XSTR(x) QKT__REPORT_STR(x)
/* qkt__report_verdict for a difference of losses: reproduced or contradicted with
 * |mean| < QKT_REPORT_MIN_LOSS becomes negligible. */
qkt__verdict qkt__report_verdict_loss(const qkt_paired *p, int sign);
const char *qkt__verdict_name(qkt__verdict v);
/* ---------------------------------------------------------------- report_table.c: the findings rows
 * A row's verdict comes from at most two tests (n = 2: combined, as qkt__verdict_combine), each a
 * verdict at the unadjusted level and its p-value. The table is printed once every row is in:
 * Holm's adjustment runs over the p-values of every test of the table, and a test stays
 * *reproduced* / *contradicted* only if its adjusted p is <= 1 - QKT_REPORT_LEVEL too. */
typedef struct {
    int n;             /* tests: 0 = no p-value (the verdict is v[0] as given; -1: print `pre` alone), 1 or 2 */
    int v[2];          /* qkt__verdict of each test before the adjustment */
    double p[2];
} qkt__tests;
/* One test, or none when p is NaN or v is not testable (the verdict v stands as it is). */
qkt__tests qkt__test(qkt__verdict v, double p);
/* Adds a row (the strings are copied); pre: text printed before the verdict, or NULL. */
void qkt__finding(qkt__report *r, const char *id, const char *claim, const char *src, const char *meas, const char *pre, qkt__tests t);
/* Holm over the rows' tests, then the table (header included); the rows are freed. */
void qkt__findings_print(qkt__report *r);
/* A test's verdict after the adjustment: reproduced / contradicted / negligible need adj <= 1 - level too. */
qkt__verdict qkt__verdict_holm(qkt__verdict v, double adj);
/* Two tests of one claim: reproduced if one is and none contradicts, and the reverse;
 * otherwise negligible if one is, else not detectable (not testable if neither is testable). */
qkt__verdict qkt__verdict_combine(qkt__verdict a, qkt__verdict b);

/* ---------------------------------------------------------------- report_robust.c: the reruns' verdicts
 * A row's verdict on a rerun (qkt_ablate_rerun_get) is compared as its whole text (the
 * verdict after Holm's adjustment, with the text before it: "reproduced (iid); GPT: ...").
 * The rule, per row: fragile if any rerun's verdict differs from the study's (a "not
 * testable" study verdict too: a rerun that can test the claim did not keep it); holds if
 * at least one rerun reached it and none differs; not rerun if no rerun has the row (its
 * directory missing, or cells of it missing: an incomplete rerun is not compared). */
typedef enum { QKT__HOLDS, QKT__FRAGILE, QKT__NOT_RERUN } qkt__robustness;
/* got[i]: rerun i's verdict of the row, NULL when not rerun; differs[i] (may be NULL) is set
 * where it differs from main_v. */
qkt__robustness qkt__robust_judge(const char *main_v, const char *const *got, int n, bool *differs);
/* The "holds under" cell of a row: "holds under seed 2, isa avx2", "**fragile**: seed 3
 * gives not detectable at this size; holds under seed 2", "not rerun", with "; not rerun: ..." for
 * reruns that have no verdict. */
void qkt__robust_cell(char *buf, size_t n, const char *const *titles, const char *main_v, const char *const *got, int n_reruns);
/* Before the findings: the reruns' verdicts (each rerun's findings are computed from its
 * metrics.csv and written to its findings.md), and a note naming the cells an incomplete
 * rerun lacks, as the study's own "Incomplete run". Sets r->robust when c asks for reruns. */
void qkt__robust_load(qkt__report *r);
/* Hooks of the findings table (report_table.c): the extra column's header ("" without
 * reruns); a row's cell (recording its verdict text v), NULL without reruns, *fragile set;
 * after the table, the paragraph naming the fragile rows and the rerun that differed. */
const char *qkt__robust_header(const qkt__report *r);
const char *qkt__robust_row(qkt__report *r, const char *id, const char *v, bool *fragile);
void qkt__robust_after_table(qkt__report *r);
/* One sentence for the reading (what the numbers say): the fragile rows, or nothing. */
void qkt__robust_reading(qkt__report *r);
void qkt__robust_free(qkt__report *r);
/* report.c's gathering of cells/ into metrics.csv, and the task's chance loss (NaN if its
 * data cannot be opened), for the reruns' findings. */
int qkt__report_gather(const char *run_dir, qkt_err *err);
double qkt__report_chance(const qkt_ablate_cfg *c);

/* "mean [lo, hi], p = .. (n = ..)" with fmt for the numbers; degenerate cases in words. */
void qkt__report_fmt_paired(char *buf, size_t n, const qkt_paired *p, const char *fmt);

/* ---------------------------------------------------------------- report_stability.c */
/* An LR run fails when it did not train or when it diverged:
 *  - did not train: its final validation loss is not at least QKT_REPORT_TRAIN_MARGIN nats
 *    below the task's chance level (a run that collapsed to the marginal distribution, or
 *    came back to it after a blow-up, is a failure, not a stable run);
 *  - diverged: its loss went non-finite, or it rose more than QKT_REPORT_RISE nats above its
 *    running minimum and stayed there at every evaluation for the next lr_eval_every steps
 *    (QKT_REPORT_RISE_PERSIST: one regular evaluation interval, whatever the density of the
 *    evaluations in it; one spike that the run recovers from is not a divergence).
 * The rise is what claims 6a and 7a time the logits and the entropy against. */
#define QKT_REPORT_TRAIN_MARGIN 0.2
#define QKT_REPORT_RISE 0.2
#define QKT_REPORT_RISE_PERSIST(c) ((c)->lr_eval_every)
typedef struct {
    int run; /* -1 if missing */
    double lr, init_loss, final_loss; /* final: NaN if the loss went non-finite */
    double peak_rise;                 /* max over evaluations of val loss - its running minimum before it (inf: non-finite) */
    bool failed;                      /* did not train, or diverged */
    bool no_train;                    /* the final loss is not QKT_REPORT_TRAIN_MARGIN below chance (or non-finite) */
    int rise_step;                    /* first evaluation of the lasting rise, or the non-finite step; -1 if none */
    double logit_init;                /* the largest attention logit (any layer, head) at step 0 */
    double logit_max;                 /* ... its maximum over the evaluations up to rise_step (the whole run if none) */
    double logit_before;              /* ... over the evaluations strictly before rise_step (= logit_max if none) */
    int evals_before;                 /* logit evaluations after step 0 and before rise_step: the room "precedes" has */
    double min_entropy;               /* min normalised entropy (mean over heads, clamped to [0, 1]) over the same evaluations */
} qkt__lr_run;
/* A run's failure from its validation losses (st, lv: n evaluations in step order; the first
 * is the one at init) against the task's chance loss, a rise lasting `persist` steps: sets
 * failed, no_train, rise_step, peak_rise, init_loss and final_loss (nonfinite_step >= 0: the
 * loss went non-finite there). Exposed for the tests of the rule. */
void qkt__report_classify(const double *st, const double *lv, int n, int nonfinite_step, double chance, int persist, qkt__lr_run *o);
/* When the LR runs are evaluated, in words: "every 5 steps", "at every step up to step 20, then every 5 steps". */
void qkt__report_lr_schedule(const qkt_ablate_cfg *c, char *b, size_t n);
/* The LR run of `variant` at the grid's li-th learning rate and seed `seed` (lr_d_k). */
void qkt__report_lr_run(const qkt__report *r, const char *variant, int li, int seed, qkt__lr_run *o);
/* The grid's indices in increasing LR order (it may be given in any order). */
void qkt__report_lr_order(const qkt_ablate_cfg *c, int *idx);
/* A variant's good LR range: trained (not failed) from the smallest LR up to max_trained_lr
 * (NaN if the smallest failed); min_failed_lr = the first that failed (NaN if none);
 * stable_above: a good LR above a failed one (the range is not one interval). */
typedef struct {
    int n, n_failed;
    double max_trained_lr, min_failed_lr;
    bool stable_above;
} qkt__lr_range;
qkt__lr_range qkt__report_lr_range(const qkt__report *r, const char *variant, int seed);
/* Claims 6b and 7b over seeds: does `wide` train at more learning rates than `base`?
 * out_w, out_b: (n_seeds, n_lr) outcomes, LRs in increasing order: 0 trained, 1 failed, -1
 * missing (a seed counts only with both sweeps complete). Per seed, the largest good LR is
 * the grid index of the last LR of the run of trained LRs from the smallest (-1: the
 * smallest failed; n_lr: none failed). The test: over the (LR, seed) pairs where exactly
 * one variant trained, the exact sign test of w_only against b_only. Reproduced: p <= 1 -
 * level, w_only > b_only and the median edge of wide above base's; contradicted: the
 * reverse; not testable with fewer than 2 seeds (each edge would be one run). */
typedef struct {
    int n_seeds;           /* seeds used */
    int edge_w[3], edge_b[3]; /* largest good LR index: lower median, min, max over the seeds */
    int w_only, b_only;    /* (LR, seed) pairs where only wide / only base trained */
    double p;              /* sign test; NaN when not testable */
    qkt__verdict v;
} qkt__range_cmp;
void qkt__report_range_rule(const int *out_w, const int *out_b, int n_lr, int n_seeds, qkt__range_cmp *o);
/* The largest attention logit and the lowest normalised entropy (clamped to [0, 1]) of an LR run
 * over the evaluations at steps <= upto: claims 6a and 7a compare runs over the same window. */
void qkt__report_lr_window(const qkt__report *r, const char *variant, int li, int seed, int upto, double *logit_max, double *min_entropy);

/* ---------------------------------------------------------------- the sections, in report order */
void qkt__report_part_init(qkt__report *r);   /* 1. at initialisation (iid q, k; a fresh GPT) */
void qkt__report_part_train(qkt__report *r);  /* 2. training ablation */
void qkt__report_part_maps(qkt__report *r);   /*    its attention maps */
void qkt__report_part_task2(qkt__report *r);  /* 2c. the second task's loss curves, paired against sqrt_dk */
void qkt__report_part_lr(qkt__report *r);     /* 3. learning-rate sensitivity */
/* 4. logit growth; the log-log slopes for the two variants go to the reading. */
void qkt__report_part_growth(qkt__report *r, double *slope_sqrt, double *slope_dk);
/* 5. the study's own efficiency (qkt_ablate_efficiency_read), report_efficiency.c */
void qkt__report_part_efficiency(qkt__report *r);
/* From the 2x2 of scale form x start (report_start.c): claim 4, the gradient at a fixed form
 * (4a, 4b), and claim 9, where the harm of the unscaled form comes from (9a-9d). */
void qkt__report_claim_grad(qkt__report *r);
void qkt__report_claim_origin(qkt__report *r);
/* ---------------------------------------------------------------- report_sharpen.c: claim 10
 * Does training still sharpen the scaled model's attention on a retrieval task (10a, 10c on the
 * second task), and does it end as peaked as the unscaled model's (10b, 10d)? Per run, the
 * normalised entropy of the sharpest head (min over layers and heads) at step 0 and at the end. */
#define QKT_REPORT_PEAK_MARGIN 0.05 /* 10b: "as peaked" = at most this much flatter (normalised entropy) */
typedef enum {
    QKT_SHARPEN_OK,
    QKT_SHARPEN_NO_RETRIEVAL, /* the task needs no focus: nothing to test */
    QKT_SHARPEN_NO_INIT,      /* no entropy at step 0 */
    QKT_SHARPEN_NO_END,       /* no entropy at the end (runs missing or diverged) */
    QKT_SHARPEN_FEW_PAIRS     /* fewer than 2 seeds with both values */
} qkt__sharpen_why_code;
typedef struct {
    qkt_paired fall;       /* sqrt_dk: end - init, paired by seed */
    qkt_paired gap;        /* at the end: sqrt_dk - none */
    qkt_paired gap_margin; /* ... minus QKT_REPORT_PEAK_MARGIN: the test of 10b */
    qkt__verdict v_fall, v_gap;
    qkt__sharpen_why_code why_fall, why_gap; /* QKT_SHARPEN_OK unless the verdict is untestable */
} qkt__sharpen;
/* The rule of claim 10 on per-seed sharpest-head entropies (NaN: missing; n seeds): s_init,
 * s_end of sqrt_dk, u_end of none. 10a: qkt__report_verdict of end - init with sign -1
 * (reproduced: it falls; contradicted: it rises). 10b: the same on sqrt_dk - none - margin
 * (reproduced: scaled shown less than the margin flatter; contradicted: shown more). Not
 * testable without retrieval, without the values, or with fewer than 2 pairs. */
void qkt__report_sharpen_rule(const double *s_init, const double *s_end, const double *u_end, int n, bool retrieval, uint64_t seed,
                              qkt__sharpen *o);
const char *qkt__sharpen_why(qkt__sharpen_why_code w);
void qkt__report_claim_sharpen(qkt__report *r);
/* The findings table (claims of the literature, measurement, verdict, source): first in report.md. */
void qkt__report_findings(qkt__report *r);
/* The paired comparisons of part 2 (effect sizes, intervals, counts, power). */
void qkt__report_part_stats(qkt__report *r);
/* "What the numbers say", written before the parts but from their results. */
void qkt__report_reading(qkt__report *r, double slope_sqrt, double slope_dk);
/* report.html beside report.md (report_html.c): its findings table is read back from r->md. */
void qkt__report_html(qkt__report *r);

#ifdef __cplusplus
}
#endif
#endif
