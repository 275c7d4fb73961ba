# PyTorch cross-check of `qkt step` (tests/torch/crosscheck.py), label "torch".
# Debian's python3-torch lives in /usr/bin/python3 (not a pyenv python on PATH). The
# script exits 77 with a SKIP line when torch is missing; CTest reports it as skipped.
set(QKT_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH "Python interpreter with torch for the cross-check")
if(EXISTS ${QKT_TORCH_PYTHON})
  add_test(NAME torch_crosscheck
           COMMAND ${QKT_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck.py $<TARGET_FILE:qkt>)
else()
  add_test(NAME torch_crosscheck
           COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so the PyTorch cross-check cannot run'; exit 77")
endif()
set_tests_properties(torch_crosscheck PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300
                     ENVIRONMENT "OMP_NUM_THREADS=2")

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
if(EXISTS ${QKT_TORCH_PYTHON})
  add_test(NAME torch_crosscheck_ops
           COMMAND ${QKT_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_ops.py
                   $<TARGET_FILE:qkt_opdump_f64> $<TARGET_FILE:qkt_opdump_main>)
else()
  add_test(NAME torch_crosscheck_ops
           COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so the PyTorch cross-check cannot run'; exit 77")
endif()
set_tests_properties(torch_crosscheck_ops PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300
                     ENVIRONMENT "OMP_NUM_THREADS=2")
