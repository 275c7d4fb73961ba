/* qkt: everything public in one include. Layers, lowest first (docs/architecture.md):
 * autograd (tensors, tape, ops, errors, RNG) -> nn, optim, data -> io, plot -> train
 * -> experiments (the sqrt(d_k) study). Link: pkg-config --cflags --libs qkt, or
 * find_package(qkt) and target_link_libraries(prog qkt::qkt) (docs/library.md). */
#ifndef QKT_H
#define QKT_H
#include "qkt_version.h"
#include "qkt_autograd.h"
#include "qkt_gradcheck.h"
#include "qkt_nn.h"
#include "qkt_optim.h"
#include "qkt_data.h"
#include "qkt_io.h"
#include "qkt_safetensors.h"
#include "qkt_json.h"
#include "qkt_plot.h"
#include "qkt_metrics.h"
#include "qkt_trainer.h"
#include "qkt_train_fields.h"
#include "qkt_train_run.h"
#include "qkt_dist.h"
#include "qkt_gpt_io.h"
#include "qkt_ablate.h"
#include "qkt_study.h"
#include "qkt_sweep.h"
#include "qkt_report.h"
#include "qkt_stats.h"
#endif
