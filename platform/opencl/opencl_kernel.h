#ifndef RILL_PLATFORM_OPENCL_OPENCL_KERNEL_H_
#define RILL_PLATFORM_OPENCL_OPENCL_KERNEL_H_

#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// Compiled programs of one executor, cached by the hash of (source, build
// options), so that every KernelSpec with the same OpenCL source is built
// once per executor. PoCL also caches the compiled binaries on disk
// (POCL_CACHE_DIR, default ~/.cache/pocl/kcache): a cold build takes about a
// second, a cached one tens of milliseconds. Thread-safe.
class OpenClProgramCache {
 public:
  OpenClProgramCache(cl_context context, cl_device_id device)
      : context_(context), device_(device) {}
  ~OpenClProgramCache();
  OpenClProgramCache(const OpenClProgramCache&) = delete;
  OpenClProgramCache& operator=(const OpenClProgramCache&) = delete;

  // The built program (retained for the caller), or InvalidArgument
  // "clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)" followed by the build
  // log. `what` names the kernel for messages.
  absl::StatusOr<cl_program> GetOrBuild(const std::string& source, const std::string& options,
                                        const std::string& what);
  int64_t size() const;

 private:
  const cl_context context_;
  const cl_device_id device_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, cl_program> programs_ ABSL_GUARDED_BY(mu_);  // Key: source hash.
};

// One launch argument resolved for OpenCL: a cl_mem (retained; a
// sub-buffer when the view has an offset) or the bytes of a value.
struct OpenClArg {
  cl_mem memory = nullptr;
  absl::InlinedVector<uint8_t, 16> bytes;
};

// The resolved arguments of one launch (see ResolveArgs); releases their
// cl_mems when destroyed. Move-only. Thread-compatible.
class OpenClArgs {
 public:
  OpenClArgs() = default;
  explicit OpenClArgs(size_t count) : args_(count) {}
  ~OpenClArgs() { Release(); }
  OpenClArgs(OpenClArgs&& other) noexcept : args_(std::move(other.args_)) { other.args_.clear(); }
  OpenClArgs& operator=(OpenClArgs&& other) noexcept;
  OpenClArgs(const OpenClArgs&) = delete;
  OpenClArgs& operator=(const OpenClArgs&) = delete;

  size_t size() const { return args_.size(); }
  OpenClArg& operator[](size_t i) { return args_[i]; }
  const OpenClArg& operator[](size_t i) const { return args_[i]; }

 private:
  void Release();

  absl::InlinedVector<OpenClArg, 4> args_;  // Most kernels take a few arguments.
};

// One kernel parameter as OpenCL declares it (clGetKernelArgInfo, which
// needs programs built with -cl-kernel-arg-info).
struct OpenClParam {
  enum class Kind {
    kUnknown,  // No argument info: only OpenCL's own checks apply.
    kBuffer,   // `__global T*` or `__constant T*`: takes device memory.
    kValue,    // A `__private` parameter: takes bytes (scalar, vector, struct).
    kLocal,    // `__local T*`: sized per launch, which Rill cannot express.
  };
  Kind kind = Kind::kUnknown;
  // As written in messages: "int", "Dim3", "__global float*"; empty when unknown.
  std::string type;
  // Bytes of a kValue parameter of a built-in scalar or vector type ("int",
  // "ulong", "float4"); 0 for structs, typedefs and anything else unknown.
  size_t size = 0;
};

// A cl_kernel of a spec's OpenCL C source, shared by its OpenClKernel and
// the launches still queued when that goes (see OpenClKernel).
//
// Arguments: a DeviceMemory<T> parameter is a `__global T*` (or
// `__constant T*`) in the source. A view with offset 0 passes its cl_mem; a
// view with an offset passes a sub-buffer (clCreateSubBuffer) of exactly the
// view, whose offset must be a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN
// (128 bytes on PoCL), else the launch fails with InvalidArgument naming the
// argument. Scalars and structs are passed by value with their C++ size, so
// a struct parameter must have the same layout in OpenCL C (e.g. Dim3 is
// `struct { long x, y, z; }`).
//
// Checks: Create reads each parameter's address qualifier and type name
// (params()); ResolveArgs then refuses, at enqueue, device memory for a
// by-value parameter, a value for a buffer parameter, any argument for a
// `__local` parameter, and a value whose size differs from a built-in
// type's ("argument 1 of kernel \"fill\" is `int` (4 bytes), got 8 bytes").
// A struct's size cannot be checked: OpenCL reports only its type name and
// PoCL's clSetKernelArg accepts any size. A program built without
// -cl-kernel-arg-info gets no checks beyond the count.
//
// Geometry: ThreadDim is the work-group size (local size) and BlockDim the
// number of groups, so get_global_id(0) == blockIdx.x * blockDim.x +
// threadIdx.x as in CUDA.
//
// Thread-safe: clSetKernelArg and the enqueue run under one lock, so
// launches from several streams do not mix their arguments.
class OpenClKernelCore {
 public:
  static absl::StatusOr<std::shared_ptr<OpenClKernelCore>> Create(cl_program program,
                                                                  const std::string& name);
  ~OpenClKernelCore();
  OpenClKernelCore(const OpenClKernelCore&) = delete;
  OpenClKernelCore& operator=(const OpenClKernelCore&) = delete;

  const std::string& name() const { return name_; }
  cl_uint num_args() const { return static_cast<cl_uint>(params_.size()); }
  // One entry per parameter; all kUnknown without argument info.
  const std::vector<OpenClParam>& params() const { return params_; }
  cl_kernel native() const { return kernel_; }

  // Sets `args` and enqueues the grid on `queue`; returns the command's event.
  absl::StatusOr<cl_event> Enqueue(cl_command_queue queue, const ThreadDim& threads,
                                   const BlockDim& blocks, const OpenClArgs& args) const;

 private:
  OpenClKernelCore(cl_kernel kernel, std::string name, std::vector<OpenClParam> params)
      : kernel_(kernel), name_(std::move(name)), params_(std::move(params)) {}

  const cl_kernel kernel_;
  const std::string name_;
  const std::vector<OpenClParam> params_;
  mutable Mutex mu_;
};

// A loaded OpenCL kernel (StreamExecutor::LoadKernel on an OpenCL
// executor): a handle on an OpenClKernelCore. Thread-safe.
class OpenClKernel : public KernelInterface {
 public:
  explicit OpenClKernel(std::shared_ptr<OpenClKernelCore> core) : core_(std::move(core)) {}
  const std::shared_ptr<OpenClKernelCore>& core() const { return core_; }

 private:
  std::shared_ptr<OpenClKernelCore> core_;
};

// Resolves packed launch arguments for `kernel`: checks the count, each
// argument against its parameter (see OpenClKernelCore) and the sub-buffer
// alignment (`base_align` bytes), and creates the sub-buffers. Errors are
// InvalidArgument naming the kernel and the argument.
absl::StatusOr<OpenClArgs> ResolveArgs(const OpenClKernelCore& kernel, const KernelArgs& args,
                                       uint64_t base_align);

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_KERNEL_H_
