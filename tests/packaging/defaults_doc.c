/* The defaults of the public config structs as docs/library.md lists them, printed from the
 * default functions themselves: the test docs_defaults (tests/packaging.cmake) compares
 * this output with the doc's section, so the doc cannot go stale. The rows of the training
 * and model configs are the field table's (train/train_fields.def); the optimizer's fields
 * are listed here, and a static assertion fails when qkt_optim_config gains one. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt.h"

/* The shortest text that reads back as the same double. */
static const char *num(double v, char *buf, size_t n) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* A field's value at p, or "-" when the struct does not hold it. */
static const char *cell(const qkt_train_field *f, const void *p, char *buf, size_t n) {
    if (!p) return "-";
    if (f->type == QKT_FIELD_DOUBLE) return num(*(const double *)p, buf, n);
    qkt_train_field_format(p, f, buf, n);
    return buf;
}

int main(void) {
    qkt_train_run run;
    qkt_train_run_default(&run);
    qkt_train_config tc = qkt_train_config_default(), bench = qkt_bench_config_default();
    qkt_gpt_config gpt = qkt_gpt_config_default();
    printf("| field | `qkt_train_run_default` | `qkt_train_config_default` | `qkt_bench_config_default` | `qkt_gpt_config_default` |\n");
    printf("|---|---|---|---|---|\n");
    for (int i = 0; i < qkt_train_field_count(); i++) {
        const qkt_train_field *f = qkt_train_field_at(i);
        char a[64], b[64], c[64], d[64];
        const char *vc = cell(f, qkt_train_field_ptr_tc(f, &tc), b, sizeof b);
        const char *vb = cell(f, qkt_train_field_ptr_tc(f, &bench), c, sizeof c);
        if (!strcmp(f->name, "data")) { /* a const char * in qkt_train_config */
            vc = tc.data ? tc.data : "NULL";
            vb = bench.data ? bench.data : "NULL (the caller's batches)";
        }
        const char *vr = cell(f, qkt_train_field_ptr(f, &run), a, sizeof a);
        printf("| `%s` | %s | %s | %s | %s |\n", f->name, vr, vc, vb,
               cell(f, qkt_train_field_is_model(f) ? qkt_train_field_ptr_model(f, &gpt) : NULL, d, sizeof d));
    }
    printf("\n%d means derived by `qkt_train_config_resolve`: `min_lr` = lr / 10, `lr_decay_steps` = steps, `warmup_steps` = min(100, lr_decay_steps / 10).\n\n",
           QKT_TRAIN_AUTO);

    /* qkt_optim_config, field by field: the assertion names the last field. */
    _Static_assert(offsetof(qkt_optim_config, weight_decay) + sizeof(double) == sizeof(qkt_optim_config),
                   "qkt_optim_config has a field after weight_decay: add it to the table below");
    static const char *kinds[] = {"SGD", "Adam", "AdamW"};
    qkt_optim_config o[3];
    for (int k = 0; k < 3; k++) o[k] = qkt_optim_defaults((qkt_optim_kind)k);
    printf("| `qkt_optim_defaults(kind)` | `QKT_OPTIM_SGD` | `QKT_OPTIM_ADAM` | `QKT_OPTIM_ADAMW` |\n|---|---|---|---|\n");
    printf("| `kind` |");
    for (int k = 0; k < 3; k++) printf(" %s |", kinds[o[k].kind]);
    printf("\n");
#define ROW(field)                                                                           \
    do {                                                                                     \
        char t[64];                                                                          \
        printf("| `%s` |", #field);                                                          \
        for (int k = 0; k < 3; k++) printf(" %s |", num((double)o[k].field, t, sizeof t)); \
        printf("\n");                                                                        \
    } while (0)
    ROW(beta1);
    ROW(beta2);
    ROW(eps);
    ROW(momentum);
    ROW(dampening);
    printf("| `nesterov` |");
    for (int k = 0; k < 3; k++) printf(" %s |", o[k].nesterov ? "true" : "false");
    printf("\n");
    ROW(weight_decay);
    return 0;
}
