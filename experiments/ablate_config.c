/* `qkt ablate` configuration: the study's own settings (one table, `keys`), its limits on
 * the model and training fields (the field table, qkt_train_fields.h), the presets (data:
 * settings as text), setting one from text, validation. config.json: ablate_json.c. */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ablate_internal.h"
#include "qkt_study.h"

#define AB(f) offsetof(qkt_ablate_cfg, f)
/* A rate below the smallest normal double: refused as the flags of qkt train refuse one */
#define SUBNORMAL "is a subnormal, too small to compute with: give a magnitude >= 2.22507e-308"
#define SUBNORMAL0 "is a subnormal, too small to compute with: give 0 or a magnitude >= 2.22507e-308"
#define SZ(f) sizeof(((qkt_ablate_cfg *)0)->f)

/* The study's own keys of config.json (the model and training ones are the field table's
 * rows with an `ab` key), by their position there. */
const qkt__ab_key qkt__ab_keys[] = {
    {"name", 1, QKT__K_STR, AB(name), 0, SZ(name), 0, 0, false, false},
    {"preset", 2, QKT__K_STR, AB(preset), 0, SZ(preset), 0, 0, false, false},
    {"task2", 4, QKT__K_STR, AB(task2), 0, SZ(task2), 0, 0, false, true}, /* runs made before part 2c have no task2 */
    {"command", 5, QKT__K_STR, AB(command), 0, SZ(command), 0, 0, false, false},
    {"min_lr_frac", 19, QKT__K_DBL, AB(min_lr_frac), 0, 0, 0, 1, false, false},
    {"seeds", 26, QKT__K_INT, AB(seeds), 0, 0, 1, 100, false, false},
    {"lr_steps", 27, QKT__K_INT, AB(lr_steps), 0, 0, 1, 1e8, false, false},
    {"lr_dk", 28, QKT__K_INT, AB(lr_dk), 0, 0, 1, 1024, false, false},
    {"lr_eval_every", 29, QKT__K_INT, AB(lr_eval_every), 0, 0, 1, 1e8, false, true}, /* missing: eval_every */
    {"growth_steps", 30, QKT__K_INT, AB(growth_steps), 0, 0, 1, 1e8, false, false},
    {"growth_lr", 31, QKT__K_DBL, AB(growth_lr), 0, 0, 0, 1e300, true, false},
    {"workers", 32, QKT__K_INT, AB(workers), 0, 0, 1, 256, false, false},
    {"variants", 34, QKT__K_VARS, AB(variants), AB(n_variants), 0, 0, 0, false, false},
    {"lr_variants", 35, QKT__K_VARS, AB(lr_variants), AB(n_lr_variants), 0, 0, 0, false, false},
    {"d_k", 36, QKT__K_INTS, AB(dks), AB(n_dk), 0, 1, 1024, false, false},
    {"task2_d_k", 37, QKT__K_INTS, AB(task2_dks), AB(n_task2_dk), 0, 1, 1024, false, true},
    {"init_d_k", 38, QKT__K_INTS, AB(init_dks), AB(n_init_dk), 0, 1, 4096, false, false},
    {"growth_d_k", 39, QKT__K_INTS, AB(growth_dks), AB(n_growth_dk), 0, 1, 1024, false, false},
    {"lr_grid", 40, QKT__K_DBLS, AB(lrs), AB(n_lr), 0, 0, 1e300, true, false},
    {"start_d_k", 41, QKT__K_INT, AB(start_dk), 0, 0, 0, 1024, false, true}, /* missing: 0, no 2x2 cells */
    {"task2_start_d_k", 43, QKT__K_INT, AB(task2_start_dk), 0, 0, 0, 1024, false, true}, /* missing: 0 */
    {"final_eval_seqs", 44, QKT__K_INT, AB(final_eval_seqs), 0, 0, 1, 1e7, false, true}, /* missing: eval_batches x batch_size */
    {"lr_seeds", 42, QKT__K_INT, AB(lr_seeds), 0, 0, 1, QKT_AB_MAX_LR_SEEDS, false, true}, /* missing: 1 */
    /* robustness reruns (qkt_ablate_rerun_get); missing: none */
    {"robust_seeds", 44, QKT__K_INTS, AB(robust_seeds), AB(n_robust_seeds), 0, 0, 1e9, false, true},
    {"robust_isa", 45, QKT__K_STR, AB(robust_isa), 0, SZ(robust_isa), 0, 0, false, true},
    {"verdict_cells_only", 46, QKT__K_INT, AB(verdict_cells_only), 0, 0, 0, 1, false, true},
    {"lr_eval_dense", 47, QKT__K_INT, AB(lr_eval_dense), 0, 0, 0, 1e8, false, true}, /* missing: 0 */
};
const int qkt__n_ab_keys = (int)(sizeof qkt__ab_keys / sizeof *qkt__ab_keys);

/* The study's limits on the model and training fields (its budget: tighter than one
 * run's); the other fields keep the table's bounds. */
static const struct {
    const char *ab;
    double lo, hi;
    unsigned where; /* replaces the row's QKT_FIELD_POSITIVE / _LO_OPEN / _HI_OPEN */
} limits[] = {
    {"seq_len", 2, 4096, 0},      {"n_layer", 1, 64, 0},       {"n_head", 1, 64, 0},         {"batch_size", 1, 65536, 0},
    {"steps", 1, 1e8, 0},         {"eval_every", 1, 1e8, 0},   {"eval_batches", 1, 1e6, 0},  {"warmup", 0, 1e8, 0},
    {"weight_decay", 0, 1e6, 0},  {"grad_clip", 0, 1e12, 0},   {"beta2", 0, 1, QKT_FIELD_LO_OPEN | QKT_FIELD_HI_OPEN},
    {"qk_init_mult", 0, 0, QKT_FIELD_POSITIVE}, {"init_std", 0, 0, QKT_FIELD_POSITIVE},
};

/* The study's meaning of a field where a run's help text says otherwise. */
static const struct {
    const char *ab, *help;
} helps[] = {
    {"task", "data spec of the synthetic task"},
    {"seq_len", "sequence length T (= block size)"},
    {"n_head", "heads (d_model = n_head * d_k)"},
    {"steps", "training steps per cell"},
    {"eval_every", "steps between evaluations"},
    {"warmup", "linear LR warmup steps (0 = none)"},
    {"lr", "learning rate of the training ablation"},
    {"seed", "base seed"},
};

int qkt_ablate_fields(qkt_train_field *out, int cap) {
    static char flags[64][QKT_AB_NAME]; /* "seq-len": the key with '-' for '_' */
    int n = 0;
    for (int order = 1; order < 256 && n < cap && n < 64; order++)
        for (int i = 0; i < qkt_train_field_count(); i++) {
            const qkt_train_field *f = qkt_train_field_at(i);
            if (!f->ab || f->ab_order != order) continue;
            qkt_train_field g = *f;
            g.name = f->ab;
            for (size_t k = 0; k < sizeof limits / sizeof *limits; k++)
                if (!strcmp(limits[k].ab, f->ab)) {
                    g.lo = limits[k].lo, g.hi = limits[k].hi;
                    g.where = (f->where & ~(unsigned)(QKT_FIELD_POSITIVE | QKT_FIELD_LO_OPEN | QKT_FIELD_HI_OPEN)) | limits[k].where;
                }
            for (size_t k = 0; k < sizeof helps / sizeof *helps; k++)
                if (!strcmp(helps[k].ab, f->ab)) g.help = helps[k].help;
            snprintf(flags[n], sizeof flags[n], "%s", f->ab);
            for (char *p = flags[n]; *p; p++) *p = *p == '_' ? '-' : *p;
            g.flag = flags[n];
            out[n++] = g;
        }
    return n;
}

bool qkt__ab_key_omit_unset(const qkt__ab_key *k) {
    return !strncmp(k->key, "robust_", 7) || !strcmp(k->key, "verdict_cells_only") || !strcmp(k->key, "lr_eval_dense");
}

const qkt__ab_key *qkt__ab_key_find(const char *key) {
    for (int i = 0; i < qkt__n_ab_keys; i++)
        if (!strcmp(qkt__ab_keys[i].key, key)) return &qkt__ab_keys[i];
    return NULL;
}

/* ---------------------------------------------------------------- setting one from text */
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

/* "16,64" -> a list of k's type; the whole list is cleared first, so a shorter one leaves
 * no stale values. */
static int set_list(qkt_ablate_cfg *c, const qkt__ab_key *k, const char *text, qkt_err *err) {
    char buf[1024];
    if (strlen(text) >= sizeof buf) return qkt_err_set(err, "%s: list too long", k->key);
    size_t tl = strlen(text); /* strtok would drop an empty item ("16,,64") without a word */
    if (tl && (text[0] == ',' || text[tl - 1] == ',' || strstr(text, ",,")))
        return qkt_err_set(err, "%s '%s': an empty item in the comma-separated list", k->key, text);
    snprintf(buf, sizeof buf, "%s", text);
    char *base = (char *)c + k->off;
    int *n = (int *)((char *)c + k->n_off);
    memset(base, 0, QKT_AB_MAX_LIST * (k->type == QKT__K_DBLS ? sizeof(double) : sizeof(int)));
    int m = 0;
    for (char *tok = strtok(buf, ","), *end; tok; tok = strtok(NULL, ",")) {
        if (m == QKT_AB_MAX_LIST) return qkt_err_set(err, "%s: at most %d values", k->key, QKT_AB_MAX_LIST);
        if (k->type == QKT__K_VARS) {
            if (qkt_ablate_parse_variant(k->key, tok, &((qkt_attn_scale *)base)[m], err)) return -1;
        } else if (k->type == QKT__K_INTS) {
            long v = strtol(tok, &end, 10);
            if (!*tok || *end || v < k->lo || v > k->hi)
                return qkt_err_set(err, "%s '%s': expected a comma-separated list of integers in [%.0f, %.0f]", k->key, text, k->lo, k->hi);
            ((int *)base)[m] = (int)v;
        } else {
            double v = strtod(tok, &end);
            if (*end || !(v > 0) || !isfinite(v))
                return qkt_err_set(err, "%s '%s': expected a comma-separated list of positive numbers", k->key, text);
            if (v < DBL_MIN) return qkt_err_set(err, "%s '%s': %s " SUBNORMAL, k->key, text, tok);
            ((double *)base)[m] = v;
        }
        m++;
    }
    if (!m) return qkt_err_set(err, "%s: expected at least one value", k->key);
    /* each value is a cell (or a column of the report): once */
    int r = k->type == QKT__K_VARS ? qkt_ablate_list_repeat(NULL, NULL, (const qkt_attn_scale *)base, m)
            : k->type == QKT__K_INTS ? qkt_ablate_list_repeat((const int *)base, NULL, NULL, m)
                                     : qkt_ablate_list_repeat(NULL, (const double *)base, NULL, m);
    if (r >= 0) {
        char v[64];
        if (k->type == QKT__K_VARS) snprintf(v, sizeof v, "%s", qkt_attn_scale_name(((const qkt_attn_scale *)base)[r]));
        else if (k->type == QKT__K_INTS) snprintf(v, sizeof v, "%d", ((const int *)base)[r]);
        else snprintf(v, sizeof v, "%g", ((const double *)base)[r]);
        return qkt_err_set(err, "%s '%s': the value %s is given twice (each value once)", k->key, text, v);
    }
    *n = m;
    return 0;
}

int qkt_ablate_set(qkt_ablate_cfg *c, const char *key, const char *text, qkt_err *err) {
    qkt_train_field fs[64];
    int nf = qkt_ablate_fields(fs, 64);
    for (int i = 0; i < nf; i++)
        if (!strcmp(fs[i].name, key)) return qkt_train_field_set(&c->run, &fs[i], text, err);
    const qkt__ab_key *k = qkt__ab_key_find(key);
    if (!k) return qkt_err_set(err, "'%s' is not a setting of the study", key);
    char *p = (char *)c + k->off, *end;
    errno = 0;
    switch (k->type) {
    case QKT__K_STR:
        if (strlen(text) >= k->size) return qkt_err_set(err, "%s: too long (at most %zu characters)", key, k->size - 1);
        snprintf(p, k->size, "%s", text);
        return 0;
    case QKT__K_INT: {
        long v = strtol(text, &end, 10);
        if (!*text || isspace((unsigned char)*text) || *end || errno || v < k->lo || v > k->hi)
            return qkt_err_set(err, "%s '%s': expected an integer in [%.0f, %.0f]", key, text, k->lo, k->hi);
        *(int *)p = (int)v;
        return 0;
    }
    case QKT__K_DBL: {
        double v = strtod(text, &end);
        if (!*text || isspace((unsigned char)*text) || *end || !isfinite(v) || (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) || v > k->hi)
            return qkt_err_set(err, "%s '%s': expected a number %s", key, text, k->lo_open ? "> 0" : "in [0, 1]");
        if (v != 0 && v < DBL_MIN) return qkt_err_set(err, "%s '%s': %s", key, text, k->lo_open ? SUBNORMAL : SUBNORMAL0);
        *(double *)p = v;
        return 0;
    }
    default: return set_list(c, k, text, err);
    }
}

/* ---------------------------------------------------------------- presets */
/* What both presets share. The main task is `induction` (T 32: 16 random tokens, repeated),
 * which 1/sqrt(d_k) models learn within the quick budget at d_k 16 and 64 while unscaled ones
 * take longer (docs/ablate.md, scripts/task_learnability.py); mqar stays on its plateau there.
 * init_std 0.08 rather than GPT-2's 0.02: at these widths (d_model
 * 16..512) 0.02 leaves q.k tiny for every variant and no model leaves mqar's plateau within
 * the budget (measured: docs/ablate.md); 0.08 is about PyTorch's default Linear init at
 * d_model 64. The variants are the six the study was sized around (the budgets below were
 * measured with them); cosine, sigma_reparam, power:ALPHA and a program's registered
 * variants join with --variants / --lr-variants. */
static const char *const preset_base =
    "task=induction seq_len=32 n_layer=2 n_head=2 batch_size=32 warmup=20 lr=3e-3 min_lr_frac=0.1 weight_decay=0.1 grad_clip=1 "
    "beta2=0.95 attn_temp=1 qk_init_mult=1 init_std=0.08 seed=1 workers=2 growth_steps=5 growth_lr=1e-3 "
    "variants=sqrt_dk,none,dk,sqrt_dmodel,learned,qk_layernorm"
    " final_eval_seqs=1024"; /* the verdicts' final losses: 1024 fixed sequences, not the periodic eval_batches x batch_size */

static const struct {
    const char *name, *settings;
} presets[] = {
    /* Sized for `make demo` (< 5 min on 2 cores): d_k 16 (small logits; at d_k 8, d_model 16, no
     * variant learns induction in 200 steps) and 64 (unscaled logit std
     * 8 at init with the unit W_q/W_k init), 10 seeds (an exact paired test's smallest p, 2/2^10,
     * stays below 0.05 after Holm's adjustment over up to 25 tests; 6 seeds' 1/32 cannot), batch 16; learned and sqrt_dmodel are left to the full preset (sqrt_dmodel
     * is measured at init). Cell costs: docs/performance.md, "The study's presets". Part 2c:
     * the smoothly learnt `recall` at d_k 8 and 64 (its d_k 8 cells are the cheap ones). The LR
     * grid goes up to where runs fail (docs/performance.md, "The study's presets"), evaluated
     * every 5 steps and at every step of the warmup (the high LRs fail within it) so the
     * logit growth can be timed against the loss rising (claim 6a); claim 7b (Zhai et al. 2023: preventing entropy
     * collapse stabilises) adds sigma_reparam to the LR sweep. */
    {"quick", "variants=sqrt_dk,none,dk,qk_layernorm lr_variants=sqrt_dk,none,dk,qk_layernorm,sigma_reparam qk_init=unit "
              "batch_size=16 steps=200 eval_every=20 eval_batches=4 d_k=16,64 seeds=10 task2=recall task2_d_k=8,64 "
              "lr_grid=3e-3,3e-2,0.3,0.6,1,3 lr_steps=150 lr_dk=16 lr_eval_every=5 lr_eval_dense=20 init_d_k=4,8,16,32,64,128,256,512 "
              "growth_d_k=8,16,32,64 start_d_k=64 task2_start_d_k=0 lr_seeds=1"},
    /* Every variant at d_k 8..128 x 10 seeds on the main task, the second task at d_k 16 and 64, 9 learning
     * rates at d_k 32; its cost: docs/performance.md, "The study's presets" (estimated), and
     * docs/ablate.md (measured). */
    {"full", "qk_init=unit steps=500 eval_every=25 eval_batches=8 d_k=8,16,32,64,128 seeds=10 task2=recall task2_d_k=16,64 "
             "lr_grid=1e-3,3e-3,1e-2,3e-2,0.1,0.3,0.6,1,3 lr_steps=300 lr_dk=32 lr_eval_every=5 lr_eval_dense=20 "
             "lr_variants=sqrt_dk,none,dk,sqrt_dmodel,learned,qk_layernorm,sigma_reparam init_d_k=4,8,16,32,64,128,256,512 "
             "growth_d_k=8,16,32,64,128,256 start_d_k=64 task2_start_d_k=64 lr_seeds=3"},
};

/* "key=value key=value ..." into c; a bad setting is a bug of the preset table. */
static void apply(qkt_ablate_cfg *c, const char *settings) {
    char buf[2048], *save = NULL;
    QKT_CHECK(strlen(settings) < sizeof buf, "preset settings too long");
    snprintf(buf, sizeof buf, "%s", settings);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        QKT_CHECK(eq != NULL, "preset setting '%s' has no '='", tok);
        *eq = 0;
        qkt_err err;
        QKT_CHECK(qkt_ablate_set(c, tok, eq + 1, &err) == 0, "preset: %s", err.msg);
    }
}

int qkt_ablate_preset(const char *name, qkt_ablate_cfg *c, qkt_err *err) {
    int p = -1;
    for (int i = 0; i < (int)(sizeof presets / sizeof *presets); i++)
        if (!strcmp(name, presets[i].name)) p = i;
    if (p < 0) return qkt_err_set(err, "--preset '%s': expected quick or full", name);
    memset(c, 0, sizeof *c);
    qkt_train_run_default(&c->run);
    snprintf(c->preset, sizeof c->preset, "%s", name);
    snprintf(c->name, sizeof c->name, "%s", name);
    apply(c, preset_base);
    apply(c, presets[p].settings);
    if (!c->lr_eval_every) c->lr_eval_every = c->run.eval_every;
    if (!c->lr_seeds) c->lr_seeds = 1;
    return 0;
}

/* ---------------------------------------------------------------- validation */
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

static int check_ints(const char *field, const int *v, int n, double lo, double hi, qkt_err *err) {
    if (n <= 0) return qkt_err_set(err, "%s: expected at least one value", field);
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > hi) return qkt_err_set(err, "%s: value %d out of range [%.0f, %.0f]", field, v[i], lo, hi);
    int r = qkt_ablate_list_repeat(v, NULL, NULL, n);
    if (r >= 0) return qkt_err_set(err, "%s: value %d is listed twice", field, v[r]);
    return 0;
}

/* Every key of config.json: the field table's (named by their key) with the study's
 * limits, then the study's own, then the checks between them. */
int qkt_ablate_validate(const qkt_ablate_cfg *c, qkt_err *err) {
    qkt_train_field fs[64];
    int nf = qkt_ablate_fields(fs, 64);
    for (int i = 0; i < nf; i++)
        if (qkt_train_field_check(qkt_train_field_ptr(&fs[i], (qkt_train_run *)&c->run), &fs[i], fs[i].name, err)) return -1;
    if (!c->name[0] || strchr(c->name, '/')) return qkt_err_set(err, "name '%s': expected a non-empty name without '/'", c->name);
    for (int i = 0; i < qkt__n_ab_keys; i++) {
        const qkt__ab_key *k = &qkt__ab_keys[i];
        const char *p = (const char *)c + k->off;
        const int n = k->n_off ? *(const int *)((const char *)c + k->n_off) : 0;
        if (k->type == QKT__K_INT && (*(const int *)p < k->lo || *(const int *)p > k->hi))
            return qkt_err_set(err, "%s %d: expected an integer in [%.0f, %.0f]", k->key, *(const int *)p, k->lo, k->hi);
        if (k->type == QKT__K_DBL) {
            double v = *(const double *)p;
            if (!isfinite(v) || (k->lo_open ? !(v > k->lo) : !(v >= k->lo)) || v > k->hi)
                return qkt_err_set(err, "%s %g: expected a number %s", k->key, v, k->lo_open ? "> 0" : "in [0, 1]");
            if (v != 0 && v < DBL_MIN) return qkt_err_set(err, "%s %g: %s", k->key, v, k->lo_open ? SUBNORMAL : SUBNORMAL0);
        }
        if (k->type == QKT__K_VARS && check_variants(k->key, (const qkt_attn_scale *)p, n, err)) return -1;
        if (k->type == QKT__K_INTS && (c->task2[0] || strcmp(k->key, "task2_d_k")) && (n || strcmp(k->key, "robust_seeds")) &&
            check_ints(k->key, (const int *)p, n, k->lo, k->hi, err))
            return -1;
        if (k->type == QKT__K_DBLS) {
            if (n < 1) return qkt_err_set(err, "%s: expected at least one learning rate", k->key);
            for (int j = 0; j < n; j++)
                if (!(((const double *)p)[j] > 0) || !isfinite(((const double *)p)[j]))
                    return qkt_err_set(err, "%s: %g is not a positive number", k->key, ((const double *)p)[j]);
                else if (((const double *)p)[j] < DBL_MIN)
                    return qkt_err_set(err, "%s: %g " SUBNORMAL, k->key, ((const double *)p)[j]);
            int r = qkt_ablate_list_repeat(NULL, (const double *)p, NULL, n);
            if (r >= 0) return qkt_err_set(err, "%s: %.17g is listed twice", k->key, ((const double *)p)[r]);
        }
    }
    for (int i = 0; i < c->n_robust_seeds; i++)
        if ((uint64_t)c->robust_seeds[i] == c->run.tc.seed)
            return qkt_err_set(err, "robust_seeds: %d is the study's own seed (a rerun needs another)", c->robust_seeds[i]);
    for (const char *q = c->robust_isa; *q; q++)
        if (!(*q >= 'a' && *q <= 'z') && !(*q >= '0' && *q <= '9'))
            return qkt_err_set(err, "robust_isa '%s': expected a kernel path's name (baseline, avx2, avx512)", c->robust_isa);
    if (c->run.tc.model.pos == QKT_POS_ROPE)
        for (int i = 0; i < c->n_dk; i++)
            if (c->dks[i] % 2) return qkt_err_set(err, "pos rope needs even key widths, d_k %d is odd", c->dks[i]);
    return 0;
}
