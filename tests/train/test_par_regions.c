/* A training step enters no OpenMP parallel construct that would run on one thread: none
 * at one thread, none nested inside the replicas' region (a team of one there), while at
 * two threads without replicas its large ops still go to the team. libgomp ends every
 * region, a team of one too, with a futex wake (a system call); qkt_parallel_worth says
 * where a loop runs plainly. Counted by a GOMP_parallel of this program's own, which takes
 * the place of libgomp's for the library linked into it and calls it on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_test.h"
#include "qkt_trainer.h"

static volatile int counting, n_top, n_nested;
typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags) {
    static gomp_parallel_fn real;
    if (!real) real = (gomp_parallel_fn)dlsym(RTLD_NEXT, "GOMP_parallel");
    if (counting) {
        if (omp_in_parallel()) __atomic_add_fetch(&n_nested, 1, __ATOMIC_RELAXED);
        else n_top++;
    }
    real(fn, data, num_threads, flags);
}

static void region_if_false(int *x) {
#pragma omp parallel if (*x > 1)
    (*x)++;
}

static qkt_train_config config(int replicas) {
    qkt_train_config c = qkt_train_config_default();
    /* tiny's shape: its LayerNorms, sums, attention and cross-entropy are past QKT_PAR_MIN */
    c.model.n_layer = 2, c.model.n_head = 4, c.model.n_embd = 64, c.model.block_size = 64;
    c.batch_size = 16, c.steps = 10, c.seed = 3, c.grad_clip = 1, c.replicas = replicas;
    c.data = "mqar";
    return c;
}

/* The regions of a trainer's second step (the first sizes the arena and the pools). */
static void step_regions(int threads, int replicas, int *top, int *nested) {
    qkt_err err = {{0}};
    qkt_train_config c = config(replicas);
    qkt_set_threads(threads);
    qkt_trainer t;
    EXPECT(qkt_trainer_init(&t, &c, &err) == 0, "init: %s", err.msg);
    qkt_step_stats st;
    qkt_trainer_step(&t, &st);
    n_top = n_nested = 0, counting = 1;
    qkt_trainer_step(&t, &st);
    counting = 0;
    EXPECT(st.finite, "the step's loss is not finite");
    *top = n_top, *nested = n_nested;
    qkt_trainer_free(&t);
}

int main(void) {
    /* the counter sees a region that runs as a team of one */
    int x = 0;
    counting = 1, n_top = 0;
    region_if_false(&x);
    counting = 0;
    EXPECT(x == 1 && n_top == 1, "a region under a false if: %d counted", n_top);

    int top, nested;
    step_regions(1, 1, &top, &nested);
    EXPECT(top == 0 && nested == 0, "one thread: the step entered %d regions", top + nested);
    step_regions(2, 2, &top, &nested);
    EXPECT(nested == 0, "two replicas: %d regions nested in the replicas' region", nested);
    /* the replicas' region itself, then at most the grad sum, the norm, the clip's scaling
     * and AdamW */
    EXPECT(top >= 1 && top <= 5, "two replicas: %d regions at the top level", top);
    step_regions(2, 1, &top, &nested);
    EXPECT(top >= 10 && nested == 0, "two threads: the step's ops entered %d regions (%d nested)", top, nested);
    qkt_set_threads(0);
    return qkt_test_finish();
}
