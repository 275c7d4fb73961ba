/* The optimizer's moments are zero, 64-byte aligned, and untouched until a step writes
 * them: a run that takes no step (the study's cells at init, which read only gradients)
 * never faults their pages in. Checked with mincore(2) on a store of 2^24 values (64 MiB
 * per moment in float32), which calloc takes from fresh pages whatever its threshold;
 * after one step every page is there and the moments hold AdamW's first values, and a
 * store grown past init keeps them (qkt_optim_sync). Also qkt_calloc64 itself: aligned,
 * zero, and released by qkt_free64 (under ASan a wrong free fails the run). Skipped (77)
 * where mincore is not Linux's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "qkt_optim.h"
#include "qkt_test.h"

#ifdef __linux__
/* Resident pages among the whole pages inside [p, p + bytes). */
static long resident(const void *p, size_t bytes) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1), b = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    if (b <= a) return 0;
    size_t n = (b - a) / page;
    unsigned char *v = malloc(n);
    if (!v || mincore((void *)a, b - a, v) != 0) {
        free(v);
        return -1;
    }
    long r = 0;
    for (size_t i = 0; i < n; i++) r += v[i] & 1;
    free(v);
    return r;
}
#endif

int main(void) {
#ifndef __linux__
    printf("SKIP: mincore is checked on Linux only\n");
    return 77;
#else
    for (size_t n = 1; n <= 1 << 20; n = n * 7 + 3) { /* the allocator: aligned and zero at every size */
        unsigned char *p = qkt_calloc64(n);
        size_t nz = 0;
        for (size_t i = 0; i < n; i++) nz += p[i] != 0;
        EXPECT((uintptr_t)p % 64 == 0 && nz == 0, "qkt_calloc64(%zu): address %p, %zu bytes not zero", n, (void *)p, nz);
        memset(p, 0xAB, n);
        qkt_free64(p);
    }
    qkt_free64(NULL);

    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *w = qkt_params_add(&p, "w", 2, (int[]){4096, 4096}, QKT_PARAM_DECAY);
    qkt_params_finalize(&p);
    int64_t n = p.size;
    size_t bytes = (size_t)n * sizeof(qkt_real);
    qkt_optim o;
    qkt_optim_init(&o, &p, &(qkt_optim_config){.kind = QKT_OPTIM_ADAMW, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
    EXPECT((uintptr_t)o.m % 64 == 0 && (uintptr_t)o.v % 64 == 0, "the moments are not 64-byte aligned (%p, %p)",
           (void *)o.m, (void *)o.v);
    long rm = resident(o.m, bytes), rv = resident(o.v, bytes);
    EXPECT(rm == 0 && rv == 0, "after init, %ld and %ld pages of the moments are in memory (none should be)", rm, rv);

    for (int64_t i = 0; i < n; i++) w->data[i] = 1, w->grad[i] = (qkt_real)(i % 5) - 2;
    qkt_optim_step(&o, 1e-3);
    rm = resident(o.m, bytes), rv = resident(o.v, bytes);
    long all = (long)(bytes / (size_t)sysconf(_SC_PAGESIZE)) - 1;
    EXPECT(rm >= all && rv >= all, "after a step only %ld and %ld of %ld pages of the moments are in memory", rm, rv, all);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = (double)(i % 5) - 2;
        bad += fabs(o.m[i] - 0.1 * g) > 1e-6 || fabs(o.v[i] - 0.05 * g * g) > 1e-6;
    }
    EXPECT(bad == 0, "%lld moments are not AdamW's first (m = 0.1 g, v = 0.05 g^2)", (long long)bad);

    qkt_tensor *x = qkt_params_add(&p, "x", 1, (int[]){100}, 0); /* grown past init */
    qkt_optim_sync(&o);
    bad = 0;
    for (int64_t i = 0; i < n; i++) bad += fabs(o.m[i] - 0.1 * ((double)(i % 5) - 2)) > 1e-6;
    for (int64_t i = n; i < p.size; i++) bad += o.m[i] != 0 || o.v[i] != 0;
    EXPECT(bad == 0 && (uintptr_t)o.m % 64 == 0 && x->size == 100, "%lld moments wrong after the store grew", (long long)bad);
    qkt_optim_free(&o);
    qkt_params_free(&p);
    return qkt_test_finish();
#endif
}
