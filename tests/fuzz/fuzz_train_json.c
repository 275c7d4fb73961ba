/* libFuzzer harness for the train.json reader (`qkt train --resume`): any bytes either
 * fail with one line starting with the label, or give a run that validates and whose
 * JSON (what a resumed run rewrites) loads back to the same run, from a text with no key
 * twice in its object and nothing after it. Never a crash. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_train_run.h"

#define MUST(c) ((c) ? (void)0 : __builtin_trap())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static qkt_train_run r, back; /* 4 KB each: off the stack */
    qkt_err err;
    err.msg[0] = 0;
    if (qkt_train_run_parse((const char *)data, size, "fuzz", &r, &err) != 0) {
        MUST(!strncmp(err.msg, "fuzz: ", 6) && strlen(err.msg) > 6 && !strchr(err.msg, '\n'));
        return 0;
    }
    r.tc.data = r.data;
    MUST(qkt_train_run_validate(&r, &err) == 0);
    const char *end = NULL; /* accepted: one JSON object, each key once, white space after it */
    cJSON *o = cJSON_ParseWithLengthOpts((const char *)data, size, &end, 0);
    MUST(o && end);
    for (const char *p = end; p < (const char *)data + size; p++) MUST(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r');
    for (const cJSON *a = o->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next) MUST(strcmp(a->string, b->string) != 0);
    cJSON_Delete(o);
    char *a = qkt_train_run_json(&r);
    MUST(qkt_train_run_parse(a, strlen(a), "again", &back, &err) == 0);
    back.tc.data = back.data;
    char *b = qkt_train_run_json(&back);
    MUST(!strcmp(a, b));
    free(a), free(b);
    return 0;
}
