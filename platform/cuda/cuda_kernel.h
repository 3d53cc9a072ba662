#ifndef RILL_PLATFORM_CUDA_CUDA_KERNEL_H_
#define RILL_PLATFORM_CUDA_CUDA_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/executor/stream_executor_interface.h"

namespace rill {

// A kernel of a CUDA image (fatbin or PTX) loaded with the runtime's
// library API. Knows its parameter sizes (cudaFuncGetParamInfo), so a
// launch with the wrong number or sizes of arguments is InvalidArgument
// naming the kernel, the argument and both sizes instead of undefined
// behaviour on the device. Thread-safe.
class CudaKernel : public KernelInterface {
 public:
  // `image` is a fatbin or NUL-terminated PTX; `what` names it in errors.
  static absl::StatusOr<std::unique_ptr<CudaKernel>> Load(const void* image,
                                                          const std::string& name,
                                                          const std::string& what);
  ~CudaKernel() override;

  // Enqueues the launch on `stream` (the device is current).
  absl::Status Launch(cudaStream_t stream, const ThreadDim& threads, const BlockDim& blocks,
                      const KernelArgs& args) const;

  const std::string& name() const { return name_; }
  const std::vector<size_t>& param_sizes() const { return param_sizes_; }

 private:
  CudaKernel(cudaLibrary_t library, cudaKernel_t kernel, std::string name,
             std::vector<size_t> sizes)
      : library_(library),
        kernel_(kernel),
        name_(std::move(name)),
        param_sizes_(std::move(sizes)) {}

  cudaLibrary_t library_;
  cudaKernel_t kernel_;
  std::string name_;
  std::vector<size_t> param_sizes_;
};

}  // namespace rill

#endif  // RILL_PLATFORM_CUDA_CUDA_KERNEL_H_
