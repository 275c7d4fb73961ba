# PyTorch cross-check of the optimizers (tests/torch/crosscheck_optim.py): SGD (plain, momentum,
# dampening, Nesterov), Adam and AdamW equal to torch.optim bit for bit, run by a small driver on
# the library (float32 build), label "torch". Skipped (77) like torch_crosscheck when the
# interpreter has no torch.
if(NOT QKT_DOUBLE)
  add_executable(optim_driver ${CMAKE_CURRENT_SOURCE_DIR}/torch/optim_driver.c)
  target_link_libraries(optim_driver PRIVATE qkt_optim)
  if(EXISTS ${QKT_TORCH_PYTHON})
    add_test(NAME torch_crosscheck_optim
             COMMAND ${QKT_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_optim.py $<TARGET_FILE:optim_driver>)
  else()
    add_test(NAME torch_crosscheck_optim
             COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so the PyTorch cross-check cannot run'; exit 77")
  endif()
  set_tests_properties(torch_crosscheck_optim PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300)
endif()
