# Finds the CUDA toolkit once for the CUDA backend (platform/cuda) and its
# plugins (plugins/*/cu*). Included from the top-level CMakeLists.txt before
# plugins/, so every folder sees the result.
#
# Sets
#   RILL_CUDA_FOUND           ON when RILL_ENABLE_CUDA is ON and the toolkit
#                             (headers, shared cudart, nvcc) was found.
#   RILL_CUDNN_FOUND          ON when cuDNN's header and library were found;
#                             then RillDeps::cudnn (and rill_cudnn_library, for
#                             tests) links them.
#   RILL_CUDA_ARCHITECTURES   the SM versions kernels are built for
#                             (default 75;80;90: oldest CUDA 13 supports, A100, H100).
# and defines rill_cuda_embed_kernels() below.
#
# CUDA is not enabled as a CMake language: Rill's own kernels are compiled
# by nvcc into fatbins that are embedded as bytes (KernelSpec::AddCudaFatbin),
# so nothing links cudart_static and nothing links the driver stub
# (libcuda.so): binaries start on machines without a driver (TOOLCHAIN.md §3).
rill_find_dependency(CUDAToolkit)
set(_rill_cuda_default OFF)
if(RILL_DEP_CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE)
  set(_rill_cuda_default ON)
endif()
option(RILL_ENABLE_CUDA "Build the CUDA backend and its plugins" ${_rill_cuda_default})
set(RILL_CUDA_ARCHITECTURES "75;80;90" CACHE STRING "SM versions Rill's CUDA kernels are built for")

set(RILL_CUDA_FOUND OFF)
set(RILL_CUDNN_FOUND OFF)
if(RILL_ENABLE_CUDA AND _rill_cuda_default)
  set(RILL_CUDA_FOUND ON)
  rill_summary(backend cuda ON "CUDA ${CUDAToolkit_VERSION} toolkit, kernels for sm ${RILL_CUDA_ARCHITECTURES}, no GPU needed to build")
  # cuDNN through RillDeps::cudnn (cmake/RillDependencies.cmake), so the
  # package names a target, not the library's path.
  rill_find_dependency(cuDNN)
  if(RILL_DEP_cuDNN_FOUND)
    set(RILL_CUDNN_FOUND ON)
    add_library(rill_cudnn_library INTERFACE)
    target_link_libraries(rill_cudnn_library INTERFACE RillDeps::cudnn)
  endif()
elseif(RILL_ENABLE_CUDA)
  rill_summary(backend cuda OFF "CUDA toolkit with nvcc and shared cudart not found; set CUDAToolkit_ROOT or put nvcc on PATH")
else()
  rill_summary(backend cuda OFF "RILL_ENABLE_CUDA=OFF")
endif()

# rill_cuda_embed_kernels(<target> <file.cu> <symbol> [DEPENDS <file>...])
# Compiles <file.cu> with nvcc into a fatbin (SASS for every architecture of
# RILL_CUDA_ARCHITECTURES plus PTX of the newest, so newer GPUs JIT it) and
# adds to <target> a generated source defining
#   extern const unsigned char <symbol>[];  extern const std::size_t <symbol>_size;
# for KernelSpec::AddCudaFatbin(<symbol>, <symbol>_size). DEPENDS: files
# the .cu includes (an op family's shared .cl source), rebuilt on change.
function(rill_cuda_embed_kernels target source symbol)
  cmake_parse_arguments(ARG "" "" "DEPENDS" ${ARGN})
  get_filename_component(src ${source} ABSOLUTE)
  set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${symbol}.fatbin)
  set(gencode)
  foreach(arch IN LISTS RILL_CUDA_ARCHITECTURES)
    list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
    set(newest ${arch})
  endforeach()
  list(APPEND gencode -gencode arch=compute_${newest},code=compute_${newest})
  add_custom_command(OUTPUT ${fatbin}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -fatbin -std=c++17 ${gencode} -o ${fatbin} ${src}
    DEPENDS ${src} ${ARG_DEPENDS} VERBATIM
    COMMENT "nvcc: ${symbol} fatbin from ${source}")
  add_custom_command(OUTPUT ${fatbin}.cc
    COMMAND ${CMAKE_COMMAND} -DIN=${fatbin} -DOUT=${fatbin}.cc -DSYM=${symbol}
            -P ${PROJECT_SOURCE_DIR}/cmake/RillEmbed.cmake
    DEPENDS ${fatbin} ${PROJECT_SOURCE_DIR}/cmake/RillEmbed.cmake VERBATIM)
  target_sources(${target} PRIVATE ${fatbin}.cc)
endfunction()
