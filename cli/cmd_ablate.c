/* qkt ablate: the sqrt(d_k) study (flags -> config -> sweep of cells -> report). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "qkt_ablate.h"
#include "qkt_cli.h"
#include "qkt_data.h"
#include "qkt_flags.h"
#include "qkt_io.h"
#include "qkt_study.h"
#include "qkt_sweep.h"

/* "16,64" -> ints in [1, hi] (or positive numbers, or scale variants); -1 with a
 * message naming the flag. The ranges are qkt_ablate_validate's, so that a bad list
 * is reported by its flag rather than by its config.json field. */
static int parse_list(const char *flag, const char *s, int hi, int *ints, double *dbls, qkt_attn_scale *vars, int *n) {
    char buf[1024];
    if (strlen(s) >= sizeof buf) return fprintf(stderr, "qkt ablate: --%s: list too long\n", flag), -1;
    snprintf(buf, sizeof buf, "%s", s);
    /* clear the whole list so a shorter override leaves no stale values (configs are compared) */
    if (vars) memset(vars, 0, QKT_AB_MAX_LIST * sizeof *vars);
    if (ints) memset(ints, 0, QKT_AB_MAX_LIST * sizeof *ints);
    if (dbls) memset(dbls, 0, QKT_AB_MAX_LIST * sizeof *dbls);
    int k = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (k == QKT_AB_MAX_LIST) return fprintf(stderr, "qkt ablate: --%s: at most %d values\n", flag, QKT_AB_MAX_LIST), -1;
        char *end;
        if (vars) {
            char field[64];
            qkt_err err;
            snprintf(field, sizeof field, "--%s", flag);
            if (qkt_ablate_parse_variant(field, tok, &vars[k], &err)) return fprintf(stderr, "qkt ablate: %s\n", err.msg), -1;
        } else if (ints) {
            long v = strtol(tok, &end, 10);
            if (!*tok || *end || v <= 0 || v > hi)
                return fprintf(stderr, "qkt ablate: --%s '%s': expected a comma-separated list of integers in [1, %d]\n", flag, s, hi), -1;
            ints[k] = (int)v;
        } else {
            double v = strtod(tok, &end);
            if (*end || !(v > 0) || !isfinite(v))
                return fprintf(stderr, "qkt ablate: --%s '%s': expected a comma-separated list of positive numbers\n", flag, s), -1;
            dbls[k] = v;
        }
        k++;
    }
    if (!k) return fprintf(stderr, "qkt ablate: --%s: expected at least one value\n", flag), -1;
    *n = k;
    return 0;
}

static int self_exe(char *buf, size_t n) {
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) return -1;
    buf[k] = 0;
    return 0;
}

int qkt_cmd_ablate(int argc, char **argv) {
    const char *preset = "quick", *name = NULL, *out = "runs", *task = NULL, *variants = NULL, *dks = NULL, *lr_grid = NULL;
    const char *lr_variants = NULL, *init_dks = NULL, *growth_dks = NULL;
    int seq_len = 0, seeds = 0, steps = 0, lr_steps = 0, lr_dk = 0, n_layer = 0, n_head = 0, batch = 0, eval_every = 0, workers = 0;
    double lr = 0, qk_mult = 0, temp = 0, init_std = 0;
    uint64_t seed = 0;
    bool report_only = false;
    char names[256], variants_help[320];
    snprintf(variants_help, sizeof variants_help, "scale variants to train, comma-separated: %s",
             qkt_study_variant_list(names, sizeof names));
    qkt_flag flags[] = {
        {"preset", QKT_FLAG_STRING, &preset, "quick (minutes on 2 cores) or full", 1, 0, false, false},
        {"name", QKT_FLAG_STRING, &name, "run name: results go to OUT/NAME (default: the preset)", 1, 0, false, false},
        {"out", QKT_FLAG_STRING, &out, "directory holding runs", 1, 0, false, false},
        {"task", QKT_FLAG_STRING, &task, "data spec of the synthetic task (default mqar)", 1, 0, false, false},
        {"seq-len", QKT_FLAG_INT, &seq_len, "sequence length T (= block size)", 2, 4096, true, false},
        {"variants", QKT_FLAG_STRING, &variants, variants_help, 1, 0, false, false},
        {"d-k", QKT_FLAG_STRING, &dks, "key widths d_k to train, comma-separated", 1, 0, false, false},
        {"seeds", QKT_FLAG_INT, &seeds, "seeds per training cell", 1, 100, true, false},
        {"steps", QKT_FLAG_INT, &steps, "training steps per cell", 1, 1e8, true, false},
        {"lr", QKT_FLAG_DOUBLE, &lr, "learning rate of the training ablation", 1, 0, true, false},
        {"lr-grid", QKT_FLAG_STRING, &lr_grid, "learning rates of the sensitivity sweep, comma-separated", 1, 0, false, false},
        {"lr-variants", QKT_FLAG_STRING, &lr_variants, "variants of the sensitivity sweep (as --variants)", 1, 0, false, false},
        {"lr-steps", QKT_FLAG_INT, &lr_steps, "steps per sensitivity run", 1, 1e8, true, false},
        {"lr-d-k", QKT_FLAG_INT, &lr_dk, "d_k of the sensitivity sweep", 1, 1024, true, false},
        {"init-d-k", QKT_FLAG_STRING, &init_dks, "d_k values measured at init", 1, 0, false, false},
        {"growth-d-k", QKT_FLAG_STRING, &growth_dks, "d_k values of the logit-growth check", 1, 0, false, false},
        {"n-layer", QKT_FLAG_INT, &n_layer, "layers", 1, 64, true, false},
        {"n-head", QKT_FLAG_INT, &n_head, "heads (d_model = n_head * d_k)", 1, 64, true, false},
        {"batch-size", QKT_FLAG_INT, &batch, "batch size", 1, 1 << 16, true, false},
        {"eval-every", QKT_FLAG_INT, &eval_every, "steps between evaluations", 1, 1e8, true, false},
        {"qk-init-mult", QKT_FLAG_DOUBLE, &qk_mult, "multiplier on the W_q, W_k init std", 1, 0, true, false},
        {"init-std", QKT_FLAG_DOUBLE, &init_std, "std of the weight init (GPT-2: 0.02)", 1, 0, true, false},
        {"attn-temp", QKT_FLAG_DOUBLE, &temp, "fixed multiplier on every variant's logits", 1, 0, true, false},
        {"seed", QKT_FLAG_U64, &seed, "base seed", 1, 0, false, false},
        {"workers", QKT_FLAG_INT, &workers, "cells run side by side (default: cores)", 1, 256, true, false},
        {"report-only", QKT_FLAG_BOOL, &report_only, "only rebuild the report from finished cells", 1, 0, false, false},
    };
    int nf = (int)(sizeof flags / sizeof flags[0]);
    int rc = qkt_flags_parse("ablate", "The sqrt(d_k) study: init measurements, training ablation, LR sensitivity, logit growth.\n"
                                       "Unset flags take the preset's values. Writes OUT/NAME/{config.json,metrics.csv,summary.csv,*.png,report.md};\n"
                                       "rerunning the same command resumes (finished cells are kept).",
                             flags, nf, argc, argv, NULL, 0, NULL);
    if (rc) return rc == 1 ? 0 : 2;
    qkt_ablate_cfg c;
    qkt_err err;
    if (qkt_ablate_preset(preset, &c, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    if (name && (strchr(name, '/') || strlen(name) >= sizeof c.name))
        return fprintf(stderr, "qkt ablate: --name '%s': expected a name without '/' of at most %zu characters\n", name, sizeof c.name - 1), 2;
    if (task && strlen(task) >= sizeof c.task) return fprintf(stderr, "qkt ablate: --task: spec too long (at most %zu characters)\n", sizeof c.task - 1), 2;
    if (name) snprintf(c.name, sizeof c.name, "%s", name);
    if (task) snprintf(c.task, sizeof c.task, "%s", task);
    if (variants && parse_list("variants", variants, 0, NULL, NULL, c.variants, &c.n_variants)) return 2;
    if (lr_variants && parse_list("lr-variants", lr_variants, 0, NULL, NULL, c.lr_variants, &c.n_lr_variants)) return 2;
    if (dks && parse_list("d-k", dks, 1024, c.dks, NULL, NULL, &c.n_dk)) return 2;
    if (init_dks && parse_list("init-d-k", init_dks, 4096, c.init_dks, NULL, NULL, &c.n_init_dk)) return 2;
    if (growth_dks && parse_list("growth-d-k", growth_dks, 1024, c.growth_dks, NULL, NULL, &c.n_growth_dk)) return 2;
    if (lr_grid && parse_list("lr-grid", lr_grid, 0, NULL, c.lrs, NULL, &c.n_lr)) return 2;
    if (seq_len) c.seq_len = seq_len;
    if (seeds) c.seeds = seeds;
    if (steps) c.steps = steps;
    if (lr > 0) c.lr = lr;
    if (lr_steps) c.lr_steps = lr_steps;
    if (lr_dk) c.lr_dk = lr_dk;
    if (n_layer) c.n_layer = n_layer;
    if (n_head) c.n_head = n_head;
    if (batch) c.batch_size = batch;
    if (eval_every) c.eval_every = eval_every;
    if (qk_mult > 0) c.qk_init_mult = qk_mult;
    if (init_std > 0) c.init_std = init_std;
    if (temp > 0) c.attn_temp = temp;
    if (qkt_flag_seen(flags, nf, "seed")) c.seed = seed;
    c.workers = workers ? workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (c.workers < 1) c.workers = 1;
    if (qkt_ablate_validate(&c, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
    /* The task must open before any work (the cells would all fail otherwise). */
    qkt_data *probe;
    qkt_data_opts dop = {.seq_len = c.seq_len, .seed = c.seed};
    if (qkt_data_open(&probe, c.task, &dop, &err) != 0) return fprintf(stderr, "qkt ablate: --task: %s\n", err.msg), 2;
    qkt_data_free(probe);
    /* The command as typed, minus --workers (a machine setting, not part of the study). */
    size_t k = (size_t)snprintf(c.command, sizeof c.command, "qkt ablate");
    for (int i = 1; i < argc && k < sizeof c.command; i++) {
        if (!strcmp(argv[i], "--workers")) { i++; continue; }
        if (!strncmp(argv[i], "--workers=", 10)) continue;
        k += (size_t)snprintf(c.command + k, sizeof c.command - k, " %s", argv[i]);
    }

    char dir[1024], cfgpath[1100];
    snprintf(dir, sizeof dir, "%s/%s", out, c.name);
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    if (qkt_file_exists(cfgpath)) {
        /* Resume only the same study: compare with the saved config (workers may differ). */
        qkt_ablate_cfg old;
        if (qkt_ablate_load_config(dir, &old, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 2;
        old.workers = c.workers;
        memcpy(old.command, c.command, sizeof c.command);
        char *a = qkt_ablate_config_json(&old), *b = qkt_ablate_config_json(&c);
        bool same = !strcmp(a, b);
        free(a), free(b);
        if (!same) {
            fprintf(stderr, "qkt ablate: %s holds a run with a different configuration; use --name NEW or remove it\n", dir);
            return 2;
        }
        fprintf(stderr, "qkt ablate: resuming %s (finished cells are kept)\n", dir);
    }
    if (qkt_mkdirs(dir, &err) != 0 || qkt_ablate_save_config(dir, &c, &err) != 0) /* before any work, like a bad flag */
        return fprintf(stderr, "qkt ablate: --out %s: %s\n", out, err.msg), 2;
    if (qkt_ablate_load_config(dir, &c, &err) != 0) /* what the cells will see */
        return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
    time_t t0 = time(NULL);
    if (!report_only) {
        char cells[1100];
        snprintf(cells, sizeof cells, "%s/cells", dir);
        if (qkt_mkdirs(cells, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
        fprintf(stderr, "qkt ablate: part 1, attention at init with iid q and k (%d d_k values)\n", c.n_init_dk);
        if (qkt_ablate_init_iid(dir, &c, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
        qkt_cell *plan;
        int n = qkt_ablate_plan(&c, &plan);
        const char **ids = malloc((size_t)n * sizeof *ids);
        double *w = malloc((size_t)n * sizeof *w);
        for (int i = 0; i < n; i++) {
            ids[i] = plan[i].id;
            /* cost ~ steps x width^2 (for the ETA only) */
            double width = (double)c.n_head * plan[i].d_k;
            w[i] = (plan[i].steps + 2.0) * (width * width + 64.0 * c.seq_len * width) / 1e6;
        }
        int stale = qkt_ablate_forget_old_maps(dir, plan, n, &err);
        if (stale < 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
        if (stale) fprintf(stderr, "qkt ablate: %d cells kept attention maps in the old .maps format: rerunning them\n", stale);
        char exe[1024];
        if (self_exe(exe, sizeof exe) != 0) return fprintf(stderr, "qkt ablate: cannot find the qkt program (/proc/self/exe)\n"), 1;
        fprintf(stderr, "qkt ablate: parts 1-4, %d cells (init %d d_k x %d variants, train %d variants x %d d_k x %d seeds, "
                        "lr %d x %d, growth %d x %d), %d side by side with one thread each\n",
                n, c.n_init_dk, QKT_STUDY_N_FIXED, c.n_variants, c.n_dk, c.seeds, c.n_lr_variants, c.n_lr, c.n_growth_dk,
                QKT_STUDY_N_GROWTH, c.workers);
        qkt_sweep s = {exe, dir, c.workers, n, ids, w, true};
        qkt_sweep_result res;
        rc = qkt_sweep_run(&s, &res, &err);
        free(ids);
        free(w);
        free(plan);
        if (rc != 0) {
            fprintf(stderr, "qkt ablate: %s; rerun the same command to retry them\n", err.msg);
            return 1;
        }
    }
    if (qkt_ablate_report(dir, &err) != 0) return fprintf(stderr, "qkt ablate: %s\n", err.msg), 1;
    fprintf(stderr, "qkt ablate: done in %.0f s: %s/report.md\n", difftime(time(NULL), t0), dir);
    printf("%s/report.md\n", dir);
    return 0;
}
