/* The context: arena, flat tape, and the reverse walk. */
#include "ops_internal.h"
#include "rt_memory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    qkt_backward_fn backward;
} op_table[QKT_OP_COUNT] = {
#define QKT_OP(ID, name) [QKT_OP_##ID] = {#name, qkt__##name##_backward},
#include "ops.def"
#undef QKT_OP
};

const char *qkt_op_name(qkt_op op) { return op >= 0 && op < QKT_OP_COUNT ? op_table[op].name : "?"; }

/* A context's first stamp: distinct per context (a tensor of another context is refused
 * too), never 0 (the parameters' stamp). */
static uint32_t first_gen(void) {
    static uint32_t n_ctx;
    uint32_t k = __atomic_fetch_add(&n_ctx, 1, __ATOMIC_RELAXED);
    return (k * 0x9E3779B1u) | 1u; /* odd: a reset adds 2, so it never reaches 0 */
}

void qkt_ctx_init(qkt_ctx *ctx, size_t arena_bytes, uint64_t seed) {
    qkt__threads_init();
    memset(ctx, 0, sizeof *ctx);
    ctx->magic = QKT_CTX_MAGIC;
    ctx->gen = first_gen();
    const char *dbg = getenv("QKT_DEBUG_ARENA");
    ctx->debug_arena = dbg && *dbg && strcmp(dbg, "0") != 0;
    qkt_arena_init(&ctx->arena, arena_bytes, 0);
    qkt__hdr_init(ctx);
    qkt__grad_pool_init(ctx);
    ctx->cap_nodes = 256;
    ctx->tape = qkt_malloc((size_t)ctx->cap_nodes * sizeof *ctx->tape);
    ctx->training = true;
    qkt_rng_seed(&ctx->rng, seed);
}

int qkt_ctx_set_mode(qkt_ctx *ctx, int mode) {
    qkt__check_ctx(ctx, "qkt_ctx_set_mode");
    int prev = (ctx->no_grad ? 0 : QKT_MODE_GRAD) | (ctx->training ? QKT_MODE_DROPOUT : 0);
    ctx->no_grad = !(mode & QKT_MODE_GRAD);
    ctx->training = (mode & QKT_MODE_DROPOUT) != 0;
    return prev;
}

int qkt_eval_begin(qkt_ctx *ctx) {
    qkt__check_ctx(ctx, "qkt_eval_begin");
    return qkt_ctx_set_mode(ctx, QKT_MODE_EVAL);
}

void qkt_eval_end(qkt_ctx *ctx, int saved) {
    qkt__check_ctx(ctx, "qkt_eval_end");
    QKT_CHECK(saved >= QKT_MODE_EVAL && saved <= QKT_MODE_TRAIN,
              "qkt_eval_end: saved mode %d is not one qkt_eval_begin returns (0 .. 3)", saved);
    /* In eval mode here unless the scope changed the mode or scopes ended out of order. */
    QKT_CHECK(ctx->no_grad && !ctx->training,
              "qkt_eval_end: the context is not in eval mode (mode %d): a qkt_ctx_set_mode inside the scope, "
              "or nested scopes ended out of order",
              (ctx->no_grad ? 0 : QKT_MODE_GRAD) | (ctx->training ? QKT_MODE_DROPOUT : 0));
    qkt_ctx_set_mode(ctx, saved);
}

void qkt_ctx_reset(qkt_ctx *ctx) {
    qkt__check_ctx(ctx, "qkt_ctx_reset");
    ctx->n_nodes = 0;
    ctx->gen += 2;
    if (ctx->debug_arena) qkt__arena_poison(&ctx->arena);
    qkt_arena_reset(&ctx->arena);
    qkt__hdr_reset(ctx);
    qkt__grad_pool_reset(ctx);
}

void qkt_ctx_free(qkt_ctx *ctx) {
    qkt_arena_free(&ctx->arena);
    qkt__hdr_free(ctx);
    qkt__grad_pool_free(ctx);
    free(ctx->tape);
    memset(ctx, 0, sizeof *ctx);
}

qkt_mem_stats qkt_ctx_mem(const qkt_ctx *ctx) {
    qkt_mem_stats m = {0};
    const qkt_arena_state *a = ctx->arena.s;
    const qkt_grad_pool *g = ctx->grads;
    if (a) {
        m.arena_used = a->used_total, m.arena_peak = a->peak, m.arena_capacity = a->capacity;
        m.n_mallocs += a->n_mallocs;
    }
    if (ctx->hdrs) m.n_mallocs += ctx->hdrs->n_mallocs;
    if (g) {
        m.grad_live = g->live, m.grad_peak = g->peak, m.grad_capacity = g->capacity;
        m.n_mallocs += g->n_mallocs;
    }
    return m;
}

void qkt_ctx_redirect_param_grads(qkt_ctx *ctx, const qkt_params *p, qkt_real *grad) {
    QKT_CHECK(p->finalized, "qkt_ctx_redirect_param_grads before qkt_params_finalize");
    ctx->pg_home = grad ? p->grad : NULL;
    ctx->pg_to = grad;
    ctx->pg_size = grad ? p->size : 0;
}

qkt_tensor *qkt__op_output(qkt_ctx *ctx, int ndim, const int *shape) { return qkt_tensor_new(ctx, ndim, shape); }

qkt_tensor *qkt_op_output(qkt_ctx *ctx, int ndim, const int *shape) {
    qkt_tensor *t = qkt_tensor_new(ctx, ndim, shape);
    t->pending = true; /* until recorded */
    return t;
}

static void check_output(qkt_ctx *ctx, const char *name, const qkt_tensor *out);

void qkt__check_ctx(const qkt_ctx *ctx, const char *call) {
    QKT_CHECK(ctx && ctx->magic == QKT_CTX_MAGIC, "%s: the context is not initialised (qkt_ctx_init) or was freed", call);
}

/* A tensor of this step, or a finalised parameter; NULL only where the op allows it. */
void qkt__check_live(const qkt_ctx *ctx, const char *what, const qkt_tensor *t, int k, bool optional) {
    if (!t) {
        QKT_CHECK(optional, "%s: input %d is NULL (a tensor that was never made, or a name qkt_params_find did not find)", what, k);
        return;
    }
    if (t->is_param) {
        QKT_CHECK(t->data, "%s: input %d is parameter %s of a store not yet finalised (qkt_params_finalize)", what, k, t->name);
        return;
    }
    QKT_CHECK(t->gen == ctx->gen,
              "%s: input %d is a tensor of an earlier step (made before qkt_ctx_reset) or of another context; "
              "its memory now belongs to this step", what, k);
    QKT_CHECK(!t->pending,
              "%s: input %d is a custom op's output that was never recorded: call qkt_op_record_custom (or "
              "qkt_op_record) after computing it, or no gradient passes through it", what, k);
}

void qkt__check_inputs(const qkt_ctx *ctx, const char *op, int n, const qkt_tensor *const *t, int n_required) {
    qkt__check_ctx(ctx, op);
    qkt__call_set(op, ctx->scope, false);
    for (int k = 0; k < n; k++) qkt__check_live(ctx, op, t[k], k, k >= n_required);
}

/* Records out = op(in) (name: the op's, or a custom op's own, for messages). */
static qkt_node *record(qkt_ctx *ctx, qkt_op op, const char *name, qkt_tensor *out, int n_in, qkt_tensor **in) {
    qkt__check_ctx(ctx, name);
    QKT_CHECK(out && out->gen == ctx->gen, "%s: the output to record is not a tensor of this step (qkt_op_output)", name);
    QKT_CHECK(n_in <= QKT_MAX_IN, "%s: %d inputs (at most %d)", name, n_in, QKT_MAX_IN);
    for (int i = 0; i < n_in; i++) qkt__check_live(ctx, name, in[i], i, true);
    out->pending = false;
    qkt__call_set(NULL, NULL, false); /* the op's checks are behind it */
    bool any = false;
    for (int i = 0; i < n_in; i++) any |= qkt__needs_grad(in[i]);
    out->requires_grad = any && !ctx->no_grad;
    if (!out->requires_grad) return NULL;
    if (ctx->n_nodes == ctx->cap_nodes) { /* grows during the first step only */
        ctx->cap_nodes *= 2;
        ctx->tape = qkt_realloc(ctx->tape, (size_t)ctx->cap_nodes * sizeof *ctx->tape);
    }
    qkt_node *n = &ctx->tape[ctx->n_nodes++];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->out = out;
    n->n_in = n_in;
    for (int i = 0; i < n_in; i++) n->in[i] = in[i];
    n->scope = ctx->scope;
    return n;
}

void qkt_op_check_inputs(qkt_ctx *ctx, const char *name, int n_in, qkt_tensor *const *in) {
    qkt__check_inputs(ctx, name, n_in, (const qkt_tensor *const *)in, n_in);
}

qkt_node *qkt_op_record(qkt_ctx *ctx, qkt_op op, qkt_tensor *out, int n_in, qkt_tensor **in) {
    return record(ctx, op, qkt_op_name(op), out, n_in, in);
}

qkt_node *qkt_op_record_custom(qkt_ctx *ctx, const char *name, qkt_backward_fn backward, qkt_tensor *out,
                               int n_in, qkt_tensor **in) {
    qkt_node *n = record(ctx, QKT_OP_CUSTOM, name, out, n_in, in);
    if (n) n->custom_backward = backward, n->custom_name = name;
    check_output(ctx, name, out); /* the output is computed before it is recorded */
    return n;
}

void qkt__custom_backward(qkt_ctx *ctx, qkt_node *n) { n->custom_backward(ctx, n); }

void qkt_op_done(qkt_ctx *ctx, qkt_op op, qkt_tensor *out) {
    qkt__call_set(NULL, NULL, false);
    if (op != QKT_OP_CUSTOM) check_output(ctx, qkt_op_name(op), out); /* custom: checked when recorded */
}

static void check_output(qkt_ctx *ctx, const char *name, const qkt_tensor *out) {
    if (!ctx->detect_anomaly) return;
    for (int64_t i = 0; i < out->size; i++) {
        if (!isfinite(out->data[i])) {
            qkt_fatalf(QKT_FATAL_ANOMALY, "anomaly: op %s%s%s produced %s at element %lld of %lld", name,
                    ctx->scope ? " in " : "", ctx->scope ? ctx->scope : "", isnan(out->data[i]) ? "NaN" : "Inf",
                    (long long)i, (long long)out->size);
        }
    }
}

/* detect_anomaly in backward: the grads a node's backward wrote must be finite. */
static void check_backward(const qkt_ctx *ctx, const qkt_node *n) {
    for (int k = 0; k < n->n_in; k++) {
        const qkt_tensor *t = n->in[k];
        const qkt_real *g = t ? qkt__grad_buffer(ctx, t) : NULL;
        if (!g) continue;
        for (int64_t i = 0; i < t->size; i++) {
            if (!isfinite(g[i])) {
                qkt_fatalf(QKT_FATAL_ANOMALY, "anomaly: op %s%s%s produced %s in its backward (the grad of input %d, element %lld of %lld)",
                        n->op == QKT_OP_CUSTOM && n->custom_name ? n->custom_name : qkt_op_name(n->op),
                        n->scope ? " in " : "", n->scope ? n->scope : "", isnan(g[i]) ? "NaN" : "Inf", k,
                        (long long)i, (long long)t->size);
            }
        }
    }
}

void qkt_backward(qkt_ctx *ctx, qkt_tensor *out, const qkt_real *seed) {
    qkt__check_ctx(ctx, "qkt_backward");
    QKT_CHECK(out, "qkt_backward: the output is NULL");
    QKT_CHECK(out->is_param || out->gen == ctx->gen,
              "qkt_backward: the output is a tensor of an earlier step (made before qkt_ctx_reset) or of another "
              "context: run the forward again after the reset");
    QKT_CHECK(!out->pending,
              "qkt_backward: the output is a custom op's output that was never recorded: call qkt_op_record_custom "
              "after computing it");
    QKT_CHECK(out->requires_grad,
              "qkt_backward: the output does not require grad: the forward ran without recording (QKT_MODE_EVAL or "
              "ctx->no_grad), or no input of its graph requires grad (a parameter, or a tensor with requires_grad set)");
    qkt_real *g = qkt_grad(ctx, out);
    if (seed) {
        for (int64_t i = 0; i < out->size; i++) g[i] += seed[i];
    } else {
        QKT_CHECK(out->size == 1, "qkt_backward without seed needs a scalar, got %lld elements", (long long)out->size);
        g[0] += 1;
    }
    for (int i = ctx->n_nodes - 1; i >= 0; i--) {
        qkt_node *n = &ctx->tape[i];
        if (!n->out->grad) continue; /* nothing flowed into this node */
        QKT_CHECK(!n->backward_ran || ctx->retain_graph,
                  "qkt_backward reached op %s%s%s a second time: its grads would add up twice. Call "
                  "qkt_ctx_reset and run the forward again, or set ctx->retain_graph to mean it",
                  n->op == QKT_OP_CUSTOM && n->custom_name ? n->custom_name : qkt_op_name(n->op), n->scope ? " in " : "",
                  n->scope ? n->scope : "");
        n->backward_ran = true;
        qkt__call_set(n->op == QKT_OP_CUSTOM && n->custom_name ? n->custom_name : qkt_op_name(n->op), n->scope, true);
        op_table[n->op].backward(ctx, n);
        if (ctx->detect_anomaly) check_backward(ctx, n);
        if (!ctx->keep_grads) qkt__grad_release(ctx, n->out); /* every consumer has run */
    }
    qkt__call_set(NULL, NULL, false);
}
