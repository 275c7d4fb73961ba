# PyTorch cross-check of the fused attention's options (tests/torch/crosscheck_attention.py):
# the full mask, the additive bias and its grad, ALiBi, cross-attention and key padding,
# run by a small driver on the library (float32 build), label "torch". Skipped (77) like
# torch_crosscheck when the interpreter has no torch.
if(NOT QKT_DOUBLE)
  add_executable(attention_driver ${CMAKE_CURRENT_SOURCE_DIR}/torch/attention_driver.c)
  target_link_libraries(attention_driver PRIVATE qkt_autograd)
  if(EXISTS ${QKT_TORCH_PYTHON})
    add_test(NAME torch_crosscheck_attention
             COMMAND ${QKT_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/crosscheck_attention.py $<TARGET_FILE:attention_driver>)
  else()
    add_test(NAME torch_crosscheck_attention
             COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so the PyTorch cross-check cannot run'; exit 77")
  endif()
  set_tests_properties(torch_crosscheck_attention PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300
                       ENVIRONMENT "OMP_NUM_THREADS=2")
endif()
