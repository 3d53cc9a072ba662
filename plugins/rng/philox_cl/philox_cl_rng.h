#ifndef RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_RNG_H_
#define RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_RNG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/kernel.h"

namespace rill {

class StreamExecutor;

// RngSupport for the OpenCL platform: Philox4x32-10 as OpenCL C kernels,
// registered as "philox", the OpenCL default. Same layout as the host
// "philox" plugin (plugins/rng/philox/philox.h): for one seed and offset,
// bits, float uniforms and double uniforms are bit-identical to the host's;
// normals go through the device's sqrt/log/sin/cos, which OpenCL allows a
// few ulp of error (PoCL's differ from glibc's in the last bits), so they
// match the host's within a few ulp, not bit for bit.
//
// The kernels are loaded through the public kernel API
// (StreamExecutor::LoadKernel, Stream::ThenLaunch) on first use; the double
// program only when doubles are asked for (Unimplemented without fp64).
// Each call takes its position from the generator when it is made, as
// RngSupport says. An output view at an offset is passed as its whole
// buffer plus an element index, so any element-aligned view works.
// Thread-safe.
class PhiloxClRng : public RngSupport {
 public:
  static constexpr char kName[] = "philox";
  static absl::StatusOr<std::unique_ptr<PhiloxClRng>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return "Rill Philox4x32-10 OpenCL C kernels (built in)"; }
  absl::Status SetSeed(uint64_t seed) override;
  absl::Status SetOffset(uint64_t offset) override;
  uint64_t seed() const;
  uint64_t offset() const;

 protected:
  absl::Status Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                       uint64_t count) override;
  absl::Status Gaussian(Stream* stream, DataType type, double mean, double stddev,
                        DeviceMemoryBase out, uint64_t count) override;
  absl::Status Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) override;

 private:
  using WordsKernel =
      TypedKernel<uint64_t, uint64_t, uint64_t, DeviceMemoryBase, uint64_t, float, float, int32_t>;
  using DoublesKernel = TypedKernel<uint64_t, uint64_t, uint64_t, DeviceMemoryBase, uint64_t,
                                    double, double, int32_t>;

  explicit PhiloxClRng(StreamExecutor* executor) : executor_(executor) {}
  // kind: 0 bits, 1 uniform, 2 normal (as the kernels).
  absl::Status EnqueueWords(Stream* stream, int32_t kind, float mean, float stddev,
                            DeviceMemoryBase out, uint64_t count);
  absl::Status EnqueueDoubles(Stream* stream, bool normal, double mean, double stddev,
                              DeviceMemoryBase out, uint64_t count);
  // Claims `count` values; returns {seed, offset} of the call.
  std::pair<uint64_t, uint64_t> Claim(uint64_t count, bool doubles);

  StreamExecutor* const executor_;  // Owns the plugin.
  mutable Mutex mu_;
  uint64_t seed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t offset_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<WordsKernel> words_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<DoublesKernel> doubles_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_RNG_H_
