# The layers, lowest first: one static library per folder. For each layer, the layers it
# links (qkt_deps_<layer>) and its public headers (qkt_headers_<layer>, in include/qkt/,
# installed as they are there). A folder may include the public headers of the layers it
# reaches through qkt_deps_* and its own private headers (the .h beside its sources).
# The one table: CMakeLists.txt builds from it, tests/layers/check_layers.cmake checks
# every #include against it.
#   autograd -> nn, optim, data -> io, plot -> train -> experiments -> cli (the program)
set(QKT_LAYERS autograd nn optim data io plot train experiments)
set(qkt_deps_autograd "")
set(qkt_deps_nn autograd)
set(qkt_deps_optim autograd)
set(qkt_deps_data autograd)
set(qkt_deps_io autograd)
set(qkt_deps_plot autograd)
set(qkt_deps_train nn optim data io)
set(qkt_deps_experiments train plot io)
set(qkt_deps_cli experiments)
set(qkt_headers_autograd qkt_autograd.h ops.def qkt_gradcheck.h qkt_version.h)  # qkt_version.h: generated (cmake/qkt_version.h.in)
set(qkt_headers_nn qkt_nn.h)
set(qkt_headers_optim qkt_optim.h)
set(qkt_headers_data qkt_data.h)
set(qkt_headers_io qkt_io.h qkt_json.h qkt_safetensors.h)
set(qkt_headers_plot qkt_plot.h)
set(qkt_headers_train qkt_dist.h qkt_gpt_io.h qkt_metrics.h qkt_train_fields.h qkt_train_run.h qkt_trainer.h)
set(qkt_headers_experiments qkt.h qkt_ablate.h qkt_report.h qkt_stats.h qkt_study.h qkt_sweep.h)
set(qkt_headers_cli "")
