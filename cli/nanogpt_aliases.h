/* qkt train takes nanoGPT's train.py names too (--n_layer=4, --max_iters 500, ...). */
#ifndef QKT_NANOGPT_ALIASES_H
#define QKT_NANOGPT_ALIASES_H
#include "flags.h"
#include "qkt_train_run.h"

/* qkt_flags_parse for qkt train with nanoGPT's spellings as aliases of `flags`; the
 * nanoGPT settings without a qkt flag of their own (bias, decay_lr, ...) are applied to
 * `run` or to the flags, or refused with one line saying why. Same returns as
 * qkt_flags_parse (0, 1 after --help, 2 after one line). */
int qkt_nanogpt_parse(const char *summary, qkt_flag *flags, int n_flags, int argc, char **argv, qkt_train_run *run);

#endif
