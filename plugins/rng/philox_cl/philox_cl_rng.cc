#include "rill/plugins/rng/philox_cl/philox_cl_rng.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/opencl/opencl_platform.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/plugins/rng/philox/philox.h"
#include "rill/plugins/rng/philox_cl/philox_cl_kernels.h"
#include "rill/stream/stream.h"

namespace rill {
namespace {
constexpr int64_t kThreads = 64;

// The view from the start of its allocation: kernels index it with First().
DeviceMemoryBase Whole(const DeviceMemoryBase& out) {
  return DeviceMemoryBase(out.opaque(), out.offset() + out.size(), 0);
}
uint64_t First(const DeviceMemoryBase& out, uint64_t element_size) {
  return out.offset() / element_size;
}
}  // namespace

absl::StatusOr<std::unique_ptr<PhiloxClRng>> PhiloxClRng::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(AsOpenClExecutor(executor).status());
  return std::unique_ptr<PhiloxClRng>(new PhiloxClRng(executor));
}

absl::Status PhiloxClRng::SetSeed(uint64_t seed) {
  MutexLock lock(&mu_);
  seed_ = seed;
  offset_ = 0;
  return absl::OkStatus();
}

absl::Status PhiloxClRng::SetOffset(uint64_t offset) {
  MutexLock lock(&mu_);
  offset_ = offset;
  return absl::OkStatus();
}

uint64_t PhiloxClRng::seed() const {
  MutexLock lock(&mu_);
  return seed_;
}

uint64_t PhiloxClRng::offset() const {
  MutexLock lock(&mu_);
  return offset_;
}

std::pair<uint64_t, uint64_t> PhiloxClRng::Claim(uint64_t count, bool doubles) {
  MutexLock lock(&mu_);
  const uint64_t offset = offset_;
  offset_ = doubles ? philox::AdvanceDoubles(offset, count) : philox::AdvanceWords(offset, count);
  return {seed_, offset};
}

absl::Status PhiloxClRng::Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                                  uint64_t count) {
  if (type == DataType::kDouble) return EnqueueDoubles(stream, false, 0, 1, out, count);
  return EnqueueWords(stream, 1, 0, 1, out, count);
}

absl::Status PhiloxClRng::Gaussian(Stream* stream, DataType type, double mean, double stddev,
                                   DeviceMemoryBase out, uint64_t count) {
  if (type == DataType::kDouble) return EnqueueDoubles(stream, true, mean, stddev, out, count);
  return EnqueueWords(stream, 2, static_cast<float>(mean), static_cast<float>(stddev), out, count);
}

absl::Status PhiloxClRng::Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) {
  return EnqueueWords(stream, 0, 0, 1, out, count);
}

absl::Status PhiloxClRng::EnqueueWords(Stream* stream, int32_t kind, float mean, float stddev,
                                       DeviceMemoryBase out, uint64_t count) {
  RILL_RETURN_IF_ERROR(OpenClPluginStream(executor_, stream, kName, "AsRng()").status());
  if (out.offset() % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("philox (OpenCL): the output view starts at byte offset ", out.offset(),
                     ", not a multiple of 4"));
  }
  if (!stream->ok()) return stream->status();  // Skipped: leave the generator where it is.
  std::shared_ptr<WordsKernel> kernel;
  {
    MutexLock lock(&mu_);
    if (words_ == nullptr) {
      KernelSpec spec("philox_words");
      spec.AddOpenClSource(philox_cl::WordsSource());
      RILL_ASSIGN_OR_RETURN(WordsKernel loaded,
                            (executor_->LoadKernel<uint64_t, uint64_t, uint64_t, DeviceMemoryBase,
                                                   uint64_t, float, float, int32_t>(spec)));
      words_ = std::make_shared<WordsKernel>(std::move(loaded));
    }
    kernel = words_;
  }
  const auto [seed, offset] = Claim(count, /*doubles=*/false);
  const uint64_t blocks = (offset + count - 1) / 4 - offset / 4 + 1;  // Philox blocks touched.
  stream->ThenLaunch(ThreadDim(kThreads),
                     BlockDim(static_cast<int64_t>((blocks + kThreads - 1) / kThreads)), *kernel,
                     seed, offset, count, Whole(out), First(out, 4), mean, stddev, kind);
  return stream->status();
}

absl::Status PhiloxClRng::EnqueueDoubles(Stream* stream, bool normal, double mean, double stddev,
                                         DeviceMemoryBase out, uint64_t count) {
  RILL_RETURN_IF_ERROR(OpenClPluginStream(executor_, stream, kName, "AsRng()").status());
  if (out.offset() % 8 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("philox (OpenCL): the output view starts at byte offset ", out.offset(),
                     ", not a multiple of 8"));
  }
  if (!stream->ok()) return stream->status();
  std::shared_ptr<DoublesKernel> kernel;
  {
    MutexLock lock(&mu_);
    if (doubles_ == nullptr) {
      if (executor_->GetDeviceDescription().extra.count("fp64") &&
          executor_->GetDeviceDescription().extra.at("fp64") == "no") {
        return absl::UnimplementedError("philox (OpenCL): doubles need a device with cl_khr_fp64");
      }
      KernelSpec spec("philox_doubles");
      spec.AddOpenClSource(philox_cl::DoublesSource());
      RILL_ASSIGN_OR_RETURN(DoublesKernel loaded,
                            (executor_->LoadKernel<uint64_t, uint64_t, uint64_t, DeviceMemoryBase,
                                                   uint64_t, double, double, int32_t>(spec)));
      doubles_ = std::make_shared<DoublesKernel>(std::move(loaded));
    }
    kernel = doubles_;
  }
  const auto [seed, offset] = Claim(count, /*doubles=*/true);
  stream->ThenLaunch(ThreadDim(kThreads),
                     BlockDim(static_cast<int64_t>((count + kThreads - 1) / kThreads)), *kernel,
                     seed, offset, count, Whole(out), First(out, 8), mean, stddev,
                     int32_t{normal ? 1 : 0});
  return stream->status();
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreatePhiloxCl(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<PhiloxClRng> rng, PhiloxClRng::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(rng));
}

}  // namespace

RILL_REGISTER_PLUGIN(philox_cl, kOpenClPlatformId, PluginKind::kRng, PhiloxClRng::kName,
                     CreatePhiloxCl, /*make_default=*/true);

}  // namespace rill
