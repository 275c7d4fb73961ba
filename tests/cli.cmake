# Long CLI fault scenarios: label "slow" (left out of make test; .ci/run runs ctest -L slow).
set_tests_properties(test_ablate_faults PROPERTIES LABELS slow TIMEOUT 600)
# The bench scripts' argument and run checks (no timing runs).
add_test(NAME bench_scripts COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/bench_scripts.sh ${PROJECT_SOURCE_DIR} $<TARGET_FILE:qkt>)
set_tests_properties(bench_scripts PROPERTIES LABELS unit TIMEOUT 120)
