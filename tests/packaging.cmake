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
