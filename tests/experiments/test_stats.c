/* The study's statistics (experiments/stats.c) against known values: the CI and exact
 * p-value of a known paired sample, Fisher's exact test against R's fisher.test, the
 * t quantiles, censoring, and degenerate inputs (no pairs, one pair, NaN, all ties). */
#include <math.h>
#include <stdlib.h>

#include "qkt_stats.h"
#include "qkt_test.h"

static void test_paired(void) {
    double a[5] = {2, 4, 6, 8, 10}, b[5] = {1, 2, 3, 4, 5}; /* d = 1..5 */
    qkt_paired p = qkt_stats_paired(a, b, 5, 0.95, 4000, 7);
    EXPECT(p.n == 5, "n %d", p.n);
    EXPECT_NEAR(p.mean, 3.0, 1e-12);
    EXPECT_NEAR(p.sd, sqrt(2.5), 1e-12);
    /* every d > 0: only the all-plus and all-minus patterns reach |sum| = 15 */
    EXPECT_NEAR(p.p_exact, 2.0 / 32, 1e-12);
    EXPECT_NEAR(p.p_min, 2.0 / 32, 1e-12);
    /* the bootstrap distribution of the mean of 1..5 has sd ~ sqrt(2/5) = 0.63: the
     * 95 % interval is about 3 -+ 1.2 (it cannot leave [1, 5]) */
    EXPECT(p.lo > 1.6 && p.lo < 2.2 && p.hi > 3.8 && p.hi < 4.4, "bootstrap CI [%g, %g]", p.lo, p.hi);
    qkt_paired q = qkt_stats_paired(a, b, 5, 0.95, 4000, 7);
    EXPECT(q.lo == p.lo && q.hi == p.hi, "same seed, different CI");
    /* mixed signs: d = {1, -1, 2, -2, 0.5}: sum 0.5; p = share of |sum s d| >= 0.5 */
    double c[5] = {1, -1, 2, -2, 0.5}, z[5] = {0};
    qkt_paired m = qkt_stats_paired(c, z, 5, 0.95, 2000, 1);
    int hit = 0;
    for (int s = 0; s < 32; s++) {
        double t = 0;
        for (int i = 0; i < 5; i++) t += (s >> i & 1) ? -c[i] : c[i];
        hit += fabs(t) >= 0.5 - 1e-12;
    }
    EXPECT_NEAR(m.p_exact, hit / 32.0, 1e-12);
    EXPECT(m.lo < 0 && m.hi > 0, "CI [%g, %g] should straddle 0", m.lo, m.hi);
}

static void test_paired_degenerate(void) {
    double a[3] = {1, NAN, 3}, b[3] = {0, 1, NAN};
    qkt_paired p = qkt_stats_paired(a, b, 3, 0.95, 500, 1); /* one usable pair */
    EXPECT(p.n == 1 && p.mean == 1 && isnan(p.sd) && isnan(p.lo) && isnan(p.hi), "one pair: n %d sd %g lo %g", p.n, p.sd, p.lo);
    EXPECT_NEAR(p.p_exact, 1.0, 1e-12); /* 2 patterns, both |sum| = 1 */
    qkt_paired e = qkt_stats_paired(a, b, 0, 0.95, 500, 1);
    EXPECT(e.n == 0 && isnan(e.mean) && e.p_exact == 1 && isnan(e.lo), "no pairs");
    double x[4] = {2, 2, 2, 2};
    qkt_paired t = qkt_stats_paired(x, x, 4, 0.95, 500, 1); /* all ties */
    EXPECT(t.mean == 0 && t.sd == 0 && t.lo == 0 && t.hi == 0 && t.p_exact == 1, "ties: mean %g p %g", t.mean, t.p_exact);
}

static void test_censored(void) {
    int ta[4] = {100, 200, -1, 50}, tb[4] = {-1, 300, -1, 40};
    qkt_censored c = qkt_stats_censored_paired(ta, tb, 4, 0.95, 1000, 3);
    EXPECT(c.n == 4 && c.wins == 2 && c.losses == 1 && c.ties == 1, "w %d l %d t %d", c.wins, c.losses, c.ties);
    EXPECT(c.a_reached == 3 && c.b_reached == 2, "reached %d %d", c.a_reached, c.b_reached);
    EXPECT_NEAR(c.effect, 0.25, 1e-12);
    EXPECT_NEAR(c.p_sign, 1.0, 1e-12); /* 2 of 3 non-ties */
    EXPECT(c.lo <= 0.25 && c.hi >= 0.25, "CI [%g, %g]", c.lo, c.hi);
    /* a censored run is never dropped: 6 of 6 reached vs none */
    int r[6] = {10, 20, 30, 40, 50, 60}, n[6] = {-1, -1, -1, -1, -1, -1};
    qkt_censored d = qkt_stats_censored_paired(r, n, 6, 0.95, 1000, 3);
    EXPECT(d.wins == 6 && d.effect == 1 && d.lo == 1 && d.hi == 1, "all censored b: wins %d", d.wins);
    EXPECT_NEAR(d.p_sign, 2.0 / 64, 1e-12);
    qkt_censored none = qkt_stats_censored_paired(n, n, 6, 0.95, 1000, 3);
    EXPECT(none.ties == 6 && none.effect == 0 && none.p_sign == 1, "both censored: ties %d", none.ties);
    int m1[3] = {100, -1, -1}, m2[3] = {10, 20, -1}, m3[4] = {10, 20, 30, -1};
    EXPECT(qkt_stats_censored_median(m1, 3) == -1, "median with 2/3 censored");
    EXPECT_NEAR(qkt_stats_censored_median(m2, 3), 20, 0);
    EXPECT_NEAR(qkt_stats_censored_median(m3, 4), 25, 0);
    EXPECT(isnan(qkt_stats_censored_median(m3, 0)), "empty median");
}

static void test_fisher(void) {
    /* R: fisher.test(matrix(c(3, 1, 1, 3), 2))$p.value = 0.4857143 (Fisher's tea) */
    EXPECT_NEAR(qkt_stats_fisher(3, 1, 1, 3), 0.4857142857, 1e-9);
    /* R: fisher.test(matrix(c(1, 11, 9, 3), 2))$p.value = 0.002759456 */
    EXPECT_NEAR(qkt_stats_fisher(1, 9, 11, 3), 0.002759456, 1e-8);
    EXPECT_NEAR(qkt_stats_fisher(5, 0, 0, 5), 2.0 / 252, 1e-12);
    EXPECT_NEAR(qkt_stats_fisher(4, 1, 0, 5), 10.0 / 210, 1e-12);
    EXPECT_NEAR(qkt_stats_fisher(2, 3, 2, 3), 1.0, 1e-12);
    EXPECT(qkt_stats_fisher(0, 0, 3, 2) == 1 && qkt_stats_fisher(3, 0, 2, 0) == 1, "an empty margin gives p = 1");
    EXPECT(qkt_stats_fisher_min_split(5, 0.05) == 4, "5 per group: 4/5 vs 0/5 is the smallest significant split");
    EXPECT(qkt_stats_fisher_min_split(3, 0.05) == 4, "3 per group: nothing is significant");
    EXPECT_NEAR(qkt_stats_fisher_power(5, 5, 1, 0, 0.05), 1.0, 1e-12);
    EXPECT_NEAR(qkt_stats_fisher_power(3, 3, 1, 0, 0.05), 0.0, 1e-12);
    /* 0.5 vs 0.5: power = the test's true size, at most alpha */
    double size = qkt_stats_fisher_power(6, 6, 0.5, 0.5, 0.05);
    EXPECT(size >= 0 && size <= 0.05, "size %g", size);
}

static void test_t_and_mde(void) {
    EXPECT_NEAR(qkt_stats_t_quantile(0.975, 1), 12.7062047, 1e-5);
    EXPECT_NEAR(qkt_stats_t_quantile(0.975, 4), 2.7764451, 1e-6);
    EXPECT_NEAR(qkt_stats_t_quantile(0.8, 4), 0.9409646, 1e-6);
    EXPECT_NEAR(qkt_stats_t_quantile(0.5, 7), 0.0, 1e-6);
    EXPECT_NEAR(qkt_stats_mde(5, 1.0), (2.7764451 + 0.9409646) / sqrt(5.0), 1e-5);
    EXPECT(isnan(qkt_stats_mde(1, 1.0)) && isnan(qkt_stats_mde(5, NAN)), "mde degenerate");
}

static void test_auc_slope(void) {
    double x[4] = {0, 1, 2, 4}, y[4] = {1, 1, 1, 1}, r[4] = {0, 1, 2, 4}, h[4] = {3, NAN, 3, 3};
    EXPECT_NEAR(qkt_stats_auc_mean(x, y, 4), 1.0, 1e-12);
    EXPECT_NEAR(qkt_stats_auc_mean(x, r, 4), 2.0, 1e-12);
    EXPECT_NEAR(qkt_stats_auc_mean(x, h, 4), 3.0, 1e-12); /* the NaN point is skipped */
    EXPECT(isnan(qkt_stats_auc_mean(x, y, 1)), "one point has no area");
    double se, ly[4] = {1, 3, 5, 9};
    EXPECT_NEAR(qkt_stats_slope(x, ly, 4, &se), 2.0, 1e-12);
    EXPECT_NEAR(se, 0.0, 1e-12);
    double cx[3] = {2, 2, 2};
    EXPECT(isnan(qkt_stats_slope(cx, ly, 3, &se)), "constant x has no slope");
}

/* The pooled statistic by brute force: every assignment of each stratum's group sizes. */
static double brute_p(const double *v, const int *g, const int *st, int n) {
    int g2[16];
    long obs = 0, e = 0;
    int n1[2] = {0, 0}, ns[2] = {0, 0};
    for (int i = 0; i < n; i++) n1[st[i]] += g[i], ns[st[i]]++;
    for (int s = 0; s < 2; s++) e += (long)n1[s] * (ns[s] - n1[s]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (st[i] == st[j] && g[i] == 1 && g[j] == 0) obs += v[i] > v[j] ? 2 : v[i] == v[j];
    long hit = 0, tot = 0;
    for (int mask = 0; mask < 1 << n; mask++) {
        int c[2] = {0, 0};
        for (int i = 0; i < n; i++) g2[i] = mask >> i & 1, c[st[i]] += g2[i];
        if (c[0] != n1[0] || c[1] != n1[1]) continue;
        long u = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (st[i] == st[j] && g2[i] == 1 && g2[j] == 0) u += v[i] > v[j] ? 2 : v[i] == v[j];
        hit += labs(u - e) >= labs(obs - e), tot++;
    }
    return (double)hit / tot;
}

static void test_strat_auc(void) {
    /* one stratum: {5, 6} above {1, 2, 3}: auc 1; of the C(5,2) = 10 assignments only
     * this one and its mirror are as extreme: p = 0.2 */
    double v[10] = {5, 6, 1, 2, 3, 15, 16, 11, 12, 13};
    int g[10] = {1, 1, 0, 0, 0, 1, 1, 0, 0, 0}, one[10] = {0}, two[10] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    qkt_ranked a = qkt_stats_strat_auc(v, g, one, 5, 0.95, 1000, 1);
    EXPECT(a.n_pairs == 6 && a.n1 == 2 && a.n0 == 3, "pairs %d", a.n_pairs);
    EXPECT_NEAR(a.auc, 1.0, 1e-12);
    EXPECT_NEAR(a.p_exact, 0.2, 1e-12);
    EXPECT_NEAR(a.p_min, 0.2, 1e-12);
    EXPECT(a.lo == 1 && a.hi == 1, "perfect separation CI [%g, %g]", a.lo, a.hi);
    /* two such strata: within-stratum permutations only, p = 2 / 10^2 */
    qkt_ranked b = qkt_stats_strat_auc(v, g, two, 10, 0.95, 1000, 1);
    EXPECT(b.n_pairs == 12, "pairs %d", b.n_pairs);
    EXPECT_NEAR(b.p_exact, 0.02, 1e-12);
    /* pooled over strata without stratifying, 15 > 3 would count: here it must not */
    int gr[10] = {1, 1, 0, 0, 0, 0, 0, 1, 1, 1};
    qkt_ranked c = qkt_stats_strat_auc(v, gr, two, 10, 0.95, 1000, 1);
    EXPECT_NEAR(c.auc, 0.5, 1e-12); /* stratum 0: 6 wins of 6; stratum 1: 0 of 6 */
    /* the reverse direction */
    int rev[5] = {0, 0, 1, 1, 1};
    qkt_ranked d = qkt_stats_strat_auc(v, rev, one, 5, 0.95, 1000, 1);
    EXPECT_NEAR(d.auc, 0.0, 1e-12);
    EXPECT_NEAR(d.p_exact, 0.2, 1e-12);
    /* ties and a mixed case against brute force */
    double w[9] = {1, 2, 2, 3, 0.5, 4, 4, 1, 7};
    int gw[9] = {1, 0, 1, 0, 1, 0, 1, 1, 0}, sw[9] = {0, 0, 0, 0, 1, 1, 1, 1, 1};
    qkt_ranked e = qkt_stats_strat_auc(w, gw, sw, 9, 0.95, 1000, 1);
    EXPECT_NEAR(e.p_exact, brute_p(w, gw, sw, 9), 1e-12);
    /* stratum 0: (1 vs 2, 3): 0; (2 vs 2): 0.5, (2 vs 3): 0 -> 0.5 of 4; stratum 1: 0.5 vs 4, 7: 0; 4 vs 4: 0.5, 4 vs 7: 0; 1: 0 -> 0.5 of 6 */
    EXPECT_NEAR(e.auc, 1.0 / 10, 1e-12);
    double eq[4] = {3, 3, 3, 3};
    int ge[4] = {1, 0, 1, 0};
    qkt_ranked f = qkt_stats_strat_auc(eq, ge, one, 4, 0.95, 500, 1);
    EXPECT(f.auc == 0.5 && f.p_exact == 1, "all ties: auc %g p %g", f.auc, f.p_exact);
    /* nothing to compare: one group only, NaN values, groups other than 0/1 */
    double nv[4] = {NAN, 1, 2, 3};
    int gn[4] = {1, 0, 0, 2};
    qkt_ranked h = qkt_stats_strat_auc(nv, gn, one, 4, 0.95, 500, 1);
    EXPECT(h.n_pairs == 0 && isnan(h.auc) && isnan(h.lo) && h.p_exact == 1 && h.n1 == 0 && h.n0 == 2, "no pairs: %d", h.n_pairs);
    qkt_ranked z = qkt_stats_strat_auc(nv, gn, one, 0, 0.95, 500, 1);
    EXPECT(z.n_pairs == 0 && isnan(z.auc), "empty");
    /* a stratum of 24 (sampled null): perfect separation is still far in the tail, p > 0 */
    double big[24];
    int gb[24], sb[24] = {0};
    for (int i = 0; i < 24; i++) big[i] = i, gb[i] = i >= 12;
    qkt_ranked k = qkt_stats_strat_auc(big, gb, sb, 24, 0.95, 2000, 3);
    EXPECT(k.auc == 1 && k.p_exact > 0 && k.p_exact < 0.01, "sampled: auc %g p %g", k.auc, k.p_exact);
}

/* Holm's step-down adjustment on hand-computed cases (R: p.adjust(p, "holm")). */
static void test_holm(void) {
    /* p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02 */
    double p[4] = {0.01, 0.04, 0.03, 0.005}, a[4];
    qkt_stats_holm(p, 4, a);
    EXPECT_NEAR(a[0], 0.03, 1e-12);
    EXPECT_NEAR(a[1], 0.06, 1e-12); /* sorted: 0.005 x 4, 0.01 x 3, 0.03 x 2 = 0.06, 0.04 x 1 -> max(0.06, 0.04) */
    EXPECT_NEAR(a[2], 0.06, 1e-12);
    EXPECT_NEAR(a[3], 0.02, 1e-12);
    /* six all-same-sign pairs give p = 2/64 each: one such test survives, ten do not */
    double q[10], b[10];
    for (int i = 0; i < 10; i++) q[i] = 2.0 / 64;
    qkt_stats_holm(q, 1, b);
    EXPECT_NEAR(b[0], 0.03125, 1e-12);
    qkt_stats_holm(q, 10, b);
    for (int i = 0; i < 10; i++) EXPECT_NEAR(b[i], 0.3125, 1e-12);
    /* capped at 1; NaN is no test: it keeps NaN and does not count in m; in place */
    double r[4] = {0.5, NAN, 0.2, 0.001};
    qkt_stats_holm(r, 4, r);
    EXPECT_NEAR(r[0], 0.5, 1e-12); /* sorted 0.001 x 3, 0.2 x 2 = 0.4, 0.5 x 1 -> max(0.4, 0.5) */
    EXPECT(isnan(r[1]), "a NaN p-value got an adjusted value %g", r[1]);
    EXPECT_NEAR(r[2], 0.4, 1e-12);
    EXPECT_NEAR(r[3], 0.003, 1e-12);
    double one[1] = {0.9};
    qkt_stats_holm(one, 1, one);
    EXPECT_NEAR(one[0], 0.9, 1e-12);
    qkt_stats_holm(NULL, 0, NULL); /* an empty family */
    /* the sign test behind claims 6b and 7b: 8 of 8 one way, 2/256 */
    EXPECT_NEAR(qkt_stats_sign_test(8, 8), 2.0 / 256, 1e-12);
    EXPECT_NEAR(qkt_stats_sign_test(0, 0), 1, 1e-12);
    EXPECT_NEAR(qkt_stats_sign_test(3, 6), 1, 1e-12);
}

int main(void) {
    test_holm();
    test_strat_auc();
    test_paired();
    test_paired_degenerate();
    test_censored();
    test_fisher();
    test_t_and_mde();
    test_auc_slope();
    return qkt_test_finish();
}
