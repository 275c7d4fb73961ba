# qkt under mpirun (tests/mpi/test_mpi.c, docs/distributed.md): data-parallel qkt train
# bit-identical to --replicas N, qkt ablate's cells over ranks identical to one process,
# a killed rank and the rerun. Label "mpi" (also "unit": make test runs it). Built without
# MPI, test_mpi says so and is skipped (exit 77), and test_mpi_absent checks that such a
# qkt started by mpirun refuses to run rather than race N copies on one directory.
add_executable(test_mpi ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi.c)
target_link_libraries(test_mpi PRIVATE qkt_testsupport qkt_experiments)
add_dependencies(test_mpi qkt)
find_program(QKT_MPIRUN NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
set(qkt_test_mpiexec "")
if(QKT_WITH_MPI AND MPIEXEC_EXECUTABLE)
  set(qkt_test_mpiexec ${MPIEXEC_EXECUTABLE})
endif()
add_test(NAME test_mpi COMMAND test_mpi WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
set_tests_properties(test_mpi PROPERTIES LABELS "unit;mpi" SKIP_RETURN_CODE 77 TIMEOUT 900 ENVIRONMENT
  "QKT_BIN=$<TARGET_FILE:qkt>;QKT_MPIEXEC=${qkt_test_mpiexec};OMP_NUM_THREADS=2")
if(NOT QKT_WITH_MPI AND QKT_MPIRUN)
  add_test(NAME test_mpi_absent COMMAND sh -c
    "out=$(${QKT_MPIRUN} --allow-run-as-root --oversubscribe -np 2 $<TARGET_FILE:qkt> train --data mqar --steps 1 --out mpi_absent 2>&1); rc=$?; echo \"$out\"; test $rc -ne 0 && echo \"$out\" | grep -q 'built without MPI' && test ! -e mpi_absent"
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(test_mpi_absent PROPERTIES LABELS "unit;mpi" TIMEOUT 120)
endif()
