# Long CLI fault scenarios: label "slow" (left out of make test; .ci/run runs ctest -L slow).
set_tests_properties(test_ablate_faults PROPERTIES LABELS slow TIMEOUT 600)
