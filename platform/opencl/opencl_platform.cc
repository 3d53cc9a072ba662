#include "rill/platform/opencl/opencl_platform.h"

#include <CL/cl.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/opencl/opencl_status.h"

namespace rill {

const PlatformIdInfo kOpenClPlatformIdInfo{"opencl"};
const PlatformId kOpenClPlatformId = &kOpenClPlatformIdInfo;

namespace {

std::string PlatformString(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(platform, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string DeviceString(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(device, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T DeviceValue(cl_device_id device, cl_device_info what) {
  T value{};
  clGetDeviceInfo(device, what, sizeof(value), &value, nullptr);
  return value;
}

std::string DeviceTypeName(cl_device_type type) {
  std::string out;
  auto add = [&](cl_device_type bit, const char* name) {
    if (type & bit) out += out.empty() ? name : absl::StrCat("|", name);
  };
  add(CL_DEVICE_TYPE_CPU, "CPU");
  add(CL_DEVICE_TYPE_GPU, "GPU");
  add(CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR");
  add(CL_DEVICE_TYPE_CUSTOM, "CUSTOM");
  return out.empty() ? "DEFAULT" : out;
}

OpenClDeviceInfo Describe(cl_platform_id platform, cl_device_id device) {
  OpenClDeviceInfo info;
  info.platform = platform;
  info.device = device;
  DeviceDescription& d = info.description;
  d.name = DeviceString(device, CL_DEVICE_NAME);
  d.vendor = DeviceString(device, CL_DEVICE_VENDOR);
  d.platform_version = DeviceString(device, CL_DEVICE_VERSION);
  d.driver_version = DeviceString(device, CL_DRIVER_VERSION);
  d.memory_bytes = static_cast<int64_t>(DeviceValue<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE));
  d.compute_units = static_cast<int>(DeviceValue<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS));
  d.clock_khz = int64_t{DeviceValue<cl_uint>(device, CL_DEVICE_MAX_CLOCK_FREQUENCY)} * 1000;
  d.max_threads_per_block =
      static_cast<int64_t>(DeviceValue<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t item_sizes[3] = {1, 1, 1};
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(item_sizes), item_sizes, nullptr);
  d.max_block_dims = Dim3{static_cast<int64_t>(item_sizes[0]), static_cast<int64_t>(item_sizes[1]),
                          static_cast<int64_t>(item_sizes[2])};
  // OpenCL bounds only the global size (size_t); keep CUDA's grid limits so
  // that global sizes stay far from overflow.
  d.max_grid_dims = Dim3{2147483647, 65535, 65535};
  info.max_alloc_bytes = DeviceValue<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.base_align = DeviceValue<cl_uint>(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  info.profiling = (DeviceValue<cl_command_queue_properties>(device, CL_DEVICE_QUEUE_PROPERTIES) &
                    CL_QUEUE_PROFILING_ENABLE) != 0;
  d.extra["device type"] = DeviceTypeName(DeviceValue<cl_device_type>(device, CL_DEVICE_TYPE));
  d.extra["opencl c"] = DeviceString(device, CL_DEVICE_OPENCL_C_VERSION);
  d.extra["platform"] = PlatformString(platform, CL_PLATFORM_NAME);
  d.extra["max alloc"] = absl::StrCat(info.max_alloc_bytes, " bytes");
  d.extra["base align"] = absl::StrCat(info.base_align, " bytes (kernel sub-buffer offsets)");
  d.extra["fp64"] =
      DeviceValue<cl_device_fp_config>(device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0 ? "yes" : "no";
  return info;
}

}  // namespace

OpenClPlatform::~OpenClPlatform() { DestroyExecutors(); }

void OpenClPlatform::Discover() const {
  std::call_once(discovered_, [this] {
    cl_uint count = 0;
    cl_int error = clGetPlatformIDs(0, nullptr, &count);
    if (error != CL_SUCCESS || count == 0) {
      availability_ = absl::UnavailableError(
          absl::StrCat("no OpenCL platform: ",
                       error != CL_SUCCESS ? ClStatus(error, "clGetPlatformIDs").message()
                                           : "the ICD loader lists none",
                       " (install an OpenCL driver, e.g. pocl-opencl-icd)"));
      return;
    }
    std::vector<cl_platform_id> platforms(count);
    clGetPlatformIDs(count, platforms.data(), nullptr);
    std::string why;
    for (cl_platform_id platform : platforms) {
      cl_uint n = 0;
      error = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
      if (error != CL_SUCCESS || n == 0) {
        absl::StrAppend(
            &why, why.empty() ? "" : "; ", PlatformString(platform, CL_PLATFORM_NAME), ": ",
            ClStatus(error == CL_SUCCESS ? CL_DEVICE_NOT_FOUND : error, "clGetDeviceIDs")
                .message());
        continue;
      }
      std::vector<cl_device_id> ids(n);
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
      for (cl_device_id id : ids) {
        if (DeviceValue<cl_bool>(id, CL_DEVICE_AVAILABLE))
          devices_.push_back(Describe(platform, id));
      }
    }
    if (devices_.empty()) {
      availability_ = absl::UnavailableError(absl::StrCat("no OpenCL device: ", why));
    }
  });
}

int OpenClPlatform::VisibleDeviceCount() const {
  Discover();
  return static_cast<int>(devices_.size());
}

absl::Status OpenClPlatform::Availability() const {
  Discover();
  return availability_;
}

absl::StatusOr<DeviceDescription> OpenClPlatform::DescriptionForDevice(int ordinal) const {
  RILL_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  return devices_[ordinal].description;
}

absl::StatusOr<std::unique_ptr<StreamExecutorInterface>>
OpenClPlatform::CreateExecutorImplementation(const StreamExecutorConfig& config) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<OpenClExecutor> executor,
                        OpenClExecutor::Create(devices_[config.ordinal], streams_));
  return std::unique_ptr<StreamExecutorInterface>(std::move(executor));
}

absl::Status RegisterOpenClPlatform(PlatformManager& manager) {
  return manager.RegisterPlatform(std::make_unique<OpenClPlatform>());
}

}  // namespace rill

RILL_REGISTER_PLATFORM(opencl, rill::RegisterOpenClPlatform)
