// The public headers compile as C++17 and the library links from C++: a tiny graph,
// backward, and an Adam step through the umbrella header; shapes through QKT_SHAPE, and an
// eval-mode scope (qkt_eval_scope) restoring the training mode at its end.
#include <cmath>
#include <cstdio>

#include "qkt.h"
#include "qkt_gradcheck.h"

int main(int, char **argv) {
    qkt_thread_env_reexec(argv);
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *w = qkt_params_add(&p, "w", QKT_SHAPE(3, 4), QKT_PARAM_DECAY);
    qkt_params_finalize(&p);
    for (int i = 0; i < 12; i++) w->data[i] = static_cast<qkt_real>(0.1 * (i - 6));
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_tensor *y = qkt_sum(&ctx, qkt_mul(&ctx, w, w)); // sum w^2
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, y, nullptr);
    bool ok = std::fabs(w->grad[1] - 2 * w->data[1]) < 1e-6;
    const double sum = static_cast<double>(y->data[0]);
    {
        qkt_eval_scope eval(&ctx); // dropout off, nothing recorded, until the block ends
        qkt_ctx_reset(&ctx);
        const int n = 12;
        qkt_tensor *v = qkt_reshape(&ctx, w, QKT_SHAPE(2, n / 2));
        qkt_tensor *d = qkt_dropout(&ctx, v, 0.5);
        ok = ok && d->ndim == 2 && d->shape[1] == 6 && !d->requires_grad && d->data[5] == w->data[5];
    }
    ok = ok && ctx.training && !ctx.no_grad;
    qkt_optim_config oc = qkt_optim_defaults(QKT_OPTIM_ADAMW);
    qkt_optim opt;
    qkt_optim_init(&opt, &p, &oc);
    qkt_optim_step(&opt, 1e-2);
    std::printf("qkt %s from C++: sum w^2 = %.4f, grad ok %d\n", QKT_VERSION, sum, ok);
    qkt_optim_free(&opt);
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return ok ? 0 : 1;
}
