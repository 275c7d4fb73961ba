# The installed package (tests/packaging/check_install.sh): examples through pkg-config and
# find_package, the float32/float64 link guard, the headers from C++17.
if(QKT_DOUBLE)
  set(qkt_pkg_mode float64)
else()
  set(qkt_pkg_mode float32)
endif()
add_test(NAME packaging COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/check_install.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${qkt_pkg_mode})
set_tests_properties(packaging PROPERTIES LABELS "unit;packaging" TIMEOUT 300)  # not under sanitizers: the examples link plainly
# qkt inside another CMake project (add_subdirectory): a full qkt build, so label "slow"
# (CI runs it: .ci/run).
add_test(NAME packaging_subproject COMMAND sh -c
  "rm -rf sub && ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_SOURCE_DIR}/packaging/subproject -B sub -DQKT_SOURCE_DIR=${PROJECT_SOURCE_DIR} >sub.log && ${CMAKE_COMMAND} --build sub -j 2 >>sub.log && sub/mlp_adam 300"
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(packaging_subproject PROPERTIES LABELS slow TIMEOUT 600)
# docs/library.md's table of defaults is what the default functions return
# (tests/packaging/defaults_doc.c prints it; the doc's section between the markers must match).
add_executable(qkt_defaults_doc ${CMAKE_CURRENT_SOURCE_DIR}/packaging/defaults_doc.c)
target_link_libraries(qkt_defaults_doc PRIVATE qkt_train)
add_test(NAME docs_defaults COMMAND sh -c
  "$<TARGET_FILE:qkt_defaults_doc> >defaults_doc.md && sed -n '/<!-- defaults: begin/,/<!-- defaults: end/p' ${PROJECT_SOURCE_DIR}/docs/library.md | sed '1d;$d' >defaults_doc.in && test -s defaults_doc.in && diff -u defaults_doc.in defaults_doc.md"
  WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(docs_defaults PROPERTIES LABELS unit)
# The float64 names (cmake/prefix_symbols.cmake) on a small archive, and a stray global refused.
add_test(NAME prefix_symbols COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/check_prefix.sh ${PROJECT_SOURCE_DIR}
  ${CMAKE_C_COMPILER} ${CMAKE_LINKER} ${CMAKE_NM} ${CMAKE_OBJCOPY})
set_tests_properties(prefix_symbols PROPERTIES LABELS unit)
