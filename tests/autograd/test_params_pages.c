/* The parameter store's values and grads are marked for transparent huge pages (Linux's
 * madvise(MADV_HUGEPAGE): VmFlags "hg" in /proc/self/smaps) when they span a 2 MiB page,
 * also after the store grows; a small store is not marked; the values start at zero and
 * keep what is written. Skipped (77) where the kernel has no THP. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_autograd.h"
#include "qkt_test.h"

/* 1: the mapping holding address p has VmFlags "hg"; 0: it has not; -1: not found. */
static int marked(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, r = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
            in = a >= lo && a < hi;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            r = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return r;
}

int main(void) {
#ifndef __linux__
    printf("SKIP: not Linux\n");
    return 77;
#else
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!thp) {
        printf("SKIP: this kernel has no transparent huge pages\n");
        return 77;
    }
    fclose(thp);
    qkt_params big, small;
    qkt_params_init(&big), qkt_params_init(&small);
    qkt_params_add(&big, "w", 2, (int[]){1024, 2048}, 0); /* 2M reals: 8 or 16 MiB */
    qkt_params_add(&small, "w", 2, (int[]){16, 16}, 0);
    qkt_params_finalize(&big), qkt_params_finalize(&small);
    int64_t n = big.size;
    const qkt_real *mid_d = big.data + n / 2, *mid_g = big.grad + n / 2;
    EXPECT(marked(mid_d) == 1, "the store's values are not marked (%d)", marked(mid_d));
    EXPECT(marked(mid_g) == 1, "the store's grads are not marked (%d)", marked(mid_g));
    EXPECT(marked(small.data) == 0, "a store of 256 values is marked (%d)", marked(small.data));
    int nonzero = 0;
    for (int64_t i = 0; i < n; i++) nonzero += big.data[i] != 0 || big.grad[i] != 0;
    EXPECT(nonzero == 0, "%d values or grads are not zero", nonzero);
    for (int64_t i = 0; i < n; i++) big.data[i] = (qkt_real)i, big.grad[i] = (qkt_real)-i;
    /* grown after finalize: a new allocation, marked too, the old values kept */
    qkt_tensor *t = qkt_params_add(&big, "extra", 1, (int[]){8}, 0);
    EXPECT(marked(big.data + n / 2) == 1 && marked(big.grad + n / 2) == 1, "the grown store is not marked");
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += big.data[i] != (qkt_real)i || big.grad[i] != (qkt_real)-i;
    EXPECT(bad == 0 && t->data[0] == 0, "%d values changed in the growth", bad);
    qkt_params_free(&big), qkt_params_free(&small);
    return qkt_test_finish();
#endif
}
