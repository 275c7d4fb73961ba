/* JSON field readers (qkt_json.h). */
#include <math.h>
#include <string.h>

#include "qkt_json.h"

/* The first key that appears twice in one object under v, or NULL. Quadratic per
 * object: config objects have tens of keys. */
static const char *dup_key(const cJSON *v, int depth) {
    if (depth > 64) return NULL; /* cJSON's own nesting limit is lower */
    for (const cJSON *a = v ? v->child : NULL; a; a = a->next) {
        if (cJSON_IsObject(v) && a->string)
            for (const cJSON *b = a->next; b; b = b->next)
                if (b->string && !strcmp(a->string, b->string)) return a->string;
        const char *d = dup_key(a, depth + 1);
        if (d) return d;
    }
    return NULL;
}

cJSON *qkt_json_parse(const char *text, size_t n, const char *path, qkt_err *err) {
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!v) {
        size_t at = end && end >= text && end <= text + n ? (size_t)(end - text) : 0;
        qkt_err_set(err, "%s: not valid JSON (near byte %zu)", path, at);
        return NULL;
    }
    size_t at = (size_t)(end - text);
    while (at < n && strchr(" \t\r\n", text[at]) && text[at]) at++;
    const char *d = at < n ? NULL : dup_key(v, 0);
    if (at < n) qkt_err_set(err, "%s: text after the JSON value at byte %zu", path, at);
    else if (d) qkt_err_set(err, "%s: key '%.64s' appears twice", path, d);
    if (at < n || d) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

const cJSON *qkt_json_get(const cJSON *o, const char *key, const char *path, qkt_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) qkt_err_set(err, "%s: key '%s' is missing", path, key);
    return v;
}

int qkt_json_num(const cJSON *o, const char *key, const char *path, double *out, qkt_err *err) {
    const cJSON *v = qkt_json_get(o, key, path, err);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return qkt_err_set(err, "%s: '%s' is not a finite number", path, key);
    *out = v->valuedouble;
    return 0;
}

int qkt_json_int(const cJSON *o, const char *key, const char *path, int64_t lo, int64_t hi, int64_t *out, qkt_err *err) {
    double d;
    if (qkt_json_num(o, key, path, &d, err)) return -1;
    if (d != floor(d) || d < (double)lo || d > (double)hi)
        return qkt_err_set(err, "%s: '%s' = %g is not an integer in [%lld, %lld]", path, key, d, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return 0;
}

const char *qkt_json_str(const cJSON *o, const char *key, const char *path, qkt_err *err) {
    const cJSON *v = qkt_json_get(o, key, path, err);
    if (!v) return NULL;
    if (!cJSON_IsString(v)) {
        qkt_err_set(err, "%s: '%s' is not a string", path, key);
        return NULL;
    }
    return v->valuestring;
}
