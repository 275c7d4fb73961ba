/* Metrics: entropy of uniform and one-hot rows, the softmax Jacobian norm against
 * finite differences, attention stats on a hand-made map, and the iid init study
 * reproducing std(q.k) = sqrt(d_k). */
#include <stdlib.h>
#include <string.h>

#include "qkt_study.h"
#include "qkt_test.h"

static void softmax(const double *z, int n, double *p) {
    double m = z[0], s = 0;
    for (int i = 1; i < n; i++) m = z[i] > m ? z[i] : m;
    for (int i = 0; i < n; i++) s += p[i] = exp(z[i] - m);
    for (int i = 0; i < n; i++) p[i] /= s;
}

int main(void) {
    qkt_real u[7], oh[7] = {0, 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < 7; i++) u[i] = (qkt_real)(1.0 / 7);
    EXPECT_NEAR(qkt_entropy(u, 7), log(7.0), 1e-6);
    EXPECT_NEAR(qkt_entropy(oh, 7), 0, 1e-12);
    EXPECT_NEAR(qkt_softmax_jacobian_norm(oh, 7), 0, 1e-12);

    /* Jacobian norm by formula vs central differences of softmax. */
    double z[5] = {0.3, -1.2, 2.0, 0.1, 0.7}, p[5], pp[5], pm[5], fro = 0;
    softmax(z, 5, p);
    for (int j = 0; j < 5; j++) {
        double h = 1e-6, zj = z[j];
        z[j] = zj + h, softmax(z, 5, pp);
        z[j] = zj - h, softmax(z, 5, pm);
        z[j] = zj;
        for (int i = 0; i < 5; i++) {
            double d = (pp[i] - pm[i]) / (2 * h);
            fro += d * d;
        }
    }
    qkt_real pr[5];
    for (int i = 0; i < 5; i++) pr[i] = (qkt_real)p[i];
    EXPECT_NEAR(qkt_softmax_jacobian_norm(pr, 5), sqrt(fro), 1e-5);

    /* Stats on a causal map: B=1, H=1, T=3, rows 1 and 2 uniform over visible keys. */
    qkt_real P[9] = {1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
    qkt_real L[9] = {1, -INFINITY, -INFINITY, 2, 2, -INFINITY, 0, 0, 0};
    qkt_attn_stats st;
    qkt_attn_stats_compute(P, L, 1, 1, 3, &st);
    EXPECT_NEAR(st.entropy, (log(2.0) + log(3.0)) / 2, 1e-6);
    EXPECT_NEAR(st.norm_entropy, 1, 1e-6);
    EXPECT_NEAR(st.max_weight, (0.5 + 1.0 / 3) / 2, 1e-6);
    EXPECT_NEAR(st.frac_peaked, 0, 1e-12);
    EXPECT_NEAR(st.logit_max, 2, 1e-12);
    /* visible logits: 1, 2, 2, 0, 0, 0 -> mean 5/6 */
    double mean = 5.0 / 6, var = (1 + 4 + 4) / 6.0 - mean * mean;
    EXPECT_NEAR(st.logit_std, sqrt(var), 1e-6);

    /* iid study: raw std within 5 % of sqrt(d_k), scaled std within 5 % of 1. */
    static const int dks[] = {4, 64, 128};
    static const qkt_attn_scale vars[] = {QKT_ATTN_SQRT_DK, QKT_ATTN_NONE};
    qkt_init_opts o = {dks, 3, vars, 2, 16, 64, 4, 1};
    qkt_init_row rows[6];
    int n = qkt_init_study_iid(&o, rows);
    EXPECT(n == 6, "%d rows", n);
    for (int i = 0; i < n; i++) {
        qkt_init_row *r = &rows[i];
        printf("%-8s d_k=%-4d raw std %.3f (sqrt %.3f) scaled std %.3f entropy %.3f jac %.4f grad_q %.4g rank changed %.3f\n",
               qkt_attn_scale_name(r->variant), r->d_k, r->raw_logit_std, sqrt(r->d_k), r->logit_std, r->entropy, r->jacobian_norm, r->grad_q_rms,
               r->rank_changed);
        EXPECT(fabs(r->raw_logit_std / sqrt(r->d_k) - 1) < 0.05, "raw std %.3f vs sqrt(%d)", r->raw_logit_std, r->d_k);
        if (r->variant == QKT_ATTN_SQRT_DK) EXPECT(fabs(r->logit_std - 1) < 0.05, "scaled std %.3f", r->logit_std);
        EXPECT(r->rank_changed == 0, "scaling changed a ranking");
    }
    /* d_k = 64: unscaled is far more peaked (lower entropy, smaller Jacobian) than scaled */
    EXPECT(rows[4].entropy < 0.5 * rows[1].entropy, "none entropy %.3f vs sqrt_dk %.3f", rows[4].entropy, rows[1].entropy);
    EXPECT(rows[4].jacobian_norm < rows[1].jacobian_norm, "jacobian none %.3f vs sqrt_dk %.3f", rows[4].jacobian_norm,
           rows[1].jacobian_norm);
    return qkt_test_finish();
}
