/* qkt's optimizers on a fixed store, for tests/torch/crosscheck_optim.py:
 *   optim_driver DIR
 * A store of 4 tensors (two 2-D flagged QKT_PARAM_DECAY, two 1-D not), filled from the seeded RNG
 * (seed 7), written to DIR/init.f32; 4 steps of gradients (seed 11, 0.1 N(0, 1)) to DIR/grads.f32;
 * then for each optimizer config below, 4 steps from init at lr 1e-2 (s + 1) on those gradients and
 * DIR/<name>.f32 = p, then m and v where the optimizer has them (little-endian float32).
 * Exit 2 on bad arguments or files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_io.h"
#include "qkt_optim.h"

#define STEPS 4

static char dir[4096];

static int save(const char *name, const qkt_real *src, size_t n) { return driver_save("optim_driver", dir, name, src, sizeof *src, n); }

static void store(qkt_params *p) {
    static const int shape[4][2] = {{200, 150}, {150, 0}, {300, 200}, {2000, 0}};
    qkt_params_init(p);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "t%d", i);
        bool matrix = shape[i][1] > 0;
        qkt_params_add(p, name, matrix ? 2 : 1, shape[i], matrix ? QKT_PARAM_DECAY : 0);
    }
    qkt_params_finalize(p);
    qkt_rng r;
    qkt_rng_seed(&r, 7);
    for (int64_t i = 0; i < p->size; i++) p->data[i] = (qkt_real)qkt_rng_normal(&r);
}

int main(int argc, char **argv) {
    if (sizeof(qkt_real) != 4 || argc != 2) {
        fprintf(stderr, "usage: optim_driver DIR (float32 build)\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    qkt_params p;
    store(&p);
    const int64_t n = p.size;
    qkt_real *grads = malloc((size_t)(STEPS * n) * sizeof *grads);
    qkt_rng rg;
    qkt_rng_seed(&rg, 11);
    for (int64_t i = 0; i < STEPS * n; i++) grads[i] = (qkt_real)(0.1 * qkt_rng_normal(&rg));
    int rc = save("init.f32", p.data, (size_t)n) || save("grads.f32", grads, (size_t)(STEPS * n));
    qkt_params_free(&p);

    static const char *names[] = {"sgd", "sgd_momentum", "sgd_dampening", "sgd_nesterov", "adam", "adamw"};
    for (int c = 0; c < 6 && !rc; c++) {
        qkt_optim_config cfg = qkt_optim_defaults(c < 4 ? QKT_OPTIM_SGD : c == 4 ? QKT_OPTIM_ADAM : QKT_OPTIM_ADAMW);
        if (c < 4) {
            cfg.weight_decay = 0.05;
            cfg.momentum = c >= 1 ? 0.9 : 0;
            cfg.dampening = c == 2 ? 0.3 : 0;
            cfg.nesterov = c == 3;
        } else if (c == 4) {
            cfg.weight_decay = 0.05;
        } else {
            cfg.weight_decay = 0.1, cfg.beta2 = 0.95;
        }
        store(&p);
        qkt_optim o;
        qkt_optim_init(&o, &p, &cfg);
        for (int s = 0; s < STEPS; s++) {
            memcpy(p.grad, grads + (size_t)s * n, (size_t)n * sizeof *grads);
            qkt_optim_step(&o, 1e-2 * (s + 1));
        }
        size_t k = (size_t)n * (1 + (o.m != NULL) + (o.v != NULL));
        qkt_real *out = malloc(k * sizeof *out);
        memcpy(out, p.data, (size_t)n * sizeof *out);
        if (o.m) memcpy(out + n, o.m, (size_t)n * sizeof *out);
        if (o.v) memcpy(out + 2 * n, o.v, (size_t)n * sizeof *out);
        char name[64];
        snprintf(name, sizeof name, "%s.f32", names[c]);
        rc = save(name, out, k);
        free(out);
        qkt_optim_free(&o);
        qkt_params_free(&p);
    }
    free(grads);
    return rc ? 2 : 0;
}
