/* The fused attention on inputs from files, for tests/torch/crosscheck_attention.py:
 *   attention_driver DIR B Tq Tk C H full bias alibi pad learned scale
 * reads DIR/q.f32 (B, Tq, C), k.f32 and v.f32 (B, Tk, C), dy.f32 (B, Tq, C), and when
 * asked bias.f32 (bias = 3: (H, Tq, Tk); 1: (1, H, Tq, Tk); 4: (B, H, Tq, Tk)), pad.u8
 * (B, Tk), log_scale.f32 (H); alibi = 1 uses qkt_alibi_slopes. Runs qkt_attention
 * forward and backward with seed dy and writes y.f32, probs.f32 (B, H, Tq, Tk), dq.f32,
 * dk.f32, dv.f32 and, when present, dbias.f32 and dlog_scale.f32 (little-endian
 * float32, as qkt_real in the float32 build). Exit 2 on bad arguments or files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_io.h"
#include "qkt_autograd.h"

static char dir[4096];

static int load(const char *name, void *dst, size_t bytes) { return driver_load("attention_driver", dir, name, dst, bytes); }
static int save(const char *name, const qkt_real *src, size_t n) { return driver_save("attention_driver", dir, name, src, sizeof *src, n); }

int main(int argc, char **argv) {
    if (sizeof(qkt_real) != 4 || argc != 13) {
        fprintf(stderr, "usage: attention_driver DIR B Tq Tk C H full bias alibi pad learned scale (float32 build)\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    int B = atoi(argv[2]), Tq = atoi(argv[3]), Tk = atoi(argv[4]), C = atoi(argv[5]), H = atoi(argv[6]);
    int full = atoi(argv[7]), bias_kind = atoi(argv[8]), alibi = atoi(argv[9]), pad = atoi(argv[10]), learned = atoi(argv[11]);
    double scale = atof(argv[12]);
    if (B < 1 || Tq < 1 || Tk < 1 || H < 1 || C < H || C % H || (bias_kind != 0 && bias_kind != 1 && bias_kind != 3 && bias_kind != 4)) {
        fprintf(stderr, "attention_driver: bad sizes or bias kind\n");
        return 2;
    }
    qkt_params p;
    qkt_params_init(&p);
    qkt_tensor *q = qkt_params_add(&p, "q", 3, (int[]){B, Tq, C}, 0), *k = qkt_params_add(&p, "k", 3, (int[]){B, Tk, C}, 0);
    qkt_tensor *v = qkt_params_add(&p, "v", 3, (int[]){B, Tk, C}, 0), *ls = NULL, *bias = NULL;
    if (learned) ls = qkt_params_add(&p, "ls", 1, (int[]){H}, 0);
    if (bias_kind == 3) bias = qkt_params_add(&p, "bias", 3, (int[]){H, Tq, Tk}, 0);
    if (bias_kind == 1 || bias_kind == 4) bias = qkt_params_add(&p, "bias", 4, (int[]){bias_kind == 4 ? B : 1, H, Tq, Tk}, 0);
    qkt_params_finalize(&p);
    size_t nq = (size_t)B * Tq * C, nk = (size_t)B * Tk * C, nn = (size_t)B * H * Tq * Tk;
    qkt_real *dy = malloc(nq * sizeof *dy), *probs = malloc(nn * sizeof *probs), slopes[256];
    uint8_t *mask = malloc((size_t)B * Tk);
    int bad = load("q.f32", q->data, nq * 4) || load("k.f32", k->data, nk * 4) || load("v.f32", v->data, nk * 4) ||
              load("dy.f32", dy, nq * 4) || (ls && load("log_scale.f32", ls->data, (size_t)H * 4)) ||
              (bias && load("bias.f32", bias->data, (size_t)bias->size * 4)) || (pad && load("pad.u8", mask, (size_t)B * Tk));
    if (bad || H > 256) return 2;
    if (alibi) qkt_alibi_slopes(H, slopes);
    qkt_ctx ctx;
    qkt_ctx_init(&ctx, 0, 1);
    qkt_attn_capture cap = {.probs = probs};
    qkt_attn_opts o = {.scale = scale, .log_scale = ls, .key_pad = pad ? mask : NULL, .capture = &cap, .full = full,
                       .bias = bias, .alibi = alibi ? slopes : NULL};
    qkt_tensor *y = qkt_attention(&ctx, q, k, v, H, &o);
    qkt_params_zero_grad(&p);
    qkt_backward(&ctx, y, dy);
    bad = save("y.f32", y->data, nq) || save("probs.f32", probs, nn) || save("dq.f32", q->grad, nq) ||
          save("dk.f32", k->grad, nk) || save("dv.f32", v->grad, nk) || (ls && save("dlog_scale.f32", ls->grad, (size_t)H)) ||
          (bias && save("dbias.f32", bias->grad, (size_t)bias->size));
    qkt_ctx_free(&ctx);
    qkt_params_free(&p);
    free(dy), free(probs), free(mask);
    return bad ? 2 : 0;
}
