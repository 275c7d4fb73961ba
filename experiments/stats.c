/* Small-sample statistics for the study's verdicts (qkt_stats.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_autograd.h"
#include "qkt_stats.h"

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n) (linear interpolation between order statistics). */
static double quantile_sorted(const double *v, int n, double q) {
    double h = q * (n - 1);
    int i = (int)floor(h);
    if (i >= n - 1) return v[n - 1];
    return v[i] + (h - i) * (v[i + 1] - v[i]);
}

/* Percentile bootstrap of the mean of v[0..n): [lo, hi] at `level`. */
static void bootstrap_mean(const double *v, int n, double level, int n_boot, uint64_t seed, double *lo, double *hi) {
    if (n < 2 || n_boot < 2) {
        *lo = *hi = NAN;
        return;
    }
    qkt_rng r;
    qkt_rng_seed(&r, seed);
    double *m = qkt_malloc((size_t)n_boot * sizeof *m);
    for (int b = 0; b < n_boot; b++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += v[qkt_rng_below(&r, (uint32_t)n)];
        m[b] = s / n;
    }
    qsort(m, (size_t)n_boot, sizeof *m, cmp_dbl);
    *lo = quantile_sorted(m, n_boot, (1 - level) / 2);
    *hi = quantile_sorted(m, n_boot, 1 - (1 - level) / 2);
    free(m);
}

/* Two-sided sign-flip p-value of mean(d) = 0: the share of sign patterns whose |sum| is
 * at least the observed one (exact by enumeration for n <= 20). */
static double sign_flip_p(const double *d, int n, int n_boot, uint64_t seed) {
    if (n == 0) return 1;
    double obs = 0, scale = 0;
    for (int i = 0; i < n; i++) obs += d[i], scale += fabs(d[i]);
    obs = fabs(obs) - 1e-12 * (scale + 1e-300); /* ties with the observed sum count as extreme */
    long long hit = 0, total = 0;
    if (n <= 20) {
        for (long long m = 0; m < (1LL << n); m++, total++) {
            double s = 0;
            for (int i = 0; i < n; i++) s += (m >> i & 1) ? -d[i] : d[i];
            hit += fabs(s) >= obs;
        }
    } else {
        qkt_rng r;
        qkt_rng_seed(&r, seed ^ 0x5157ull);
        for (int b = 0; b < n_boot; b++, total++) {
            double s = 0;
            for (int i = 0; i < n; i++) s += (qkt_rng_u64(&r) & 1) ? -d[i] : d[i];
            hit += fabs(s) >= obs;
        }
        hit++, total++; /* the observed pattern itself */
    }
    return (double)hit / (double)total;
}

qkt_paired qkt_stats_paired(const double *a, const double *b, int n, double level, int n_boot, uint64_t seed) {
    qkt_paired p = {.mean = NAN, .sd = NAN, .lo = NAN, .hi = NAN, .t_lo = NAN, .t_hi = NAN, .p_exact = 1, .p_min = 1};
    double *d = qkt_malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    for (int i = 0; i < n; i++)
        if (isfinite(a[i]) && isfinite(b[i])) d[p.n++] = a[i] - b[i];
    if (p.n > 0) {
        double s = 0, ss = 0;
        for (int i = 0; i < p.n; i++) s += d[i];
        p.mean = s / p.n;
        for (int i = 0; i < p.n; i++) ss += (d[i] - p.mean) * (d[i] - p.mean);
        if (p.n > 1) {
            p.sd = sqrt(ss / (p.n - 1));
            double h = qkt_stats_t_quantile((1 + level) / 2, p.n - 1) * p.sd / sqrt(p.n);
            p.t_lo = p.mean - h, p.t_hi = p.mean + h;
        }
        p.p_exact = sign_flip_p(d, p.n, n_boot, seed);
        p.p_min = p.n < 60 ? 2.0 / ldexp(1.0, p.n) : 0;
        if (p.p_min > 1) p.p_min = 1;
    }
    bootstrap_mean(d, p.n, level, n_boot, seed, &p.lo, &p.hi);
    free(d);
    return p;
}

/* Two-sided exact binomial (sign) test of k successes in n at p = 1/2. */
static double sign_test(int k, int n);
double qkt_stats_sign_test(int k, int n) { return sign_test(k, n); }

void qkt_stats_holm(const double *p, int n, double *adj) {
    int *idx = qkt_malloc((size_t)(n > 0 ? n : 1) * sizeof *idx), m = 0;
    double *v = qkt_malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int i = 0; i < n; i++)
        if (isfinite(p[i])) idx[m++] = i;
    for (int i = 1; i < m; i++) /* insertion sort by p, ties in index order: the order is fixed */
        for (int j = i; j > 0 && p[idx[j]] < p[idx[j - 1]]; j--) {
            int x = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = x;
        }
    double run = 0;
    for (int k = 0; k < m; k++) {
        double a = fmin(1, (double)(m - k) * p[idx[k]]);
        run = fmax(run, a); /* monotone: an adjusted p is never below a smaller p's */
        v[k] = run;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(p[i])) adj[i] = NAN;
    for (int k = 0; k < m; k++) adj[idx[k]] = v[k];
    free(idx), free(v);
}

static double sign_test(int k, int n) {
    if (n == 0) return 1;
    int m = k < n - k ? k : n - k;
    double s = 0;
    for (int i = 0; i <= m; i++) s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    s *= 2;
    return s > 1 ? 1 : s;
}

qkt_censored qkt_stats_censored_paired(const int *ta, const int *tb, int n, double level, int n_boot, uint64_t seed) {
    qkt_censored c = {.effect = NAN, .lo = NAN, .hi = NAN, .p_sign = 1};
    double *o = qkt_malloc((size_t)(n > 0 ? n : 1) * sizeof *o);
    for (int i = 0; i < n; i++) {
        bool ra = ta[i] >= 0, rb = tb[i] >= 0;
        c.a_reached += ra, c.b_reached += rb;
        int w = ra && (!rb || ta[i] < tb[i]) ? 1 : rb && (!ra || tb[i] < ta[i]) ? -1 : 0;
        c.wins += w > 0, c.losses += w < 0, c.ties += w == 0;
        o[c.n++] = w;
    }
    if (c.n > 0) c.effect = (double)(c.wins - c.losses) / c.n;
    bootstrap_mean(o, c.n, level, n_boot, seed, &c.lo, &c.hi);
    c.p_sign = sign_test(c.wins, c.wins + c.losses);
    free(o);
    return c;
}

double qkt_stats_censored_median(const int *t, int n) {
    if (n <= 0) return NAN;
    double *v = qkt_malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++) v[i] = t[i] < 0 ? INFINITY : t[i];
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return isfinite(m) ? m : -1;
}

/* log P(top-left = a) for the 2x2 table with the given margins (hypergeometric). */
static double log_hyper(int a, int r1, int r2, int c1) {
    int n = r1 + r2;
    return lgamma(r1 + 1.0) - lgamma(a + 1.0) - lgamma(r1 - a + 1.0) + lgamma(r2 + 1.0) - lgamma(c1 - a + 1.0) -
           lgamma(r2 - c1 + a + 1.0) - (lgamma(n + 1.0) - lgamma(c1 + 1.0) - lgamma(n - c1 + 1.0));
}

double qkt_stats_fisher(int a, int b, int c, int d) {
    if (a < 0 || b < 0 || c < 0 || d < 0) return NAN;
    int r1 = a + b, r2 = c + d, c1 = a + c, n = r1 + r2;
    if (r1 == 0 || r2 == 0 || c1 == 0 || c1 == n) return 1;
    double obs = log_hyper(a, r1, r2, c1), p = 0;
    int lo = c1 - r2 > 0 ? c1 - r2 : 0, hi = c1 < r1 ? c1 : r1;
    for (int x = lo; x <= hi; x++) {
        double l = log_hyper(x, r1, r2, c1);
        if (l <= obs + 1e-7) p += exp(l);
    }
    return p > 1 ? 1 : p;
}

static double binom_pmf(int k, int n, double p) {
    if (p <= 0) return k == 0;
    if (p >= 1) return k == n;
    return exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + k * log(p) + (n - k) * log1p(-p));
}

double qkt_stats_fisher_power(int n1, int n2, double p1, double p2, double alpha) {
    double pw = 0;
    for (int x1 = 0; x1 <= n1; x1++)
        for (int x2 = 0; x2 <= n2; x2++)
            if (qkt_stats_fisher(x1, n1 - x1, x2, n2 - x2) <= alpha) pw += binom_pmf(x1, n1, p1) * binom_pmf(x2, n2, p2);
    return pw;
}

int qkt_stats_fisher_min_split(int n, double alpha) {
    for (int k = 1; k <= n; k++)
        if (qkt_stats_fisher(k, n - k, 0, n) <= alpha) return k;
    return n + 1;
}

/* Regularised incomplete beta I_x(a, b) by its continued fraction (Lentz). */
static double betacf(double a, double b, double x) {
    double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    d = fabs(d) < 1e-300 ? 1e-300 : d;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 300; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d, c = 1 + aa / c;
        d = fabs(d) < 1e-300 ? 1e-300 : d, c = fabs(c) < 1e-300 ? 1e-300 : c;
        d = 1 / d, h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d, c = 1 + aa / c;
        d = fabs(d) < 1e-300 ? 1e-300 : d, c = fabs(c) < 1e-300 ? 1e-300 : c;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-14) break;
    }
    return h;
}

static double ibeta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    return x < (a + 1) / (a + b + 2) ? bt * betacf(a, b, x) / a : 1 - bt * betacf(b, a, 1 - x) / b;
}

/* P(T <= t) for Student's t with df degrees of freedom. */
static double t_cdf(double t, int df) {
    double x = df / (df + t * t), tail = 0.5 * ibeta(df / 2.0, 0.5, x);
    return t >= 0 ? 1 - tail : tail;
}

double qkt_stats_t_quantile(double p, int df) {
    if (!(p > 0 && p < 1) || df < 1) return NAN;
    double lo = -1e4, hi = 1e4;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (t_cdf(mid, df) < p) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

double qkt_stats_mde(int n, double sd) {
    if (n < 2 || !isfinite(sd)) return NAN;
    return (qkt_stats_t_quantile(0.975, n - 1) + qkt_stats_t_quantile(0.8, n - 1)) * sd / sqrt((double)n);
}

double qkt_stats_auc_mean(const double *x, const double *y, int n) {
    double area = 0, x0 = NAN, xp = NAN, yp = NAN;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i]) || !isfinite(x[i])) continue;
        if (k == 0) x0 = x[i];
        else area += 0.5 * (y[i] + yp) * (x[i] - xp);
        xp = x[i], yp = y[i], k++;
    }
    return k >= 2 && xp > x0 ? area / (xp - x0) : NAN;
}

double qkt_stats_slope(const double *x, const double *y, int n, double *se) {
    double sx = 0, sy = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) sx += x[i], sy += y[i], k++;
    if (se) *se = NAN;
    if (k < 2) return NAN;
    double mx = sx / k, my = sy / k, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    if (!(sxx > 0)) return NAN;
    double b = sxy / sxx;
    if (se && k >= 3) {
        double rss = 0;
        for (int i = 0; i < n; i++)
            if (isfinite(x[i]) && isfinite(y[i])) {
                double e = y[i] - my - b * (x[i] - mx);
                rss += e * e;
            }
        *se = sqrt(rss / (k - 2) / sxx);
    }
    return b;
}

/* ---------------------------------------------------------------- stratified rank test */
/* Twice the Mann-Whitney count of one stratum: 2 per (group 1 > group 0) pair, 1 per tie. */
static long twice_u(const double *v, const int *g, int n) {
    long u = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (g[i] == 1 && g[j] == 0) u += v[i] > v[j] ? 2 : v[i] == v[j] ? 1 : 0;
    return u;
}

/* The null distribution of twice_u over the assignments of k ones to the n units, as
 * probabilities in dist[0 .. 2k(n-k)]: every assignment for n <= 20, else the observed
 * one g_obs and n_boot random ones (partial Fisher-Yates from r). */
static void null_dist(const double *v, const int *g_obs, int n, int k, double *dist, int n_boot, qkt_rng *r) {
    int m = 2 * k * (n - k), *g = qkt_malloc((size_t)n * sizeof *g), *perm = qkt_malloc((size_t)n * sizeof *perm);
    for (int i = 0; i <= m; i++) dist[i] = 0;
    double total = 0;
    if (n <= 20) {
        for (long mask = 0; mask < (1L << n); mask++) {
            if (__builtin_popcountl((unsigned long)mask) != k) continue;
            for (int i = 0; i < n; i++) g[i] = (int)(mask >> i & 1);
            dist[twice_u(v, g, n)] += 1, total += 1;
        }
    } else { /* the observed assignment counts as one draw, so p > 0 */
        dist[twice_u(v, g_obs, n)] += 1, total += 1;
        for (int b = 0; b < n_boot; b++) {
            for (int i = 0; i < n; i++) perm[i] = i, g[i] = 0;
            for (int i = 0; i < k; i++) {
                int j = i + (int)qkt_rng_below(r, (uint32_t)(n - i)), t = perm[i];
                perm[i] = perm[j], perm[j] = t, g[perm[i]] = 1;
            }
            dist[twice_u(v, g, n)] += 1, total += 1;
        }
    }
    for (int i = 0; i <= m; i++) dist[i] /= total;
    free(g);
    free(perm);
}

qkt_ranked qkt_stats_strat_auc(const double *v, const int *group, const int *stratum, int n, double level, int n_boot, uint64_t seed) {
    qkt_ranked o = {.auc = NAN, .lo = NAN, .hi = NAN, .p_exact = 1, .p_min = 1};
    int sz = n > 0 ? n : 1;
    int *done = qkt_calloc((size_t)sz, sizeof *done);
    int *g = qkt_malloc((size_t)sz * sizeof *g), *g1 = qkt_malloc((size_t)sz * sizeof *g1), *g0 = qkt_malloc((size_t)sz * sizeof *g0);
    double *x = qkt_malloc((size_t)sz * sizeof *x), *bx = qkt_malloc((size_t)sz * sizeof *bx);
    /* the null distribution of the pooled 2U: the convolution of the strata's */
    long m_tot = 0, u_obs = 0, e2 = 0;
    double *acc = qkt_calloc(1, sizeof *acc), *dist = NULL;
    acc[0] = 1;
    qkt_rng r;
    qkt_rng_seed(&r, seed ^ 0x7a11ull);
    for (int i = 0; i < n; i++) {
        if (done[i]) continue;
        int k = 0, n1 = 0;
        for (int j = i; j < n; j++) /* the units of i's stratum */
            if (!done[j] && stratum[j] == stratum[i]) {
                done[j] = 1;
                if (isnan(v[j]) || (group[j] != 0 && group[j] != 1)) continue;
                x[k] = v[j], g[k] = group[j], n1 += group[j], k++;
            }
        if (n1 == 0 || n1 == k) { o.n1 += n1, o.n0 += k - n1; continue; }
        o.n1 += n1, o.n0 += k - n1, o.n_pairs += n1 * (k - n1);
        u_obs += twice_u(x, g, k), e2 += (long)n1 * (k - n1); /* E[2U] = n1 n0 */
        long m = 2L * n1 * (k - n1);
        dist = qkt_realloc(dist, (size_t)(m + 1) * sizeof *dist);
        null_dist(x, g, k, n1, dist, n_boot, &r);
        double *tmp = qkt_calloc((size_t)(m_tot + m + 1), sizeof *tmp);
        for (long a = 0; a <= m_tot; a++)
            if (acc[a] > 0)
                for (long b = 0; b <= m; b++) tmp[a + b] += acc[a] * dist[b];
        free(acc);
        acc = tmp, m_tot += m;
    }
    if (o.n_pairs > 0) {
        o.auc = (double)u_obs / (2.0 * o.n_pairs);
        double dev = fabs((double)u_obs - e2) - 1e-9, p = 0, pmin = 0, far = 0;
        for (long a = 0; a <= m_tot; a++) {
            if (fabs((double)a - e2) >= dev) p += acc[a];
            far = fmax(far, fabs((double)a - e2));
        }
        for (long a = 0; a <= m_tot; a++) /* the most extreme outcome's probability: the floor of p */
            if (fabs((double)a - e2) >= far - 1e-9) pmin += acc[a];
        o.p_exact = fmin(1, p), o.p_min = fmin(1, pmin);
        /* bootstrap: resample units within each (stratum, group) cell */
        double *b = qkt_malloc((size_t)(n_boot > 1 ? n_boot : 1) * sizeof *b);
        for (int it = 0; it < n_boot; it++) {
            long u = 0, pairs = 0;
            for (int i = 0; i < n; i++) done[i] = 0;
            for (int i = 0; i < n; i++) {
                if (done[i]) continue;
                int k1 = 0, k0 = 0;
                for (int j = i; j < n; j++)
                    if (!done[j] && stratum[j] == stratum[i]) {
                        done[j] = 1;
                        if (isnan(v[j])) continue;
                        if (group[j] == 1) g1[k1++] = j;
                        else if (group[j] == 0) g0[k0++] = j;
                    }
                if (!k1 || !k0) continue;
                int k = 0;
                for (int a = 0; a < k1; a++) bx[k] = v[g1[qkt_rng_below(&r, (uint32_t)k1)]], g[k++] = 1;
                for (int a = 0; a < k0; a++) bx[k] = v[g0[qkt_rng_below(&r, (uint32_t)k0)]], g[k++] = 0;
                u += twice_u(bx, g, k), pairs += (long)k1 * k0;
            }
            b[it] = (double)u / (2.0 * pairs);
        }
        if (n_boot >= 2) {
            qsort(b, (size_t)n_boot, sizeof *b, cmp_dbl);
            o.lo = quantile_sorted(b, n_boot, (1 - level) / 2);
            o.hi = quantile_sorted(b, n_boot, 1 - (1 - level) / 2);
        }
        free(b);
    }
    free(done), free(g), free(g1), free(g0), free(x), free(bx), free(acc), free(dist);
    return o;
}
