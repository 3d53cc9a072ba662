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
#include <string>

#include "absl/status/statusor.h"
#include "ops/op.h"
#include "stream/kernel.h"
#include "stream/kernel_spec.h"

namespace rill::ops {

// The kernel `key` of `executor`, loaded from make_spec() on first use and
// kept for the executor's life. Thread-safe.
absl::StatusOr<const Kernel*> CachedKernel(StreamExecutor* executor, const std::string& key,
                                           const std::function<KernelSpec()>& make_spec);

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

// Symbols of the embedded CUDA fatbins (ops/<family>/<name>.cu); use at
// global namespace scope, under #if RILL_OPS_CUDA.
#define RILL_OPS_DECLARE_FATBIN(stem)            \
  extern const unsigned char rill_ops_##stem##_fatbin[]; \
  extern const std::size_t rill_ops_##stem##_fatbin_size

#endif  // RILL_OPS_DEVICE_KERNEL_H_
