/* The one gemm wrapper. QKT_NO_BLAS gives a plain-loop reference build. */
#include "qkt_autograd.h"

#ifndef QKT_NO_BLAS
#include <cblas.h>
#endif

void qkt_gemm(bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda,
              const qkt_real *B, int ldb, qkt_real beta, qkt_real *C, int ldc) {
    if (M == 0 || N == 0) return;
#ifndef QKT_NO_BLAS
#ifdef QKT_DOUBLE
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
#else
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
#endif
#else
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                qkt_real a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                qkt_real b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += (double)a * b;
            }
            C[(size_t)i * ldc + j] = (qkt_real)(alpha * acc + (beta == 0 ? 0 : beta * C[(size_t)i * ldc + j]));
        }
#endif
}
