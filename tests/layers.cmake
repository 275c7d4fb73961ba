# The layering (tests/layers/check_layers.cmake) over the source tree, and over a fixture
# with planted violations, which the check must report (so it can fail).
add_test(NAME layers COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.cmake)
add_test(NAME layers_planted COMMAND sh -c
  "out=$(${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/layers/bad -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.cmake 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 \
   && echo \"$out\" | grep -q 'autograd/use_nn.c: includes qkt_nn.h of nn/: autograd may include only' \
   && echo \"$out\" | grep -q 'data/use_sideways.c: includes qkt_optim.h of optim/: data may include only' \
   && echo \"$out\" | grep -q 'nn/use_private.c: includes autograd/kernels.h, a header private to autograd/' \
   && echo \"$out\" | grep -q 'include/qkt/qkt_nn.h: includes autograd/kernels.h, a private header, from a public one' \
   && echo \"$out\" | grep -q 'include/qkt/qkt_stray.h: in no layer.s list of public headers'")
set_tests_properties(layers layers_planted PROPERTIES LABELS unit)
# The compiler's side (tests/layers/check_private.cmake): with each layer's include path,
# a header private to another folder is not found. The path is the target's own, with
# what its links bring (INCLUDE_DIRECTORIES, evaluated for the target).
set(qkt_inc_args "")
foreach(layer ${QKT_LAYERS} cli)
  if(layer STREQUAL "cli")
    set(t qkt)
  else()
    set(t qkt_${layer})
  endif()
  list(APPEND qkt_inc_args "-DINC_${layer}=$<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,|>")
endforeach()
add_test(NAME layers_private COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DCC=${CMAKE_C_COMPILER}
  -DOUT=${PROJECT_BINARY_DIR}/layers_private ${qkt_inc_args} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_private.cmake)
set_tests_properties(layers_private PROPERTIES LABELS unit)
# The umbrella header qkt.h includes every public header of include/qkt/ (and the generated
# qkt_version.h); a fixture umbrella that leaves two out must be reported.
add_test(NAME umbrella COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_umbrella.cmake)
add_test(NAME umbrella_planted COMMAND sh -c
  "out=$(${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/layers/bad -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_umbrella.cmake 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 && echo \"$out\" | grep -q 'qkt.h does not include qkt_optim.h, qkt_stray.h'")
set_tests_properties(umbrella umbrella_planted PROPERTIES LABELS unit)
# The arena's and the grad pool's insides are autograd's (autograd/rt_memory.h): a program
# that reaches into them does not compile; it reads them through qkt_ctx_mem.
add_test(NAME autograd_opaque COMMAND sh -c
  "printf '#include \"qkt_autograd.h\"\\nsize_t f(qkt_ctx *c) { return c->arena.s->n_mallocs + c->grads->live; }\\n' > opaque.c; if ${CMAKE_C_COMPILER} -fsyntax-only -I${PROJECT_SOURCE_DIR}/include/qkt opaque.c 2>opaque.log; then echo 'FAIL: the arena and grad pool are not opaque'; exit 1; fi; cat opaque.log; grep -q 'incomplete' opaque.log"
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(autograd_opaque PROPERTIES LABELS unit)

# The library never prints or exits (tests/layers/check_silent.cmake), over the source tree
# and over a fixture with two planted calls among words it must let pass.
add_test(NAME silent COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_silent.cmake)
add_test(NAME silent_planted COMMAND sh -c
  "out=$(${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}/layers/loud -P ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_silent.cmake 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 && echo \"$out\" | grep -q 'experiments/loud.c:11: calls fprintf(stderr' && echo \"$out\" | grep -q 'experiments/loud.c:13: calls exit(' && echo \"$out\" | grep -q ' 2 call(s)'")
set_tests_properties(silent silent_planted PROPERTIES LABELS unit)
