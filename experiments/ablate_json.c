/* `qkt ablate`'s config.json: the field table's rows with an `ab` key and the study's own
 * keys (ablate_config.c), interleaved by their position; read back with each key's type
 * checked, then validated. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ablate_internal.h"
#include "qkt_io.h"
#include "qkt_json.h"

/* The variants as their names: config.json holds strings, not enum values. */
static cJSON *variant_array(const qkt_attn_scale *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(qkt_attn_scale_name(v[i])));
    return a;
}

static void put_field(cJSON *j, const qkt_train_field *f, const qkt_train_run *r) {
    const void *p = qkt_train_field_ptr(f, (qkt_train_run *)r);
    char text[64];
    switch (f->type) {
    case QKT_FIELD_INT: cJSON_AddNumberToObject(j, f->name, *(const int *)p); break;
    case QKT_FIELD_I64: cJSON_AddNumberToObject(j, f->name, (double)*(const int64_t *)p); break;
    case QKT_FIELD_DOUBLE: cJSON_AddNumberToObject(j, f->name, *(const double *)p); break;
    case QKT_FIELD_BOOL: cJSON_AddBoolToObject(j, f->name, *(const bool *)p); break;
    case QKT_FIELD_STRING: cJSON_AddStringToObject(j, f->name, (const char *)p); break;
    case QKT_FIELD_ENUM:
    case QKT_FIELD_U64: /* as a string: exact for 64 bits */
        qkt_train_field_format(p, f, text, sizeof text);
        cJSON_AddStringToObject(j, f->name, text);
        break;
    }
}

static void put_key(cJSON *j, const qkt__ab_key *k, const qkt_ablate_cfg *c) {
    const char *p = (const char *)c + k->off;
    int n = k->n_off ? *(const int *)((const char *)c + k->n_off) : 0;
    if (qkt__ab_key_omit_unset(k) && (k->n_off ? !n : k->type == QKT__K_STR ? !*p : !*(const int *)p)) return;
    switch (k->type) {
    case QKT__K_STR: cJSON_AddStringToObject(j, k->key, p); break;
    case QKT__K_INT: cJSON_AddNumberToObject(j, k->key, *(const int *)p); break;
    case QKT__K_DBL: cJSON_AddNumberToObject(j, k->key, *(const double *)p); break;
    case QKT__K_VARS: cJSON_AddItemToObject(j, k->key, variant_array((const qkt_attn_scale *)p, n)); break;
    case QKT__K_INTS: cJSON_AddItemToObject(j, k->key, cJSON_CreateIntArray((const int *)p, n)); break;
    case QKT__K_DBLS: cJSON_AddItemToObject(j, k->key, cJSON_CreateDoubleArray((const double *)p, n)); break;
    }
}

static cJSON *config_object(const qkt_ablate_cfg *c) {
    qkt_train_field fs[64];
    int nf = qkt_ablate_fields(fs, 64);
    cJSON *j = cJSON_CreateObject();
    for (int order = 1; order < 256; order++) {
        for (int i = 0; i < nf; i++)
            if (fs[i].ab_order == order) put_field(j, &fs[i], &c->run);
        for (int i = 0; i < qkt__n_ab_keys; i++)
            if (qkt__ab_keys[i].order == order) put_key(j, &qkt__ab_keys[i], c);
    }
    return j;
}

char *qkt_ablate_config_json(const qkt_ablate_cfg *c) {
    cJSON *j = config_object(c);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
}

/* config.json's last key, QKT_ABLATE_CONFIG_CRC: the CRC-32C of the file as written with
 * "00000000" in its place (as a checkpoint's header is sealed). In text (n bytes), the offset
 * of that key's 8 digits, or -1 if the key's last occurrence has no 8-digit string value. */
static ptrdiff_t crc_digits(const char *text, size_t n) {
    static const char key[] = "\"" QKT_ABLATE_CONFIG_CRC "\"";
    size_t kn = sizeof key - 1;
    for (size_t i = n >= kn ? n - kn + 1 : 0; i-- > 0;) {
        if (memcmp(text + i, key, kn)) continue;
        size_t p = i + kn;
        while (p < n && (text[p] == ' ' || text[p] == '\t' || text[p] == '\n' || text[p] == '\r')) p++;
        if (p >= n || text[p++] != ':') return -1;
        while (p < n && (text[p] == ' ' || text[p] == '\t' || text[p] == '\n' || text[p] == '\r')) p++;
        if (p + 10 > n || text[p] != '"' || text[p + 9] != '"') return -1;
        return (ptrdiff_t)p + 1;
    }
    return -1;
}

/* The CRC-32C of text with the 8 digits at d read as "00000000". */
static uint32_t crc_sealed(const char *text, size_t n, size_t d) {
    uint32_t crc = qkt_crc32c(0, text, d);
    crc = qkt_crc32c(crc, "00000000", 8);
    return qkt_crc32c(crc, text + d + 8, n - d - 8);
}

int qkt_ablate_check_dir(const char *run_dir, qkt_err *err) {
    size_t n = strlen(run_dir);
    if (n > QKT_ABLATE_MAX_DIR)
        return qkt_err_set(err, "run directory %.60s...: its path is %zu bytes, at most %d (the cells' files are named below it)",
                           run_dir, n, QKT_ABLATE_MAX_DIR);
    return 0;
}

int qkt_ablate_save_config(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err) {
    if (qkt_ablate_check_dir(run_dir, err) != 0) return -1;
    cJSON *j = config_object(c);
    cJSON_AddStringToObject(j, QKT_ABLATE_CONFIG_CRC, "00000000");
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON's buffer has the NUL there; write it as a newline */
    ptrdiff_t d = crc_digits(text, n + 1);
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", crc_sealed(text, n + 1, (size_t)d));
    memcpy(text + d, hex, 8);
    int rc = qkt_write_atomic(path, text, n + 1, err);
    free(text);
    return rc;
}

/* One field of the table from config.json (an optional one absent keeps its default). */
static int get_field(const char *path, cJSON *j, const qkt_train_field *f, qkt_train_run *r, qkt_err *err) {
    if ((f->where & QKT_FIELD_AB_OPT) && !cJSON_GetObjectItemCaseSensitive(j, f->name)) return 0;
    void *p = qkt_train_field_ptr(f, r);
    int64_t v;
    const char *s;
    switch (f->type) {
    case QKT_FIELD_INT:
    case QKT_FIELD_I64:
        if (qkt_json_int(j, f->name, path, -1000000000, 1000000000, &v, err)) return -1;
        if (f->type == QKT_FIELD_INT) *(int *)p = (int)v;
        else *(int64_t *)p = v;
        return 0;
    case QKT_FIELD_DOUBLE: return qkt_json_num(j, f->name, path, (double *)p, err);
    default: { /* strings: the task, the seed, the enums by name */
        if (!(s = qkt_json_str(j, f->name, path, err))) return -1;
        qkt_err e2;
        if (f->type == QKT_FIELD_STRING && strlen(s) >= sizeof r->data) return qkt_err_set(err, "%s: '%s' is too long", path, f->name);
        if (f->type == QKT_FIELD_U64 && (!*s || *s == '-'))
            return qkt_err_set(err, "%s: field '%s' = '%s' is not an unsigned integer", path, f->name, s);
        if (qkt_train_field_set(r, f, s, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
        return 0;
    }
    }
}

static int get_list(const char *path, cJSON *j, const char *key, int *ints, double *dbls, char (*strs)[QKT_AB_NAME], int *n, qkt_err *err) {
    cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsArray(a)) return qkt_err_set(err, "%s: field '%s' missing or not an array", path, key);
    int k = cJSON_GetArraySize(a);
    if (k > QKT_AB_MAX_LIST) return qkt_err_set(err, "%s: field '%s' has %d values (at most %d)", path, key, k, QKT_AB_MAX_LIST);
    for (int i = 0; i < k; i++) {
        cJSON *v = cJSON_GetArrayItem(a, i);
        if (strs) {
            if (!cJSON_IsString(v) || strlen(v->valuestring) >= QKT_AB_NAME) return qkt_err_set(err, "%s: '%s'[%d] is not a short string", path, key, i);
            snprintf(strs[i], QKT_AB_NAME, "%s", v->valuestring);
        } else {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return qkt_err_set(err, "%s: '%s'[%d] is not a finite number", path, key, i);
            if (ints) {
                if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e9)
                    return qkt_err_set(err, "%s: '%s'[%d] is not an integer", path, key, i);
                ints[i] = (int)v->valuedouble;
            } else {
                dbls[i] = v->valuedouble;
            }
        }
    }
    *n = k;
    return 0;
}

/* One of the study's own keys from config.json. */
static int get_key(const char *path, cJSON *j, const qkt__ab_key *k, qkt_ablate_cfg *c, qkt_err *err) {
    if (k->optional && !cJSON_GetObjectItemCaseSensitive(j, k->key)) return 0;
    char *p = (char *)c + k->off;
    int *n = (int *)((char *)c + k->n_off);
    int64_t v;
    switch (k->type) {
    case QKT__K_STR: {
        const char *s = qkt_json_str(j, k->key, path, err);
        if (!s) return -1;
        if (strlen(s) >= k->size) return qkt_err_set(err, "%s: '%s' is too long", path, k->key);
        snprintf(p, k->size, "%s", s);
        return 0;
    }
    case QKT__K_INT:
        if (qkt_json_int(j, k->key, path, -1000000000, 1000000000, &v, err)) return -1;
        *(int *)p = (int)v;
        return 0;
    case QKT__K_DBL: return qkt_json_num(j, k->key, path, (double *)p, err);
    case QKT__K_INTS: return get_list(path, j, k->key, (int *)p, NULL, NULL, n, err);
    case QKT__K_DBLS: return get_list(path, j, k->key, NULL, (double *)p, NULL, n, err);
    case QKT__K_VARS: { /* names -> enums; an unknown name is refused like a bad flag */
        char names[QKT_AB_MAX_LIST][QKT_AB_NAME];
        if (get_list(path, j, k->key, NULL, NULL, names, n, err)) return -1;
        for (int i = 0; i < *n; i++)
            if (qkt_ablate_parse_variant(k->key, names[i], &((qkt_attn_scale *)p)[i], err)) {
                qkt_err tmp = *err;
                return qkt_err_set(err, "%s: %s", path, tmp.msg);
            }
        return 0;
    }
    }
    return 0;
}

int qkt_ablate_load_config(const char *run_dir, qkt_ablate_cfg *c, qkt_err *err) {
    if (qkt_ablate_check_dir(run_dir, err) != 0) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    size_t n;
    char *text = qkt_read_file(path, &n, err);
    if (!text) return -1;
    int rc = qkt_ablate_parse_config(text, n, path, c, err);
    free(text);
    return rc;
}

/* Is name one of config.json's keys: a field's, one of the study's own, or the CRC's? */
static bool known_key(const char *name, const qkt_train_field *fs, int nf) {
    if (!strcmp(name, QKT_ABLATE_CONFIG_CRC)) return true;
    for (int i = 0; i < nf; i++)
        if (!strcmp(name, fs[i].name)) return true;
    for (int i = 0; i < qkt__n_ab_keys; i++)
        if (!strcmp(name, qkt__ab_keys[i].key)) return true;
    return false;
}

/* A config.json with QKT_ABLATE_CONFIG_CRC must match it: an edited or damaged file would
 * change what the report says of cells trained with other settings. One without the key (a
 * study made before it) is read as it is. */
static int check_crc(const char *text, size_t n, const char *path, cJSON *j, qkt_err *err) {
    cJSON *k = cJSON_GetObjectItemCaseSensitive(j, QKT_ABLATE_CONFIG_CRC);
    if (!k) return 0;
    ptrdiff_t d = crc_digits(text, n);
    bool hex = cJSON_IsString(k) && d >= 0 && strlen(k->valuestring) == 8;
    for (int i = 0; hex && i < 8; i++) hex = strchr("0123456789abcdef", k->valuestring[i]) != NULL; /* as written */
    if (!hex)
        return qkt_err_set(err, "%s: '" QKT_ABLATE_CONFIG_CRC "' is not 8 lowercase hex digits (damaged? rerun into a new directory)", path);
    uint32_t got = crc_sealed(text, n, (size_t)d), want = (uint32_t)strtoul(k->valuestring, NULL, 16);
    if (got != want)
        return qkt_err_set(err,
                           "%s: its CRC-32C is %08x, not the %08x it was written with: edited or damaged (a study's "
                           "settings are its flags: rerun them into a new directory)",
                           path, (unsigned)got, want);
    return 0;
}

int qkt_ablate_parse_config(const char *text, size_t n, const char *path, qkt_ablate_cfg *c, qkt_err *err) {
    cJSON *j = qkt_json_parse(text, n, path, err); /* also refuses a key twice, text after the '}' */
    if (!j) return -1;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return qkt_err_set(err, "%s: not a JSON object (damaged? rerun into a new directory)", path);
    }
    if (check_crc(text, n, path, j, err) != 0) {
        cJSON_Delete(j);
        return -1;
    }
    memset(c, 0, sizeof *c);
    qkt_train_run_default(&c->run); /* the fields config.json does not hold (and the optional ones) */
    qkt_train_field fs[64];
    int nf = qkt_ablate_fields(fs, 64), rc = 0;
    for (int i = 0; i < nf && !rc; i++) rc = get_field(path, j, &fs[i], &c->run, err);
    for (int i = 0; i < qkt__n_ab_keys && !rc; i++) rc = get_key(path, j, &qkt__ab_keys[i], c, err);
    for (cJSON *k = j->child; k && !rc; k = k->next) /* a typo or a damaged name (of the CRC's key too) */
        if (!known_key(k->string, fs, nf)) rc = qkt_err_set(err, "%s: unknown key '%.60s' (damaged? rerun into a new directory)", path, k->string);
    if (!rc && !cJSON_GetObjectItemCaseSensitive(j, "lr_eval_every"))
        c->lr_eval_every = c->run.eval_every; /* runs made before it evaluated the LR runs like the others */
    if (!rc && !cJSON_GetObjectItemCaseSensitive(j, "lr_seeds")) c->lr_seeds = 1; /* runs made before it: one seed per LR */
    if (!rc && !cJSON_GetObjectItemCaseSensitive(j, "final_eval_seqs"))
        c->final_eval_seqs = c->run.eval_batches * c->run.tc.batch_size; /* runs made before it: the last periodic evaluation */
    cJSON_Delete(j);
    if (rc) return -1;
    if (qkt_ablate_validate(c, err) != 0) {
        qkt_err tmp = *err;
        return qkt_err_set(err, "%s: %s", path, tmp.msg);
    }
    return 0;
}
