/* `qkt ablate`: the sqrt(d_k) study. A run directory holds config.json (everything
 * needed to rerun), cells/ (one result file per sweep cell, so sweeps resume),
 * metrics.csv (tidy: one row per run, step, metric, layer, head), summary.csv, PNG
 * plots and report.md. */
#ifndef QKT_ABLATE_H
#define QKT_ABLATE_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qkt_autograd.h"
#include "qkt_nn.h" /* qkt_attn_scale: the variants */
#include "qkt_train_fields.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QKT_AB_MAX_LIST 16
#define QKT_AB_MAX_LR_SEEDS 20 /* lr_seeds' limit */
#define QKT_AB_NAME 64 /* longest variant name in config.json, with its NUL */
/* Sequences of iid q, k per d_k in part 1: 64 x T queries, enough for the std to within ~1 %. */
#define QKT_IID_BATCH 64

typedef struct qkt_ablate_cfg {
    /* The model and training settings of every trained cell, as the field table
     * (qkt_train_fields.h) describes them; config.json holds its fields with an `ab` key:
     * run.data is the task ("task"), tc.model.block_size the sequence length T ("seq_len"),
     * tc.warmup_steps the warmup ("warmup"), tc.seed the base seed; each cell sets n_embd =
     * n_head x d_k, the variant, the steps and the lr. */
    qkt_train_run run;
    char name[64];
    char preset[16];
    /* part 2c: a second task trained like part 2 (same variants, seeds, steps) at the d_k values
     * task2_dks, as experiment "train2"; "" = none. config.json "task2" and "task2_d_k", missing =
     * none (runs made before them). */
    char task2[256];
    int n_task2_dk;
    int task2_dks[QKT_AB_MAX_LIST];
    double min_lr_frac;       /* the cosine floor as a fraction of the lr */
    int n_variants;
    qkt_attn_scale variants[QKT_AB_MAX_LIST]; /* config.json: their names */
    int n_dk;
    int dks[QKT_AB_MAX_LIST];
    int seeds;                /* seeds 0 .. seeds-1 (offset by run.tc.seed) */
    /* The 2x2 of scale form x logit scale at the start (claims 4 and 9): at start_dk (one of
     * d_k, 0 = none), sqrt_dk and none are also trained from each other's starting logit
     * scale (qk_init_mult x qkt_ablate_start_mult) as experiment "start", same seeds and steps
     * as part 2; at task2_start_dk (one of task2_d_k, 0 = none) on the second task as "start2".
     * A value that is not one of the task's d_k plans no cells (the report says so).
     * config.json "start_d_k", "task2_start_d_k", missing = 0. */
    int start_dk, task2_start_dk;
    /* part 3: learning-rate sensitivity */
    int n_lr;
    double lrs[QKT_AB_MAX_LIST];
    int lr_steps, lr_dk;
    int lr_seeds;             /* seeds per (variant, LR): 0 .. lr_seeds-1; config.json "lr_seeds", missing = 1 */
    /* the final evaluation of every training cell (train, train2, start, start2, lr): this many
     * validation sequences, the same for every cell (drawn with the study's seed, not the
     * cell's); the periodic evaluations are the first eval_batches x batch_size of them.
     * config.json "final_eval_seqs", missing = eval_batches x batch_size */
    int final_eval_seqs;
    int lr_eval_every;        /* evaluations of the LR runs (claims 6-7 time the logit growth against the loss
                               * rising); config.json "lr_eval_every", missing = eval_every */
    int lr_eval_dense;        /* ... and at every step 1 .. lr_eval_dense (high LRs fail within the first
                               * steps: "before the rise" needs evaluations there); config.json
                               * "lr_eval_dense", left out when 0, missing = 0 */
    int n_lr_variants;
    qkt_attn_scale lr_variants[QKT_AB_MAX_LIST];
    /* part 1: init */
    int n_init_dk;
    int init_dks[QKT_AB_MAX_LIST];
    /* part 4: logit growth under Adam */
    int n_growth_dk;
    int growth_dks[QKT_AB_MAX_LIST];
    int growth_steps;
    double growth_lr;
    int workers;
    char command[1024];       /* the command line that made the run (for the report) */
    /* Robustness reruns (qkt_ablate_rerun): the verdict-carrying cells again with each study
     * seed of robust_seeds (config.json "robust_seeds", missing or empty = none) and on the
     * kernel path robust_isa (QKT_ISA in the cells' environment; "robust_isa", "" = none);
     * the findings table says per verdict whether it held. verdict_cells_only: this is such a
     * rerun, which plans only the cells a verdict reads (no GPT-at-init cells, no attention
     * maps; "verdict_cells_only", missing = 0). The three keys are left out of config.json
     * when unset, so a study without reruns keeps its config.json. */
    int n_robust_seeds;
    int robust_seeds[QKT_AB_MAX_LIST];
    char robust_isa[16];
    int verdict_cells_only;
} qkt_ablate_cfg;

/* Presets: "quick" (the default, minutes on 2 cores) and "full" (settings as data,
 * ablate_config.c). -1 if unknown. */
int qkt_ablate_preset(const char *name, qkt_ablate_cfg *c, qkt_err *err);
/* One setting by its config.json key ("seq_len", "d_k", "variants", "task2", ...) from
 * text ("64", "8,64", "sqrt_dk,none"): 0, or -1 with one line starting with the key. */
int qkt_ablate_set(qkt_ablate_cfg *c, const char *key, const char *text, qkt_err *err);
/* The field table's rows that config.json holds, in its order, as the study sees them:
 * name = the config.json key, flag = `qkt ablate`'s spelling ("seq-len"), bounds = the
 * study's limits. Returns the count (at most cap). */
int qkt_ablate_fields(qkt_train_field *out, int cap);
/* A variant's name -> enum; an unknown name is -1 with "<field>: unknown variant 'x'
 * (expected sqrt_dk, none, ...)" (field: a flag or a config.json key). */
int qkt_ablate_parse_variant(const char *field, const char *name, qkt_attn_scale *out, qkt_err *err);
/* The index of the first value of a list of n (ints, reals or variants: the one non-NULL)
 * equal to an earlier one, or -1: a study's lists name each cell once. */
int qkt_ablate_list_repeat(const int *ints, const double *dbls, const qkt_attn_scale *vars, int n);
/* Checks every field (names the field on error). */
int qkt_ablate_validate(const qkt_ablate_cfg *c, qkt_err *err);
/* A run directory's path may be at most QKT_ABLATE_MAX_DIR bytes, so every file below it
 * (cells/<id>.attn.safetensors.tmp.PID.N) fits the study's path buffers: longer ones are
 * refused (-1, one line) by the functions below before any work, never cut short. */
#define QKT_ABLATE_MAX_DIR 800
int qkt_ablate_check_dir(const char *run_dir, qkt_err *err);
/* config.json <-> cfg. qkt_ablate_config_json: the settings as JSON text (malloc'd).
 * config.json holds that text with one key more, last: QKT_ABLATE_CONFIG_CRC, the CRC-32C
 * (8 hex digits) of the file as written with "00000000" in their place. Loading refuses a
 * file that does not match it; one without the key (written before it) is read as it is. */
#define QKT_ABLATE_CONFIG_CRC "crc32c"
char *qkt_ablate_config_json(const qkt_ablate_cfg *c);
int qkt_ablate_save_config(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err);
int qkt_ablate_load_config(const char *run_dir, qkt_ablate_cfg *c, qkt_err *err);
/* The same from the JSON text (n bytes, need not be NUL-terminated); errors start
 * with `label`. */
int qkt_ablate_parse_config(const char *text, size_t n, const char *label, qkt_ablate_cfg *c, qkt_err *err);

/* ---------------------------------------------------------------- cells */
typedef enum { QKT_CELL_INIT = 0, QKT_CELL_TRAIN, QKT_CELL_LR, QKT_CELL_GROWTH, QKT_CELL_IID, QKT_CELL_TRAIN2, QKT_CELL_START, QKT_CELL_START2 } qkt_cell_kind;
/* The factor on qk_init_mult of a "start" cell: the other form's starting logit scale.
 * sqrt_dk from none's start (saturated): d_k^(1/4), so s q.k = d_k^(-1/2) d_k^(1/2) q0.k0;
 * none from sqrt_dk's start (unsaturated): d_k^(-1/4); 1 for any other variant. */
double qkt_ablate_start_mult(qkt_attn_scale variant, int d_k);
typedef struct qkt_cell {
    qkt_cell_kind kind;
    char id[96];
    qkt_attn_scale variant;
    int d_k, seed;
    double lr;
    int steps;
    bool maps; /* write attention maps (init and final) for the heatmaps */
} qkt_cell;
/* The plan, derived deterministically from the config. Returns the count; *out is malloc'd. */
int qkt_ablate_plan(const qkt_ablate_cfg *c, qkt_cell **out);
const char *qkt_cell_kind_name(qkt_cell_kind k);
/* A cell's id (the one format every part of the study uses): <kind>_<variant>_dk<d_k>, then
 * _s<seed> for train, train2, start and start2 cells or _lr<lr> (%g) for lr cells, then _s<seed>
 * for an lr cell of seed > 0: "train_sqrt_dk_dk64_s0", "lr_none_dk16_lr0.03", "lr_none_dk16_lr0.03_s2",
 * "iid_none_dk8". */
void qkt_cell_id(char *id, size_t n, qkt_cell_kind kind, qkt_attn_scale variant, int d_k, int seed, double lr);
/* A train cell with maps = true also writes its attention maps (one fixed validation
 * sequence, probabilities) to cells/<id>.attn.safetensors: two F32 tensors of shape
 * (n_layer, n_head, T, T), QKT_MAPS_INIT before the first step and QKT_MAPS_FINAL after
 * the last, read back by the report with qkt_safetensors.h. */
#define QKT_MAPS_INIT "attn.init"
#define QKT_MAPS_FINAL "attn.final"
void qkt_cell_maps_path(const char *run_dir, const char *id, char *path, size_t n);
/* Runs made before the maps were safetensors files have cells/<id>.maps instead: such a
 * cell's cells/<id>.csv is removed so that resuming the run recomputes it (same config
 * and seed, so the same metrics). Returns the number of cells to rerun, -1 on error. */
int qkt_ablate_forget_old_maps(const char *run_dir, const qkt_cell *plan, int n, qkt_err *err);
/* The same for every finished cell of the plan that keeps maps (c's plan) whose
 * cells/<id>.attn.safetensors is absent (the old format's case among them), fails its
 * checksums, is another cell's (its metadata "cell") or does not hold the run's two maps: its
 * csv is removed so that resuming recomputes it. The number of such cells (first: why the
 * first, "" if none), -1 on error. */
int qkt_ablate_forget_bad_maps(const char *run_dir, const qkt_ablate_cfg *c, const qkt_cell *plan, int n, char *first,
                               size_t first_n, qkt_err *err);
/* The trainer a cell trains (the study's model and training settings at the cell's width,
 * variant, steps, lr and seed), ready for its first step; its validation stream is the
 * study's seed's (qkt_data_seed_split), so every cell, whatever its seed, validates on the
 * same sequences. The caller frees it with qkt_trainer_free. */
struct qkt_trainer;
int qkt_ablate_cell_trainer(const qkt_ablate_cfg *c, const qkt_cell *cell, struct qkt_trainer *t, qkt_err *err);
/* Runs one cell in this process and writes cells/<id>.csv atomically. Training cells
 * evaluate eval_batches x batch_size validation sequences every eval_every (lr cells:
 * lr_eval_every) steps and final_eval_seqs after the last (metric val_seqs says how many). */
int qkt_ablate_run_cell(const char *run_dir, const qkt_ablate_cfg *c, const qkt_cell *cell, qkt_err *err);
/* Part 1 with iid q and k (no model), written as rows of metrics.csv to cells/init_iid.csv. */
int qkt_ablate_init_iid(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err);

/* ---------------------------------------------------------------- running a study */
/* Before any work in run_dir: *resuming = whether it holds a run already; that run must
 * be the same study (its config.json equal to c's up to workers and the command), else
 * -1 with "<dir> holds a run with a different configuration; ...". */
int qkt_ablate_check_resume(const char *run_dir, const qkt_ablate_cfg *c, bool *resuming, qkt_err *err);
/* Makes run_dir and writes its config.json. */
int qkt_ablate_start(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err);
/* Relative cost of a cell, ~ steps x (width^2 + T x width): the sweep's ETA weights. */
double qkt_ablate_cell_cost(const qkt_ablate_cfg *c, const qkt_cell *cell);
/* Runs the study saved in run_dir/config.json (cells/ made here): part 1 in this process, then every
 * unfinished cell as `exe _cell --run DIR --cell ID` (qkt_sweep_run), skipping those
 * whose cells/<id>.csv is complete (sealed). verbose: progress through qkt_logf. stop: NULL, or
 * a flag a signal handler sets, which ends the running cells (qkt_sweep.stop). The caller
 * holds the run directory's lock (qkt_dir_lock). -1 if any cell failed or it was stopped.
 * In an MPI job of several ranks (qkt_dist_init) every rank calls it: rank 0 (holding
 * the lock) runs part 1, then the cells are spread over the ranks (qkt_sweep.mpi); the
 * run directory must be on a filesystem every host sees. Then each rerun c asks for
 * (qkt_ablate_rerun_get) the same way in run_dir/robust/<label>/; a robust_isa this CPU
 * does not run is refused (-1, one line) before any rerun cell. */
int qkt_ablate_run(const char *run_dir, const char *exe, bool verbose, const volatile sig_atomic_t *stop, qkt_err *err);
/* exe NULL: each cell runs in a child forked from this process (one thread; the program's
 * registered variants are there as in the parent), which runs qkt_ablate_run_cell_id. */

/* The cell `id` of the study saved in run_dir, in this process with one thread (what
 * `qkt _cell --run DIR --cell ID` runs): 0, or -1 with why. */
int qkt_ablate_run_cell_id(const char *run_dir, const char *id, qkt_err *err);
/* Do both tasks (run.data and task2) open? -1 with "task: ..." or "task2: ...". */
int qkt_ablate_check_tasks(const qkt_ablate_cfg *c, qkt_err *err);

/* ---------------------------------------------------------------- the study in one call */
typedef struct qkt_ablate_study_opts {
    const char *exe;         /* NULL: cells in forked children (qkt_ablate_run), the program's registered
                                variants with them; else a program answering `EXE _cell --run DIR --cell ID` */
    bool verbose;            /* progress through qkt_logf */
    bool report_only;        /* run no cells: the report of those finished */
    const volatile sig_atomic_t *stop; /* as qkt_ablate_run's */
} qkt_ablate_study_opts;

typedef enum {
    QKT_ABLATE_OK = 0,
    QKT_ABLATE_ERR_CONFIG,  /* c refused (qkt_ablate_validate), a task that does not open, run_dir's path too long */
    QKT_ABLATE_ERR_DIR,     /* run_dir or its config.json cannot be written */
    QKT_ABLATE_ERR_LOCKED,  /* another process holds run_dir's lock */
    QKT_ABLATE_ERR_OTHER,   /* run_dir holds a study with a different configuration */
    QKT_ABLATE_ERR_RUN,     /* a cell failed (its log says why; the others are kept) */
    QKT_ABLATE_STOPPED,     /* opts->stop was set: the running cells were ended, the finished kept */
    QKT_ABLATE_ERR_REPORT,  /* the report could not be written */
} qkt_ablate_status;

/* The whole study of c in run_dir, as `qkt ablate` runs it: checks c and its tasks, makes
 * and locks run_dir (held until it returns), checks a run already there is the same study
 * (then resumes it: finished cells are kept), writes config.json, runs part 1 and the
 * unfinished cells (qkt_ablate_run) and writes the report (qkt_ablate_report): run_dir/report.md.
 * opts may be NULL (cells forked from this process, quiet). In an MPI job every rank calls it.
 *     qkt_attn_variant_register(&my_variant, &err);       // before: the cells fork from here
 *     qkt_ablate_preset("quick", &c, &err);
 *     qkt_ablate_parse_variant("variants", "my_variant", &c.variants[c.n_variants++], &err);
 *     if (qkt_ablate_run_study(&c, "runs/mine", NULL, &err)) fprintf(stderr, "%s\n", err.msg);
 * On an error err says why, after "qkt_ablate_run_study: " for a refused configuration. */
qkt_ablate_status qkt_ablate_run_study(const qkt_ablate_cfg *c, const char *run_dir, const qkt_ablate_study_opts *opts,
                                       qkt_err *err);

/* ---------------------------------------------------------------- robustness reruns
 * A rerun is a replicate study of the cells that carry verdicts, in run_dir/robust/<label>/
 * with its own config.json, cells/ and metrics.csv (resumed like the study: finished cells
 * are kept). Reruns 0 .. n_robust_seeds-1 take the study seed robust_seeds[k]; the last, if
 * robust_isa is set, keeps the seed and runs its cells with QKT_ISA=robust_isa. */
typedef struct qkt_ablate_rerun {
    char label[48];     /* its directory under run_dir/robust/: "seed2", "isa_avx2" */
    char title[48];     /* its name in the report: "seed 2", "isa avx2" */
    char isa[16];       /* the kernel path of its cells, "" = the study's own */
    qkt_ablate_cfg cfg; /* the study's settings with that seed, verdict_cells_only = 1, no reruns */
} qkt_ablate_rerun;
/* How many reruns c asks for. */
int qkt_ablate_reruns(const qkt_ablate_cfg *c);
/* Rerun k (0 .. qkt_ablate_reruns(c) - 1) of c into *r. */
void qkt_ablate_rerun_get(const qkt_ablate_cfg *c, int k, qkt_ablate_rerun *r);
/* run_dir/robust/<label> into path (n bytes). */
void qkt_ablate_rerun_dir(const char *run_dir, const qkt_ablate_rerun *r, char *path, size_t n);

/* ---------------------------------------------------------------- report */
/* Gathers the cells' CSV files into metrics.csv, then writes summary.csv, the plots and
 * report.md and report.html from metrics.csv (and the attention maps). `qkt plot` calls this. */
int qkt_ablate_report(const char *run_dir, qkt_err *err);
/* The planned cells of the run without a finished cells/<id>.csv: their count, the first
 * ids into `ids` (ids_n bytes, may be NULL; ", "-separated), and in *seeds_min (may be NULL) the fewest
 * seeds present in a training cell, which is what its statistics use. A report with
 * cells missing says so at its top and states the seeds it used. */
int qkt_ablate_missing(const char *run_dir, const qkt_ablate_cfg *c, char *ids, size_t ids_n, int *seeds_min);

/* ---------------------------------------------------------------- the study's own efficiency
 * Each cell records what it computed and what that cost in cells/<id>.cost, written just
 * before its csv (so every finished cell of a run made since has one), one line and its seal
 * (qkt_cell_seal, as a cell's csv; a record without a seal, from an older qkt, is read as is):
 *     train_flops=F eval_flops=E cpu_s=S
 *     #end rows=1 crc32c=XXXXXXXX
 * F: its training steps' forward and backward FLOPs, qkt_train_step_flops each; E: its
 * forward-only passes (evaluations, attention captures), a third of a step's count at their
 * batch; S: the CPU seconds of qkt_ablate_run_cell (its process's thread team). The study's
 * start measures the single-core sgemm peak into sgemm_peak.txt (qkt_ablate_measure_peak). */
#define QKT_ABLATE_PEAK_N 1024     /* the peak's n x n product ... */
#define QKT_ABLATE_PEAK_TIMINGS 15 /* ... best of this many timings by CPU time (~0.17 s: a slow
                                    * stretch of ~0.1 s does not decide it) */
typedef struct qkt_ablate_efficiency {
    double train_flops, eval_flops, cpu_s; /* summed over the finished planned cells with a record */
    double peak_gflops;                    /* sgemm_peak.txt's single-core GFLOP/s, 0 if absent */
    int cells, unrecorded;                 /* finished planned cells with a record / without one */
    int damaged;                           /* ... with a damaged one (not counted) */
    char damaged_first[320];               /* "cells/<id>.cost <why>" of the first damaged record */
    int unsealed;                          /* counted records, and the peak, without a seal (older builds') */
    double efficiency;                     /* (train_flops + eval_flops) / cpu_s / (peak_gflops 1e9), NaN if unknown,
                                            * or if above 1 with unsealed records (one is wrong: faster than the peak) */
} qkt_ablate_efficiency;
void qkt_cell_cost_path(const char *run_dir, const char *id, char *path, size_t n);
/* One thread's sgemm rate per CPU second (qkt_bench_gemm_rate_cpu, QKT_ABLATE_PEAK_N and _TIMINGS),
 * written to run_dir/sgemm_peak.txt as "gflops=G n=N isa=I" and its seal; the thread setting
 * is restored. */
int qkt_ablate_measure_peak(const char *run_dir, qkt_err *err);
/* The sums over c's planned cells in run_dir (finished: a sealed cells/<id>.csv) and the
 * peak; -1 with one line only if sgemm_peak.txt exists but cannot be read, fails its seal or
 * holds no peak. A cost record that fails its seal or holds a value out of range (a CPU time
 * of 0, a NaN) is counted as damaged, not summed. */
int qkt_ablate_efficiency_read(const char *run_dir, const qkt_ablate_cfg *c, qkt_ablate_efficiency *e, qkt_err *err);
/* The same sums over one part of the study: the planned cells of one kind and key width d_k
 * (report.md's part 5 lists every part's). -1 with one line for a kind or d_k out of range. */
int qkt_ablate_efficiency_read_part(const char *run_dir, const qkt_ablate_cfg *c, qkt_cell_kind kind, int d_k,
                                    qkt_ablate_efficiency *e, qkt_err *err);
/* One line without a newline, what qkt ablate prints and report.md states: "efficiency E
 * (F FLOPs of N cells in S CPU-s: G GFLOP per CPU-second; single-core sgemm peak P GFLOP/s)",
 * E to 3 decimals, and what is missing when a number is unknown, or which records were left
 * out; 1024 bytes hold every such line. */
void qkt_ablate_efficiency_text(const qkt_ablate_efficiency *e, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
