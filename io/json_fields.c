/* JSON field readers (qkt_json.h). */
#include <math.h>

#include "qkt_json.h"

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
