/* The kernel paths (autograd/kern_table.h) against each other. A process picks its path once,
 * so each run is a child process (fork before any op, QKT_ISA set in the child): a small
 * transformer block (embedding, LayerNorm, affine, fused attention on packed qkv with a
 * learned log-scale and attention dropout, residual adds, a GELU MLP, tied head,
 * cross-entropy with ignored targets) with the attention's other options added (the
 * full mask with a learned additive bias, ALiBi and key padding over the embeddings,
 * and a causal cross-attention of 60 queries against the 70 positions), forward and
 * backward, at shapes where every kernel splits over threads (B T 4C and B T V above
 * QKT_PAR_MIN, B Tq Tk C above the attention's threshold, T = 70 not a multiple of the
 * tiles). For each path this CPU runs:
 *   - 1 thread and 2 threads give the same bits (loss and every parameter grad);
 *   - the loss and grads match the baseline path to float32 rounding.
 * Also: with QKT_ISA unset the widest path is chosen, and an unknown or unsupported
 * QKT_ISA is refused with a one-line message. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qkt_test.h"

enum { B = 8, T = 70, C = 32, H = 2, V = 65 };
static const char *const paths[] = {"baseline", "avx2", "avx512"};
enum { n_paths = 3 };

/* Loss and grads of the block (n = 1 + the parameter count values) on the current path. */
static double *run_block(int threads, int64_t *n) {
    qkt_set_threads(threads);
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *wte = qkt_params_add(&p, "wte", 2, (int[]){V, C}, 0);
    qkt_tensor *ln1w = qkt_params_add(&p, "ln1w", 1, (int[]){C}, 0), *ln1b = qkt_params_add(&p, "ln1b", 1, (int[]){C}, 0);
    qkt_tensor *wqkv = qkt_params_add(&p, "wqkv", 2, (int[]){3 * C, C}, 0), *bqkv = qkt_params_add(&p, "bqkv", 1, (int[]){3 * C}, 0);
    qkt_tensor *wp = qkt_params_add(&p, "wp", 2, (int[]){C, C}, 0), *bp = qkt_params_add(&p, "bp", 1, (int[]){C}, 0);
    qkt_tensor *ln2w = qkt_params_add(&p, "ln2w", 1, (int[]){C}, 0), *ln2b = qkt_params_add(&p, "ln2b", 1, (int[]){C}, 0);
    qkt_tensor *wfc = qkt_params_add(&p, "wfc", 2, (int[]){4 * C, C}, 0), *bfc = qkt_params_add(&p, "bfc", 1, (int[]){4 * C}, 0);
    qkt_tensor *wo = qkt_params_add(&p, "wo", 2, (int[]){C, 4 * C}, 0), *bo = qkt_params_add(&p, "bo", 1, (int[]){C}, 0);
    qkt_tensor *ls = qkt_params_add(&p, "log_scale", 1, (int[]){H}, 0);
    qkt_tensor *abias = qkt_params_add(&p, "attn_bias", 3, (int[]){H, T, T}, 0);
    qkt_params_finalize(&p);
    qkt_rng r;
    qkt_rng_seed(&r, 17);
    for (int64_t i = 0; i < p.size; i++) p.data[i] = (qkt_real)(0.15 * qkt_rng_normal(&r));
    for (int j = 0; j < C; j++) ln1w->data[j] += 1, ln2w->data[j] += 1;
    int32_t idx[B * T], tgt[B * T], idx2[B * 60];
    for (int i = 0; i < B * T; i++) idx[i] = (int32_t)qkt_rng_below(&r, V), tgt[i] = i % 7 == 3 ? QKT_IGNORE : (int32_t)qkt_rng_below(&r, V);
    for (int i = 0; i < B * 60; i++) idx2[i] = (int32_t)qkt_rng_below(&r, V);
    uint8_t pad[B * T];
    for (int i = 0; i < B * T; i++) pad[i] = i % 11 == 5;
    qkt_real slopes[H];
    qkt_alibi_slopes(H, slopes);

    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 5);
    qkt_tensor *x = qkt_embedding(&ctx, wte, idx, 2, (int[]){B, T});
    qkt_tensor *qkv = qkt_affine(&ctx, qkt_layernorm(&ctx, x, ln1w, ln1b, 1e-5), wqkv, bqkv);
    qkt_attn_opts o = {.scale = 1 / sqrt(C / H), .dropout = 0.1, .log_scale = ls};
    qkt_tensor *x2 = qkt_add(&ctx, x, qkt_affine(&ctx, qkt_attention_qkv(&ctx, qkv, H, &o), wp, bp));
    qkt_attn_opts of = {.scale = 1 / sqrt(C / H), .full = true, .bias = abias, .alibi = slopes, .key_pad = pad};
    x2 = qkt_add(&ctx, x2, qkt_attention(&ctx, qkt_layernorm(&ctx, x2, NULL, NULL, 1e-5), x, x, H, &of));
    qkt_tensor *m = qkt_affine(&ctx, qkt_gelu(&ctx, qkt_affine(&ctx, qkt_layernorm(&ctx, x2, ln2w, ln2b, 1e-5), wfc, bfc)), wo, bo);
    qkt_tensor *x3 = qkt_add(&ctx, x2, m), *logits = qkt_affine(&ctx, x3, wte, NULL);
    qkt_tensor *loss = qkt_cross_entropy(&ctx, logits, tgt, NULL);
    qkt_tensor *xs = qkt_embedding(&ctx, wte, idx2, 2, (int[]){B, 60}); /* (B, 60, C) queries against (B, 70, C) */
    qkt_tensor *yc = qkt_attention(&ctx, xs, x3, x3, H, &(qkt_attn_opts){.scale = 1 / sqrt(C / H), .alibi = slopes});
    loss = qkt_add(&ctx, loss, qkt_mean(&ctx, qkt_mul(&ctx, yc, yc)));
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, loss, NULL);

    *n = 1 + p.size;
    double *out = malloc(sizeof(double) * (size_t)*n);
    out[0] = loss->data[0];
    for (int64_t i = 0; i < p.size; i++) out[1 + i] = p.grad[i];
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    return out;
}

/* Runs `what` in a child with QKT_ISA=isa (NULL: unset). what 0: the block at `threads`,
 * its values into *vals (n of them); what 1: qkt_isa_select, its message (or the path's
 * name) into msg. Returns the child's exit status. */
static int in_child(const char *isa, int what, int threads, double **vals, int64_t *n, char *msg, size_t msg_len) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        if (isa) setenv("QKT_ISA", isa, 1);
        else unsetenv("QKT_ISA");
        int rc = 0;
        if (what == 0) {
            int64_t k;
            double *v = run_block(threads, &k);
            rc = write(fd[1], &k, sizeof k) == sizeof k && write(fd[1], v, sizeof(double) * (size_t)k) == (ssize_t)(sizeof(double) * (size_t)k) ? 0 : 3;
        } else {
            qkt_err err = {{0}};
            rc = qkt_isa_select(&err) ? 1 : 0;
            const char *s = rc ? err.msg : qkt_isa_name();
            if (write(fd[1], s, strlen(s)) < 0) rc = 3;
        }
        _exit(rc);
    }
    close(fd[1]);
    if (what == 0) {
        *vals = NULL, *n = 0;
        int64_t k = 0;
        if (read(fd[0], &k, sizeof k) == sizeof k && k > 0 && k < (1 << 24)) {
            double *v = malloc(sizeof(double) * (size_t)k);
            size_t want = sizeof(double) * (size_t)k, got = 0;
            ssize_t m;
            while (got < want && (m = read(fd[0], (char *)v + got, want - got)) > 0) got += (size_t)m;
            if (got == want) *vals = v, *n = k;
            else free(v);
        }
    } else {
        size_t got = 0;
        ssize_t m;
        while (got + 1 < msg_len && (m = read(fd[0], msg + got, msg_len - 1 - got)) > 0) got += (size_t)m;
        msg[got] = 0;
    }
    close(fd[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int main(void) {
    double *base = NULL;
    int64_t nbase = 0;
    const char *widest = NULL;
    for (int i = 0; i < n_paths; i++) {
        qkt_err err;
        if (qkt_isa_check(paths[i], &err)) {
            printf("%s: skipped: %s\n", paths[i], err.msg);
            continue;
        }
        widest = paths[i];
        double *v1, *v2;
        int64_t n1, n2;
        int rc1 = in_child(paths[i], 0, 1, &v1, &n1, NULL, 0), rc2 = in_child(paths[i], 0, 2, &v2, &n2, NULL, 0);
        EXPECT(rc1 == 0 && rc2 == 0 && v1 && v2 && n1 == n2, "%s: the runs failed (exit %d, %d)", paths[i], rc1, rc2);
        if (!(v1 && v2 && n1 == n2)) continue;
        EXPECT(memcmp(v1, v2, sizeof(double) * (size_t)n1) == 0, "%s: 1 and 2 threads give different bits", paths[i]);
        if (!base) {
            base = v1, nbase = n1; /* baseline is first and always runs */
            printf("%s: loss %.9g, %lld grads; 1 and 2 threads bit-identical\n", paths[i], base[0], (long long)(n1 - 1));
        } else {
            double gmax = 0, worst = 0;
            for (int64_t j = 1; j < n1; j++) gmax = fmax(gmax, fabs(base[j]));
            for (int64_t j = 1; j < n1; j++) worst = fmax(worst, fabs(v1[j] - base[j]));
            double dloss = fabs(v1[0] - base[0]) / fabs(base[0]);
            printf("%s: loss %.9g (relative difference to baseline %.3g), largest grad difference %.3g of the largest grad; "
                   "1 and 2 threads bit-identical\n", paths[i], v1[0], dloss, worst / gmax);
            EXPECT(n1 == nbase, "%s: %lld values, baseline %lld", paths[i], (long long)n1, (long long)nbase);
            EXPECT(dloss < 1e-5, "%s: loss %.9g differs from baseline's %.9g by %.3g (relative)", paths[i], v1[0], base[0], dloss);
            EXPECT(worst <= 1e-4 * gmax, "%s: grads differ from baseline's by %.3g of the largest grad %.3g", paths[i], worst / gmax, gmax);
            free(v1);
        }
        free(v2);
    }
    free(base);

    char msg[QKT_ERR_LEN];
    if (widest) { /* a build with several paths: unset means the widest */
        EXPECT(in_child(NULL, 1, 0, NULL, NULL, msg, sizeof msg) == 0 && !strcmp(msg, widest),
               "QKT_ISA unset chose '%s', expected the widest path this CPU runs, %s", msg, widest);
    } else {
        printf("one kernel path in this build: %s\n", in_child(NULL, 1, 0, NULL, NULL, msg, sizeof msg) == 0 ? msg : "?");
    }
    int rc = in_child("sse9", 1, 0, NULL, NULL, msg, sizeof msg);
    EXPECT(rc == 1 && strstr(msg, "QKT_ISA=sse9: unknown kernel path") && !strchr(msg, '\n'), "QKT_ISA=sse9: exit %d, '%s'", rc, msg);
    for (int i = 0; i < n_paths; i++) {
        qkt_err err;
        if (!qkt_isa_check(paths[i], &err)) continue;
        rc = in_child(paths[i], 1, 0, NULL, NULL, msg, sizeof msg);
        EXPECT(rc == 1 && strstr(msg, paths[i]) && !strchr(msg, '\n'), "QKT_ISA=%s (unsupported): exit %d, '%s'", paths[i], rc, msg);
        printf("QKT_ISA=%s refused: %s\n", paths[i], msg);
    }
    return qkt_test_finish();
}
