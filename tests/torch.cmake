# The PyTorch cross-checks, label "torch". Debian's python3-torch lives in /usr/bin/python3 (not a
# pyenv python on PATH). Each script exits 77 with a SKIP line when torch is missing; without the
# interpreter the test prints the same and exits 77; CTest reports either as skipped.
set(QKT_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH "Python interpreter with torch for the cross-check")

# qkt_torch_test(NAME THREADS SCRIPT [ARGS...]): SCRIPT ARGS run by QKT_TORCH_PYTHON with
# OMP_NUM_THREADS=THREADS.
function(qkt_torch_test name threads script)
  if(EXISTS ${QKT_TORCH_PYTHON})
    add_test(NAME ${name} COMMAND ${QKT_TORCH_PYTHON} ${script} ${ARGN})
  else()
    add_test(NAME ${name} COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so ${name} cannot run'; exit 77")
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=${threads}")
endfunction()

# `qkt step`'s loss and gradients of the whole model (tests/torch/crosscheck.py).
qkt_torch_test(torch_crosscheck 2 ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck.py $<TARGET_FILE:qkt>)

# The op-level cross-check (tests/torch/crosscheck_ops.py): every case of the gradient-check
# table run by qkt_opdump, once in float64 and once in the main build's precision, against
# the same expression in PyTorch float64.
foreach(flavour f64 main)
  set(lib qkt_autograd)
  if(flavour STREQUAL "f64")
    set(lib qkt_autograd${f64})
  endif()
  add_executable(qkt_opdump_${flavour} ${CMAKE_CURRENT_SOURCE_DIR}/torch/opdump.c)
  target_include_directories(qkt_opdump_${flavour} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/autograd)
  target_link_libraries(qkt_opdump_${flavour} PRIVATE ${lib})
endforeach()
qkt_torch_test(torch_crosscheck_ops 2 ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_ops.py
               $<TARGET_FILE:qkt_opdump_f64> $<TARGET_FILE:qkt_opdump_main>)

# The replication's pieces (bench/torch_replicate.py --check): data, schedule and AdamW of the
# replication against `qkt train` and `qkt step` (mqar and recall, d_k 16, sqrt_dk and none).
qkt_torch_test(torch_replicate_check 1 ${PROJECT_SOURCE_DIR}/bench/torch_replicate.py --check --qkt $<TARGET_FILE:qkt>)

# Small drivers on the library (float32 build): the fused attention's options (the full mask,
# the additive bias and its grad, ALiBi, cross-attention, key padding: crosscheck_attention.py) and
# the optimizers bit for bit (SGD plain, momentum, dampening, Nesterov; Adam; AdamW:
# crosscheck_optim.py).
if(NOT QKT_DOUBLE)
  add_executable(attention_driver ${CMAKE_CURRENT_SOURCE_DIR}/torch/attention_driver.c)
  target_link_libraries(attention_driver PRIVATE qkt_autograd)
  qkt_torch_test(torch_crosscheck_attention 2 ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_attention.py
                 $<TARGET_FILE:attention_driver>)
  add_executable(optim_driver ${CMAKE_CURRENT_SOURCE_DIR}/torch/optim_driver.c)
  target_link_libraries(optim_driver PRIVATE qkt_optim)
  qkt_torch_test(torch_crosscheck_optim 1 ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_optim.py $<TARGET_FILE:optim_driver>)
endif()
