# bench/torch_replicate.py --check, label "torch": the PyTorch model, batches (qkt data --dump),
# schedule and AdamW of the replication against `qkt train` and `qkt step` (mqar and recall,
# d_k 16, sqrt_dk and none). Skipped (77) like torch_crosscheck when the interpreter has no torch.
if(EXISTS ${QKT_TORCH_PYTHON})
  add_test(NAME torch_replicate_check
           COMMAND ${QKT_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/torch_replicate.py --check --qkt $<TARGET_FILE:qkt>)
else()
  add_test(NAME torch_replicate_check
           COMMAND sh -c "echo 'SKIP: ${QKT_TORCH_PYTHON} not found, so the PyTorch replication check cannot run'; exit 77")
endif()
set_tests_properties(torch_replicate_check PROPERTIES SKIP_RETURN_CODE 77 LABELS torch TIMEOUT 300
                     ENVIRONMENT "OMP_NUM_THREADS=1")
