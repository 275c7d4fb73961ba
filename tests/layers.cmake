# The layering (tests/layers/check_layers.cmake) over the source tree, and over a fixture
# with two planted violations, which the check must report (so it can fail).
add_test(NAME layers COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.cmake)
add_test(NAME layers_planted COMMAND sh -c
  "out=$(${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/layers/bad -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.cmake 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 && echo \"$out\" | grep -q 'autograd/use_nn.c: includes nn/qkt_nn.h' && echo \"$out\" | grep -q 'nn/use_private.c: includes autograd/kernels.h, a header private to autograd'")
set_tests_properties(layers layers_planted PROPERTIES LABELS unit)

# The library never prints or exits (tests/layers/check_silent.cmake), over the source tree
# and over a fixture with two planted calls among words it must let pass.
add_test(NAME silent COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_silent.cmake)
add_test(NAME silent_planted COMMAND sh -c
  "out=$(${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/layers/loud -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_silent.cmake 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 && echo \"$out\" | grep -q 'experiments/loud.c:11: calls fprintf(stderr' && echo \"$out\" | grep -q 'experiments/loud.c:13: calls exit(' && echo \"$out\" | grep -q ' 2 call(s)'")
set_tests_properties(silent silent_planted PROPERTIES LABELS unit)
