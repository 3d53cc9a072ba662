# cmake --install: headers under include/rill, static libraries, and a CMake
# package (lib/cmake/Rill) so that an outside project can
#   find_package(Rill REQUIRED)
#   target_link_libraries(app PRIVATE rill::core rill::host)
# tests/consumer is such a project, and tests/consumer_all links every
# exported target; scripts/test.sh builds both against a fresh install.
#
# Outside libraries: exported targets link imported targets only (DNNL::dnnl,
# RillDeps::fftw, ...), which RillConfig.cmake finds again through the
# installed RillDependencies.cmake; the component walk below checks that.
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

# Public headers keep their folder under include/rill, so
# "rill/stream/stream.h" resolves against include. Left out: test headers
# (*_test*, tests/, testing/, testdata/) and internal headers, which say so
# in their first lines with the marker `// rill:internal` (an engine's
# block pool, a backend's stream class, a plugin's helpers). A layer's
# headers come with its library (rill_<folder>). An installed header that
# includes an internal one stops the configure step.
set(_rill_header_dirs base executor stream platform plugins abi)
foreach(_dir engine tensor ops graph io dist kvstore train)
  if(TARGET rill_${_dir})
    list(APPEND _rill_header_dirs ${_dir})
  endif()
endforeach()
set(_rill_public_headers)
set(_rill_internal_headers)
foreach(_dir IN LISTS _rill_header_dirs)
  file(GLOB_RECURSE _headers RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/${_dir}/*.h)
  foreach(_h IN LISTS _headers)
    if(_h MATCHES "(_test[^/]*|/tests?/.*|/testing/.*|/testdata/.*)$")
      continue()
    endif()
    file(STRINGS ${PROJECT_SOURCE_DIR}/${_h} _marker LIMIT_INPUT 2000 REGEX "^// rill:internal")
    if(_marker)
      list(APPEND _rill_internal_headers ${_h})
      continue()
    endif()
    list(APPEND _rill_public_headers ${_h})
    get_filename_component(_hdir ${_h} DIRECTORY)
    install(FILES ${_h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/${_hdir})
  endforeach()
endforeach()
foreach(_h IN LISTS _rill_public_headers)
  file(STRINGS ${PROJECT_SOURCE_DIR}/${_h} _includes REGEX "^#include \"rill/")
  foreach(_line IN LISTS _includes)
    string(REGEX REPLACE "^#include \"rill/([^\"]+)\".*" "\\1" _inc "${_line}")
    if(_inc IN_LIST _rill_internal_headers)
      message(FATAL_ERROR "Rill: the installed header ${_h} includes ${_inc}, which is marked "
        "'// rill:internal' and not installed: include it from the .cc, or drop the marker.")
    endif()
  endforeach()
endforeach()
install(FILES rill.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill)
install(FILES abi/rill_plugin.map DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/abi)
# The test helpers and the conformance suite, for outside backends' tests.
if(TARGET rill_conformance)
  install(FILES testing/status_testing.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/testing)
  install(FILES conformance/conformance.h conformance/suite_kernels.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rill/conformance)
endif()

# Components: every exported target but the _impl archives (rill::onednn,
# not rill::onednn_impl). For each, the outside dependencies it needs,
# directly or through other Rill targets, named as in
# cmake/RillDependencies.cmake; RillConfig.cmake finds exactly those. The
# walk also refuses what would break an outside project: a link item that
# is an absolute path, or an imported target that RillDependencies.cmake
# does not know how to find again.
set(_rill_dep_names Threads absl GTest OpenCL CUDAToolkit cuDNN OpenBLAS FFTW dnnl XNNPACK CLBlast clFFT ONNX ZLIB cairo MPI)
set(_rill_components)
foreach(_target IN LISTS _rill_targets)
  get_target_property(_name ${_target} EXPORT_NAME)
  get_target_property(_type ${_target} TYPE)
  set(_items)
  get_target_property(_links ${_target} INTERFACE_LINK_LIBRARIES)
  if(_links)
    list(APPEND _items ${_links})
  endif()
  if(NOT _type STREQUAL "INTERFACE_LIBRARY")
    # A static library's private dependencies are exported as $<LINK_ONLY:...>.
    get_target_property(_links ${_target} LINK_LIBRARIES)
    if(_links)
      list(APPEND _items ${_links})
    endif()
  endif()
  set(_rill_edges_${_name})
  set(_rill_direct_${_name})
  foreach(_item IN LISTS _items)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _item "${_item}")
    string(REGEX REPLACE "^\\$<LINK_LIBRARY:[A-Z_]+,(.*)>$" "\\1" _item "${_item}")
    if(_item MATCHES "^rill::(.+)$")
      list(APPEND _rill_edges_${_name} ${CMAKE_MATCH_1})
      continue()
    endif()
    if(_item MATCHES "^(/|\\$<)")
      message(FATAL_ERROR "Rill: exported target rill::${_name} links '${_item}': an absolute path or "
        "generator expression would be baked into the installed package. Link an imported target "
        "found through rill_find_dependency() (cmake/RillDependencies.cmake) instead.")
    endif()
    set(_known FALSE)
    foreach(_dep IN LISTS _rill_dep_names)
      if(_item MATCHES "${RILL_DEP_TARGETS_${_dep}}")
        list(APPEND _rill_direct_${_name} ${_dep})
        set(_known TRUE)
        break()
      endif()
    endforeach()
    if(NOT _known AND _item MATCHES "::")
      message(FATAL_ERROR "Rill: exported target rill::${_name} links '${_item}', which "
        "cmake/RillDependencies.cmake does not find for the installed package; add it there.")
    endif()
    # Anything else is a plain system library name (dl, m): the linker finds it.
  endforeach()
  if(NOT _name MATCHES "_impl$")
    list(APPEND _rill_components ${_name})
  endif()
endforeach()
set(RILL_PACKAGE_COMPONENTS "${_rill_components}")
set(RILL_PACKAGE_COMPONENT_DEPS "")
foreach(_comp IN LISTS _rill_components)
  set(_todo ${_comp})
  set(_seen)
  set(_deps)
  while(_todo)
    list(POP_FRONT _todo _t)
    if(_t IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen ${_t})
    list(APPEND _deps ${_rill_direct_${_t}})
    list(APPEND _todo ${_rill_edges_${_t}})
  endwhile()
  # Threads and Abseil come with rill::core and are always found.
  list(REMOVE_ITEM _deps Threads absl)
  list(REMOVE_DUPLICATES _deps)
  string(APPEND RILL_PACKAGE_COMPONENT_DEPS "set(_Rill_deps_${_comp} \"${_deps}\")\n")
endforeach()
# The fftw plugin built with the FFTW _threads libraries needs them too.
set(RILL_PACKAGE_FFTW_NEEDS_THREADS OFF)
if(TARGET rill_fftw_impl)
  get_target_property(_defs rill_fftw_impl COMPILE_DEFINITIONS)
  if("RILL_FFTW_HAVE_THREADS=1" IN_LIST _defs)
    set(RILL_PACKAGE_FFTW_NEEDS_THREADS ON)
  endif()
endif()
configure_package_config_file(cmake/RillConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  INSTALL_DESTINATION ${RILL_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/RillConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/RillConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/RillDependencies.cmake
  ${PROJECT_SOURCE_DIR}/cmake/RillBackend.cmake
  DESTINATION ${RILL_INSTALL_CMAKEDIR})
