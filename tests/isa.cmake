# The kernel paths (autograd/kern_table.h): the kernel tests, the float64 gradient checks of
# the ops and the attention tests once more on each path, forced with QKT_ISA. A path
# this CPU (or a one-path build: -DQKT_NATIVE=ON) lacks is reported as skipped.
# test_isa compares the paths with each other.
foreach(isa baseline avx2 avx512)
  foreach(t test_kernels test_init test_gemm test_gc_ops test_attention test_gc_attention test_fused)
    add_test(NAME ${t}_${isa} COMMAND ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    set_tests_properties(${t}_${isa} PROPERTIES LABELS unit SKIP_RETURN_CODE 77
                         ENVIRONMENT "QKT_ISA=${isa};OMP_NUM_THREADS=2")
  endforeach()
endforeach()
