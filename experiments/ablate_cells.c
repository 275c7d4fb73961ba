/* The cells of the study: the plan, and running one cell (init, train, lr, growth). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ablate_internal.h"
#include "qkt_ablate.h"
#include "qkt_io.h"
#include "qkt_report.h"
#include "qkt_safetensors.h"
#include "qkt_study.h"
#include "qkt_sweep.h"
#include "qkt_trainer.h"

#define INIT_BATCH 4 /* rows for the at-init model measurements: B x T queries per head */

/* What a cell computed (cells/<id>.cost): training steps' and forward-only passes' FLOPs. */
typedef struct {
    double train, eval;
} cell_flops;
/* A step at the trainer's batch (forward and backward); a forward of `batch` sequences, a
 * third of a step's count (2 of its 6 flops per weight and token, 2 of 6 C T^2 of attention). */
static void count_step(cell_flops *f, const qkt_trainer *t) { f->train += qkt_train_step_flops(&t->cfg); }
static void count_forward(cell_flops *f, const qkt_trainer *t, int batch) {
    qkt_train_config c = t->cfg;
    c.batch_size = batch;
    f->eval += qkt_train_step_flops(&c) / 3;
}

const char *qkt_cell_kind_name(qkt_cell_kind k) {
    static const char *const n[] = {"init", "train", "lr", "growth", "iid", "train2", "start", "start2"};
    return k >= 0 && k <= QKT_CELL_START2 ? n[k] : "?";
}

double qkt_ablate_start_mult(qkt_attn_scale variant, int d_k) {
    return variant == QKT_ATTN_SQRT_DK ? pow(d_k, 0.25) : variant == QKT_ATTN_NONE ? pow(d_k, -0.25) : 1.0;
}

void qkt_cell_id(char *id, size_t n, qkt_cell_kind kind, qkt_attn_scale variant, int d_k, int seed, double lr) {
    int k = snprintf(id, n, "%s_%s_dk%d", qkt_cell_kind_name(kind), qkt_attn_scale_name(variant), d_k);
    if (k < 0 || (size_t)k >= n) return;
    if (kind == QKT_CELL_TRAIN || kind == QKT_CELL_TRAIN2 || kind == QKT_CELL_START || kind == QKT_CELL_START2)
        snprintf(id + k, n - (size_t)k, "_s%d", seed);
    else if (kind == QKT_CELL_LR && seed > 0) snprintf(id + k, n - (size_t)k, "_lr%g_s%d", lr, seed); /* seed 0 keeps the id of one-seed sweeps */
    else if (kind == QKT_CELL_LR) snprintf(id + k, n - (size_t)k, "_lr%g", lr);
}

static qkt_cell *add(qkt_cell **v, int *n, int *cap) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *v = qkt_realloc(*v, (size_t)*cap * sizeof **v);
    }
    qkt_cell *c = &(*v)[(*n)++];
    memset(c, 0, sizeof *c);
    return c;
}

int qkt_ablate_plan(const qkt_ablate_cfg *c, qkt_cell **out) {
    qkt_cell *v = NULL;
    int n = 0, cap = 0;
    /* Longest first: the sweep finishes sooner when big cells do not come last. */
    for (int s = 0; s < c->seeds; s++)
        for (int di = c->n_dk - 1; di >= 0; di--)
            for (int vi = 0; vi < c->n_variants; vi++) {
                qkt_cell *x = add(&v, &n, &cap);
                x->kind = QKT_CELL_TRAIN;
                x->variant = c->variants[vi];
                x->d_k = c->dks[di], x->seed = s, x->lr = c->run.tc.lr, x->steps = (int)c->run.tc.steps;
                x->maps = s == 0 && di == c->n_dk - 1 && !c->verdict_cells_only; /* a rerun draws no heatmaps */
                qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
            }
    for (int s = 0; s < c->seeds && c->task2[0]; s++) /* part 2c: the second task */
        for (int di = c->n_task2_dk - 1; di >= 0; di--)
            for (int vi = 0; vi < c->n_variants; vi++) {
                qkt_cell *x = add(&v, &n, &cap);
                x->kind = QKT_CELL_TRAIN2;
                x->variant = c->variants[vi];
                x->d_k = c->task2_dks[di], x->seed = s, x->lr = c->run.tc.lr, x->steps = (int)c->run.tc.steps;
                qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
            }
    /* the 2x2 (form x start): sqrt_dk and none from each other's start, beside their train cells */
    int forms = 0; /* bit 0: sqrt_dk is trained, bit 1: none */
    for (int i = 0; i < c->n_variants; i++) forms |= c->variants[i] == QKT_ATTN_SQRT_DK ? 1 : c->variants[i] == QKT_ATTN_NONE ? 2 : 0;
    const bool both = forms == 3;
    bool at[2] = {false, false}; /* the d_k of each task's 2x2 is one it trains */
    for (int i = 0; i < c->n_dk; i++) at[0] |= c->start_dk && c->dks[i] == c->start_dk;
    for (int i = 0; i < c->n_task2_dk && c->task2[0]; i++) at[1] |= c->task2_start_dk && c->task2_dks[i] == c->task2_start_dk;
    for (int t2 = 0; t2 < 2 && both; t2++)
        for (int s = 0; s < c->seeds && at[t2]; s++)
            for (int vi = 0; vi < 2; vi++) {
                qkt_cell *x = add(&v, &n, &cap);
                x->kind = t2 ? QKT_CELL_START2 : QKT_CELL_START;
                x->variant = vi ? QKT_ATTN_NONE : QKT_ATTN_SQRT_DK;
                x->d_k = t2 ? c->task2_start_dk : c->start_dk, x->seed = s, x->lr = c->run.tc.lr, x->steps = (int)c->run.tc.steps;
                qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
            }
    for (int s = 0; s < c->lr_seeds; s++)
        for (int li = 0; li < c->n_lr; li++)
            for (int vi = 0; vi < c->n_lr_variants; vi++) {
                qkt_cell *x = add(&v, &n, &cap);
                x->kind = QKT_CELL_LR;
                x->variant = c->lr_variants[vi];
                x->d_k = c->lr_dk, x->seed = s, x->lr = c->lrs[li], x->steps = c->lr_steps;
                qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
            }
    for (int di = c->n_init_dk - 1; di >= 0 && !c->verdict_cells_only; di--) /* part 1's GPT at init: no verdict reads it */
        for (int vi = 0; vi < QKT_STUDY_N_FIXED; vi++) {
            qkt_cell *x = add(&v, &n, &cap);
            x->kind = QKT_CELL_INIT;
            x->variant = qkt_study_fixed_scales[vi];
            x->d_k = c->init_dks[di], x->steps = 0;
            qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
        }
    for (int di = c->n_growth_dk - 1; di >= 0; di--)
        for (int vi = 0; vi < QKT_STUDY_N_GROWTH; vi++) {
            qkt_cell *x = add(&v, &n, &cap);
            x->kind = QKT_CELL_GROWTH;
            x->variant = qkt_study_growth_scales[vi];
            x->d_k = c->growth_dks[di], x->lr = c->growth_lr, x->steps = c->growth_steps;
            qkt_cell_id(x->id, sizeof x->id, x->kind, x->variant, x->d_k, x->seed, x->lr);
        }
    *out = v;
    return n;
}

/* ---------------------------------------------------------------- tidy CSV rows */
const char *const qkt_metrics_header = "run,experiment,variant,d_k,seed,lr,step,metric,layer,head,value\n";

/* One metrics.csv row (the columns of qkt_metrics_header). */
static void row(qkt_buf *b, const qkt_cell *c, long step, qkt_metric metric, int layer, int head, double value) {
    qkt_buf_printf(b, "%s,%s,%s,%d,%d,%.6g,%ld,%s,%d,%d,%.9g\n", c->id, qkt_cell_kind_name(c->kind),
                   qkt_attn_scale_name(c->variant), c->d_k, c->seed, c->lr, step, qkt_metric_name(metric), layer, head, value);
}

static void stats_rows(qkt_buf *b, const qkt_cell *c, long step, const qkt_attn_stats *st, int L, int H) {
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            const qkt_attn_stats *s = &st[l * H + h];
            row(b, c, step, QKT_METRIC_ENTROPY, l, h, s->entropy);
            row(b, c, step, QKT_METRIC_NORM_ENTROPY, l, h, s->norm_entropy);
            row(b, c, step, QKT_METRIC_MAX_WEIGHT, l, h, s->max_weight);
            row(b, c, step, QKT_METRIC_FRAC_PEAKED, l, h, s->frac_peaked);
            row(b, c, step, QKT_METRIC_JACOBIAN, l, h, s->jacobian_norm);
            row(b, c, step, QKT_METRIC_LOGIT_MAX, l, h, s->logit_max);
            row(b, c, step, QKT_METRIC_LOGIT_STD, l, h, s->logit_std);
        }
}

/* The study's model and training settings (c->run: the field table's) for one cell: its
 * width n_head x d_k, variant, data, steps and learning rate. */
int qkt_ablate_cell_trainer(const qkt_ablate_cfg *c, const qkt_cell *cell, qkt_trainer *t, qkt_err *err) {
    qkt_train_config tc = c->run.tc;
    tc.model.n_embd = tc.model.n_head * cell->d_k;
    tc.model.attn_scale = cell->variant;
    tc.data = cell->kind == QKT_CELL_TRAIN2 || cell->kind == QKT_CELL_START2 ? c->task2 : c->run.data;
    if (cell->kind == QKT_CELL_START || cell->kind == QKT_CELL_START2) tc.model.qk_init_mult *= qkt_ablate_start_mult(cell->variant, cell->d_k);
    if (cell->kind == QKT_CELL_INIT) tc.batch_size = INIT_BATCH;
    tc.steps = cell->steps > 0 ? cell->steps : 1;
    tc.lr = cell->lr > 0 ? cell->lr : c->run.tc.lr;
    tc.min_lr = tc.lr * c->min_lr_frac;
    tc.warmup_steps = c->run.tc.warmup_steps < tc.steps ? c->run.tc.warmup_steps : 0;
    tc.lr_decay_steps = tc.steps; /* each cell decays over its own steps */
    tc.seed = c->run.tc.seed + (uint64_t)cell->seed; /* variants share data and init draws per seed */
    if (cell->kind == QKT_CELL_GROWTH) { /* plain Adam steps at a fixed lr: the coordinate check */
        tc.schedule = QKT_SCHED_CONSTANT, tc.warmup_steps = 0, tc.weight_decay = 0, tc.grad_clip = 0;
    }
    if (qkt_trainer_init(t, &tc, err) != 0) return -1;
    /* one validation set for the whole study: the val stream of the study's seed, whatever the cell's */
    qkt_data_seed_split(t->data, QKT_SPLIT_VAL, c->run.tc.seed);
    return 0;
}

void qkt_cell_maps_path(const char *run_dir, const char *id, char *path, size_t n) {
    snprintf(path, n, "%s/cells/%s.attn.safetensors", run_dir, id);
}

void qkt__ablate_old_maps_path(const char *run_dir, const char *id, char *path, size_t n) {
    snprintf(path, n, "%s/cells/%s.maps", run_dir, id);
}

int qkt__ablate_maps_read(const char *run_dir, const char *id, const qkt_gpt_config *m, double **vals, int *L, int *H, int *T,
                          char *why, size_t why_n) {
    char path[1200];
    qkt_cell_maps_path(run_dir, id, path, sizeof path);
    if (vals) *vals = NULL;
    if (!qkt_file_exists(path)) return 1;
    qkt_safetensors st;
    qkt_err e;
    if (qkt_safetensors_read(path, &st, &e) != 0) return snprintf(why, why_n, "%s", e.msg), -1;
    const qkt_st_tensor *a = qkt_safetensors_find(&st, QKT_MAPS_INIT), *b = qkt_safetensors_find(&st, QKT_MAPS_FINAL);
    const char *owner = qkt_safetensors_meta(&st, "cell");
    bool ok = a && b && a->ndim == 4 && b->ndim == 4 && !memcmp(a->shape, b->shape, 4 * sizeof a->shape[0]);
    /* the run's L and H, T x T with T its sequence length (the cells' data is made at the
     * block size): a file of older qkt carries no checksums, so its shape is all that stands
     * between it and the drawing; a sealed one of another study with this cell's id too */
    ok = ok && a->shape[0] == m->n_layer && a->shape[1] == m->n_head && a->shape[2] == m->block_size &&
         a->shape[3] == m->block_size;
    int rc = 0;
    if (owner && strcmp(owner, id)) /* copied over this cell's: drawn, it would show another variant */
        rc = -1, snprintf(why, why_n, "%s: the maps of cell '%.100s', not of '%.100s'", path, owner, id);
    else if (!ok)
        rc = -1, snprintf(why, why_n, "%s: expected tensors %s and %s of the run's shape (L %d, H %d, T %d, T %d)", path,
                          QKT_MAPS_INIT, QKT_MAPS_FINAL, m->n_layer, m->n_head, m->block_size, m->block_size);
    if (!rc) {
        *L = (int)a->shape[0], *H = (int)a->shape[1], *T = (int)a->shape[2];
        int64_t per = a->numel;
        qkt_real *f = qkt_malloc(2 * (size_t)per * sizeof *f);
        rc = qkt_st_tensor_to_real(a, f, per, path, &e);
        if (!rc) rc = qkt_st_tensor_to_real(b, f + per, per, path, &e);
        if (rc) snprintf(why, why_n, "%s", e.msg);
        else if (vals) {
            *vals = qkt_malloc(2 * (size_t)per * sizeof **vals);
            for (int64_t i = 0; i < 2 * per; i++) (*vals)[i] = f[i];
        }
        free(f);
    }
    qkt_safetensors_free(&st);
    return rc;
}

int qkt_ablate_forget_bad_maps(const char *run_dir, const qkt_ablate_cfg *c, const qkt_cell *plan, int n, char *first,
                               size_t first_n, qkt_err *err) {
    int k = 0;
    if (first_n) first[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!plan[i].maps) continue;
        char csv[1024], maps[1024], why[1100], old[1024];
        qkt_cell_paths(run_dir, plan[i].id, csv, NULL, NULL, sizeof csv);
        qkt_cell_maps_path(run_dir, plan[i].id, maps, sizeof maps);
        /* a directory or FIFO there would fail the rerun's write after its csv went */
        if (qkt_check_replaceable(maps, err) != 0) {
            qkt_err tmp = *err;
            return qkt_err_set(err, "%s: remove it, then rerun", tmp.msg);
        }
        if (!qkt_cell_done_id(csv, plan[i].id, NULL, 0)) continue; /* runs anyway */
        int L, H, T, rc = qkt__ablate_maps_read(run_dir, plan[i].id, &c->run.tc.model, NULL, &L, &H, &T, why, sizeof why);
        if (rc == 0) continue;
        qkt__ablate_old_maps_path(run_dir, plan[i].id, old, sizeof old);
        if (rc == 1)
            snprintf(why, sizeof why, "%s is absent%s", maps, qkt_file_exists(old) ? " (the old .maps format is beside it)" : "");
        if (remove(csv) != 0) return qkt_err_set(err, "%s: cannot remove to rerun the cell: %s", csv, strerror(errno));
        if (rc == 1) remove(old); /* no qkt reads it: the rerun writes the maps anew */
        if (k++ == 0 && first_n) snprintf(first, first_n, "%s", why);
    }
    return k;
}

int qkt_ablate_forget_old_maps(const char *run_dir, const qkt_cell *plan, int n, qkt_err *err) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!plan[i].maps) continue;
        char csv[1024], maps[1024], old[1024];
        qkt_cell_paths(run_dir, plan[i].id, csv, NULL, NULL, sizeof csv);
        qkt_cell_maps_path(run_dir, plan[i].id, maps, sizeof maps);
        qkt__ablate_old_maps_path(run_dir, plan[i].id, old, sizeof old);
        if (!qkt_file_exists(csv) || qkt_file_exists(maps) || !qkt_file_exists(old)) continue;
        if (remove(csv) != 0) return qkt_err_set(err, "%s: cannot remove to rerun the cell: %s", csv, strerror(errno));
        k++;
    }
    return k;
}

/* init and fin: (L, H, T, T) probabilities, stored as F32 whatever qkt_real is. */
static int write_maps(const char *run_dir, const qkt_cell *cell, const qkt_real *init, const qkt_real *fin, int L, int H,
                      int T, qkt_err *err) {
    size_t n = (size_t)L * H * T * T;
    float *f = qkt_malloc(2 * n * sizeof *f);
    for (size_t i = 0; i < n; i++) f[i] = (float)init[i], f[n + i] = (float)fin[i];
    qkt_st_write t[2] = {{QKT_MAPS_INIT, QKT_ST_F32, 4, {L, H, T, T}, f}, {QKT_MAPS_FINAL, QKT_ST_F32, 4, {L, H, T, T}, f + n}};
    qkt_st_meta meta[1] = {{"cell", cell->id}};
    char path[1024];
    qkt_cell_maps_path(run_dir, cell->id, path, sizeof path);
    int rc = qkt_safetensors_write_checked(path, t, 2, meta, 1, err); /* a damaged map is seen, not drawn */
    free(f);
    return rc;
}

static void progress(const char *run_dir, const qkt_cell *cell, long step, long total, double loss) {
    char path[1024];
    qkt_cell_paths(run_dir, cell->id, NULL, NULL, path, sizeof path);
    /* O_NONBLOCK: a FIFO in its place (no reader) fails the open (ENXIO) instead of blocking;
     * the progress is a courtesy to the parent's status line */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f) fprintf(f, "%ld %ld %.6g\n", step, total, loss), fclose(f);
    else if (fd >= 0) close(fd);
}

/* The scaled logits of every layer on the first validation batch, in eval mode:
 * out is (L, B, H, T, T). The growth cell compares two such captures. */
static void logit_capture(qkt_trainer *t, qkt_real *out, cell_flops *fl) {
    const qkt_gpt_config *mc = &t->gpt.cfg;
    int B = t->cfg.batch_size, T = t->T, H = mc->n_head, L = mc->n_layer;
    qkt_data_reset(t->data, QKT_SPLIT_VAL);
    qkt_data_batch(t->data, QKT_SPLIT_VAL, B, t->idx, t->tgt, NULL);
    qkt_ctx_reset(&t->ctx);
    int mode = qkt_ctx_set_mode(&t->ctx, QKT_MODE_EVAL);
    qkt_attn_capture *cap = qkt_arena_calloc(&t->ctx.arena, (size_t)L * sizeof *cap);
    for (int l = 0; l < L; l++) cap[l].logits = out + (size_t)l * B * H * T * T;
    qkt_gpt_opts o = {.capture = cap};
    qkt_gpt_forward(&t->ctx, &t->gpt, t->idx, NULL, B, T, NULL, &o);
    count_forward(fl, t, B);
    qkt_ctx_set_mode(&t->ctx, mode);
}

/* dL/dz at the softmax input (z = the scaled logits), on the first validation batch in grad
 * mode (no dropout, no state advanced): a zero (B, H, T, T) probe per layer is added to the
 * logits as the attention bias, so backward leaves dL/dz in its grad. Returns the norm over
 * every layer's entries (blocked entries get 0); the model's grads are zeroed again after. */
static double logit_grad_norm(qkt_trainer *t) {
    const qkt_gpt_config *mc = &t->gpt.cfg;
    int B = t->cfg.batch_size, T = t->T, H = mc->n_head, L = mc->n_layer;
    qkt_params probe;
    qkt_params_init(&probe);
    qkt_tensor **dz = qkt_malloc((size_t)L * sizeof *dz);
    for (int l = 0; l < L; l++) {
        char name[32];
        snprintf(name, sizeof name, "dz.%d", l);
        dz[l] = qkt_params_add(&probe, name, 4, (int[]){B, H, T, T}, 0);
    }
    qkt_params_finalize(&probe);
    qkt_data_reset(t->data, QKT_SPLIT_VAL);
    qkt_data_batch(t->data, QKT_SPLIT_VAL, B, t->idx, t->tgt, NULL);
    qkt_ctx_reset(&t->ctx);
    int mode = qkt_ctx_set_mode(&t->ctx, QKT_MODE_GRAD);
    qkt_attn_capture *cap = qkt_arena_calloc(&t->ctx.arena, (size_t)L * sizeof *cap);
    for (int l = 0; l < L; l++) cap[l].dz = dz[l];
    qkt_gpt_opts o = {.capture = cap, .hold_state = true};
    qkt_tensor *loss = qkt_gpt_forward(&t->ctx, &t->gpt, t->idx, t->tgt, B, T, NULL, &o);
    qkt_backward(&t->ctx, loss, NULL);
    double s = 0;
    for (int64_t i = 0; i < probe.size; i++) s += (double)probe.grad[i] * probe.grad[i];
    qkt_ctx_set_mode(&t->ctx, mode);
    qkt_ctx_reset(&t->ctx);
    qkt_params_zero_grad(&t->gpt.params);
    free(dz);
    qkt_params_free(&probe);
    return sqrt(s);
}

/* At init: validation loss and attention stats, then the gradients of one step, without
 * its update (nothing reads it: the cell ends here). */
static void run_init(qkt_trainer *t, const qkt_cell *cell, qkt_attn_stats *st, qkt_buf *b, cell_flops *fl) {
    const int L = t->gpt.cfg.n_layer, H = t->gpt.cfg.n_head;
    qkt_eval ev = {.heads = st};
    qkt_step_stats ss;
    qkt_trainer_eval(t, 2, INIT_BATCH, &ev);
    count_forward(fl, t, 2 * INIT_BATCH);
    row(b, cell, 0, QKT_METRIC_VAL_LOSS, -1, -1, ev.loss);
    stats_rows(b, cell, 0, st, L, H);
    qkt_trainer_grads(t, &ss);
    count_step(fl, t);
    row(b, cell, 0, QKT_METRIC_GRAD_NORM_WQ, -1, -1, ss.grad_norm_wq);
    row(b, cell, 0, QKT_METRIC_GRAD_NORM_WK, -1, -1, ss.grad_norm_wk);
    row(b, cell, 0, QKT_METRIC_GRAD_NORM, -1, -1, ss.grad_norm);
}

/* The muP coordinate check: per layer, rms(z1 - z0) and rms(z0) over the visible
 * scaled logits of a fixed batch, before (z0) and after (z1) cell->steps Adam steps. */
static void run_growth(qkt_trainer *t, const qkt_cell *cell, qkt_buf *b, cell_flops *fl) {
    const int L = t->gpt.cfg.n_layer, H = t->gpt.cfg.n_head, T = t->T;
    const size_t per = (size_t)t->cfg.batch_size * H * T * T, n = (size_t)L * per;
    qkt_real *z0 = qkt_malloc(n * sizeof *z0), *z1 = qkt_malloc(n * sizeof *z1);
    qkt_step_stats ss;
    logit_capture(t, z0, fl);
    for (int s = 0; s < cell->steps; s++) qkt_trainer_step(t, &ss), count_step(fl, t);
    logit_capture(t, z1, fl);
    for (int l = 0; l < L; l++) {
        double d2 = 0, z2 = 0;
        int64_t cnt = 0;
        for (size_t i = (size_t)l * per; i < (size_t)(l + 1) * per; i++) {
            double a = z0[i], bb = z1[i];
            if (!isfinite(a) || !isfinite(bb)) continue; /* blocked entries are -inf */
            d2 += (bb - a) * (bb - a), z2 += a * a, cnt++;
        }
        row(b, cell, cell->steps, QKT_METRIC_LOGIT_DELTA_RMS, l, -1, sqrt(d2 / (double)cnt));
        row(b, cell, 0, QKT_METRIC_LOGIT_RMS, l, -1, sqrt(z2 / (double)cnt));
    }
    free(z0);
    free(z1);
}

/* Training (train and lr cells): evaluations every eval_every steps (lr cells: lr_eval_every,
 * and every step up to lr_eval_dense) and after the last,
 * per-step loss, lr and gradient norms; a non-finite step ends the run as a result. */
static void run_train(const char *run_dir, const qkt_ablate_cfg *c, qkt_trainer *t, const qkt_cell *cell,
                      qkt_attn_stats *st, qkt_buf *b, cell_flops *fl) {
    const int L = t->gpt.cfg.n_layer, H = t->gpt.cfg.n_head;
    qkt_eval ev = {.heads = st};
    qkt_step_stats ss;
    long diverged = -1;
    for (long s = 0; s <= cell->steps; s++) {
        bool lr = cell->kind == QKT_CELL_LR;
        int every = lr ? c->lr_eval_every : c->run.eval_every;
        if (s % every == 0 || s == cell->steps || (lr && s <= c->lr_eval_dense)) {
            /* the periodic evaluations: eval_batches batches; the final one: final_eval_seqs sequences */
            int64_t n = s == cell->steps ? c->final_eval_seqs : (int64_t)c->run.eval_batches * c->run.tc.batch_size;
            qkt_trainer_eval_seqs(t, n, c->run.tc.batch_size, &ev);
            count_forward(fl, t, (int)n);
            row(b, cell, s, QKT_METRIC_VAL_LOSS, -1, -1, ev.loss);
            row(b, cell, s, QKT_METRIC_VAL_ACC, -1, -1, ev.acc);
            if (s == cell->steps) row(b, cell, s, QKT_METRIC_VAL_SEQS, -1, -1, (double)n);
            stats_rows(b, cell, s, st, L, H);
            if (s == 0 && cell->kind != QKT_CELL_LR) row(b, cell, 0, QKT_METRIC_GRAD_LOGITS, -1, -1, logit_grad_norm(t));
        }
        if (s == cell->steps) break;
        qkt_trainer_step(t, &ss);
        count_step(fl, t);
        row(b, cell, s, QKT_METRIC_TRAIN_LOSS, -1, -1, ss.loss);
        row(b, cell, s, QKT_METRIC_LR, -1, -1, ss.lr);
        row(b, cell, s, QKT_METRIC_GRAD_NORM, -1, -1, ss.grad_norm);
        row(b, cell, s, QKT_METRIC_GRAD_NORM_WQ, -1, -1, ss.grad_norm_wq);
        row(b, cell, s, QKT_METRIC_GRAD_NORM_WK, -1, -1, ss.grad_norm_wk);
        if (!ss.finite) { /* a result, not an error: record where it happened and stop */
            diverged = s;
            break;
        }
        if (s % 10 == 0) progress(run_dir, cell, s, cell->steps, ss.loss);
    }
    row(b, cell, diverged >= 0 ? diverged : cell->steps, QKT_METRIC_DIVERGED_STEP, -1, -1, (double)diverged);
}

/* The process's CPU seconds (all threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int qkt_ablate_run_cell(const char *run_dir, const qkt_ablate_cfg *c, const qkt_cell *cell, qkt_err *err) {
    const double cpu0 = cpu_now();
    cell_flops fl = {0, 0};
    qkt_trainer t;
    if (qkt_ablate_cell_trainer(c, cell, &t, err) != 0) return -1;
    const int L = t.gpt.cfg.n_layer, H = t.gpt.cfg.n_head, T = t.T;
    qkt_buf b = {0};
    qkt_attn_stats *st = qkt_calloc((size_t)L * H, sizeof *st);
    int rc = 0;
    if (cell->kind == QKT_CELL_INIT) {
        run_init(&t, cell, st, &b, &fl);
    } else if (cell->kind == QKT_CELL_GROWTH) {
        run_growth(&t, cell, &b, &fl);
    } else if (!cell->maps) {
        run_train(run_dir, c, &t, cell, st, &b, &fl);
    } else { /* the same, with the attention maps before and after */
        size_t nm = (size_t)L * H * T * T;
        qkt_real *map0 = qkt_malloc(nm * sizeof *map0), *map1 = qkt_malloc(nm * sizeof *map1);
        qkt_trainer_attention_map(&t, map0);
        count_forward(&fl, &t, 1);
        run_train(run_dir, c, &t, cell, st, &b, &fl);
        qkt_trainer_attention_map(&t, map1);
        count_forward(&fl, &t, 1);
        rc = write_maps(run_dir, cell, map0, map1, L, H, T, err);
        free(map0);
        free(map1);
    }
    if (!rc) { /* the csv last: its existence marks the cell done */
        char path[1024];
        qkt_cell_paths(run_dir, cell->id, path, NULL, NULL, sizeof path);
        qkt_cell_seal(&b);
        rc = qkt__ablate_write_cost(run_dir, cell->id, fl.train, fl.eval, cpu_now() - cpu0, err); /* before the csv */
        if (!rc) rc = qkt_write_atomic(path, b.s, b.n, err);
    }
    free(st);
    qkt_buf_free(&b);
    qkt_trainer_free(&t);
    return rc;
}

int qkt_ablate_init_iid(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err) {
    qkt_init_opts o = {c->init_dks, c->n_init_dk, qkt_study_fixed_scales, QKT_STUDY_N_FIXED, QKT_IID_BATCH, c->run.tc.model.block_size,
                       c->run.tc.model.n_head, c->run.tc.seed};
    qkt_init_row *rows = qkt_calloc((size_t)c->n_init_dk * QKT_STUDY_N_FIXED, sizeof *rows);
    int n = qkt_init_study_iid(&o, rows);
    qkt_buf b = {0};
    for (int i = 0; i < n; i++) {
        qkt_init_row *r = &rows[i];
        qkt_cell cell = {.kind = QKT_CELL_IID, .variant = r->variant, .d_k = r->d_k, .seed = 0, .lr = 0};
        qkt_cell_id(cell.id, sizeof cell.id, cell.kind, cell.variant, cell.d_k, cell.seed, cell.lr);
        row(&b, &cell, 0, QKT_METRIC_IID_RAW_LOGIT_STD, -1, -1, r->raw_logit_std);
        row(&b, &cell, 0, QKT_METRIC_IID_LOGIT_STD, -1, -1, r->logit_std);
        row(&b, &cell, 0, QKT_METRIC_IID_ENTROPY, -1, -1, r->entropy);
        row(&b, &cell, 0, QKT_METRIC_IID_NORM_ENTROPY, -1, -1, r->norm_entropy);
        row(&b, &cell, 0, QKT_METRIC_IID_MAX_WEIGHT, -1, -1, r->max_weight);
        row(&b, &cell, 0, QKT_METRIC_IID_FRAC_PEAKED, -1, -1, r->frac_peaked);
        row(&b, &cell, 0, QKT_METRIC_IID_JACOBIAN, -1, -1, r->jacobian_norm);
        row(&b, &cell, 0, QKT_METRIC_IID_GRAD_Q_RMS, -1, -1, r->grad_q_rms);
        row(&b, &cell, 0, QKT_METRIC_IID_RANK_CHANGED, -1, -1, r->rank_changed);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/cells/init_iid.csv", run_dir);
    qkt_cell_seal(&b);
    int rc = qkt_write_atomic(path, b.s, b.n, err);
    qkt_buf_free(&b);
    free(rows);
    return rc;
}
