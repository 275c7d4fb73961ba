/* Small-sample statistics for the study's verdicts: paired comparisons over seeds
 * (bootstrap CI, exact sign-flip test), censored times (runs that never reach a
 * threshold), Fisher's exact test on 2x2 counts, and what a given number of seeds can
 * detect. Everything is deterministic: the bootstrap draws from a qkt_rng seeded by the
 * caller. Inputs may hold NaN: a pair with a NaN side is left out (and counted). */
#ifndef QKT_STATS_H
#define QKT_STATS_H
#include <stdbool.h>
#include <stdint.h>

#include "qkt_autograd.h" /* first: the float64 names (qkt64_names.h) */

#ifdef __cplusplus
extern "C" {
#endif

/* A paired comparison of a against b over n units (seeds): d_i = a_i - b_i. */
typedef struct {
    int n;          /* pairs used (both sides finite) */
    double mean;    /* mean of d; NaN if n = 0 */
    double sd;      /* sample sd of d; NaN if n < 2 */
    double lo, hi;  /* percentile bootstrap CI of the mean at `level`; NaN if n < 2 */
    double t_lo, t_hi; /* Student's t CI of the mean at `level`: mean -+ t_{(1+level)/2, n-1} sd / sqrt(n); NaN if n < 2.
                        * Wider than the percentile bootstrap for a handful of pairs, whose resamples
                        * understate the spread (by about sqrt((n-1)/n) and the t quantile's excess). */
    double p_exact; /* two-sided exact sign-flip (permutation) p-value of mean d = 0; 1 if n = 0 */
    double p_min;   /* the smallest p-value n pairs can give: 2 / 2^n (1 for n = 0) */
} qkt_paired;
/* n_boot resamples of the n pairs with replacement (qkt_rng seeded with `seed`). The
 * sign-flip test enumerates all 2^n sign patterns for n <= 20 (exact), else uses n_boot
 * random ones. */
qkt_paired qkt_stats_paired(const double *a, const double *b, int n, double level, int n_boot, uint64_t seed);

/* A paired comparison of times to a threshold with censoring: t[i] < 0 = never reached
 * within the horizon (later than any reached time; two censored = a tie). Per pair: a
 * wins if a reached it strictly earlier. */
typedef struct {
    int n, wins, losses, ties;  /* wins: a earlier than b */
    int a_reached, b_reached;
    double effect;              /* (wins - losses) / n in [-1, 1]: the paired probability of superiority, minus its complement */
    double lo, hi;              /* bootstrap CI of effect at `level`; NaN if n < 2 */
    double p_sign;              /* two-sided exact sign test on wins vs losses (ties dropped); 1 if none */
} qkt_censored;
qkt_censored qkt_stats_censored_paired(const int *ta, const int *tb, int n, double level, int n_boot, uint64_t seed);
/* Median of times with censoring (t < 0 = not reached, ranked last): -1 if at least half
 * are censored (the median is "not reached"), NaN for n = 0. */
double qkt_stats_censored_median(const int *t, int n);

/* Do the units of group 1 have larger values than those of group 0 of the same stratum?
 * (e.g. unstable vs stable learning-rate runs, strata = variants.) The pooled
 * Mann-Whitney statistic: over every pair (x in group 1, y in group 0, same stratum),
 * auc = P(x > y) + P(x = y) / 2; 0.5 = no difference. Units with a NaN value or a
 * group other than 0/1 are left out. */
typedef struct {
    int n1, n0;     /* units in group 1 / group 0 used (every stratum) */
    int n_pairs;    /* comparable pairs: sum over strata of n1_s x n0_s */
    double auc;     /* NaN if n_pairs = 0 */
    double lo, hi;  /* bootstrap CI of auc (units resampled within stratum and group); NaN if n_pairs = 0 */
    double p_exact; /* two-sided p of auc = 0.5 under permutations of the groups within each stratum: exact
                     * (every assignment enumerated) for strata of <= 20 units, else n_boot random ones; 1 if no pairs */
    double p_min;   /* the smallest p these group sizes can give */
} qkt_ranked;
qkt_ranked qkt_stats_strat_auc(const double *v, const int *group, const int *stratum, int n, double level, int n_boot, uint64_t seed);

/* Fisher's exact test on the 2x2 table [[a, b], [c, d]] (rows: groups, columns: outcome
 * yes / no): the two-sided p-value (sum of the hypergeometric probabilities no larger
 * than the observed one, with a 1e-7 relative tolerance). 1 for an empty margin. */
double qkt_stats_fisher(int a, int b, int c, int d);
/* The exact power of Fisher's test at `alpha` with n1, n2 units when the true rates are
 * p1 and p2 (enumerates every outcome). */
double qkt_stats_fisher_power(int n1, int n2, double p1, double p2, double alpha);
/* Smallest k such that k/n vs 0/n is significant at alpha (Fisher, two-sided); n + 1 if
 * none is. */
int qkt_stats_fisher_min_split(int n, double alpha);

/* The smallest mean paired difference detectable with power 0.8 at two-sided alpha
 * 0.05 by a paired t-test with n pairs whose differences have sd `sd`:
 * (t_{0.975, n-1} + t_{0.8, n-1}) sd / sqrt(n). NaN if n < 2 or sd is not finite. */
double qkt_stats_mde(int n, double sd);

/* Area under a curve (trapezoid) divided by the x span: the mean level of y over
 * x[0]..x[n-1]. Points with non-finite y are skipped; NaN if fewer than 2 remain. */
double qkt_stats_auc_mean(const double *x, const double *y, int n);

/* Holm's step-down adjustment of n p-values for testing them as one family: with the m
 * finite p-values sorted, p_(1) <= .. <= p_(m), adj_(i) = max over j <= i of
 * min(1, (m - j + 1) p_(j)); rejecting where adj <= alpha keeps the family-wise error
 * rate at alpha. Non-finite entries are not tests: their adj is NaN and they do not
 * count in m. adj may be p. */
void qkt_stats_holm(const double *p, int n, double *adj);
/* Two-sided exact sign (binomial, 1/2) test of k successes in n trials; 1 for n = 0. */
double qkt_stats_sign_test(int k, int n);

/* Least-squares slope of y on x (NaN with fewer than 2 finite points or constant x) and
 * its standard error in *se (NaN with fewer than 3 points). */
double qkt_stats_slope(const double *x, const double *y, int n, double *se);
/* Quantile of Student's t with df degrees of freedom (df >= 1), p in (0, 1). */
double qkt_stats_t_quantile(double p, int df);

#ifdef __cplusplus
}
#endif
#endif
