# Finds OpenCL once for the OpenCL backend (platform/opencl) and its plugins
# (plugins/blas/clblast, plugins/rng/philox_cl). Included from each of those
# CMakeLists.txt; plugins/ is configured before platform/opencl, so the
# decision cannot be "does the target exist yet" and is made here instead.
# The result is a row of the configure summary (rill_summary).
#
# Sets RILL_OPENCL_FOUND (ON when RILL_ENABLE_OPENCL is ON and the OpenCL
# headers and ICD loader were found) and RILL_OPENCL_DEFINES, the compile
# definitions every OpenCL user of Rill compiles with (TOOLCHAIN.md §5).
# Not include_guard(): the variables are directory-scoped, so every
# includer needs them set; the summary row is recorded once.
get_property(_rill_opencl_reported GLOBAL PROPERTY RILL_OPENCL_REPORTED)
set_property(GLOBAL PROPERTY RILL_OPENCL_REPORTED ON)

rill_find_dependency(OpenCL)
option(RILL_ENABLE_OPENCL "Build the OpenCL backend and its plugins" ${RILL_DEP_OpenCL_FOUND})

set(RILL_OPENCL_DEFINES CL_TARGET_OPENCL_VERSION=120)
if(RILL_ENABLE_OPENCL AND RILL_DEP_OpenCL_FOUND)
  set(RILL_OPENCL_FOUND ON)
  if(NOT _rill_opencl_reported)
    rill_summary(backend opencl ON "OpenCL ${OpenCL_VERSION_STRING} ICD loader")
  endif()
elseif(RILL_ENABLE_OPENCL)
  set(RILL_OPENCL_FOUND OFF)
  rill_summary(backend opencl OFF "OpenCL not found; install ${RILL_DEP_OpenCL_HINT}")
else()
  set(RILL_OPENCL_FOUND OFF)
  rill_summary(backend opencl OFF "RILL_ENABLE_OPENCL=OFF")
endif()
