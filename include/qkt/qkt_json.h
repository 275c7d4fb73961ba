/* Readers of one field of a cJSON object, shared by the config files (config.json of
 * `qkt ablate`, train.json of `qkt train`). Each returns 0 (or the value), or -1 / NULL
 * with a one-line message naming the file and the key: "<path>: key 'k' is missing",
 * "<path>: 'k' is not a finite number", ... */
#ifndef QKT_JSON_H
#define QKT_JSON_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "qkt_autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The JSON value of text[0..n) (need not be NUL-terminated), refusing what cJSON lets
 * pass: text after the value ("<path>: text after the JSON value at byte N") and an
 * object with a key twice ("<path>: key 'k' appears twice"), at any depth. NULL with a
 * one-line message naming the file otherwise; free with cJSON_Delete. */
cJSON *qkt_json_parse(const char *text, size_t n, const char *path, qkt_err *err);

const cJSON *qkt_json_get(const cJSON *o, const char *key, const char *path, qkt_err *err);
/* A finite number (JSON has no infinity, but 1e999 parses to one). */
int qkt_json_num(const cJSON *o, const char *key, const char *path, double *out, qkt_err *err);
/* An integer in [lo, hi]. */
int qkt_json_int(const cJSON *o, const char *key, const char *path, int64_t lo, int64_t hi, int64_t *out, qkt_err *err);
/* A string (owned by o). */
const char *qkt_json_str(const cJSON *o, const char *key, const char *path, qkt_err *err);

#ifdef __cplusplus
}
#endif
#endif
