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
