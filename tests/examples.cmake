# examples/study_variant.c built in the tree and run with a tiny study: its own registered
# variant (half_sqrt_dk) goes through qkt_ablate_run_study's forked cells into report.md.
# (The packaging test builds it from the installed package with docs/library.md's line.)
add_executable(example_study_variant ${PROJECT_SOURCE_DIR}/examples/study_variant.c)
target_link_libraries(example_study_variant PRIVATE qkt_experiments)
add_test(NAME example_study_variant COMMAND sh -c
  "rm -rf ex_study && $<TARGET_FILE:example_study_variant> ex_study 8 >ex_study.out 2>ex_study.err && grep -q '^ex_study/half/report.md$' ex_study.out && test $(grep -c 'half_sqrt_dk' ex_study/half/report.md) -ge 3 && test $(ls ex_study/half/cells/train_half_sqrt_dk_*.csv | wc -l) -eq 2 || { cat ex_study.err; exit 1; }"
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(example_study_variant PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT "OMP_NUM_THREADS=2")
