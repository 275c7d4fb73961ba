# Fixture for the layer check: a tree with planted violations (tests/layers.cmake lists them).
set(QKT_LAYERS autograd nn optim data)
set(qkt_deps_nn autograd)
set(qkt_deps_optim autograd)
set(qkt_deps_data autograd)
set(qkt_deps_cli nn optim data)
set(qkt_headers_autograd qkt_autograd.h)
set(qkt_headers_nn qkt_nn.h)
set(qkt_headers_optim qkt_optim.h)
