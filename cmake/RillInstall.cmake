# cmake --install: headers under include/rill, static libraries, and a CMake
# package so that an outside project can find_package(Rill) and link
# rill::core rill::host.
include(CMakePackageConfigHelpers)

get_property(_rill_targets GLOBAL PROPERTY RILL_EXPORTED_TARGETS)
install(TARGETS ${_rill_targets} EXPORT RillTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT RillTargets NAMESPACE rill:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rill)

foreach(_dir base executor stream platform plugins engine)
  install(DIRECTORY ${_dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill
    FILES_MATCHING PATTERN "*.h" PATTERN "*_test*" EXCLUDE)
endforeach()
install(FILES rill.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)

configure_package_config_file(cmake/RillConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rill)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Rill)
