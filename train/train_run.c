/* train.json (the configuration of a `qkt train` run) and log.csv truncation. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qkt_io.h"
#include "qkt_json.h"
#include "qkt_train_run.h"

void qkt_train_run_default(qkt_train_run *r) {
    memset(r, 0, sizeof *r);
    r->tc = qkt_train_config_default();
    r->tc.data = r->data;
    snprintf(r->data, sizeof r->data, "%s", "mqar");
    r->eval_every = 100;
    r->eval_batches = 20;
    r->ckpt_every = 500;
}

#define BAD(...) return qkt_err_set(err, __VA_ARGS__)

int qkt_train_run_validate(const qkt_train_run *r, qkt_err *err) {
    const qkt_train_config *c = &r->tc;
    const qkt_gpt_config *m = &c->model;
    if (m->n_layer < 1 || m->n_layer > 1024) BAD("--n-layer %d: expected an integer in [1, 1024]", m->n_layer);
    if (m->n_head < 1 || m->n_head > 4096) BAD("--n-head %d: expected an integer in [1, 4096]", m->n_head);
    if (m->n_embd < 1 || m->n_embd > 65536) BAD("--n-embd %d: expected an integer in [1, 65536]", m->n_embd);
    if (m->n_embd % m->n_head) BAD("--n-embd %d is not divisible by --n-head %d", m->n_embd, m->n_head);
    if (m->block_size < 1 || m->block_size > 46340) BAD("--block-size %d: expected an integer in [1, 46340]", m->block_size);
    if (c->batch_size < 1 || (int64_t)c->batch_size * m->block_size > (1 << 28))
        BAD("--batch-size %d: expected a positive integer with batch-size x block-size <= 2^28", c->batch_size);
    if (c->replicas < 1 || c->replicas > QKT_DP_MAX || c->replicas > c->batch_size)
        BAD("--replicas %d: expected an integer in [1, %d] and at most --batch-size %d", c->replicas, QKT_DP_MAX, c->batch_size);
    if (!(m->ln_eps > 0 && m->ln_eps < 1)) BAD("ln_eps %g: expected a number in (0, 1)", m->ln_eps);
    if (c->steps < 1 || c->steps > (int64_t)1e12) BAD("--steps %" PRId64 ": expected an integer in [1, 1e12]", c->steps);
    if (!(c->lr > 0 && isfinite(c->lr))) BAD("--lr %g: expected a positive number", c->lr);
    if (!(c->min_lr >= 0 && c->min_lr <= c->lr)) BAD("--min-lr %g: expected a number in [0, --lr %g]", c->min_lr, c->lr);
    if (!(c->weight_decay >= 0 && isfinite(c->weight_decay))) BAD("--weight-decay %g: expected a number >= 0", c->weight_decay);
    if (!(c->beta1 >= 0 && c->beta1 < 1)) BAD("--beta1 %g: expected a number in [0, 1)", c->beta1);
    if (!(c->beta2 >= 0 && c->beta2 < 1)) BAD("--beta2 %g: expected a number in [0, 1)", c->beta2);
    if (c->warmup_steps < 0 || c->warmup_steps > c->steps)
        BAD("--warmup-steps %" PRId64 ": expected an integer in [0, --steps %" PRId64 "]", c->warmup_steps, c->steps);
    if (!(c->grad_clip >= 0 && isfinite(c->grad_clip))) BAD("--grad-clip %g: expected a number >= 0 (0 = off)", c->grad_clip);
    if ((int)m->attn_scale < 0 || m->attn_scale >= QKT_ATTN_SCALE_COUNT) BAD("--attn-scale: unknown variant %d", (int)m->attn_scale);
    if (!(m->attn_temp > 0 && isfinite(m->attn_temp))) BAD("--attn-temp %g: expected a positive number", m->attn_temp);
    if (!(m->qk_init_mult >= 0 && isfinite(m->qk_init_mult))) BAD("--qk-init-mult %g: expected a number >= 0", m->qk_init_mult);
    if (!(m->dropout >= 0 && m->dropout < 1)) BAD("--dropout %g: expected a number in [0, 1)", m->dropout);
    if (c->schedule != QKT_SCHED_CONSTANT && c->schedule != QKT_SCHED_COSINE) BAD("--schedule: unknown kind %d", (int)c->schedule);
    if (c->optim != QKT_OPTIM_ADAMW) BAD("optim: only adamw is supported by qkt train");
    if (r->eval_every < 0) BAD("--eval-every %d: expected an integer >= 0 (0 = first and last step only)", r->eval_every);
    if (r->eval_batches < 1) BAD("--eval-batches %d: expected a positive integer", r->eval_batches);
    if (r->ckpt_every < 0) BAD("--ckpt-every %d: expected an integer >= 0 (0 = at the end only)", r->ckpt_every);
    if (!r->data[0]) BAD("--data: expected a data spec (mqar, text:PATH, ...)");
    return 0;
}

/* ---------------------------------------------------------------- JSON */
char *qkt_train_run_json(const qkt_train_run *r) {
    const qkt_train_config *c = &r->tc;
    const qkt_gpt_config *m = &c->model;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, c->seed);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", "qkt-train-1");
    cJSON_AddStringToObject(o, "data", r->data);
    cJSON_AddNumberToObject(o, "vocab_size", m->vocab_size); /* from the data; informational */
    cJSON_AddNumberToObject(o, "n_layer", m->n_layer);
    cJSON_AddNumberToObject(o, "n_head", m->n_head);
    cJSON_AddNumberToObject(o, "n_embd", m->n_embd);
    cJSON_AddNumberToObject(o, "block_size", m->block_size);
    cJSON_AddBoolToObject(o, "bias", m->bias);
    cJSON_AddNumberToObject(o, "dropout", m->dropout);
    cJSON_AddStringToObject(o, "attn_scale", qkt_attn_scale_name(m->attn_scale));
    cJSON_AddNumberToObject(o, "attn_temp", m->attn_temp);
    cJSON_AddNumberToObject(o, "qk_init_mult", m->qk_init_mult);
    cJSON_AddNumberToObject(o, "ln_eps", m->ln_eps);
    cJSON_AddNumberToObject(o, "batch_size", c->batch_size);
    cJSON_AddNumberToObject(o, "replicas", c->replicas);
    cJSON_AddNumberToObject(o, "steps", (double)c->steps);
    cJSON_AddStringToObject(o, "optim", qkt_optim_kind_name(c->optim));
    cJSON_AddNumberToObject(o, "lr", c->lr);
    cJSON_AddNumberToObject(o, "min_lr", c->min_lr);
    cJSON_AddStringToObject(o, "schedule", qkt_sched_kind_name(c->schedule));
    cJSON_AddNumberToObject(o, "warmup_steps", (double)c->warmup_steps);
    cJSON_AddNumberToObject(o, "weight_decay", c->weight_decay);
    cJSON_AddNumberToObject(o, "beta1", c->beta1);
    cJSON_AddNumberToObject(o, "beta2", c->beta2);
    cJSON_AddNumberToObject(o, "grad_clip", c->grad_clip);
    cJSON_AddStringToObject(o, "seed", seed); /* a string: u64 does not fit a JSON double */
    cJSON_AddNumberToObject(o, "eval_every", r->eval_every);
    cJSON_AddNumberToObject(o, "eval_batches", r->eval_batches);
    cJSON_AddNumberToObject(o, "ckpt_every", r->ckpt_every);
    char *s = cJSON_Print(o); /* cJSON prints doubles in their shortest round-trip form */
    cJSON_Delete(o);
    QKT_CHECK(s, "out of memory");
    return s;
}

static int from_json(const cJSON *o, const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_config *c = &r->tc;
    qkt_gpt_config *m = &c->model;
    if (!cJSON_IsObject(o)) return qkt_err_set(err, "%s: not a JSON object", path);
    const char *fmt = qkt_json_str(o, "format", path, err);
    if (!fmt) return -1;
    if (strcmp(fmt, "qkt-train-1")) return qkt_err_set(err, "%s: format '%.32s' is not qkt-train-1", path, fmt);
    const char *s = qkt_json_str(o, "data", path, err);
    if (!s) return -1;
    if (strlen(s) >= sizeof r->data) return qkt_err_set(err, "%s: 'data' is too long", path);
    snprintf(r->data, sizeof r->data, "%s", s);
    int64_t v[9];
    const char *ikeys[] = {"n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_every", "eval_batches", "ckpt_every"};
    for (int i = 0; i < 8; i++)
        if (qkt_json_int(o, ikeys[i], path, -1, 1 << 30, &v[i], err)) return -1;
    m->n_layer = (int)v[0], m->n_head = (int)v[1], m->n_embd = (int)v[2], m->block_size = (int)v[3];
    c->batch_size = (int)v[4], r->eval_every = (int)v[5], r->eval_batches = (int)v[6], r->ckpt_every = (int)v[7];
    c->replicas = 1; /* runs written before replicas existed had one */
    if (cJSON_GetObjectItemCaseSensitive(o, "replicas")) {
        int64_t rep;
        if (qkt_json_int(o, "replicas", path, 1, QKT_DP_MAX, &rep, err)) return -1;
        c->replicas = (int)rep;
    }
    if (qkt_json_int(o, "steps", path, 0, (int64_t)1e12, &c->steps, err) ||
        qkt_json_int(o, "warmup_steps", path, 0, (int64_t)1e12, &c->warmup_steps, err))
        return -1;
    struct { const char *k; double *d; } reals[] = {
        {"dropout", &m->dropout}, {"attn_temp", &m->attn_temp}, {"qk_init_mult", &m->qk_init_mult}, {"ln_eps", &m->ln_eps},
        {"lr", &c->lr}, {"min_lr", &c->min_lr}, {"weight_decay", &c->weight_decay}, {"beta1", &c->beta1},
        {"beta2", &c->beta2}, {"grad_clip", &c->grad_clip}};
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++)
        if (qkt_json_num(o, reals[i].k, path, reals[i].d, err)) return -1;
    const cJSON *b = qkt_json_get(o, "bias", path, err);
    if (!b) return -1;
    if (!cJSON_IsBool(b)) return qkt_err_set(err, "%s: 'bias' is not true or false", path);
    m->bias = cJSON_IsTrue(b);
    qkt_err e2;
    if (!(s = qkt_json_str(o, "attn_scale", path, err))) return -1;
    if (qkt_attn_scale_parse(s, &m->attn_scale, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    if (!(s = qkt_json_str(o, "schedule", path, err))) return -1;
    if (qkt_sched_kind_parse(s, &c->schedule, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    if (!(s = qkt_json_str(o, "optim", path, err))) return -1;
    if (qkt_optim_kind_parse(s, &c->optim, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    if (!(s = qkt_json_str(o, "seed", path, err))) return -1;
    char *end;
    c->seed = strtoull(s, &end, 10);
    if (!*s || *end || *s == '-') return qkt_err_set(err, "%s: 'seed' = '%.32s' is not an unsigned integer", path, s);
    if (qkt_train_run_validate(r, &e2)) return qkt_err_set(err, "%s: %s", path, e2.msg);
    return 0;
}

int qkt_train_run_load(const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_run_default(r);
    size_t n;
    char *text = qkt_read_file(path, &n, err);
    if (!text) return -1;
    int rc = qkt_train_run_parse(text, n, path, r, err);
    free(text);
    return rc;
}

int qkt_train_run_parse(const char *text, size_t n, const char *path, qkt_train_run *r, qkt_err *err) {
    qkt_train_run_default(r);
    cJSON *o = cJSON_ParseWithLength(text, n);
    if (!o) return qkt_err_set(err, "%s: not valid JSON", path);
    int rc = from_json(o, path, r, err);
    cJSON_Delete(o);
    r->tc.data = r->data;
    return rc;
}

/* ---------------------------------------------------------------- log.csv */
int qkt_train_log_truncate(const char *path, int64_t step, qkt_err *err) {
    const char *hdr = QKT_TRAIN_LOG_HEADER;
    size_t hl = strlen(hdr), n = 0;
    char *text = NULL;
    if (qkt_file_exists(path) && !(text = qkt_read_file(path, &n, err))) return -1;
    if (text && strncmp(text, hdr, hl)) {
        free(text);
        return qkt_err_set(err, "%s: not a qkt train log (its header differs)", path);
    }
    qkt_buf b = {0};
    qkt_buf_printf(&b, "%s", hdr);
    /* rows are written in step order, so keep them up to the first one past `step` */
    for (char *p = text ? text + hl : NULL; p && *p;) {
        char *nl = strchr(p, '\n');
        if (!nl) break; /* a torn last row (killed mid-write) */
        char *end;
        long long s = strtoll(p, &end, 10);
        if (end == p || *end != ',' || s > step) break;
        qkt_buf_printf(&b, "%.*s", (int)(nl + 1 - p), p);
        p = nl + 1;
    }
    free(text);
    int rc = qkt_write_atomic(path, b.s, b.n, err);
    qkt_buf_free(&b);
    return rc;
}
