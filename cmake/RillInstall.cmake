# cmake --install: headers under include/rill, static libraries, and a CMake
# package (lib/cmake/Rill) so that an outside project can
#   find_package(Rill REQUIRED)
#   target_link_libraries(app PRIVATE rill::core rill::host)
# tests/consumer is such a project; scripts/test.sh builds it against a
# fresh install.
#
# Backends: rill::<backend> is an INTERFACE target whose link interface is
# $<LINK_LIBRARY:WHOLE_ARCHIVE,rill::<backend>_impl> (see rill_add_backend).
# It names the archive by its rill:: alias on purpose: export() writes the
# expression verbatim, and rill::<backend>_impl is also the name of the
# imported target in RillTargets.cmake, so consumers link the backend
# whole-archive and it registers itself.
include(CMakePackageConfigHelpers)

set(RILL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Rill)

get_property(_rill_targets GLOBAL PROPERTY RILL_EXPORTED_TARGETS)
install(TARGETS ${_rill_targets} EXPORT RillTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT RillTargets NAMESPACE rill:: DESTINATION ${RILL_INSTALL_CMAKEDIR})

# Headers keep their folder, so "stream/stream.h" resolves against
# include/rill. Test headers (*_test*, tests/) stay out; so do folders that
# do not exist yet in this checkout (git keeps no empty folders), and the
# engine's until its library (rill_engine) is built and installed with them.
set(_rill_header_dirs base executor stream platform plugins tensor ops graph)
if(TARGET rill_engine)
  list(APPEND _rill_header_dirs engine)
endif()
foreach(_dir IN LISTS _rill_header_dirs)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${_dir})
    install(DIRECTORY ${_dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill
      FILES_MATCHING PATTERN "*.h"
      PATTERN "*_test*" EXCLUDE
      PATTERN "testdata" EXCLUDE
      PATTERN "tests" EXCLUDE)
  endif()
endforeach()
install(FILES rill.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)

# Device backends the package carries, so RillConfig.cmake looks for their
# libraries (rill::opencl needs OpenCL::OpenCL, rill::cuda CUDA::cudart).
set(RILL_PACKAGE_HAS_OPENCL OFF)
set(RILL_PACKAGE_HAS_CUDA OFF)
set(RILL_PACKAGE_HAS_ONNX OFF)
if(TARGET rill_graph_onnx)
  set(RILL_PACKAGE_HAS_ONNX ON)
endif()
if(TARGET rill::opencl)
  set(RILL_PACKAGE_HAS_OPENCL ON)
endif()
if(TARGET rill::cuda)
  set(RILL_PACKAGE_HAS_CUDA ON)
endif()
configure_package_config_file(cmake/RillConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  INSTALL_DESTINATION ${RILL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  DESTINATION ${RILL_INSTALL_CMAKEDIR})
