/* `qkt ablate` configuration: presets, validation, config.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_json.h"
#include "qkt_study.h"

static void set_variants(qkt_attn_scale *dst, int *n, const qkt_attn_scale *src, int k) {
    *n = k;
    for (int i = 0; i < k; i++) dst[i] = src[i];
}

/* The presets' variants: the six the study was sized around (the budgets below were
 * measured with them). cosine, sigma_reparam, power:ALPHA and a program's registered
 * variants join with --variants / --lr-variants. */
static const qkt_attn_scale preset_all[] = {QKT_ATTN_SQRT_DK, QKT_ATTN_NONE,    QKT_ATTN_DK,
                                            QKT_ATTN_SQRT_DMODEL, QKT_ATTN_LEARNED, QKT_ATTN_QK_LAYERNORM};
#define N_PRESET_ALL ((int)(sizeof preset_all / sizeof preset_all[0]))
/* Claim 7b (Zhai et al. 2023: preventing entropy collapse stabilises) compares `sigma_reparam`
 * with the others in the LR sweep: the presets add it, by name, in a build that has it. */
static void add_sigma_reparam(qkt_attn_scale *v, int *n) {
    qkt_attn_scale s;
    if (qkt_attn_scale_parse("sigma_reparam", &s, NULL) != 0 || *n >= QKT_AB_MAX_LIST) return;
    for (int i = 0; i < *n; i++)
        if (v[i] == s) return;
    v[(*n)++] = s;
}

int qkt_ablate_preset(const char *name, qkt_ablate_cfg *c, qkt_err *err) {
    const qkt_attn_scale *all = preset_all;
    memset(c, 0, sizeof *c);
    snprintf(c->preset, sizeof c->preset, "%s", name);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->task, sizeof c->task, "mqar");
    c->seq_len = 32;
    c->n_layer = 2;
    c->n_head = 2;
    c->batch_size = 32;
    c->warmup = 20;
    c->lr = 3e-3;
    c->min_lr_frac = 0.1;
    c->weight_decay = 0.1;
    c->grad_clip = 1.0;
    c->beta2 = 0.95;
    c->attn_temp = 1;
    c->qk_init_mult = 1;
    /* 0.08 rather than GPT-2's 0.02: at these widths (d_model 16..512) 0.02 leaves q.k tiny
     * for every variant and no model leaves mqar's plateau within the budget (measured:
     * docs/ablate.md); 0.08 is about PyTorch's default Linear init at d_model 64. */
    c->init_std = 0.08;
    c->seed = 1;
    c->workers = 2;
    set_variants(c->variants, &c->n_variants, all, N_PRESET_ALL);
    set_variants(c->lr_variants, &c->n_lr_variants, qkt_study_fixed_scales, QKT_STUDY_N_FIXED);
    c->growth_steps = 5;
    c->growth_lr = 1e-3;
    if (!strcmp(name, "quick")) {
        /* Sized for `make demo` (< 5 min on 2 cores): d_k 8 (small logits) and 64 (unscaled logit
         * std 8 at init with the unit W_q/W_k init), 6 seeds (the fewest for which an exact paired
         * test can reach p < 0.05), batch 16; learned and sqrt_dmodel are left to the full preset
         * (sqrt_dmodel is measured at init). Cell costs: docs/performance.md, "The study's presets". */
        const qkt_attn_scale v[] = {QKT_ATTN_SQRT_DK, QKT_ATTN_NONE, QKT_ATTN_DK, QKT_ATTN_QK_LAYERNORM};
        set_variants(c->variants, &c->n_variants, v, 4);
        set_variants(c->lr_variants, &c->n_lr_variants, v, 4);
        c->qk_init = QKT_QK_INIT_UNIT;
        c->batch_size = 16;
        c->steps = 200, c->eval_every = 20, c->eval_batches = 4;
        c->n_dk = 2, c->dks[0] = 8, c->dks[1] = 64;
        c->seeds = 6;
        /* Part 2c: the smoothly learnt `recall` at the same d_k (its d_k 8 cells are the cheap ones). */
        snprintf(c->task2, sizeof c->task2, "recall");
        c->n_task2_dk = 2, c->task2_dks[0] = 8, c->task2_dks[1] = 64;
        /* Up to where runs become unstable (docs/performance.md, "The study's presets"), evaluated
         * every 5 steps so the logit growth can be timed against the loss rising (claim 6a). */
        c->n_lr = 6;
        const double lrs[] = {3e-3, 3e-2, 0.3, 0.6, 1, 3};
        memcpy(c->lrs, lrs, sizeof lrs);
        c->lr_steps = 150, c->lr_dk = 16, c->lr_eval_every = 5;
        add_sigma_reparam(c->lr_variants, &c->n_lr_variants);
        c->n_init_dk = 8;
        for (int i = 0; i < 8; i++) c->init_dks[i] = 4 << i; /* 4 .. 512 */
        c->n_growth_dk = 4;
        for (int i = 0; i < 4; i++) c->growth_dks[i] = 8 << i; /* 8 .. 64 */
    } else if (!strcmp(name, "full")) {
        /* Every variant at d_k 8..128 x 6 seeds on mqar, the second task at d_k 16 and 64, 9 learning
         * rates at d_k 32; its cost: docs/performance.md, "The study's presets" (estimated), and
         * docs/ablate.md (measured). */
        c->qk_init = QKT_QK_INIT_UNIT;
        c->steps = 500, c->eval_every = 25, c->eval_batches = 8;
        c->n_dk = 5;
        for (int i = 0; i < 5; i++) c->dks[i] = 8 << i; /* 8 .. 128 */
        c->seeds = 6;
        snprintf(c->task2, sizeof c->task2, "recall");
        c->n_task2_dk = 2, c->task2_dks[0] = 16, c->task2_dks[1] = 64;
        c->n_lr = 9;
        const double lrs[] = {1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 0.6, 1, 3};
        memcpy(c->lrs, lrs, sizeof lrs);
        c->lr_steps = 300, c->lr_dk = 32, c->lr_eval_every = 5;
        set_variants(c->lr_variants, &c->n_lr_variants, all, N_PRESET_ALL);
        add_sigma_reparam(c->lr_variants, &c->n_lr_variants);
        c->n_init_dk = 8;
        for (int i = 0; i < 8; i++) c->init_dks[i] = 4 << i;
        c->n_growth_dk = 6;
        for (int i = 0; i < 6; i++) c->growth_dks[i] = 8 << i; /* 8 .. 256 */
    } else {
        return qkt_err_set(err, "--preset '%s': expected quick or full", name);
    }
    if (!c->lr_eval_every) c->lr_eval_every = c->eval_every;
    return 0;
}

int qkt_ablate_list_repeat(const int *ints, const double *dbls, const qkt_attn_scale *vars, int n) {
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++)
            if (ints ? ints[i] == ints[j] : dbls ? dbls[i] == dbls[j] : vars[i] == vars[j]) return i;
    return -1;
}

static int check_variants(const char *field, const qkt_attn_scale *v, int n, qkt_err *err) {
    if (n <= 0) return qkt_err_set(err, "%s: expected at least one variant", field);
    for (int i = 0; i < n; i++) /* names were checked when parsed: here a C caller's bad enum */
        if (!qkt_attn_variant_get(v[i]))
            return qkt_err_set(err, "%s: value %d is not a qkt_attn_scale (0 .. %d)", field, (int)v[i], qkt_attn_scale_count() - 1);
    int r = qkt_ablate_list_repeat(NULL, NULL, v, n);
    if (r >= 0) return qkt_err_set(err, "%s: variant '%s' is listed twice", field, qkt_attn_scale_name(v[r]));
    return 0;
}

int qkt_ablate_parse_variant(const char *field, const char *name, qkt_attn_scale *out, qkt_err *err) {
    qkt_err e2;
    if (qkt_attn_scale_parse(name, out, &e2) == 0) return 0;
    char list[1024], fam[72];
    qkt_study_variant_list(list, sizeof list);
    const char *colon = strchr(name, ':'); /* a family of the list ("power:ALPHA") with a bad argument: the parser says why */
    if (colon && colon - name < 64) {
        snprintf(fam, sizeof fam, "%.*s:", (int)(colon - name), name);
        for (const char *at = strstr(list, fam); at; at = strstr(at + 1, fam))
            if (at == list || at[-1] == ' ') return qkt_err_set(err, "%s: %s", field, e2.msg);
    }
    return qkt_err_set(err, "%s: unknown variant '%s' (expected %s)", field, name, list);
}

static int check_ints(const char *field, const int *v, int n, int lo, int hi, qkt_err *err) {
    if (n <= 0) return qkt_err_set(err, "%s: expected at least one value", field);
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > hi) return qkt_err_set(err, "%s: value %d out of range [%d, %d]", field, v[i], lo, hi);
    int r = qkt_ablate_list_repeat(v, NULL, NULL, n);
    if (r >= 0) return qkt_err_set(err, "%s: value %d is listed twice", field, v[r]);
    return 0;
}

int qkt_ablate_validate(const qkt_ablate_cfg *c, qkt_err *err) {
    if (!c->name[0] || strchr(c->name, '/')) return qkt_err_set(err, "name '%s': expected a non-empty name without '/'", c->name);
    if (c->seq_len < 2 || c->seq_len > 4096) return qkt_err_set(err, "seq_len %d: expected 2 .. 4096", c->seq_len);
    if (c->n_layer < 1 || c->n_layer > 64) return qkt_err_set(err, "n_layer %d: expected 1 .. 64", c->n_layer);
    if (c->n_head < 1 || c->n_head > 64) return qkt_err_set(err, "n_head %d: expected 1 .. 64", c->n_head);
    /* the flags' ranges, so a hand-edited config.json cannot ask for more */
    if (c->batch_size < 1 || c->batch_size > 1 << 16) return qkt_err_set(err, "batch_size %d: expected 1 .. 65536", c->batch_size);
    if (c->steps < 1 || c->lr_steps < 1 || c->steps > 100000000 || c->lr_steps > 100000000)
        return qkt_err_set(err, "steps %d / lr_steps %d: expected 1 .. 1e8", c->steps, c->lr_steps);
    if (c->eval_every < 1 || c->eval_batches < 1) return qkt_err_set(err, "eval_every %d / eval_batches %d: expected positive integers", c->eval_every, c->eval_batches);
    if (c->lr_eval_every < 1 || c->lr_eval_every > 100000000) return qkt_err_set(err, "lr_eval_every %d: expected 1 .. 1e8", c->lr_eval_every);
    if (c->warmup < 0) return qkt_err_set(err, "warmup %d: expected >= 0", c->warmup);
    if (!(c->lr > 0) || !isfinite(c->lr)) return qkt_err_set(err, "lr %g: expected a positive number", c->lr);
    if (!(c->min_lr_frac >= 0 && c->min_lr_frac <= 1)) return qkt_err_set(err, "min_lr_frac %g: expected 0 .. 1", c->min_lr_frac);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay)) return qkt_err_set(err, "weight_decay %g: expected >= 0", c->weight_decay);
    if (!(c->grad_clip >= 0) || !isfinite(c->grad_clip)) return qkt_err_set(err, "grad_clip %g: expected >= 0 (0 = off)", c->grad_clip);
    if (!(c->beta2 > 0 && c->beta2 < 1)) return qkt_err_set(err, "beta2 %g: expected a number in (0, 1)", c->beta2);
    if (!(c->attn_temp > 0) || !isfinite(c->attn_temp)) return qkt_err_set(err, "attn_temp %g: expected a positive number", c->attn_temp);
    if (!(c->init_std > 0) || !isfinite(c->init_std)) return qkt_err_set(err, "init_std %g: expected a positive number", c->init_std);
    if ((unsigned)c->qk_init >= QKT_QK_INIT_COUNT) return qkt_err_set(err, "qk_init %d: expected gpt2 or unit", (int)c->qk_init);
    if ((unsigned)c->norm >= QKT_NORM_COUNT || (unsigned)c->mlp >= QKT_MLP_COUNT || (unsigned)c->pos >= QKT_POS_COUNT)
        return qkt_err_set(err, "norm %d, mlp %d or pos %d: not a known option", (int)c->norm, (int)c->mlp, (int)c->pos);
    if (c->pos == QKT_POS_ROPE)
        for (int i = 0; i < c->n_dk; i++)
            if (c->dks[i] % 2) return qkt_err_set(err, "pos rope needs even key widths, d_k %d is odd", c->dks[i]);
    if (!(c->qk_init_mult > 0) || !isfinite(c->qk_init_mult)) return qkt_err_set(err, "qk_init_mult %g: expected a positive number", c->qk_init_mult);
    if (c->seeds < 1 || c->seeds > 100) return qkt_err_set(err, "seeds %d: expected 1 .. 100", c->seeds);
    if (c->workers < 1 || c->workers > 256) return qkt_err_set(err, "workers %d: expected 1 .. 256", c->workers);
    if (check_variants("variants", c->variants, c->n_variants, err)) return -1;
    if (check_variants("lr_variants", c->lr_variants, c->n_lr_variants, err)) return -1;
    if (check_ints("d_k", c->dks, c->n_dk, 1, 1024, err)) return -1;
    if (c->task2[0] && check_ints("task2_d_k", c->task2_dks, c->n_task2_dk, 1, 1024, err)) return -1;
    if (check_ints("init_d_k", c->init_dks, c->n_init_dk, 1, 4096, err)) return -1;
    if (check_ints("growth_d_k", c->growth_dks, c->n_growth_dk, 1, 1024, err)) return -1;
    if (c->lr_dk < 1 || c->lr_dk > 1024) return qkt_err_set(err, "lr_d_k %d: expected 1 .. 1024", c->lr_dk);
    if (c->growth_steps < 1 || !(c->growth_lr > 0) || !isfinite(c->growth_lr)) return qkt_err_set(err, "growth_steps %d / growth_lr %g: expected positive values", c->growth_steps, c->growth_lr);
    if (c->n_lr < 1) return qkt_err_set(err, "lr_grid: expected at least one learning rate");
    for (int i = 0; i < c->n_lr; i++)
        if (!(c->lrs[i] > 0) || !isfinite(c->lrs[i])) return qkt_err_set(err, "lr_grid: %g is not a positive number", c->lrs[i]);
    int r = qkt_ablate_list_repeat(NULL, c->lrs, NULL, c->n_lr);
    if (r >= 0) return qkt_err_set(err, "lr_grid: %.17g is listed twice", c->lrs[r]);
    return 0;
}

/* ---------------------------------------------------------------- config.json */
/* The variants as their names: config.json holds strings, not enum values. */
static cJSON *variant_array(const qkt_attn_scale *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(qkt_attn_scale_name(v[i])));
    return a;
}

char *qkt_ablate_config_json(const qkt_ablate_cfg *c) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "preset", c->preset);
    cJSON_AddStringToObject(j, "task", c->task);
    cJSON_AddStringToObject(j, "task2", c->task2);
    cJSON_AddStringToObject(j, "command", c->command);
    cJSON_AddStringToObject(j, "qk_init", qkt_qk_init_name(c->qk_init));
    cJSON_AddStringToObject(j, "norm", qkt_norm_name(c->norm));
    cJSON_AddStringToObject(j, "mlp", qkt_mlp_name(c->mlp));
    cJSON_AddStringToObject(j, "pos", qkt_pos_name(c->pos));
#define NUM(f) cJSON_AddNumberToObject(j, #f, (double)c->f)
    NUM(seq_len), NUM(n_layer), NUM(n_head), NUM(batch_size), NUM(steps), NUM(eval_every), NUM(eval_batches);
    NUM(warmup), NUM(lr), NUM(min_lr_frac), NUM(weight_decay), NUM(grad_clip), NUM(beta2), NUM(attn_temp);
    NUM(qk_init_mult), NUM(init_std), NUM(seeds), NUM(lr_steps), NUM(lr_dk), NUM(lr_eval_every), NUM(growth_steps), NUM(growth_lr), NUM(workers);
#undef NUM
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed); /* as a string: exact for 64 bits */
    cJSON_AddStringToObject(j, "seed", seed);
    cJSON_AddItemToObject(j, "variants", variant_array(c->variants, c->n_variants));
    cJSON_AddItemToObject(j, "lr_variants", variant_array(c->lr_variants, c->n_lr_variants));
    cJSON_AddItemToObject(j, "d_k", cJSON_CreateIntArray(c->dks, c->n_dk));
    cJSON_AddItemToObject(j, "task2_d_k", cJSON_CreateIntArray(c->task2_dks, c->n_task2_dk));
    cJSON_AddItemToObject(j, "init_d_k", cJSON_CreateIntArray(c->init_dks, c->n_init_dk));
    cJSON_AddItemToObject(j, "growth_d_k", cJSON_CreateIntArray(c->growth_dks, c->n_growth_dk));
    cJSON_AddItemToObject(j, "lr_grid", cJSON_CreateDoubleArray(c->lrs, c->n_lr));
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    return text;
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
    char *text = qkt_ablate_config_json(c);
    char path[1024];
    snprintf(path, sizeof path, "%s/config.json", run_dir);
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON's buffer has the NUL there; write it as a newline */
    int rc = qkt_write_atomic(path, text, n + 1, err);
    free(text);
    return rc;
}

static int get_int(const char *path, cJSON *j, const char *key, int *out, qkt_err *err) {
    int64_t v;
    if (qkt_json_int(j, key, path, -1000000000, 1000000000, &v, err)) return -1;
    *out = (int)v;
    return 0;
}

static int get_str(const char *path, cJSON *j, const char *key, char *out, size_t n, qkt_err *err) {
    const char *v = qkt_json_str(j, key, path, err);
    if (!v) return -1;
    if (strlen(v) >= n) return qkt_err_set(err, "%s: '%s' is too long", path, key);
    snprintf(out, n, "%s", v);
    return 0;
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

/* A list of variant names -> enums; an unknown name is refused like a bad flag. */
static int get_variants(const char *path, cJSON *j, const char *key, qkt_attn_scale *out, int *n, qkt_err *err) {
    char names[QKT_AB_MAX_LIST][QKT_AB_NAME];
    if (get_list(path, j, key, NULL, NULL, names, n, err)) return -1;
    for (int i = 0; i < *n; i++)
        if (qkt_ablate_parse_variant(key, names[i], &out[i], err)) {
            qkt_err tmp = *err;
            return qkt_err_set(err, "%s: %s", path, tmp.msg);
        }
    return 0;
}

/* "norm", "mlp", "pos": optional, so config.json files from before the options load as
 * layernorm, gelu, learned (their model). */
static int get_options(const char *path, cJSON *j, qkt_ablate_cfg *c, qkt_err *err) {
    char name[32];
    qkt_err e2;
    c->norm = QKT_NORM_LAYERNORM, c->mlp = QKT_MLP_GELU, c->pos = QKT_POS_LEARNED;
    if (cJSON_GetObjectItemCaseSensitive(j, "norm") &&
        (get_str(path, j, "norm", name, sizeof name, err) || (qkt_norm_parse(name, &c->norm, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(j, "mlp") &&
        (get_str(path, j, "mlp", name, sizeof name, err) || (qkt_mlp_parse(name, &c->mlp, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(j, "pos") &&
        (get_str(path, j, "pos", name, sizeof name, err) || (qkt_pos_parse(name, &c->pos, &e2) && qkt_err_set(err, "%s: %s", path, e2.msg))))
        return -1;
    return 0;
}

/* "qk_init": optional, so config.json files from before the option load as gpt2 (their init). */
static int get_qk_init(const char *path, cJSON *j, qkt_qk_init *out, qkt_err *err) {
    *out = QKT_QK_INIT_GPT2;
    if (!cJSON_GetObjectItemCaseSensitive(j, "qk_init")) return 0;
    char name[32];
    if (get_str(path, j, "qk_init", name, sizeof name, err)) return -1;
    if (qkt_qk_init_parse(name, out, NULL) != 0) return qkt_err_set(err, "%s: 'qk_init' = '%s': expected gpt2 or unit", path, name);
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

int qkt_ablate_parse_config(const char *text, size_t n, const char *path, qkt_ablate_cfg *c, qkt_err *err) {
    cJSON *j = qkt_json_parse(text, n, path, err); /* also refuses a key twice, text after the '}' */
    if (!j) return -1;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return qkt_err_set(err, "%s: not a JSON object (damaged? rerun into a new directory)", path);
    }
    memset(c, 0, sizeof *c);
    char seed[32];
    int rc = 0;
#define INT(f) rc = rc ? rc : get_int(path, j, #f, &c->f, err)
#define DBL(f) rc = rc ? rc : qkt_json_num(j, #f, path, &c->f, err)
    rc = get_str(path, j, "name", c->name, sizeof c->name, err);
    rc = rc ? rc : get_str(path, j, "preset", c->preset, sizeof c->preset, err);
    rc = rc ? rc : get_str(path, j, "task", c->task, sizeof c->task, err);
    rc = rc ? rc : get_str(path, j, "seed", seed, sizeof seed, err);
    rc = rc ? rc : get_str(path, j, "command", c->command, sizeof c->command, err);
    rc = rc ? rc : get_qk_init(path, j, &c->qk_init, err);
    rc = rc ? rc : get_options(path, j, c, err);
    INT(seq_len), INT(n_layer), INT(n_head), INT(batch_size), INT(steps), INT(eval_every), INT(eval_batches), INT(warmup);
    DBL(lr), DBL(min_lr_frac), DBL(weight_decay), DBL(grad_clip), DBL(beta2), DBL(attn_temp), DBL(qk_init_mult), DBL(init_std);
    INT(seeds), INT(lr_steps), INT(lr_dk), INT(growth_steps), DBL(growth_lr), INT(workers);
    c->lr_eval_every = c->eval_every; /* optional: runs made before it evaluated the LR runs like the others */
    if (!rc && cJSON_GetObjectItemCaseSensitive(j, "lr_eval_every")) INT(lr_eval_every);
    if (!rc && cJSON_GetObjectItemCaseSensitive(j, "task2")) { /* optional: runs made before part 2c have neither key */
        rc = get_str(path, j, "task2", c->task2, sizeof c->task2, err);
        rc = rc ? rc : get_list(path, j, "task2_d_k", c->task2_dks, NULL, NULL, &c->n_task2_dk, err);
    }
#undef INT
#undef DBL
    rc = rc ? rc : get_variants(path, j, "variants", c->variants, &c->n_variants, err);
    rc = rc ? rc : get_variants(path, j, "lr_variants", c->lr_variants, &c->n_lr_variants, err);
    rc = rc ? rc : get_list(path, j, "d_k", c->dks, NULL, NULL, &c->n_dk, err);
    rc = rc ? rc : get_list(path, j, "init_d_k", c->init_dks, NULL, NULL, &c->n_init_dk, err);
    rc = rc ? rc : get_list(path, j, "growth_d_k", c->growth_dks, NULL, NULL, &c->n_growth_dk, err);
    rc = rc ? rc : get_list(path, j, "lr_grid", NULL, c->lrs, NULL, &c->n_lr, err);
    cJSON_Delete(j);
    if (rc) return -1;
    char *end;
    c->seed = strtoull(seed, &end, 10);
    if (*end || !*seed) return qkt_err_set(err, "%s: field 'seed' = '%s' is not an unsigned integer", path, seed);
    if (qkt_ablate_validate(c, err) != 0) {
        qkt_err tmp = *err;
        return qkt_err_set(err, "%s: %s", path, tmp.msg);
    }
    return 0;
}
