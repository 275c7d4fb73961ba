/* Built by bench/gemm_blocks.sh: the own gemm (kern_gemm_avx512.h) compiled once per block-size
 * variant (objects gemm_v0.o ... with functions gemm_v0 ...), timed side by side in one
 * process, variants interleaved per repetition so they see the same machine load. For each
 * shape "ta tb M N K": the median GFLOP/s of each variant over REPS products; fails when a
 * variant's bits differ from the first's (the block sizes must never change them). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void gemm_fn(bool ta, bool tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C);
#include "variants.h" /* NV, fns[], names[] */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gemm_blocks REPS 'ta tb M N K' ...\n");
        return 2;
    }
    int reps = atoi(argv[1]);
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "gemm_blocks: REPS %s: expected 1..1000\n", argv[1]);
        return 2;
    }
    int status = 0;
    for (int s = 2; s < argc; s++) {
        int ta, tb, M, N, K;
        if (sscanf(argv[s], "%d %d %d %d %d", &ta, &tb, &M, &N, &K) != 5 || M < 1 || N < 1 || K < 1) {
            fprintf(stderr, "gemm_blocks: shape '%s': expected 'ta tb M N K'\n", argv[s]);
            return 2;
        }
        int lda = ta ? M : K, ldb = tb ? K : N;
        size_t nc = (size_t)M * N;
        float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)K * N);
        float *C = malloc(sizeof(float) * nc), *C0 = malloc(sizeof(float) * nc);
        double *t = malloc(sizeof(double) * (size_t)NV * reps);
        srand(1);
        for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)(rand() % 2001 - 1000) / 1000;
        for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (float)(rand() % 2001 - 1000) / 1000;
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < NV; v++) {
                double t0 = now();
                fns[v](ta, tb, M, N, K, A, lda, B, ldb, C);
                t[v * reps + r] = now() - t0;
                if (v == 0 && r == 0) memcpy(C0, C, sizeof(float) * nc);
                else if (r == 0 && memcmp(C0, C, sizeof(float) * nc)) {
                    printf("%s: bits differ from %s on ta=%d tb=%d %dx%dx%d\n", names[v], names[0], ta, tb, M, N, K);
                    status = 1;
                }
            }
        printf("ta=%d tb=%d M=%d N=%d K=%d", ta, tb, M, N, K);
        for (int v = 0; v < NV; v++) {
            qsort(t + (size_t)v * reps, (size_t)reps, sizeof(double), cmp);
            printf("  %s %.1f", names[v], 2.0 * M * N * K * 1e-9 / t[(size_t)v * reps + reps / 2]);
        }
        printf("  (GFLOP/s, median of %d)\n", reps);
        free(A), free(B), free(C), free(C0), free(t);
    }
    return status;
}
