#include "rill/ops/device_kernel.h"

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/stream/stream.h"

namespace rill::ops {

namespace {

// The op layer's loaded kernels of one executor, destroyed with it.
struct KernelCache {
  Mutex mu;
  absl::flat_hash_map<std::string, std::unique_ptr<Kernel>> kernels ABSL_GUARDED_BY(mu);
};

}  // namespace

absl::StatusOr<const Kernel*> CachedKernel(StreamExecutor* executor, const std::string& key,
                                           const std::function<KernelSpec()>& make_spec) {
  KernelCache& cache =
      executor->attachments().Get<KernelCache>([] { return std::make_unique<KernelCache>(); });
  {
    MutexLock lock(&cache.mu);
    auto it = cache.kernels.find(key);
    if (it != cache.kernels.end()) return it->second.get();
  }
  // Load outside the lock: an OpenCL build can take a second.
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, executor->LoadKernel(make_spec()));
  MutexLock lock(&cache.mu);
  auto& slot = cache.kernels[key];
  if (slot == nullptr) slot = std::move(kernel);
  return slot.get();
}

absl::StatusOr<const Kernel*> DeviceKernel(OpContext& ctx, const std::string& key,
                                           CudaFatbin fatbin, const std::string& cuda_entry,
                                           const char* opencl_entry,
                                           const std::function<std::string()>& opencl_source) {
  return CachedKernel(ctx.executor(), key, [&] {
    if (fatbin.data != nullptr) {
      KernelSpec spec(cuda_entry);
      spec.AddCudaFatbin(fatbin.data, fatbin.size);
      if (ctx.executor()->CanLoad(spec)) return spec;
    }
    return KernelSpec(opencl_entry).AddOpenClSource(opencl_source());
  });
}

std::shared_ptr<const KernelSpec> DeviceCodeForms(std::string family, CudaFatbin fatbin) {
  auto spec = std::make_shared<KernelSpec>(family);
  spec->AddOpenClSource("// " + family + ": OpenCL C made per kernel (ops/" + family + "/)");
  if (fatbin.data != nullptr) spec->AddCudaFatbin(fatbin.data, fatbin.size);
  return spec;
}

const char* OpenClBitsTypeName(int size) {
  switch (size) {
    case 1:
      return "uchar";
    case 2:
      return "ushort";
    case 4:
      return "uint";
    default:
      return "ulong";
  }
}

const char* OpenClTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return "double";
    case DType::kI32:
      return "int";
    case DType::kI64:
      return "long";
    case DType::kU8:
    case DType::kBool:
      return "uchar";
    default:
      return "float";
  }
}

const char* DTypeSuffix(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return "f64";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
    case DType::kBool:
      return "u8";
    default:
      return "f32";
  }
}

absl::Status Launch1D(OpContext& ctx, const Kernel& kernel, uint64_t n, KernelArgs args) {
  if (n == 0) return absl::InvalidArgumentError("Launch1D over 0 items");
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  constexpr uint64_t kGroup = 256;
  const uint64_t groups = (n + kGroup - 1) / kGroup;
  stream->ThenLaunch(ThreadDim(kGroup), BlockDim(groups), kernel, std::move(args));
  return stream->ok() ? absl::OkStatus() : stream->status();
}

}  // namespace rill::ops
