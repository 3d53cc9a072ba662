#ifndef RILL_OPS_DEVICE_KERNEL_H_
#define RILL_OPS_DEVICE_KERNEL_H_

// Helpers for op kernels that launch Rill kernels on a device (OpenCL,
// CUDA): a per-executor cache of loaded kernels and argument packing.
//
// Convention: a device kernel takes each tensor as its storage block plus an
// element offset (`__global float* x, ulong x_off`), because OpenCL buffers
// cannot be offset by pointer arithmetic and sub-buffers need aligned
// offsets; sizes are 64-bit (`ulong` in OpenCL C, uint64_t in CUDA).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/ops/op.h"
#include "rill/stream/kernel.h"
#include "rill/stream/kernel_spec.h"

namespace rill::ops {

// The kernel `key` of `executor`, loaded from make_spec() on first use and
// kept in the executor's attachments (destroyed with it). Thread-safe.
absl::StatusOr<const Kernel*> CachedKernel(StreamExecutor* executor, const std::string& key,
                                           const std::function<KernelSpec()>& make_spec);

// Where a family's CUDA kernels are (RILL_OPS_FATBIN); empty without CUDA.
struct CudaFatbin {
  const unsigned char* data = nullptr;
  size_t size = 0;
};

// The forms a family's device kernels come in, for KernelNeeds::DeviceCode:
// OpenCL C (always) and `fatbin` where Rill is built with CUDA. Only asked
// with StreamExecutor::CanLoad.
std::shared_ptr<const KernelSpec> DeviceCodeForms(std::string family, CudaFatbin fatbin);

// A Rill kernel in its device forms, loaded once per executor under `key`:
// entry `cuda_entry` of `fatbin` where the executor loads a fatbin,
// otherwise entry `opencl_entry` of the OpenCL C source opencl_source()
// returns (StreamExecutor::CanLoad decides; no platform is named).
absl::StatusOr<const Kernel*> DeviceKernel(OpContext& ctx, const std::string& key,
                                           CudaFatbin fatbin, const std::string& cuda_entry,
                                           const char* opencl_entry,
                                           const std::function<std::string()>& opencl_source);

// The OpenCL C unsigned type of `size` bytes ("uchar", "ushort", "uint",
// "ulong"), for kernels that move bits without arithmetic.
const char* OpenClBitsTypeName(int size);

// The OpenCL C and CUDA type names of an arithmetic dtype ("float",
// "double", "int", "long", "uchar" / "unsigned char").
const char* OpenClTypeName(DType dtype);
// A short suffix for kernel names: "f32", "f64", "i32", "i64", "u8".
const char* DTypeSuffix(DType dtype);

// Packed launch arguments, built in order.
class LaunchArgs {
 public:
  LaunchArgs& Tensor(const TensorArg& t) {  // The block, then the element offset.
    args_.push_back(PackKernelArg(t.block));
    return Value<uint64_t>(t.elem_offset());
  }
  template <typename T>
  LaunchArgs& Value(const T& v) {
    args_.push_back(PackKernelArg(v));
    return *this;
  }
  KernelArgs Take() { return std::move(args_); }

 private:
  KernelArgs args_;
};

// Launches `kernel` over `n` work items (1-D, 256 per group) on ctx's
// stream; InvalidArgument when n is 0 (callers skip empty work).
absl::Status Launch1D(OpContext& ctx, const Kernel& kernel, uint64_t n, KernelArgs args);

}  // namespace rill::ops

// The embedded CUDA fatbin of ops/<family>/<stem>.cu: declare it once at
// global namespace scope (RILL_OPS_DECLARE_FATBIN), name it with
// RILL_OPS_FATBIN(stem). Without CUDA both expand to nothing usable.
#if RILL_OPS_CUDA
#define RILL_OPS_DECLARE_FATBIN(stem)                    \
  extern const unsigned char rill_ops_##stem##_fatbin[]; \
  extern const std::size_t rill_ops_##stem##_fatbin_size
#define RILL_OPS_FATBIN(stem) \
  (::rill::ops::CudaFatbin{rill_ops_##stem##_fatbin, rill_ops_##stem##_fatbin_size})
#else
#define RILL_OPS_DECLARE_FATBIN(stem) static_assert(true)
#define RILL_OPS_FATBIN(stem) (::rill::ops::CudaFatbin{})
#endif

#endif  // RILL_OPS_DEVICE_KERNEL_H_
