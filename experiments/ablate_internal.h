/* Private to experiments/: the study's own keys of config.json (ablate_config.c), read and
 * written by ablate_json.c. */
#ifndef QKT_ABLATE_INTERNAL_H
#define QKT_ABLATE_INTERNAL_H
#include <errno.h>
#include <stddef.h>

#include "qkt_ablate.h"

typedef enum { QKT__K_STR, QKT__K_INT, QKT__K_DBL, QKT__K_INTS, QKT__K_DBLS, QKT__K_VARS } qkt__ab_type;
typedef struct {
    const char *key;   /* in config.json */
    int order;         /* its position there (the field table's ab_order fills the gaps) */
    qkt__ab_type type;
    size_t off, n_off; /* the value (a list's first element) in qkt_ablate_cfg; a list's count */
    size_t size;       /* a string's buffer */
    double lo, hi;     /* bounds of a number or of each element of a list */
    bool lo_open;      /* > lo rather than >= lo */
    bool optional;     /* may be absent from config.json (runs made before it) */
} qkt__ab_key;
extern const qkt__ab_key qkt__ab_keys[];
extern const int qkt__n_ab_keys;
const qkt__ab_key *qkt__ab_key_find(const char *key);
/* Left out of config.json when 0, "" or an empty list: the robustness reruns' keys, so a
 * study without reruns keeps its config.json's text. */
bool qkt__ab_key_omit_unset(const qkt__ab_key *k);
/* A cell in a child forked by the sweep (qkt_sweep.cell_fn; ablate_study.c). */
int qkt__ablate_cell_in_child(const char *run_dir, const char *id, qkt_err *err, void *user);
/* qkt_ablate_measure_peak unless sgemm_peak.txt exists and every planned cell is done. */
int qkt__ablate_peak_for_cells(const char *run_dir, const qkt_ablate_cfg *c, qkt_err *err);
/* cells/<id>.cost (qkt_ablate.h): the cell's training and forward-only FLOPs and CPU seconds,
 * sealed, written atomically; read back by qkt_ablate_efficiency_read. */
int qkt__ablate_write_cost(const char *run_dir, const char *id, double train_flops, double eval_flops, double cpu_s,
                           qkt_err *err);
/* The study's efficiency sums per part, the cells of one kind and d_k, in one pass over the plan
 * (report.md's part 5): every part of c's plan in plan order, into *out (malloc'd; NULL on error);
 * their count, or -1 with err as qkt_ablate_efficiency_read. */
typedef struct {
    qkt_cell_kind kind;
    int d_k;
    qkt_ablate_efficiency e;
} qkt__ablate_part;
int qkt__ablate_efficiency_parts(const char *run_dir, const qkt_ablate_cfg *c, qkt__ablate_part **out, qkt_err *err);

/* cells/<id>.maps: where qkt before the safetensors maps kept them (read no more). */
void qkt__ablate_old_maps_path(const char *run_dir, const char *id, char *path, size_t n);
/* A cell's attention maps (cells/<id>.attn.safetensors): 0 with *vals (malloc'd: init then
 * final, each (L, H, T, T); vals may be NULL to check only) and L, H, T; 1 if the file is
 * absent; -1 with why ("<path>: ...") if it cannot be read, fails its checksums, is another
 * cell's (its metadata "cell"), or is not two maps of m's L and H, T x T with T <= block size. */
int qkt__ablate_maps_read(const char *run_dir, const char *id, const qkt_gpt_config *m, double **vals, int *L, int *H, int *T,
                          char *why, size_t why_n);

#endif
