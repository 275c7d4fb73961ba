/* Learning-rate schedules: constant and linear warmup then cosine decay to a floor.
 * The formula is in qkt_optim.h and docs/optim.md. */
#include "qkt_optim.h"

#include <math.h>
#include <strings.h>

double qkt_schedule_lr(const qkt_schedule *s, int64_t step) {
    QKT_CHECK(step >= 0, "schedule step %lld < 0", (long long)step);
    QKT_CHECK(s->warmup_steps >= 0, "warmup steps %lld < 0", (long long)s->warmup_steps);
    int64_t W = s->warmup_steps;
    /* Warmup: (s + 1) / (W + 1), so step 0 already moves and step W is the peak. */
    if (step < W) return s->lr * (double)(step + 1) / (double)(W + 1);
    if (s->kind == QKT_SCHED_CONSTANT) return s->lr;
    QKT_CHECK(s->kind == QKT_SCHED_COSINE, "unknown schedule kind %d", (int)s->kind);
    int64_t D = s->total_steps - 1 - W; /* decay steps: from the peak at W to the floor at T-1 */
    double p = D > 0 ? (double)(step - W) / (double)D : (step > W ? 1.0 : 0.0);
    if (p >= 1.0) return s->min_lr; /* exactly the floor, and forever after */
    return s->min_lr + 0.5 * (1.0 + cos(M_PI * p)) * (s->lr - s->min_lr);
}

static const char *const sched_names[] = {"constant", "cosine"};

const char *qkt_sched_kind_name(qkt_sched_kind kind) {
    return (unsigned)kind < 2 ? sched_names[kind] : "?";
}

int qkt_sched_kind_parse(const char *s, qkt_sched_kind *out, qkt_err *err) {
    for (int i = 0; i < 2; i++)
        if (s && strcasecmp(s, sched_names[i]) == 0) {
            *out = (qkt_sched_kind)i;
            return 0;
        }
    return qkt_err_set(err, "unknown schedule '%s' (expected constant or cosine)", s ? s : "");
}
