#include "rill/platform/cuda/cuda_kernel.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"

namespace rill {

absl::StatusOr<std::unique_ptr<CudaKernel>> CudaKernel::Load(const void* image,
                                                             const std::string& name,
                                                             const std::string& what) {
  cudaLibrary_t library = nullptr;
  RILL_RETURN_IF_ERROR(
      CudaStatus(cudaLibraryLoadData(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0),
                 absl::StrCat("cudaLibraryLoadData(", what, ")")));
  cudaKernel_t kernel = nullptr;
  cudaError_t error = cudaLibraryGetKernel(&kernel, library, name.c_str());
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    cudaLibraryUnload(library);
    absl::Status status = CudaStatus(error, absl::StrCat("cudaLibraryGetKernel(\"", name, "\")"));
    return absl::NotFoundError(
        absl::StrCat("no kernel \"", name, "\" in ", what, ": ", status.message()));
  }
  // The parameter list: cudaFuncGetParamInfo fails past the last one.
  std::vector<size_t> sizes;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (cudaFuncGetParamInfo(reinterpret_cast<const void*>(kernel), i, &offset, &size) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      break;
    }
    sizes.push_back(size);
  }
  return std::unique_ptr<CudaKernel>(new CudaKernel(library, kernel, name, std::move(sizes)));
}

CudaKernel::~CudaKernel() { cudaLibraryUnload(library_); }

absl::Status CudaKernel::Launch(cudaStream_t stream, const ThreadDim& threads,
                                const BlockDim& blocks, const KernelArgs& args) const {
  if (args.size() != param_sizes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel \"", name_, "\" takes ", param_sizes_.size(), " argument(s), got ", args.size()));
  }
  // Device pointers live in `pointers`; `values` points at each argument.
  std::vector<void*> pointers(args.size());
  std::vector<void*> values(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    const size_t size = arg.is_memory ? sizeof(void*) : arg.bytes.size();
    if (size != param_sizes_[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, " of kernel \"", name_, "\" is ", size,
                       " bytes, the kernel's parameter is ", param_sizes_[i], " bytes"));
    }
    if (arg.is_memory) {
      pointers[i] = CudaAddress(arg.memory);
      values[i] = &pointers[i];
    } else {
      values[i] = const_cast<uint8_t*>(arg.bytes.data());
    }
  }
  const dim3 grid(static_cast<unsigned>(blocks.x), static_cast<unsigned>(blocks.y),
                  static_cast<unsigned>(blocks.z));
  const dim3 block(static_cast<unsigned>(threads.x), static_cast<unsigned>(threads.y),
                   static_cast<unsigned>(threads.z));
  return CudaStatus(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block,
                                     values.data(), 0, stream),
                    absl::StrCat("cudaLaunchKernel(\"", name_, "\")"));
}

}  // namespace rill
