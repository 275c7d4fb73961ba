# Fuzz targets: every tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput and
# has a seed corpus tests/fuzz/corpus_<name>/.
#  - QKT_FUZZ=ON (clang): fuzz_<name> is a libFuzzer binary (run: tests/fuzz/run.sh NAME SECONDS).
#  - otherwise: fuzz_<name>_replay runs the harness over the seed corpus as a CTest test.
file(GLOB qkt_fuzz_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_*.c)
foreach(src ${qkt_fuzz_srcs})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" short ${name})
  if(QKT_FUZZ)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE qkt_experiments)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${name}_replay ${src} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay.c)
    target_link_libraries(${name}_replay PRIVATE qkt_experiments)
    add_test(NAME ${name}_corpus COMMAND ${name}_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_${short})
    set_tests_properties(${name}_corpus PROPERTIES LABELS unit)
  endif()
endforeach()
