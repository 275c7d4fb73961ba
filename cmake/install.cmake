# `cmake --install build --prefix P` (or `make install PREFIX=P`) puts into P:
#   lib/libqkt.{so,a} (float32) and lib/libqkt64.{so,a} (float64, its symbols qkt64_...),
#   side by side, and built with MPI lib/libqkt_mpi.{so,a}, libqkt64_mpi.{so,a};
#   include/qkt/qkt_*.h (one umbrella: qkt.h), qkt_version.h and qkt64_names.h;
#   lib/pkgconfig/qkt.pc, qkt_static.pc, qkt64.pc, qkt64_static.pc (and qkt_mpi.pc, qkt64_mpi.pc);
#   lib/cmake/qkt/ (find_package(qkt): qkt::qkt, qkt::qkt_static, qkt::qkt64, qkt::qkt64_static;
#   find_package(qkt COMPONENTS mpi) adds qkt::qkt_mpi, qkt::qkt64_mpi and their _static);  bin/qkt.
include(CMakePackageConfigHelpers)
set(qkt_flavours "")
set(qkt_prefixed OFF)  # a float64 library is installed, with the generated qkt64_names.h
if(TARGET qkt64_shared)
  list(APPEND qkt_flavours 64)
endif()
if(TARGET qkt64_shared OR QKT_DOUBLE)
  set(qkt_prefixed ON)
endif()
set(qkt_install_targets "")
set(qkt_mpi_targets "")
foreach(flavour "" ${qkt_flavours})
  list(APPEND qkt_install_targets qkt${flavour}_shared qkt${flavour}_static)
  if(QKT_WITH_MPI)
    list(APPEND qkt_mpi_targets qkt${flavour}_mpi_shared qkt${flavour}_mpi_static)
  endif()
endforeach()
install(TARGETS ${qkt_install_targets} EXPORT qktTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS qkt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(qkt_public_headers ${CMAKE_CURRENT_BINARY_DIR}/generated/qkt_version.h)
if(qkt_prefixed)
  list(APPEND qkt_public_headers ${CMAKE_CURRENT_BINARY_DIR}/generated/qkt64_names.h)
endif()
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
set(qkt_config_files ${CMAKE_CURRENT_BINARY_DIR}/qktConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/qktConfigVersion.cmake)
if(QKT_WITH_MPI)  # a separate export: only find_package(qkt COMPONENTS mpi) looks for MPI
  install(TARGETS ${qkt_mpi_targets} EXPORT qktMpiTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT qktMpiTargets NAMESPACE qkt:: DESTINATION ${qkt_cmake_dir})
endif()
set(QKT_CONFIG_WITH_MPI ${QKT_WITH_MPI})
if(QKT_DOUBLE)
  set(QKT_DOUBLE_BUILD TRUE)
else()
  set(QKT_DOUBLE_BUILD FALSE)
endif()
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/qktConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/qktConfig.cmake INSTALL_DESTINATION ${qkt_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/qktConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${qkt_config_files} DESTINATION ${qkt_cmake_dir})

# pkg-config (cmake/qkt.pc.in): Libs carries an rpath, so a program built against a prefix
# outside the loader's path (make install PREFIX=/tmp/p) runs as it is. qkt.pc links the
# shared library (Libs.private: the archive's dependencies, for `pkg-config --static` with
# a static link); qkt_static.pc links libqkt.a itself with its dependencies. No MPI in
# either: qkt_mpi.pc (Requires: qkt) adds libqkt_mpi and the MPI library.
set(qkt_pc_private "-fopenmp")
if(NOT QKT_NO_BLAS)
  string(APPEND qkt_pc_private " -lopenblas")
endif()
string(APPEND qkt_pc_private " -lcjson -lstb -lm")
set(qkt_pc_mpi "")
if(QKT_WITH_MPI)  # the MPI library's link line (train/dist_mpi.c)
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND qkt_pc_mpi " ${lib}")
  endforeach()
  string(STRIP "${qkt_pc_mpi}" qkt_pc_mpi)
endif()
# A -DQKT_DOUBLE=ON build has one library, libqkt, in float64: qkt.pc says so, and qkt64.pc
# names the same library, so a program written for libqkt64 builds against it unchanged.
set(qkt_pc_flavours ${qkt_flavours})
if(QKT_DOUBLE)
  list(APPEND qkt_pc_flavours 64)
endif()
function(qkt_pc file name what cflags requires libs private)
  set(QKT_PC_NAME ${name})
  set(QKT_PC_WHAT ${what})
  set(QKT_PC_CFLAGS ${cflags})
  set(QKT_PC_REQUIRES ${requires})
  set(QKT_PC_LIBS ${libs})
  set(QKT_PC_PRIVATE ${private})
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/qkt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${file}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${file}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
foreach(flavour "" ${qkt_pc_flavours})
  if(flavour STREQUAL "64" OR QKT_DOUBLE)
    set(cflags "-DQKT_DOUBLE")
    set(what "float64 flavour")
  else()
    set(cflags "")
    set(what "float32")
  endif()
  set(lib qkt${flavour})
  if(QKT_DOUBLE)
    set(lib qkt)
  endif()
  set(rpath "-Wl,-rpath,\${libdir}")
  qkt_pc(qkt${flavour} qkt${flavour} "${what}" "${cflags}" "" "-L\${libdir} -l${lib} -lm ${rpath}" "${qkt_pc_private}")
  qkt_pc(qkt${flavour}_static qkt${flavour}_static "${what}, static: libqkt${flavour}.a" "${cflags}" ""
         "\${libdir}/lib${lib}.a ${qkt_pc_private}" "")
  if(QKT_WITH_MPI)
    qkt_pc(qkt${flavour}_mpi qkt${flavour}_mpi "${what}, MPI: qkt_dist_use_mpi" "" "qkt${flavour}"
           "-L\${libdir} -l${lib}_mpi ${rpath}" "${qkt_pc_mpi}")
  endif()
endforeach()
