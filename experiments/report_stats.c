/* The report's part 2b: every trained variant against 1/sqrt(d_k), paired by seed:
 * effect sizes with intervals, censored steps to 90 %, escaped/stuck counts with
 * Fisher's exact test, and what the seeds can detect. */
#include <math.h>
#include <stdio.h>

#include "qkt_stats.h"
#include "report_internal.h"

/* What n seeds can detect: the exact tests' floor and the t-based minimum effect. */
static void power_note(qkt__report *r, double sd_loss) {
    qkt_buf *md = &r->md;
    int n = r->seeds_used, k = qkt_stats_fisher_min_split(n, 0.05); /* the seeds present, not the planned */
    double pmin = n < 60 ? 2.0 / ldexp(1.0, n) : 0;
    qkt_buf_printf(md, "**Power with %d seed%s.** The exact sign-flip test cannot go below p = %.3g", n, n == 1 ? "" : "s", pmin);
    qkt_buf_printf(md, pmin > 0.05 ? " (above 0.05: no paired difference can be significant; use at least 6 seeds). " : ". ");
    if (k <= n)
        qkt_buf_printf(md, "Fisher's test on escaped/stuck counts needs at least %d/%d vs 0/%d for p <= 0.05; its exact power for a true "
                           "escape rate of 0.9 vs 0.1 is %.2f, for 0.7 vs 0.3 %.2f. ",
                       k, n, n, qkt_stats_fisher_power(n, n, 0.9, 0.1, 0.05), qkt_stats_fisher_power(n, n, 0.7, 0.3, 0.05));
    else qkt_buf_printf(md, "Fisher's test on escaped/stuck counts cannot reach p <= 0.05 with %d per group, even at %d/%d vs 0/%d. ", n, n, n, n);
    double mde = qkt_stats_mde(n, sd_loss);
    if (isfinite(mde))
        qkt_buf_printf(md, "With the seed-to-seed sd of the paired final-loss differences seen here (%.3f), a paired t-test would detect "
                           "a mean difference of %.3f with 80 %% power at alpha = 0.05.\n\n", sd_loss, mde);
    else qkt_buf_printf(md, "With %s no minimum detectable effect can be computed.\n\n", n < 2 ? "one seed" : "no finite paired differences");
}

void qkt__report_part_stats(qkt__report *r) {
    const qkt_ablate_cfg *c = r->c;
    qkt_buf *md = &r->md;
    qkt_buf_printf(md, "### Paired comparisons against 1/sqrt(d_k)\n\nEach row: variant minus `sqrt_dk`, seed by seed (same batches; "
                       "same init for the fixed-scale variants). Mean difference [%.0f %% percentile bootstrap interval] (t: the Student t interval at the same level), exact sign-flip p; a verdict needs both intervals to exclude 0 and p <= 0.05. "
                       "Steps to 90 %%: a run that never gets there is censored (ranked after every run that did), not dropped; "
                       "the effect is (pairs where the variant got there first - pairs where `sqrt_dk` did) / pairs. Escaped = reached 90 %% "
                       "accuracy within the run (on a plateau task outcomes are bimodal: escaped or stuck), compared as counts with Fisher's exact test; "
                       "when every run gets there, a difference is in the steps to 90 %% and the mean loss over the run (slower, not worse).\n\n",
                   100 * QKT_REPORT_LEVEL);
    if (c->seeds < 2) qkt_buf_printf(md, "One seed per cell: the differences below have no interval and no test.\n\n");
    qkt_buf_printf(md, "| variant vs sqrt_dk | d_k | final val loss | mean val loss over the run | steps to 90 %%: effect | escaped | Fisher p | diverged |\n"
                       "|---|---:|---|---|---|---|---:|---|\n");
    double sd_sum = 0;
    int sd_n = 0;
    bool any = false;
    for (int di = 0; di < c->n_dk; di++)
        for (int v = 0; v < c->n_variants; v++) {
            if (c->variants[v] == QKT_ATTN_SQRT_DK) continue;
            static qkt__cmp k;
            qkt__report_compare(r, c->variants[v], QKT_ATTN_SQRT_DK, c->dks[di], &k);
            if (!k.sa.n_present || !k.sb.n_present) continue;
            any = true;
            char l[160], a[160], t[160];
            qkt__report_fmt_paired(l, sizeof l, &k.loss, "%+.3f");
            qkt__report_fmt_paired(a, sizeof a, &k.auc, "%+.3f");
            if (k.t90.n >= 2) snprintf(t, sizeof t, "%+.2f [%+.2f, %+.2f] (%d-%d-%d)", k.t90.effect, k.t90.lo, k.t90.hi, k.t90.wins, k.t90.losses, k.t90.ties);
            else snprintf(t, sizeof t, "%d-%d-%d", k.t90.wins, k.t90.losses, k.t90.ties);
            qkt_buf_printf(md, "| %s | %d | %s | %s | %s | %d/%d vs %d/%d | %.3g | %d vs %d |\n", qkt_attn_scale_name(c->variants[v]), c->dks[di], l, a, t,
                           k.sa.n_escaped, k.sa.n_present, k.sb.n_escaped, k.sb.n_present, k.fisher_p, k.sa.n_diverged, k.sb.n_diverged);
            if (isfinite(k.loss.sd)) sd_sum += k.loss.sd, sd_n++;
        }
    if (!any) qkt_buf_printf(md, "| (no variant trained beside sqrt_dk) | | | | | | | |\n");
    qkt_buf_printf(md, "\n");
    power_note(r, sd_n ? sd_sum / sd_n : NAN);
}
