#include "rill/plugins/rng/philox/philox_rng.h"

#include <algorithm>

#include "rill/base/status_macros.h"
#include "rill/platform/utils/host_function_kernel.h"
#include "rill/plugins/host_library.h"
#include "rill/plugins/rng/philox/philox.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<std::unique_ptr<PhiloxRng>> PhiloxRng::Create(StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, kName));
  return std::unique_ptr<PhiloxRng>(new PhiloxRng(executor));
}

absl::Status PhiloxRng::SetSeed(uint64_t seed) {
  MutexLock lock(&mu_);
  seed_ = seed;
  offset_ = 0;
  return absl::OkStatus();
}

absl::Status PhiloxRng::SetOffset(uint64_t offset) {
  MutexLock lock(&mu_);
  offset_ = offset;
  return absl::OkStatus();
}

void PhiloxRng::set_max_threads(int max_threads) {
  MutexLock lock(&mu_);
  max_threads_ = std::max(0, max_threads);
}

int PhiloxRng::max_threads() const {
  MutexLock lock(&mu_);
  return max_threads_;
}

uint64_t PhiloxRng::seed() const {
  MutexLock lock(&mu_);
  return seed_;
}

uint64_t PhiloxRng::offset() const {
  MutexLock lock(&mu_);
  return offset_;
}

absl::Status PhiloxRng::Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                                uint64_t count) {
  return Enqueue(stream, type == DataType::kFloat ? Kind::kUniformFloat : Kind::kUniformDouble, 0,
                 1, out, count);
}

absl::Status PhiloxRng::Gaussian(Stream* stream, DataType type, double mean, double stddev,
                                 DeviceMemoryBase out, uint64_t count) {
  return Enqueue(stream, type == DataType::kFloat ? Kind::kNormalFloat : Kind::kNormalDouble, mean,
                 stddev, out, count);
}

absl::Status PhiloxRng::Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) {
  return Enqueue(stream, Kind::kBits, 0, 1, out, count);
}

absl::Status PhiloxRng::Enqueue(Stream* stream, Kind kind, double mean, double stddev,
                                DeviceMemoryBase out, uint64_t count) {
  // A stream in error skips the work, and a stream of another executor is
  // refused: leave the generator where it is.
  if (!stream->ok()) return stream->status();
  RILL_RETURN_IF_ERROR(HostLibraryStream(executor_, stream, kName, "AsRng()").status());
  const bool doubles = kind == Kind::kUniformDouble || kind == Kind::kNormalDouble;
  uint64_t seed, offset;
  int max_threads;
  {
    MutexLock lock(&mu_);
    seed = seed_;
    offset = offset_;
    max_threads = max_threads_;
    offset_ = doubles ? philox::AdvanceDoubles(offset, count) : philox::AdvanceWords(offset, count);
  }
  void* base = HostPointer(out);
  auto fill = [=](uint64_t begin, uint64_t end) {
    switch (kind) {
      case Kind::kBits:
        philox::FillBits(seed, offset, static_cast<uint32_t*>(base), begin, end);
        break;
      case Kind::kUniformFloat:
        philox::FillUniformFloat(seed, offset, static_cast<float*>(base), begin, end);
        break;
      case Kind::kUniformDouble:
        philox::FillUniformDouble(seed, offset, static_cast<double*>(base), begin, end);
        break;
      case Kind::kNormalFloat:
        philox::FillNormalFloat(seed, offset, static_cast<float>(mean), static_cast<float>(stddev),
                                static_cast<float*>(base), begin, end);
        break;
      case Kind::kNormalDouble:
        philox::FillNormalDouble(seed, offset, mean, stddev, static_cast<double*>(base), begin,
                                 end);
        break;
    }
  };
  return EnqueueHostWork(executor_, stream, kName, "AsRng()", [fill, count, max_threads] {
    const uint64_t chunks = (count + kChunk - 1) / kChunk;
    if (chunks <= 1 || max_threads == 1) {
      fill(0, count);
      return;
    }
    // Contiguous parts of whole chunks, at most max_threads of them, so at
    // most that many threads take part.
    const uint64_t parts =
        max_threads > 0 ? std::min<uint64_t>(chunks, static_cast<uint64_t>(max_threads)) : chunks;
    const uint64_t per_part = (chunks + parts - 1) / parts * kChunk;
    HostParallelFor(static_cast<int64_t>(parts), [&](int64_t part) {
      const uint64_t begin = static_cast<uint64_t>(part) * per_part;
      fill(std::min(begin, count), std::min(begin + per_part, count));
    });
  });
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreatePhilox(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<PhiloxRng>> rng = PhiloxRng::Create(executor);
  if (!rng.ok()) return rng.status();
  return std::unique_ptr<PluginInterface>(std::move(*rng));
}

}  // namespace

RILL_REGISTER_HOST_LIBRARY_PLUGIN(philox, PluginKind::kRng, PhiloxRng::kName, CreatePhilox,
                                  /*make_default=*/true);

}  // namespace rill
