/* qkt autograd: tensors, a flat tape, a per-step arena, the parameter store,
 * the project RNG and every op a GPT needs (forward and backward side by side).
 *
 * Lifecycle of one training step:
 *     qkt_ctx_reset(ctx);                 // arena and tape emptied, no free()
 *     loss = model_forward(ctx, ...);     // ops record nodes on the tape
 *     qkt_params_zero_grad(params);
 *     qkt_backward(ctx, loss, NULL);      // reverse walk, grads accumulate (+=)
 *     optimizer step over params->data / params->grad (one contiguous store)
 *
 * Two error tiers: programmer errors (shape mismatch, API misuse) stop with
 * QKT_CHECK (file:line and the shapes); user errors (files, flags) return a
 * status with a one-line message in a qkt_err.
 */
#ifndef QKT_AUTOGRAD_H
#define QKT_AUTOGRAD_H

/* float64 code has its own names, so it links into one program with float32 code (libqkt
 * and libqkt64 both): qkt64_names.h, generated from libqkt64's symbols, renames every
 * qkt_ function and variable qkt64_. Every public header includes this one first. (qkt's
 * own sources and tests use the plain names: the build renames its objects afterwards.) */
#if defined(QKT_DOUBLE) && !defined(QKT_NAMES_UNPREFIXED)
#include "qkt64_names.h"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- scalar */
#ifdef QKT_DOUBLE
typedef double qkt_real;
#define QKT_REAL_NAME "float64"
#else
typedef float qkt_real;
#define QKT_REAL_NAME "float32"
#endif

/* The float32 and float64 flavours install side by side (libqkt, libqkt64). A program
 * compiled for one cannot link against the other: every file that includes this header
 * refers to its flavour's symbol, which only the matching library defines, so the linker
 * says e.g. "undefined reference to qkt_abi_float64__link_with_libqkt64". */
#ifdef QKT_DOUBLE
extern const int qkt_abi_float64__link_with_libqkt64;
static const int *const qkt__abi_flavour __attribute__((used)) = &qkt_abi_float64__link_with_libqkt64;
#else
extern const int qkt_abi_float32__link_with_libqkt;
static const int *const qkt__abi_flavour __attribute__((used)) = &qkt_abi_float32__link_with_libqkt;
#endif

/* ---------------------------------------------------------------- errors */
#ifdef __cplusplus
#define QKT_NORETURN [[noreturn]]
#else
#define QKT_NORETURN _Noreturn
#endif
/* Errors qkt cannot return from go through one hook, never through exit():
 *   QKT_FATAL_USAGE    the API was misused (a QKT_CHECK failed: shapes, order of calls);
 *   QKT_FATAL_NOMEM    an allocation failed, or a step arena went over its limit;
 *   QKT_FATAL_ANOMALY  ctx->detect_anomaly found a NaN/Inf in an op's output or grads;
 *   QKT_FATAL_ABORT    a program ended the job on purpose (qkt_dist_abort, one process).
 * The default hook reports "qkt: <msg>" through the message hook (qkt_logf, QKT_LOG_ERROR:
 * stderr unless a program set its own) and aborts. A program may set its own
 * (the qkt CLI exits with 1, 3 or 134); a hook that returns is followed by abort().
 * msg is one line without a trailing newline. Calls from several threads at once are
 * serialised: the first one runs the hook, the others wait (a hook must not return to
 * qkt, so they wait for the process to end or for the hook to longjmp). */
typedef enum qkt_fatal_kind { QKT_FATAL_USAGE = 1, QKT_FATAL_NOMEM, QKT_FATAL_ANOMALY, QKT_FATAL_ABORT } qkt_fatal_kind;
typedef void (*qkt_fatal_fn)(qkt_fatal_kind kind, const char *msg, void *user);
/* Sets the hook (fn NULL: the default); returns the previous one. */
qkt_fatal_fn qkt_set_fatal_handler(qkt_fatal_fn fn, void *user);
QKT_NORETURN void qkt_fatalf(qkt_fatal_kind kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Usage error: the caller broke the API's contract; names file:line and the condition. */
#define QKT_CHECK(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond)) qkt_fatal(__FILE__, __LINE__, #cond, __VA_ARGS__);        \
    } while (0)
QKT_NORETURN void qkt_fatal(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Every heap allocation in qkt goes through these (as Redis' zmalloc): they never return
 * NULL; a failure is QKT_FATAL_NOMEM naming the size and the calling file:line. Memory
 * is released with free(). qkt_aligned_alloc gives `align`-byte aligned memory. */
#define qkt_malloc(n) qkt__malloc((n), __FILE__, __LINE__)
#define qkt_calloc(n, size) qkt__calloc((n), (size), __FILE__, __LINE__)
#define qkt_realloc(p, n) qkt__realloc((p), (n), __FILE__, __LINE__)
#define qkt_strdup(s) qkt__strdup((s), __FILE__, __LINE__)
#define qkt_aligned_alloc(align, n) qkt__aligned_alloc((align), (n), __FILE__, __LINE__)
void *qkt__malloc(size_t n, const char *file, int line);
void *qkt__calloc(size_t n, size_t size, const char *file, int line);
void *qkt__realloc(void *p, size_t n, const char *file, int line);
char *qkt__strdup(const char *s, const char *file, int line);
void *qkt__aligned_alloc(size_t align, size_t n, const char *file, int line);
/* n zeroed bytes, 64-byte aligned, for arrays the size of a model (the parameter store's
 * values and grads, the optimizer's moments): taken from calloc, so pages nothing writes
 * stay untouched (no first-touch fault, no zeroing pass), and marked for transparent huge
 * pages where the kernel has them (a hint; the 2 MiB-aligned inside of a block of 2 MiB or
 * more). Released with qkt_free64, not free(). */
#define qkt_calloc64(n) qkt__calloc64((n), __FILE__, __LINE__)
void *qkt__calloc64(size_t n, const char *file, int line);
void qkt_free64(void *p);

/* User error: one line, filled by the failing call, returned as status -1. Room for two
 * paths of PATH_MAX (4096) and the words around them; a longer message ends in "...". */
#define QKT_ERR_LEN 10240
typedef struct qkt_err {
    char msg[QKT_ERR_LEN];
} qkt_err;
/* Sets err->msg (if err is non-NULL) and returns -1, so: return qkt_err_set(err, ...). */
int qkt_err_set(qkt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How a refused configuration is named in err: QKT_NAMES_FIELDS (the default) names the
 * struct field a C caller set, after the public call that refused it:
 *     "qkt_trainer_init: n_embd 0: expected an integer in [1, 65536]"
 * QKT_NAMES_FLAGS names the field by its `qkt train` flag, with no call ("--n-embd 0:
 * expected ..."): for a program whose users type flags, as the qkt program's do.
 * Process-wide: set it before other calls. Returns the previous setting. */
typedef enum qkt_names { QKT_NAMES_FIELDS = 0, QKT_NAMES_FLAGS } qkt_names;
qkt_names qkt_set_names(qkt_names n);
qkt_names qkt_get_names(void);
/* Internal: prefixes err's message with the public call's name under QKT_NAMES_FIELDS; -1. */
int qkt__err_call(qkt_err *err, const char *call);

/* Messages: the library never prints. What it has to say while it works (a sweep's
 * progress, a cell it reruns, a file it skips) goes to one hook, as does the default fatal
 * hook's report (QKT_LOG_ERROR, "qkt: <msg>") before it aborts:
 *   QKT_LOG_INFO    progress and notes: "qkt ablate: part 1, ...";
 *   QKT_LOG_WARN    something was skipped or redone and the work goes on;
 *   QKT_LOG_ERROR   a fatal error's report;
 *   QKT_LOG_STATUS  a live status line that the next message replaces, sent only to a
 *                   live hook (see below), about twice a second.
 * msg is one line without a trailing newline. The default hook writes msg and a newline
 * to stderr (nothing for QKT_LOG_STATUS). Messages from several threads are serialised. */
typedef enum qkt_log_level { QKT_LOG_INFO = 1, QKT_LOG_WARN, QKT_LOG_ERROR, QKT_LOG_STATUS } qkt_log_level;
typedef void (*qkt_log_fn)(qkt_log_level level, const char *msg, void *user);
/* Sets the hook (fn NULL: the default); returns the previous one. live: the hook shows a
 * status line that the next message replaces (a terminal): progress then comes as
 * QKT_LOG_STATUS lines rather than one QKT_LOG_INFO line per finished item. */
qkt_log_fn qkt_set_log_handler(qkt_log_fn fn, void *user, bool live);
/* Whether the hook set is live (false for the default hook). */
bool qkt_log_live(void);
/* Formats one message and hands it to the hook. */
void qkt_logf(qkt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Seconds on the monotonic clock (CLOCK_MONOTONIC), for elapsed times only. */
double qkt_now_s(void);

/* ---------------------------------------------------------------- threads */
/* One knob for every thread qkt uses: the OpenMP team, which also runs the blocks of
 * large gemms (OpenBLAS itself stays single-threaded). n <= 0 means "all cores".
 * Without a call, the first qkt_ctx_init applies the environment: QKT_THREADS=n if set
 * (else OpenMP's default, OMP_NUM_THREADS), and OpenBLAS on one thread. */
void qkt_set_threads(int n);
int qkt_get_threads(void);
/* Whether a loop with enough work to split (`big`) should go to an OpenMP team: big, more
 * than one thread, and not already inside a parallel region (there a nested region is a
 * team of one). libgomp enters every `omp parallel` construct, under a false `if` clause
 * and for a team of one too, and ends it with a futex wake, a system call, so qkt's own
 * loops, and a custom op's, run plainly where this says false:
 *     if (qkt_parallel_worth(n > 32768)) {
 *     #pragma omp parallel for
 *         for (...) body;
 *     } else {
 *         for (...) body;
 *     }   */
bool qkt_parallel_worth(bool big);
#define QKT_MAX_THREADS 4096
/* QKT_THREADS from the environment: 0 when unset or empty, 1 with *n in [0, QKT_MAX_THREADS]
 * (0 = all cores), -1 with "QKT_THREADS 'x': expected an integer in [0, 4096]". */
int qkt_threads_env(int *n, qkt_err *err);
/* Call first in main(argv): unless OMP_WAIT_POLICY (or GOMP_SPINCOUNT) and
 * OPENBLAS_NUM_THREADS are set, sets GOMP_SPINCOUNT=1000 and OPENBLAS_NUM_THREADS=1 and
 * re-executes the program once (both are read only when the libraries load). Idle OpenMP
 * threads then sleep after ~26 us instead of spinning ~8 ms: on a machine shared with other
 * work a 2-thread step is faster (docs/performance.md, "Thread settings"). Returns when there is
 * nothing to do or the exec failed; argv must be main's, NULL-terminated. */
void qkt_thread_env_reexec(char **argv);

/* ---------------------------------------------------------------- kernel paths */
/* The ops' hot loops (GELU, LayerNorm, bias and residual sums, cross-entropy, fused
 * attention) are compiled once per x86-64 instruction set: "baseline" (SSE2, any
 * x86-64), "avx2" (AVX2 + FMA), "avx512" (AVX-512 F, VL, BW, DQ); a -DQKT_NATIVE=ON
 * build has the one path "native". A process picks one, once (at its first op, or
 * here): the widest the CPU runs, or the one the environment variable QKT_ISA names.
 * Paths differ in float rounding (FMA, reduction lanes); each is deterministic and
 * thread-count independent, and baseline computes what qkt did before the paths.
 * An invalid QKT_ISA makes the first op a usage error: programs check it up front. */
int qkt_isa_select(qkt_err *err);                  /* 0, or -1: QKT_ISA names no path this build and CPU run */
const char *qkt_isa_name(void);                    /* the path in use */
int qkt_isa_check(const char *name, qkt_err *err); /* 0 if this build and CPU run path `name`, else -1 and why */

/* ---------------------------------------------------------------- RNG */
/* xoshiro256** (Blackman & Vigna 2018), seeded through splitmix64. Every random
 * draw in qkt (init, data, dropout, sampling) goes through one of these. The
 * state is plain data so checkpoints can save and restore it exactly. */
typedef struct qkt_rng {
    uint64_t s[4];
} qkt_rng;
void qkt_rng_seed(qkt_rng *r, uint64_t seed);
uint64_t qkt_rng_u64(qkt_rng *r);
uint32_t qkt_rng_below(qkt_rng *r, uint32_t n); /* uniform in [0, n), unbiased */
double qkt_rng_uniform(qkt_rng *r);              /* uniform in [0, 1), 53 bits */
double qkt_rng_normal(qkt_rng *r);               /* N(0, 1), Box-Muller, no cached value */
/* x[i] = (qkt_real)(mean + std * qkt_rng_normal(r)) for i = 0 .. n-1 in order, the same bits
 * and the same draws, several times faster (float32: a vectorised Box-Muller, libm's where
 * its float could differ; float64: libm's). mean and std finite, std >= 0. */
void qkt_rng_fill_normal(qkt_rng *r, qkt_real *x, int64_t n, double mean, double std);
/* Independent stream: derives a new generator from r and a stream id (r is advanced). */
void qkt_rng_split(qkt_rng *r, uint64_t stream, qkt_rng *out);
/* The named streams a run derives from its one seed (qkt_rng_seed_stream): model init
 * and the training context's dropout draws. The data streams split off the data seed
 * inside qkt_data. */
typedef enum qkt_rng_stream {
    QKT_STREAM_INIT = 0x1417,    /* qkt_gpt_init_weights */
    QKT_STREAM_DROPOUT = 0xD50F  /* the step context's rng (dropout masks) */
} qkt_rng_stream;
/* r = the generator of stream `stream` of run seed `seed` (seeded with seed ^ stream). */
void qkt_rng_seed_stream(qkt_rng *r, uint64_t seed, qkt_rng_stream stream);
/* Initialisers for one's own tensors (a parameter after qkt_params_finalize, or a tensor
 * of this step), through the seeded RNG, one draw per element in storage order:
 *   normal   t_i = mean + std z_i, z_i ~ N(0, 1)   (std >= 0)
 *   uniform  t_i = lo + (hi - lo) u_i, u_i ~ U[0, 1)   (lo <= hi)
 * A NULL tensor or one without data (before finalize) is a usage error. */
struct qkt_tensor;
void qkt_init_normal(struct qkt_tensor *t, qkt_rng *r, double mean, double std);
void qkt_init_uniform(struct qkt_tensor *t, qkt_rng *r, double lo, double hi);

/* ---------------------------------------------------------------- arena */
/* Bump allocator for one step's activations, grads and saved state. When a block
 * runs out the next kept block is used, or a new one is chained (the only malloc);
 * reset rewinds to the first block, so a step no larger than an earlier one performs
 * no malloc. Blocks are freed only by qkt_arena_free. (A context's tensor headers are
 * not in its arena: see qkt_ctx_reset.) With a limit set, an allocation past it aborts
 * naming the size it needed. */
typedef struct qkt_arena_state qkt_arena_state; /* blocks and counters: autograd's own */
typedef struct qkt_arena {
    qkt_arena_state *s; /* set by qkt_arena_init, NULL after qkt_arena_free */
} qkt_arena;
void qkt_arena_init(qkt_arena *a, size_t initial_bytes, size_t limit);
void *qkt_arena_alloc(qkt_arena *a, size_t bytes); /* 64-byte aligned, uninitialised */
void *qkt_arena_calloc(qkt_arena *a, size_t bytes);
void qkt_arena_reset(qkt_arena *a);
void qkt_arena_free(qkt_arena *a);

/* ---------------------------------------------------------------- grad pool */
/* Grads of activations live here, not in the arena: a grad is dead once the op that
 * produced its tensor has run its backward, so backward returns it to the pool and the
 * next grad of that size reuses it. Peak grad memory is then the largest live set
 * (about one layer) instead of one grad per activation. Buffers persist across
 * steps (reset returns them all), so from the second step on no grad mallocs. */
typedef struct qkt_grad_pool qkt_grad_pool; /* autograd's own; a context has one */
/* Tensor headers: slots apart from the arena's data that alternate between steps (see
 * qkt_ctx_reset); autograd's own, a context has one. */
typedef struct qkt_hdr_store qkt_hdr_store;

/* ---------------------------------------------------------------- tensor */
#define QKT_MAX_DIMS 4
typedef struct qkt_tensor {
    qkt_real *data;
    qkt_real *grad; /* NULL until a backward needs it (params: always set) */
    int64_t size;
    int ndim; /* 0 = scalar (size 1) */
    int shape[QKT_MAX_DIMS];
    bool requires_grad;
    bool is_param;    /* lives in a parameter store (the only tensors valid in every step) */
    bool pending;     /* made by qkt_op_output and not yet recorded: no op takes it as an input */
    const char *name; /* params: checkpoint name; activations: NULL */
    uint32_t gen;     /* the step (ctx->gen) that made it; 0 for parameters. Ops and backward
                         refuse a tensor of another step: it died at qkt_ctx_reset. */
} qkt_tensor;

/* ---------------------------------------------------------------- params */
/* All parameters in one contiguous data buffer and one contiguous grad buffer, in
 * the order they were added: the optimizer, zeroing, clipping, checkpoints and an
 * MPI job's gradient sum are one loop (or one call) over `data`/`grad`.
 * Flags per tensor:
 *   QKT_PARAM_DECAY   AdamW applies weight decay to this tensor;
 *   QKT_PARAM_BUFFER  persistent state that is not trained (sigma_reparam's power-iteration
 *                     vectors): requires_grad false, its grad stays 0, the optimizer skips
 *                     it, and it is saved and restored with the checkpoint like any tensor.
 * A tensor may be added after finalize (a user's module on top of a built model): the
 * store is re-allocated at the grown size, the old values copied and every tensor
 * repointed (tensor->data / grad stay right; raw pointers into the old data / grad do
 * not); `generation` counts these growths. Add between steps, then tell the users of
 * the store: qkt_optim_sync (optimizer state), a new qkt_dp (replica grads). */
enum { QKT_PARAM_DECAY = 1, QKT_PARAM_BUFFER = 2 };
typedef struct qkt_params {
    qkt_tensor **t; /* stable pointers; data valid after finalize */
    int *flags;
    int n, cap;
    qkt_real *data, *grad;
    int64_t size;
    bool finalized;
    int generation; /* growths after finalize */
} qkt_params;
void qkt_params_init(qkt_params *p);
/* Registers a zeroed tensor (before or after finalize, see above). */
qkt_tensor *qkt_params_add(qkt_params *p, const char *name, int ndim, const int *shape, int flags);
void qkt_params_finalize(qkt_params *p); /* one allocation, data and grad zeroed */
void qkt_params_zero_grad(qkt_params *p);
qkt_tensor *qkt_params_find(const qkt_params *p, const char *name);
int64_t qkt_params_offset(const qkt_params *p, const qkt_tensor *t);
void qkt_params_free(qkt_params *p);

/* ---------------------------------------------------------------- context and tape */
typedef enum qkt_op {
#define QKT_OP(ID, name) QKT_OP_##ID,
#include "ops.def"
#undef QKT_OP
    QKT_OP_COUNT
} qkt_op;
const char *qkt_op_name(qkt_op op);

#define QKT_MAX_IN 5 /* the attention: q, k, v, log_scale, bias */
struct qkt_ctx;
typedef struct qkt_node {
    qkt_op op;
    qkt_tensor *out;
    qkt_tensor *in[QKT_MAX_IN];
    int n_in;
    union {
        double f[4];
        int i[8];
    } p;              /* op parameters (scale, eps, axis sizes, ...) */
    void *saved;      /* op-specific saved forward state, in the arena */
    const char *scope; /* ctx->scope when recorded (layer name, for errors) */
    bool backward_ran; /* its backward ran: reaching it again would add its grads twice */
    /* QKT_OP_CUSTOM only: an op defined outside autograd (nn's fused layers). */
    void (*custom_backward)(struct qkt_ctx *ctx, struct qkt_node *n);
    const char *custom_name;
} qkt_node;

#define QKT_CTX_MAGIC 0x716b7443u /* "qktC": set by qkt_ctx_init, cleared by qkt_ctx_free */
typedef struct qkt_ctx {
    uint32_t magic;       /* QKT_CTX_MAGIC while initialised: a zeroed or freed context is refused */
    qkt_arena arena;      /* the step's activations and saved state: qkt_arena_alloc(&ctx->arena, n) */
    qkt_grad_pool *grads; /* activation grads (see qkt_grad_pool) */
    qkt_node *tape;
    int n_nodes, cap_nodes;
    bool keep_grads;     /* keep every activation's grad after backward (default: released) */
    bool no_grad;        /* record nothing (eval, sampling) */
    bool training;       /* dropout active */
    bool detect_anomaly; /* check every op output, and every grad a backward wrote, for NaN/Inf */
    bool retain_graph;   /* allow a qkt_backward through nodes a backward already ran (grads add up again) */
    bool debug_arena;    /* set from QKT_DEBUG_ARENA=1 by qkt_ctx_init: reset poisons the step's
                            values (NaN) and no tensor header is reused (see qkt_ctx_reset) */
    uint32_t gen;        /* this step's stamp: unique per context, changed by every reset */
    qkt_hdr_store *hdrs; /* tensor headers (see qkt_ctx_reset) */
    const char *scope;   /* set by layers, copied into nodes */
    qkt_rng rng;         /* dropout draws */
    /* Set by qkt_ctx_redirect_param_grads: parameters' grads go to pg_to, not pg_home. */
    const qkt_real *pg_home;
    qkt_real *pg_to;
    int64_t pg_size;
} qkt_ctx;

void qkt_ctx_init(qkt_ctx *ctx, size_t arena_bytes, uint64_t seed);
/* What a context does, as bits: QKT_MODE_GRAD records the tape (else no_grad),
 * QKT_MODE_DROPOUT makes dropout active (ctx->training). A new context trains. */
enum { QKT_MODE_EVAL = 0, QKT_MODE_GRAD = 1, QKT_MODE_DROPOUT = 2, QKT_MODE_TRAIN = 3 };
/* Sets the mode and returns the previous one, to restore afterwards:
 *   int prev = qkt_ctx_set_mode(ctx, QKT_MODE_EVAL); ... qkt_ctx_set_mode(ctx, prev); */
int qkt_ctx_set_mode(qkt_ctx *ctx, int mode);
/* Eval-mode scope: no dropout, no tape, then the mode from before, nestable:
 *   int saved = qkt_eval_begin(ctx); ... forwards ...; qkt_eval_end(ctx, saved);
 * qkt_eval_begin sets QKT_MODE_EVAL and returns the previous mode; qkt_eval_end restores
 * `saved`. A usage error: `saved` not a mode, or the context no longer in eval mode at the
 * end (the mode changed inside the scope, or nested scopes ended out of order). In C++,
 * `qkt_eval_scope guard(ctx);` does both (below). */
int qkt_eval_begin(qkt_ctx *ctx);
void qkt_eval_end(qkt_ctx *ctx, int saved);
/* Empties the tape and the arena, keeping their memory: every tensor of the step dies.
 * An op or backward given a dead tensor refuses it (QKT_FATAL_USAGE naming the op): a
 * tensor kept across one reset always, whatever the next step's layout (tensor headers
 * sit in slots that alternate between steps); one kept across several resets may share
 * its header slot with a tensor of this step, unless ctx->debug_arena (QKT_DEBUG_ARENA=1
 * in the environment at qkt_ctx_init), where no slot is ever reused and each reset also
 * fills the step's values with NaN. A dead tensor's header stays readable memory (no
 * crash), but its data is another step's: copy what you need (loss->data[0]) before. */
void qkt_ctx_reset(qkt_ctx *ctx);
void qkt_ctx_free(qkt_ctx *ctx);
/* A context's memory, in bytes: the arena (handed out since the last reset, at most over
 * the context's life, held), the activation grads (live now, at most, held) and the
 * mallocs both ever made (a step that makes none leaves n_mallocs as it was). */
typedef struct qkt_mem_stats {
    size_t arena_used, arena_peak, arena_capacity;
    size_t grad_live, grad_peak, grad_capacity;
    size_t n_mallocs;
} qkt_mem_stats;
qkt_mem_stats qkt_ctx_mem(const qkt_ctx *ctx);
/* Backward in ctx accumulates the grads of p's parameters into `grad` (p->size values,
 * laid out as p->grad) instead of p->grad; NULL restores p->grad. Data-parallel replicas
 * (nn's qkt_dp) each own such a buffer and sum them after the step. */
void qkt_ctx_redirect_param_grads(qkt_ctx *ctx, const qkt_params *p, qkt_real *grad);
/* Run backward from `out`. seed == NULL: out must be a scalar, d out = 1.
 * Otherwise d out = seed (out->size values). Grads accumulate into params'
 * grad (zero them before) and into activations' grads (fresh per step). The grad
 * of a tensor an op produced is released (set to NULL) as soon as that op's
 * backward has consumed it, unless ctx->keep_grads; leaves (parameters, and tensors
 * no op produced) keep their grads. */
void qkt_backward(qkt_ctx *ctx, qkt_tensor *out, const qkt_real *seed);

/* ---------------------------------------------------------------- tensor creation */
/* A shape as the two arguments (ndim, shape) every constructor and op takes, in C and C++:
 *   qkt_tensor_new(ctx, QKT_SHAPE(B, T, C));   qkt_reshape(ctx, x, QKT_SHAPE(B * T, C));
 * 1 to QKT_MAX_DIMS dims, each converted to int and evaluated once. In C, ndim is the element
 * count of a compound literal (sizeof, not evaluated) and shape the literal; in C++ (where
 * compound literals are not valid), shape is a temporary array living to the end of the
 * full expression (the call), and more than QKT_MAX_DIMS dims do not compile. */
#ifdef __cplusplus
#define QKT_SHAPE(...) static_cast<int>(sizeof(qkt_shape_count_(__VA_ARGS__))), qkt_shape_dims_(__VA_ARGS__).d
#else
#define QKT_SHAPE(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}
#endif
qkt_tensor *qkt_tensor_new(qkt_ctx *ctx, int ndim, const int *shape); /* uninitialised */
qkt_tensor *qkt_tensor_zeros(qkt_ctx *ctx, int ndim, const int *shape);
/* Convenience: qkt_tensor_2d(ctx, 3, 4) etc. */
qkt_tensor *qkt_tensor_1d(qkt_ctx *ctx, int a);
qkt_tensor *qkt_tensor_2d(qkt_ctx *ctx, int a, int b);
qkt_tensor *qkt_tensor_3d(qkt_ctx *ctx, int a, int b, int c);
/* Grad buffer of t, allocated zeroed from ctx's grad pool on first use. */
qkt_real *qkt_grad(qkt_ctx *ctx, qkt_tensor *t);
int64_t qkt_shape_size(int ndim, const int *shape);
/* "(2, 3, 4)" into buf, for error messages. */
const char *qkt_shape_str(const qkt_tensor *t, char *buf, size_t n);

/* ---------------------------------------------------------------- gemm */
/* Row-major C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T; op(A) is (M,K),
 * op(B) is (K,N). Every large matmul in qkt goes through here (cblas gemm). */
void qkt_gemm(bool ta, bool tb, int M, int N, int K, qkt_real alpha, const qkt_real *A, int lda,
              const qkt_real *B, int ldb, qkt_real beta, qkt_real *C, int ldc);

/* ---------------------------------------------------------------- ops */
/* Every op: checks shapes (naming both on mismatch), computes the forward, and if
 * any input requires grad (and ctx is not no_grad) records a node whose backward
 * accumulates into the inputs' grads. Outputs live in the arena until reset. */

/* C = op(A) op(B). A: (..., M, K) (or (..., K, M) if ta). B: (K, N) / (N, K) if tb,
 * shared by every batch, or with the same leading dims as A. Out: (..., M, N). */
qkt_tensor *qkt_matmul(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b, bool ta, bool tb);

/* y = x W^T + b, PyTorch's Linear: W (out, in), b (out) or NULL, x (..., in) -> (..., out).
 * One node (the bias is added inside the gemm), so x W^T is never a separate tensor. */
qkt_tensor *qkt_affine(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b);
/* y = gelu(x W^T + b), qkt_gelu(qkt_affine(x, W, b)) bit for bit in one node: GELU is
 * applied to each block of the product as it is done, gelu' kept for backward (an MLP's c_fc). */
qkt_tensor *qkt_affine_gelu(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b);
/* y = r + (x W^T + b), r of y's shape: qkt_add(r, qkt_affine(x, W, b)) bit for bit in one
 * node: r is added to each block of the product as it is done, and backward hands dy to r
 * (a residual connection's output projection). */
qkt_tensor *qkt_affine_add(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, qkt_tensor *r);

/* y = a + b, a - b, a * b, with NumPy broadcasting (see qkt_div below): e.g. a bias (C)
 * on (B, T, C), (B, T, 1) * (B, T, C), (2, 1) + (1, 3), a scalar. Grads sum over the
 * broadcast dims. b a suffix of a's shape (same shape, bias rows; for add and mul, either
 * way round) is the fast path. */
qkt_tensor *qkt_add(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b);
qkt_tensor *qkt_sub(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b);
qkt_tensor *qkt_mul(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b);
/* y = c * x */
qkt_tensor *qkt_scale(qkt_ctx *ctx, qkt_tensor *x, double c);
/* scalar y = sum_i x_i ; y = (1/n) sum_i x_i */
qkt_tensor *qkt_sum(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_mean(qkt_ctx *ctx, qkt_tensor *x);

/* Same data, new shape (product must match). Shares x's data. */
qkt_tensor *qkt_reshape(qkt_ctx *ctx, qkt_tensor *x, int ndim, const int *shape);
/* y[i_perm[0], ...] layout: out dim d = x dim perm[d]. (B,T,H,d) -> (B,H,T,d) is perm {0,2,1,3}. */
qkt_tensor *qkt_permute(qkt_ctx *ctx, qkt_tensor *x, const int *perm);
/* Swap two dims. */
qkt_tensor *qkt_transpose(qkt_ctx *ctx, qkt_tensor *x, int d0, int d1);
/* Split the last axis into n parts of the given sizes (sum = last dim). */
void qkt_split(qkt_ctx *ctx, qkt_tensor *x, int n, const int *sizes, qkt_tensor **outs);
/* Concatenate n tensors along the last axis (other dims equal); qkt_concat_axis for any axis. */
qkt_tensor *qkt_concat(qkt_ctx *ctx, int n, qkt_tensor **xs);

/* y[b,t,:] = W[idx[b,t], :]. W: (V, C). idx (n_idx values, copied) with the given
 * leading shape; out (shape..., C). Backward scatter-adds into dW rows. Every idx
 * must be in [0, V) (programmer error otherwise; loaders validate user data). */
qkt_tensor *qkt_embedding(qkt_ctx *ctx, qkt_tensor *w, const int32_t *idx, int ndim, const int *shape);

/* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2's tanh form) */
qkt_tensor *qkt_gelu(qkt_ctx *ctx, qkt_tensor *x);
/* y = max(x, 0); dy/dx = 1 for x > 0, else 0 */
qkt_tensor *qkt_relu(qkt_ctx *ctx, qkt_tensor *x);
/* Training: y = x * m / (1 - p), m ~ Bernoulli(1 - p) from ctx->rng; eval or p == 0: y = x. */
qkt_tensor *qkt_dropout(qkt_ctx *ctx, qkt_tensor *x, double p);

/* Softmax over the last axis of z = scale * x + mask:
 *   QKT_MASK_NONE:     no mask;
 *   QKT_MASK_CAUSAL:   last two dims (Tq, Tk); query i sees keys j <= i + (Tk - Tq);
 *   QKT_MASK_ADDITIVE: `mask` (a's trailing dims, broadcast) is added after the scale;
 *                      entries of -inf are blocked.
 * Blocked entries get exactly 0 probability and 0 gradient. A row whose every
 * entry is blocked yields all zeros (not NaN) and passes no gradient.
 * The mask tensor never receives a gradient. */
typedef enum { QKT_MASK_NONE = 0, QKT_MASK_CAUSAL = 1, QKT_MASK_ADDITIVE = 2 } qkt_mask_kind;
qkt_tensor *qkt_softmax(qkt_ctx *ctx, qkt_tensor *x, double scale, qkt_mask_kind kind, qkt_tensor *mask);
/* y = x - max - log sum exp(x - max) over the last axis */
qkt_tensor *qkt_log_softmax(qkt_ctx *ctx, qkt_tensor *x);
/* Scalar mean over counted rows of -log softmax(logits)[target]. logits (..., V);
 * targets: one int per row, -1 = ignored (QKT_IGNORE). No counted row: loss 0.
 * If `n_counted` is non-NULL it receives the number of counted rows. */
#define QKT_IGNORE (-1)
qkt_tensor *qkt_cross_entropy(qkt_ctx *ctx, qkt_tensor *logits, const int32_t *targets, int *n_counted);
/* y = (x - mean) * rstd * w + b over the last axis, rstd = 1/sqrt(var + eps), var
 * biased. w, b: (C) or NULL (no affine). Saves mean and rstd for backward. */
qkt_tensor *qkt_layernorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, qkt_tensor *b, double eps);
/* y = x * rstd * w over the last axis, rstd = 1/sqrt(mean(x^2) + eps) (RMSNorm, Zhang &
 * Sennrich 2019; no mean subtraction, no bias). w: (C) or NULL. Saves rstd for backward. */
qkt_tensor *qkt_rmsnorm(qkt_ctx *ctx, qkt_tensor *x, qkt_tensor *w, double eps);
/* y = x / max(||x||_2, eps) over the last axis (torch.nn.functional.normalize); view
 * (B, T, C) as (B, T, H, d) to normalise each head's q or k. */
qkt_tensor *qkt_l2norm(qkt_ctx *ctx, qkt_tensor *x, double eps);
/* Rotary position embeddings on x (B, T, C) = (B, T, H, d), d even, position t = 0..T-1:
 * per head, for i < d/2 with angle a = t base^(-2i/d),
 *   y_i = x_i cos a - x_{i+d/2} sin a,   y_{i+d/2} = x_{i+d/2} cos a + x_i sin a
 * (GPT-NeoX / LLaMA's rotate-half pairing). Backward: the inverse rotation. */
qkt_tensor *qkt_rope(qkt_ctx *ctx, qkt_tensor *x, int n_head, double base);

/* Multi-head attention, heads contiguous in the channel axis:
 *   y[b,i,h,:] = sum_j P[b,h,i,j] v[b,j,h,:],
 *   P[b,h,i,:] = softmax_j( s_h * q[b,i,h,:] . k[b,j,h,:]  +  bias[(b,)h,i,j]  -  m_h |i + Tk - Tq - j|  +  mask ),
 * with q (B, Tq, C) and k, v (B, Tk, C), C = n_head * d, i.e. the (B, T, H, d) layout
 * (no permute around it); y is (B, Tq, C). Tq != Tk is cross-attention (or a query
 * block at the end of a longer key sequence, as in incremental decoding): query i sits
 * at position i + Tk - Tq of the key sequence (the last query aligns with the last key).
 *   s_h = scale * exp(log_scale[h]) (log_scale NULL: s_h = scale);
 *   bias: the additive bias tensor, after the scale (NULL: 0);
 *   m_h: the ALiBi slopes (alibi NULL: no term); the distance |i + Tk - Tq - j| is
 *        computed on the fly (no (Tq, Tk) memory); in the causal mask it is the
 *        (non-negative) number of positions key j lies behind query i;
 *   mask: causal (full == false) blocks keys j > i + Tk - Tq; full == true blocks none;
 *        key_pad[b,j] != 0 blocks key j for every query of batch row b.
 * A blocked entry has exactly 0 probability and 0 gradient (also a bias entry of
 * -inf); a query row with every key blocked gives y = 0 (with Tq > Tk under the causal
 * mask, the first Tq - Tk rows see no key). A row max and a row normaliser (B, H, Tq
 * each) are saved, and P itself when it is small (recompute_p, below); beyond that P,
 * memory stays linear in Tq + Tk (per-thread scratch).
 * Gradients: q, k, v as usual; log_scale (H) receives ds_h/dlog_scale[h] = s_h (the
 * `learned` variant); bias, when it requires a gradient, receives dL/dz (summed over b
 * for a bias shared by the batch); key_pad and alibi get none. */
typedef struct qkt_attn_capture {
    qkt_real *probs;  /* (B, H, Tq, Tk) probabilities, or NULL */
    qkt_real *logits; /* (B, H, Tq, Tk) logits s_h q.k + bias + ALiBi; blocked entries -inf; or NULL */
    /* Set by qkt_gpt_forward when it points probs / logits at a buffer of its own in the
     * step's arena: the step (ctx->gen) the buffer belongs to; 0 = the caller's buffer. A
     * later forward replaces a dead one, so one zeroed capture serves every step. */
    uint32_t probs_gen, logits_gen;
    /* In, for qkt_attn_forward (the layer): a zero (B, H, Tq, Tk) tensor with a gradient, used as
     * the bias, so backward leaves dL/dz (z = the logits) in its grad; or NULL. */
    qkt_tensor *dz;
} qkt_attn_capture;
/* dropout > 0 (and ctx->training): each weight P[b,h,i,j] is zeroed with probability
 * `dropout` and the others scaled by 1/(1 - dropout) before P v (nanoGPT's attn_dropout).
 * The mask is a hash of (a seed drawn from ctx->rng, b, h, i, j), so backward recomputes
 * it, nothing T x T is stored, and it does not depend on the thread count. Captured
 * probabilities are the weights before dropout.
 * A zero-initialised qkt_attn_opts plus .scale is causal self-attention, no bias. */
typedef struct qkt_attn_opts {
    double scale;              /* fixed multiplier on q.k (the variant's s times attn_temp) */
    double dropout;            /* probability in [0, 1) of zeroing an attention weight (training only) */
    qkt_tensor *log_scale;     /* (H) or NULL */
    const uint8_t *key_pad;    /* (B, Tk), nonzero = key blocked; or NULL (copied: the caller may reuse it) */
    qkt_attn_capture *capture; /* filled during this call when non-NULL */
    bool full;                 /* false: causal (query i sees keys j <= i + Tk - Tq); true: every key */
    /* Additive bias after the scale: (H, Tq, Tk) or (1, H, Tq, Tk), shared by the batch,
     * or (B, H, Tq, Tk); or NULL. Read in place (forward and backward: keep it alive and
     * unchanged until backward); any finite value or -inf (a blocked entry). Gets a
     * gradient when it requires one. */
    qkt_tensor *bias;
    /* (H) ALiBi slopes m_h (Press et al. 2022), or NULL: adds -m_h |i + Tk - Tq - j| to
     * the logits, computed on the fly. Copied at the call. qkt_alibi_slopes gives the
     * standard ones. No gradient (fixed slopes). */
    const qkt_real *alibi;
    /* false (default): the forward keeps P for the backward when it fits 8 MiB (B H Tq
     * Tk reals, Tk rounded up to 32: short sequences), so the backward does not
     * recompute it; true: never kept, the backward recomputes P per key tile and the
     * op's memory stays linear in T. The same results bit for bit either way. */
    bool recompute_p;
} qkt_attn_opts;
qkt_tensor *qkt_attention(qkt_ctx *ctx, qkt_tensor *q, qkt_tensor *k, qkt_tensor *v, int n_head,
                          const qkt_attn_opts *o);
/* The same op on the fused projection's output: qkv (B, T, 3C) holds [q | k | v] along
 * the last axis (nanoGPT's c_attn rows), read in place: no split copies, and backward
 * writes one (B, T, 3C) grad. Self-attention: Tq = Tk = T. */
qkt_tensor *qkt_attention_qkv(qkt_ctx *ctx, qkt_tensor *qkv, int n_head, const qkt_attn_opts *o);
/* The standard ALiBi slopes of n_head heads into out[0 .. n_head): for n_head a power
 * of two, the geometric sequence m_h = 2^(-8 (h + 1) / n_head), h = 0 .. n_head - 1
 * (8 heads: 1/2, 1/4, ..., 1/256); otherwise (the paper's rule) the n = 2^floor(log2
 * n_head) slopes of n heads followed by the first n_head - n of the odd-numbered
 * ones of 2n heads, 2^(-8 (2h + 1) / (2n)), h = 0, 1, ... */
void qkt_alibi_slopes(int n_head, qkt_real *out);

/* ---------------------------------------------------------------- generic ops */
/* The ops researchers compose new layers from; formulas, gradients and edge cases in
 * docs/autograd.md. Non-finite values follow IEEE arithmetic and are never hidden: a NaN
 * input gives a NaN output (and a NaN gradient to the input it came from); the maths
 * edges are log(0) = -inf, x / 0 = +-inf (0 / 0 = NaN), sqrt(0) = 0 with gradient +inf.
 *
 * Broadcasting (qkt_add, qkt_sub, qkt_mul, qkt_div, qkt_where) is NumPy's: shapes are
 * aligned on the right, a missing leading dim counts as 1, and each dim must be equal in
 * both or 1 in one of them; the output takes the larger, so (2, 1) and (3) give (2, 3) and
 * a scalar (ndim 0) goes with anything. An input's grad is the output grad summed over the
 * dims it was broadcast along. Shapes that do not broadcast are a usage error naming both.
 * An axis may be negative (-1 = the last); out of range is a usage error naming the shape. */

/* A scalar (ndim 0) tensor holding v: a constant operand for the broadcasting ops. */
qkt_tensor *qkt_tensor_scalar(qkt_ctx *ctx, double v);

/* y = a / b (broadcast). da = dy / b, db = -dy a / b^2. x / 0 = +-inf, 0 / 0 = NaN. */
qkt_tensor *qkt_div(qkt_ctx *ctx, qkt_tensor *a, qkt_tensor *b);

/* Elementwise maths; dx = dy * f'(x):
 *   exp      y = e^x                          f' = y
 *   log      y = ln x                         f' = 1 / x     (log 0 = -inf, grad inf; x < 0: NaN)
 *   sqrt     y = x^(1/2)                      f' = 1 / (2 y) (sqrt 0 = 0 with grad +inf; x < 0: NaN)
 *   rsqrt    y = x^(-1/2)                     f' = -y^3 / 2  (rsqrt 0 = +inf, grad -inf)
 *   pow      y = x^p, p a finite constant     f' = p x^(p-1) (p = 0: y = 1 for every x, NaN too, as
 *                                                             C and PyTorch, grad 0; x < 0 and p not
 *                                                             an integer: NaN, as C's pow)
 *   sigmoid  y = 1 / (1 + e^-x)               f' = y (1 - y)
 *   tanh     y = tanh x                       f' = 1 - y^2
 *   silu     y = x sigmoid(x)                 f' = s (1 + x (1 - s)), s = sigmoid(x)
 *   abs      y = |x|                          f' = sign(x), 0 at x = 0 (PyTorch's choice)
 *   clamp    y = min(max(x, lo), hi)          f' = 1 for lo <= x <= hi, else 0; lo <= hi, either
 *                                             may be -inf / +inf (one-sided); a NaN x stays NaN
 * A NaN x gives y = NaN (but pow 0) and a NaN gradient (also through abs and clamp). */
qkt_tensor *qkt_exp(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_log(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_sqrt(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_rsqrt(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_pow(qkt_ctx *ctx, qkt_tensor *x, double p);
qkt_tensor *qkt_sigmoid(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_tanh(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_silu(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_abs(qkt_ctx *ctx, qkt_tensor *x);
qkt_tensor *qkt_clamp(qkt_ctx *ctx, qkt_tensor *x, double lo, double hi);

/* y = cond != 0 ? a : b, cond, a and b broadcast together (cond never gets a grad; a NaN
 * in cond counts as true). da = dy where cond holds, db = dy elsewhere, and exactly 0 in
 * the other places: a NaN in the branch not taken reaches neither y nor the grads. */
qkt_tensor *qkt_where(qkt_ctx *ctx, qkt_tensor *cond, qkt_tensor *a, qkt_tensor *b);
/* y = mask != 0 ? value : x, PyTorch's masked_fill: mask (uint8, copied) has the given
 * shape, which must broadcast to x's; y has x's shape. dx = dy where mask is 0, else 0.
 * value may be -inf (a blocked logit). One where node. */
qkt_tensor *qkt_masked_fill(qkt_ctx *ctx, qkt_tensor *x, const uint8_t *mask, int ndim, const int *shape,
                            double value);

/* Reductions over one axis; keepdim keeps it as a dim of size 1, else it is removed (a 1-D
 * x gives a scalar). Sums accumulate in float64.
 *   sum_axis   y = sum_k x[..k..]                 dx = dy
 *   mean_axis  y = sum_k x[..k..] / n             dx = dy / n
 *   max_axis   y = max_k x[..k..]                 dx = dy at the argmax, 0 elsewhere. Ties: the
 *              first (lowest) index gets it all. A NaN in the row gives y = NaN and the first
 *              NaN is the argmax (its grad is dy).
 *   logsumexp  y = m + log sum_k e^(x_k - m), m = max_k x_k   dx = dy e^(x - y) (the softmax).
 *              A row of all -inf gives -inf and a zero grad (as softmax's fully blocked row);
 *              a +inf gives +inf; a NaN gives NaN. */
qkt_tensor *qkt_sum_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim);
qkt_tensor *qkt_mean_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim);
qkt_tensor *qkt_max_axis(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim);
qkt_tensor *qkt_logsumexp(qkt_ctx *ctx, qkt_tensor *x, int axis, bool keepdim);

/* y = x[.., start : start + len, ..] along `axis` (a copy; 0 <= start, len >= 1,
 * start + len <= the axis' size). dx[.., start + k, ..] += dy[.., k, ..]. */
qkt_tensor *qkt_narrow(qkt_ctx *ctx, qkt_tensor *x, int axis, int start, int len);
/* y = x[.., idx[k], ..] along `axis` for k < n (PyTorch's index_select): y's axis has
 * size n. idx copied; each in [0, size of the axis); repeats allowed (dx scatter-adds). */
qkt_tensor *qkt_index_select(qkt_ctx *ctx, qkt_tensor *x, int axis, const int32_t *idx, int n);
/* PyTorch's gather: idx has the given shape (same ndim as x, each dim but `axis` at most
 * x's) and y has idx's shape, y[i][j][k] = x[i][idx[i][j][k]][k] for axis 1. idx copied;
 * each in [0, size of the axis). dx scatter-adds dy. */
qkt_tensor *qkt_gather(qkt_ctx *ctx, qkt_tensor *x, int axis, const int32_t *idx, int ndim, const int *shape);
/* Concatenate n >= 1 tensors along `axis` (other dims equal). One node per 4 inputs:
 * more are concatenated in groups. dx_k = dy's slice. */
qkt_tensor *qkt_concat_axis(qkt_ctx *ctx, int n, qkt_tensor **xs, int axis);
/* Stack n >= 1 tensors of one shape along a new dim at `axis` (0 .. ndim; negative counts
 * from ndim + 1): reshape views plus qkt_concat_axis. The result has ndim + 1 <= 4 dims. */
qkt_tensor *qkt_stack(qkt_ctx *ctx, int n, qkt_tensor **xs, int axis);

/* ---------------------------------------------------------------- helpers for op files */
/* Internal, but public so that nn/ can define fused ops with the same machinery:
 * qkt_op_output makes an output of the given shape, pending until qkt_op_record (or
 * qkt_op_record_custom) records it: an op given a pending tensor, or qkt_backward from
 * one, is a usage error (a custom op that forgot to record would otherwise pass no
 * gradient, silently). Recording sets its requires_grad from the inputs and returns the
 * tape node to fill (NULL when nothing is recorded). */
qkt_tensor *qkt_op_output(qkt_ctx *ctx, int ndim, const int *shape);
qkt_node *qkt_op_record(qkt_ctx *ctx, qkt_op op, qkt_tensor *out, int n_in, qkt_tensor **in);
/* Called by each op after computing its output: anomaly detection hook. */
void qkt_op_done(qkt_ctx *ctx, qkt_op op, qkt_tensor *out);
/* An op defined outside autograd: records a QKT_OP_CUSTOM node whose backward is
 * `backward` (it must accumulate into the inputs' grads, as every backward does). */
typedef void (*qkt_backward_fn)(qkt_ctx *ctx, qkt_node *n);
/* The input check every built-in op runs first, for a custom op to run before it reads its
 * inputs: ctx initialised; each of in[0 .. n_in) non-NULL, a finalised parameter or a
 * tensor of this step, not an unrecorded output. A failure is a usage error naming `name`,
 * and until the op records its output, usage errors name it and ctx->scope. */
void qkt_op_check_inputs(qkt_ctx *ctx, const char *name, int n_in, qkt_tensor *const *in);
qkt_node *qkt_op_record_custom(qkt_ctx *ctx, const char *name, qkt_backward_fn backward, qkt_tensor *out,
                               int n_in, qkt_tensor **in);

#ifdef __cplusplus
}

/* C++ helpers (after the C declarations: templates cannot have C linkage). */
/* QKT_SHAPE's dims: an aggregate temporary; its count is a return type's size (unevaluated). */
struct qkt_shape_arr_ {
    int d[QKT_MAX_DIMS];
};
template <class... A>
inline qkt_shape_arr_ qkt_shape_dims_(A... a) {
    static_assert(sizeof...(A) >= 1 && sizeof...(A) <= QKT_MAX_DIMS, "QKT_SHAPE takes 1 to QKT_MAX_DIMS dims");
    return qkt_shape_arr_{{static_cast<int>(a)...}};
}
template <class... A>
char (&qkt_shape_count_(const A &...))[sizeof...(A)];

/* Eval-mode scope as an object: qkt_eval_begin at construction, qkt_eval_end at the end of
 * the block (also when an exception leaves it). */
class qkt_eval_scope {
public:
    explicit qkt_eval_scope(qkt_ctx *ctx) : ctx_(ctx), saved_(qkt_eval_begin(ctx)) {}
    ~qkt_eval_scope() { qkt_eval_end(ctx_, saved_); }
    qkt_eval_scope(const qkt_eval_scope &) = delete;
    qkt_eval_scope &operator=(const qkt_eval_scope &) = delete;

private:
    qkt_ctx *ctx_;
    int saved_;
};
#endif
#endif
