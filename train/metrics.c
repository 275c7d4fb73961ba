/* Attention metrics: entropy, softmax Jacobian norm, peakedness and logit spread. */
#include <math.h>

#include "qkt_metrics.h"

double qkt_entropy(const qkt_real *a, int n) {
    double h = 0;
    for (int j = 0; j < n; j++)
        if (a[j] > 0) h -= (double)a[j] * log((double)a[j]);
    return h;
}

double qkt_softmax_jacobian_norm(const qkt_real *p, int n) {
    double s2 = 0, s3 = 0;
    for (int j = 0; j < n; j++) {
        double v = p[j];
        s2 += v * v;
        s3 += v * v * v;
    }
    double f2 = s2 - 2 * s3 + s2 * s2;
    return sqrt(f2 > 0 ? f2 : 0);
}

void qkt_attn_stats_compute(const qkt_real *probs, const qkt_real *logits, int B, int H, int T, qkt_attn_stats *stats) {
    for (int h = 0; h < H; h++) {
        double ent = 0, nent = 0, mw = 0, peaked = 0, jac = 0;
        double lmax = -INFINITY, lsum = 0, lsq = 0;
        int64_t rows = 0, nl = 0;
        for (int b = 0; b < B; b++) {
            const qkt_real *P = probs + ((size_t)b * H + h) * T * T;
            const qkt_real *L = logits ? logits + ((size_t)b * H + h) * T * T : NULL;
            for (int i = 0; i < T; i++) {
                const qkt_real *row = P + (size_t)i * T;
                int visible = i + 1; /* causal: keys 0..i */
                if (L)
                    for (int j = 0; j < visible; j++) {
                        double z = L[(size_t)i * T + j];
                        if (!isfinite(z)) continue; /* blocked by padding */
                        if (z > lmax) lmax = z;
                        lsum += z, lsq += z * z, nl++;
                    }
                if (i == 0) continue; /* row 0 sees one key: entropy 0 by construction */
                double e = qkt_entropy(row, visible), m = 0;
                for (int j = 0; j < visible; j++) m = row[j] > m ? row[j] : m;
                ent += e;
                nent += e / log((double)visible);
                mw += m;
                peaked += m > 0.99;
                jac += qkt_softmax_jacobian_norm(row, visible);
                rows++;
            }
        }
        qkt_attn_stats *s = &stats[h];
        double r = rows ? (double)rows : NAN;
        s->entropy = ent / r;
        s->norm_entropy = nent / r;
        s->max_weight = mw / r;
        s->frac_peaked = peaked / r;
        s->jacobian_norm = jac / r;
        if (nl > 0) {
            double mean = lsum / nl;
            double var = lsq / nl - mean * mean;
            s->logit_max = lmax;
            s->logit_std = sqrt(var > 0 ? var : 0);
        } else {
            s->logit_max = s->logit_std = NAN;
        }
    }
}
