# Finds the outside libraries Rill's exported targets link, the same way in
# Rill's own build and in an outside project (this file is installed with
# the package, next to RillConfig.cmake). Exported targets therefore name
# imported targets (DNNL::dnnl, RillDeps::fftw, ...), never an absolute
# path: the consuming project finds each library again on its own machine.
#
#   rill_find_dependency(<dep>)
#
# <dep> and the targets it defines:
#   Threads      Threads::Threads
#   absl         absl::*
#   OpenCL       OpenCL::OpenCL                 (ocl-icd-opencl-dev, opencl-headers)
#   CUDAToolkit  CUDA::cudart, CUDA::cublas, CUDA::curand, CUDA::cufft
#   cuDNN        RillDeps::cudnn                (cudnn.h and libcudnn beside the toolkit)
#   OpenBLAS     RillDeps::openblas             (libopenblas-dev; its package has no target)
#   FFTW         RillDeps::fftw                 (libfftw3-dev: fftw3f, fftw3 and their
#                                                _threads libraries when present)
#   dnnl         DNNL::dnnl                     (libdnnl-dev)
#   XNNPACK      RillDeps::xnnpack              (libxnnpack-dev, libpthreadpool-dev)
#   CLBlast      clblast                        (libclblast-dev)
#   clFFT        clFFT                          (libclfft-dev)
#   ONNX         onnx, protobuf::libprotobuf    (libonnx-dev, libprotobuf-dev)
#   ZLIB         ZLIB::ZLIB                     (zlib1g-dev)
#   cairo        PkgConfig::RILL_CAIRO          (libcairo2-dev)
# and sets RILL_DEP_<dep>_FOUND (TRUE or FALSE), RILL_DEP_<dep>_INFO (what
# was found, for the configure summary) and RILL_DEP_<dep>_HINT (what to
# install when it was not). Finds are QUIET; the caller decides whether a
# missing library is an error. Macros, not functions: the variables of the
# underlying find_package() calls stay visible to the caller.
#
# RILL_DEPS_IMPORT_GLOBAL (set by Rill's own build) makes the targets this
# file creates itself GLOBAL, so every folder of the build sees them.
include_guard(GLOBAL)

macro(_rill_dep_result dep found info hint)
  set(RILL_DEP_${dep}_FOUND ${found})
  set(RILL_DEP_${dep}_INFO "${info}")
  set(RILL_DEP_${dep}_HINT "${hint}")
endmacro()

# _rill_dep_interface(<target> LIBS ... INCLUDES ...): an INTERFACE IMPORTED
# target for libraries found by path in *this* project.
function(_rill_dep_interface target)
  cmake_parse_arguments(ARG "" "" "LIBS;INCLUDES" ${ARGN})
  if(TARGET ${target})
    return()
  endif()
  list(FILTER ARG_INCLUDES EXCLUDE REGEX "^$")
  list(REMOVE_DUPLICATES ARG_INCLUDES)
  if(RILL_DEPS_IMPORT_GLOBAL)
    add_library(${target} INTERFACE IMPORTED GLOBAL)
  else()
    add_library(${target} INTERFACE IMPORTED)
  endif()
  set_target_properties(${target} PROPERTIES
    INTERFACE_LINK_LIBRARIES "${ARG_LIBS}"
    INTERFACE_INCLUDE_DIRECTORIES "${ARG_INCLUDES}")
endfunction()

macro(rill_find_dependency dep)
  if("${dep}" STREQUAL "Threads")
    find_package(Threads QUIET)
    _rill_dep_result(Threads "${Threads_FOUND}" "" "a C++ thread library")
  elseif("${dep}" STREQUAL "absl")
    find_package(absl CONFIG QUIET)
    _rill_dep_result(absl "${absl_FOUND}" "Abseil ${absl_VERSION}" "libabsl-dev")
  elseif("${dep}" STREQUAL "OpenCL")
    find_package(OpenCL QUIET)
    _rill_dep_result(OpenCL "${OpenCL_FOUND}" "OpenCL ${OpenCL_VERSION_STRING}"
                     "ocl-icd-opencl-dev opencl-headers and a driver such as pocl-opencl-icd")
  elseif("${dep}" STREQUAL "CUDAToolkit")
    find_package(CUDAToolkit QUIET)
    set(_rill_dep_found FALSE)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
      set(_rill_dep_found TRUE)
    endif()
    _rill_dep_result(CUDAToolkit ${_rill_dep_found} "CUDA ${CUDAToolkit_VERSION}"
                     "the CUDA toolkit (set CUDAToolkit_ROOT or put nvcc on PATH)")
  elseif("${dep}" STREQUAL "cuDNN")
    if(NOT DEFINED CUDAToolkit_FOUND)
      find_package(CUDAToolkit QUIET)
    endif()
    find_path(RILL_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(RILL_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    set(_rill_dep_found FALSE)
    set(_rill_dep_info "")
    if(RILL_CUDNN_INCLUDE_DIR AND RILL_CUDNN_LIBRARY)
      set(_rill_dep_found TRUE)
      _rill_dep_interface(RillDeps::cudnn LIBS "${RILL_CUDNN_LIBRARY}" INCLUDES "${RILL_CUDNN_INCLUDE_DIR}")
      set(_rill_dep_info "cuDNN")
      if(EXISTS "${RILL_CUDNN_INCLUDE_DIR}/cudnn_version.h")
        file(STRINGS "${RILL_CUDNN_INCLUDE_DIR}/cudnn_version.h" _rill_dep_defs
             REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
        set(_rill_dep_ver "")
        foreach(_rill_dep_part MAJOR MINOR PATCHLEVEL)
          string(REGEX MATCH "CUDNN_${_rill_dep_part} +([0-9]+)" _rill_dep_m "${_rill_dep_defs}")
          list(APPEND _rill_dep_ver "${CMAKE_MATCH_1}")
        endforeach()
        list(JOIN _rill_dep_ver "." _rill_dep_ver)
        set(_rill_dep_info "cuDNN ${_rill_dep_ver}")
      endif()
    endif()
    _rill_dep_result(cuDNN ${_rill_dep_found} "${_rill_dep_info}" "cuDNN (libcudnn9-dev-cuda-13)")
  elseif("${dep}" STREQUAL "OpenBLAS")
    find_package(OpenBLAS CONFIG QUIET)
    set(_rill_dep_found FALSE)
    if(OpenBLAS_FOUND AND OpenBLAS_LIBRARIES)
      set(_rill_dep_found TRUE)
      _rill_dep_interface(RillDeps::openblas LIBS "${OpenBLAS_LIBRARIES}" INCLUDES "${OpenBLAS_INCLUDE_DIRS}")
    endif()
    _rill_dep_result(OpenBLAS ${_rill_dep_found} "OpenBLAS ${OpenBLAS_VERSION}" "libopenblas-dev")
  elseif("${dep}" STREQUAL "FFTW")
    # Both precisions; the _threads libraries when present (then the fftw
    # plugin is built with RILL_FFTW_HAVE_THREADS and needs them: a package
    # built with them sets RILL_FFTW_NEEDS_THREADS).
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(RILL_FFTW3F QUIET fftw3f)
      pkg_check_modules(RILL_FFTW3 QUIET fftw3)
    endif()
    find_library(RILL_FFTW3F_THREADS_LIBRARY fftw3f_threads HINTS ${RILL_FFTW3F_LIBRARY_DIRS})
    find_library(RILL_FFTW3_THREADS_LIBRARY fftw3_threads HINTS ${RILL_FFTW3_LIBRARY_DIRS})
    set(RILL_DEP_FFTW_THREADS FALSE)
    if(RILL_FFTW3F_THREADS_LIBRARY AND RILL_FFTW3_THREADS_LIBRARY)
      set(RILL_DEP_FFTW_THREADS TRUE)
    endif()
    set(_rill_dep_found FALSE)
    if(RILL_FFTW3F_FOUND AND RILL_FFTW3_FOUND AND (RILL_DEP_FFTW_THREADS OR NOT RILL_FFTW_NEEDS_THREADS))
      set(_rill_dep_found TRUE)
      set(_rill_dep_libs ${RILL_FFTW3F_LINK_LIBRARIES} ${RILL_FFTW3_LINK_LIBRARIES})
      if(RILL_DEP_FFTW_THREADS)
        list(PREPEND _rill_dep_libs ${RILL_FFTW3F_THREADS_LIBRARY} ${RILL_FFTW3_THREADS_LIBRARY})
      endif()
      _rill_dep_interface(RillDeps::fftw LIBS "${_rill_dep_libs}"
                          INCLUDES "${RILL_FFTW3F_INCLUDE_DIRS};${RILL_FFTW3_INCLUDE_DIRS}")
    endif()
    set(_rill_dep_info "FFTW ${RILL_FFTW3F_VERSION}, planner not thread-safe outside Rill (no _threads libraries)")
    if(RILL_DEP_FFTW_THREADS)
      set(_rill_dep_info "FFTW ${RILL_FFTW3F_VERSION}, thread-safe planner")
    endif()
    _rill_dep_result(FFTW ${_rill_dep_found} "${_rill_dep_info}" "libfftw3-dev (fftw3f and fftw3 by pkg-config)")
  elseif("${dep}" STREQUAL "dnnl")
    find_package(dnnl CONFIG QUIET)
    set(_rill_dep_found FALSE)
    if(dnnl_FOUND AND TARGET DNNL::dnnl)
      set(_rill_dep_found TRUE)
    endif()
    _rill_dep_result(dnnl ${_rill_dep_found} "oneDNN ${dnnl_VERSION}, cpu runtime ${DNNL_CPU_RUNTIME}" "libdnnl-dev")
  elseif("${dep}" STREQUAL "CLBlast")
    find_package(CLBlast CONFIG QUIET)
    set(_rill_dep_info "CLBlast ${CLBlast_VERSION}")
    if(TARGET clblast AND NOT CLBlast_VERSION)
      get_target_property(_rill_dep_info clblast LOCATION)
      get_filename_component(_rill_dep_info "${_rill_dep_info}" NAME)
    endif()
    _rill_dep_result(CLBlast "${CLBlast_FOUND}" "${_rill_dep_info}" "libclblast-dev")
  elseif("${dep}" STREQUAL "clFFT")
    find_package(clFFT CONFIG QUIET)
    _rill_dep_result(clFFT "${clFFT_FOUND}" "clFFT ${clFFT_VERSION}" "libclfft-dev")
  elseif("${dep}" STREQUAL "ONNX")
    # ONNX's `onnx` target links protobuf's targets, so protobuf comes first.
    find_package(Protobuf QUIET)
    set(_rill_dep_found FALSE)
    if(Protobuf_FOUND)
      find_package(ONNX QUIET)
      if(TARGET onnx)
        set(_rill_dep_found TRUE)
      endif()
    endif()
    _rill_dep_result(ONNX ${_rill_dep_found} "ONNX ${ONNX_VERSION}, protobuf ${Protobuf_VERSION}"
                     "libonnx-dev libprotobuf-dev")
  elseif("${dep}" STREQUAL "ZLIB")
    find_package(ZLIB QUIET)
    _rill_dep_result(ZLIB "${ZLIB_FOUND}" "zlib ${ZLIB_VERSION_STRING}" "zlib1g-dev")
  elseif("${dep}" STREQUAL "cairo")
    find_package(PkgConfig QUIET)
    set(_rill_dep_found FALSE)
    if(PkgConfig_FOUND)
      if(NOT TARGET PkgConfig::RILL_CAIRO)
        if(RILL_DEPS_IMPORT_GLOBAL)
          pkg_check_modules(RILL_CAIRO QUIET IMPORTED_TARGET GLOBAL cairo)
        else()
          pkg_check_modules(RILL_CAIRO QUIET IMPORTED_TARGET cairo)
        endif()
      endif()
      if(TARGET PkgConfig::RILL_CAIRO)
        set(_rill_dep_found TRUE)
      endif()
    endif()
    _rill_dep_result(cairo ${_rill_dep_found} "cairo ${RILL_CAIRO_VERSION}" "libcairo2-dev")
  elseif("${dep}" STREQUAL "XNNPACK")
    # Debian ships only xnnpack.h and libXNNPACK.so (no CMake or pkg-config
    # file); xnnpack.h includes pthreadpool.h, which libxnnpack-dev does not
    # pull in.
    find_path(RILL_XNNPACK_INCLUDE_DIR xnnpack.h)
    find_path(RILL_PTHREADPOOL_INCLUDE_DIR pthreadpool.h)
    find_library(RILL_XNNPACK_LIBRARY XNNPACK)
    find_library(RILL_PTHREADPOOL_LIBRARY pthreadpool)
    set(_rill_dep_found FALSE)
    if(RILL_XNNPACK_INCLUDE_DIR AND RILL_PTHREADPOOL_INCLUDE_DIR AND RILL_XNNPACK_LIBRARY AND RILL_PTHREADPOOL_LIBRARY)
      set(_rill_dep_found TRUE)
      _rill_dep_interface(RillDeps::xnnpack LIBS "${RILL_XNNPACK_LIBRARY};${RILL_PTHREADPOOL_LIBRARY}"
                          INCLUDES "${RILL_XNNPACK_INCLUDE_DIR};${RILL_PTHREADPOOL_INCLUDE_DIR}")
    endif()
    _rill_dep_result(XNNPACK ${_rill_dep_found} "XNNPACK (${RILL_XNNPACK_LIBRARY})" "libxnnpack-dev libpthreadpool-dev")
  else()
    message(FATAL_ERROR "rill_find_dependency: unknown dependency '${dep}'")
  endif()
endmacro()

# Which dependency provides a linked name: the regular expressions an
# exported target's link items are matched against (cmake/RillInstall.cmake
# derives each component's dependencies from them for RillConfig.cmake, and
# refuses an imported target that none of them matches).
set(RILL_DEP_TARGETS_Threads "^Threads::")
set(RILL_DEP_TARGETS_absl "^absl::")
set(RILL_DEP_TARGETS_OpenCL "^OpenCL::")
set(RILL_DEP_TARGETS_CUDAToolkit "^CUDA::")
set(RILL_DEP_TARGETS_cuDNN "^RillDeps::cudnn$")
set(RILL_DEP_TARGETS_OpenBLAS "^RillDeps::openblas$")
set(RILL_DEP_TARGETS_FFTW "^RillDeps::fftw$")
set(RILL_DEP_TARGETS_dnnl "^DNNL::")
set(RILL_DEP_TARGETS_XNNPACK "^RillDeps::xnnpack$")
set(RILL_DEP_TARGETS_CLBlast "^clblast$")
set(RILL_DEP_TARGETS_clFFT "^clFFT$")
set(RILL_DEP_TARGETS_ONNX "^(onnx|onnx_proto|protobuf::.*)$")
set(RILL_DEP_TARGETS_ZLIB "^ZLIB::")
set(RILL_DEP_TARGETS_cairo "^PkgConfig::RILL_CAIRO$")
