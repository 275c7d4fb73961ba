# The field table is the configuration's only list: a fixture build adds one row to
# train/train_fields.def (and its struct member), under QKT_TEST_EXTRA_FIELD, and nothing
# else; test_fields_extra finds the option in that build's flags, train.json, checkpoint
# metadata and the study's config.json. The layers that see the config (nn, train,
# experiments) and the program are compiled again with the row; the rest are shared.
foreach(layer nn train experiments)
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${layer}/*.c)
  list(FILTER srcs EXCLUDE REGEX "/dist_mpi\\.c$")  # libqkt_mpi's: this build runs one process
  add_library(qkt_${layer}_xf STATIC ${srcs})
  target_compile_definitions(qkt_${layer}_xf PUBLIC QKT_TEST_EXTRA_FIELD)
  target_include_directories(qkt_${layer}_xf PRIVATE ${PROJECT_SOURCE_DIR}/${layer})
endforeach()
target_link_libraries(qkt_nn_xf PUBLIC qkt_autograd)
target_link_libraries(qkt_train_xf PUBLIC qkt_nn_xf qkt_optim qkt_data qkt_io)
target_link_libraries(qkt_experiments_xf PUBLIC qkt_train_xf qkt_plot qkt_io)
add_executable(qkt_xf ${qkt_cli_srcs})
target_include_directories(qkt_xf PRIVATE ${PROJECT_SOURCE_DIR}/cli)
target_link_libraries(qkt_xf PRIVATE qkt_experiments_xf)

add_executable(test_fields_extra ${CMAKE_CURRENT_SOURCE_DIR}/fields/test_fields_extra.c)
target_link_libraries(test_fields_extra PRIVATE qkt_testsupport qkt_experiments_xf)
add_dependencies(test_fields_extra qkt_xf)
add_test(NAME test_fields_extra COMMAND test_fields_extra WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(test_fields_extra PROPERTIES LABELS unit ENVIRONMENT
  "QKT_BIN=$<TARGET_FILE:qkt_xf>;QKT_SOURCE_DIR=${PROJECT_SOURCE_DIR};QKT_BUILD_DIR=${PROJECT_BINARY_DIR};OMP_NUM_THREADS=2")
