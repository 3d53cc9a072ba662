#include "rill/platform/cuda/cuda_platform.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_executor.h"
#include "rill/platform/cuda/cuda_status.h"

namespace rill {

const PlatformIdInfo kCudaPlatformIdInfo{"cuda"};
const PlatformId kCudaPlatformId = &kCudaPlatformIdInfo;

namespace {

int Attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

std::string VersionString(int version) {  // 13000 -> "13.0"
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

absl::StatusOr<DeviceDescription> Describe(int device) {
  cudaDeviceProp prop{};
  RILL_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, device),
                                  absl::StrCat("cudaGetDeviceProperties(", device, ")")));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  DeviceDescription d;
  d.name = prop.name;
  d.vendor = "NVIDIA Corporation";
  d.platform_version = absl::StrCat("CUDA runtime ", VersionString(runtime));
  d.driver_version = VersionString(driver);
  d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d.compute_units = prop.multiProcessorCount;
  d.clock_khz = Attribute(cudaDevAttrClockRate, device);
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_block_dims = Dim3{prop.maxThreadsDim[0], prop.maxThreadsDim[1], prop.maxThreadsDim[2]};
  d.max_grid_dims = Dim3{prop.maxGridSize[0], prop.maxGridSize[1], prop.maxGridSize[2]};
  d.extra["compute capability"] = absl::StrCat(prop.major, ".", prop.minor);
  d.extra["pci bus id"] =
      absl::StrFormat("%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  d.extra["runtime version"] = VersionString(runtime);
  d.extra["driver version"] = VersionString(driver);
  d.extra["memory clock"] = absl::StrCat(Attribute(cudaDevAttrMemoryClockRate, device), " kHz");
  d.extra["memory bus width"] = absl::StrCat(prop.memoryBusWidth, " bits");
  d.extra["l2 cache"] = absl::StrCat(prop.l2CacheSize, " bytes");
  d.extra["shared memory per block"] = absl::StrCat(prop.sharedMemPerBlock, " bytes");
  d.extra["warp size"] = absl::StrCat(prop.warpSize);
  return d;
}

}  // namespace

CudaPlatform::~CudaPlatform() { DestroyExecutors(); }

void CudaPlatform::Discover() const {
  std::call_once(discovered_, [this] {
    // Without a driver cudaGetDeviceCount fails (cudaErrorInsufficientDriver)
    // and leaves the count alone (TOOLCHAIN.md §3.3): start from 0.
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      (void)cudaGetLastError();
      availability_ = absl::UnavailableError(
          absl::StrCat("no CUDA device: ", CudaStatus(error, "cudaGetDeviceCount").message()));
      return;
    }
    if (count == 0) {
      availability_ =
          absl::UnavailableError("no CUDA device: cudaGetDeviceCount reports 0 devices");
      return;
    }
    std::string why;
    for (int i = 0; i < count; ++i) {
      absl::StatusOr<DeviceDescription> d = Describe(i);
      if (d.ok()) {
        devices_.push_back(*std::move(d));
      } else {
        absl::StrAppend(&why, why.empty() ? "" : "; ", d.status().message());
        break;  // Ordinals must stay dense: stop at the first device we cannot use.
      }
    }
    if (devices_.empty())
      availability_ = absl::UnavailableError(absl::StrCat("no CUDA device: ", why));
  });
}

int CudaPlatform::VisibleDeviceCount() const {
  Discover();
  return static_cast<int>(devices_.size());
}

absl::Status CudaPlatform::Availability() const {
  Discover();
  return availability_;
}

absl::StatusOr<DeviceDescription> CudaPlatform::DescriptionForDevice(int ordinal) const {
  RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  return devices_[ordinal];
}

absl::StatusOr<std::unique_ptr<StreamExecutorInterface>> CudaPlatform::CreateExecutorImplementation(
    const StreamExecutorConfig& config) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                        CudaExecutor::Create(config.ordinal, devices_[config.ordinal]));
  return std::unique_ptr<StreamExecutorInterface>(std::move(executor));
}

absl::Status RegisterCudaPlatform(PlatformManager& manager) {
  return manager.RegisterPlatform(std::make_unique<CudaPlatform>());
}

}  // namespace rill

RILL_REGISTER_PLATFORM(cuda, rill::RegisterCudaPlatform)
