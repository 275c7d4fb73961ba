/* libFuzzer harness for the `qkt ablate` config.json reader: any bytes either fail
 * with one line starting with the label, or give a config that validates, plans at
 * least one cell, and survives a save/load round trip unchanged. Never a crash. */
#include <stdlib.h>
#include <string.h>

#include "qkt_ablate.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qkt_ablate_cfg c;
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_ablate_parse_config((const char *)data, size, "fuzz", &c, &err) != 0) {
        MUST(!strncmp(err.msg, "fuzz: ", 6) && strlen(err.msg) > 6 && !strchr(err.msg, '\n'));
        return 0;
    }
    MUST(qkt_ablate_validate(&c, &err) == 0);
    /* what `qkt ablate` writes back must load to the same configuration */
    char *a = qkt_ablate_config_json(&c);
    qkt_ablate_cfg d;
    MUST(qkt_ablate_parse_config(a, strlen(a), "again", &d, &err) == 0);
    char *b = qkt_ablate_config_json(&d);
    MUST(!strcmp(a, b));
    free(a), free(b);
    qkt_cell *plan = NULL;
    int n = qkt_ablate_plan(&c, &plan);
    MUST(n > 0 && plan);
    for (int i = 0; i < n; i++) MUST(plan[i].id[0] && plan[i].d_k > 0);
    free(plan);
    return 0;
}
