# `cmake --install build --prefix P` (or `make install PREFIX=P`) puts into P:
#   lib/libqkt.{so,a} (float32) and lib/libqkt64.{so,a} (float64), side by side;
#   include/qkt/qkt_*.h (one umbrella: qkt.h) and qkt_version.h;
#   lib/pkgconfig/qkt.pc, qkt64.pc;  lib/cmake/qkt/ (find_package(qkt): qkt::qkt, qkt::qkt_static,
#   qkt::qkt64, qkt::qkt64_static);  bin/qkt.
include(CMakePackageConfigHelpers)
set(qkt_install_targets qkt_shared qkt_static)
set(qkt_flavours "")
if(TARGET qkt64_shared)
  list(APPEND qkt_install_targets qkt64_shared qkt64_static)
  list(APPEND qkt_flavours 64)
endif()
install(TARGETS ${qkt_install_targets} EXPORT qktTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS qkt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(qkt_public_headers ${CMAKE_CURRENT_BINARY_DIR}/generated/qkt_version.h)
foreach(layer ${QKT_LAYERS})  # include/qkt/ as it is (cmake/layers.cmake lists whose each is)
  foreach(h ${qkt_headers_${layer}})
    if(NOT h STREQUAL "qkt_version.h")
      list(APPEND qkt_public_headers ${QKT_PUBLIC_INCLUDE}/${h})
    endif()
  endforeach()
endforeach()
install(FILES ${qkt_public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qkt)

set(qkt_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/qkt)
install(EXPORT qktTargets NAMESPACE qkt:: DESTINATION ${qkt_cmake_dir})
set(QKT_CONFIG_WITH_MPI ${QKT_WITH_MPI})  # qktConfig.cmake finds MPI when it is a dependency
if(QKT_DOUBLE)
  set(QKT_DOUBLE_BUILD TRUE)
else()
  set(QKT_DOUBLE_BUILD FALSE)
endif()
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/qktConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/qktConfig.cmake INSTALL_DESTINATION ${qkt_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/qktConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/qktConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/qktConfigVersion.cmake
        DESTINATION ${qkt_cmake_dir})

# pkg-config: Libs carries an rpath, so a program built against a prefix outside the loader's
# path (make install PREFIX=/tmp/p) runs as it is; Libs.private serves `pkg-config --static`.
set(qkt_pc_private "-fopenmp")
if(NOT QKT_NO_BLAS)
  string(APPEND qkt_pc_private " -lopenblas")
endif()
string(APPEND qkt_pc_private " -lcjson -lstb -lm")
if(QKT_WITH_MPI)  # built with MPI (train/dist_mpi.c): the MPI library's link line
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND qkt_pc_private " ${lib}")
  endforeach()
endif()
# A -DQKT_DOUBLE=ON build has one library, libqkt, in float64: qkt.pc says so, and qkt64.pc
# names the same library, so a program written for libqkt64 builds against it unchanged.
set(qkt_pc_flavours ${qkt_flavours})
if(QKT_DOUBLE)
  list(APPEND qkt_pc_flavours 64)
endif()
foreach(flavour "" ${qkt_pc_flavours})
  if(flavour STREQUAL "64" OR QKT_DOUBLE)
    set(QKT_PC_CFLAGS "-DQKT_DOUBLE")
    set(QKT_PC_WHAT "float64 flavour")
  else()
    set(QKT_PC_CFLAGS "")
    set(QKT_PC_WHAT "float32")
  endif()
  set(QKT_PC_NAME qkt${flavour})
  set(QKT_PC_LIB qkt${flavour})
  if(QKT_DOUBLE)
    set(QKT_PC_LIB qkt)
  endif()
  set(QKT_PC_PRIVATE ${qkt_pc_private})
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/qkt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/qkt${flavour}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/qkt${flavour}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
