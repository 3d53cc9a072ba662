#ifndef RILL_PLUGINS_RNG_PHILOX_PHILOX_RNG_H_
#define RILL_PLUGINS_RNG_PHILOX_PHILOX_RNG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/rng/rng.h"

namespace rill {

class StreamExecutor;

// RngSupport for host-memory devices (the host platform;
// plugins/host_library.h): Philox4x32-10 laid out as cuRAND's
// CURAND_RNG_PSEUDO_PHILOX4_32_10 (see philox.h for exactly what matches).
// Registered as "philox", the host default. Each call takes its position from
// the generator when it is made (so calls are ordered by call, as RngSupport
// says) and fills the buffer on the stream's thread, in stream order, split
// into chunks over the host kernel pool: the bytes do not depend on the number
// of threads. Thread-safe.
class PhiloxRng : public RngSupport {
 public:
  static constexpr char kName[] = "philox";
  // Elements per parallel chunk; smaller calls run on the stream's thread.
  static constexpr uint64_t kChunk = 1 << 16;

  static absl::StatusOr<std::unique_ptr<PhiloxRng>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override { return "Rill Philox4x32-10 (built in)"; }
  absl::Status SetSeed(uint64_t seed) override;
  absl::Status SetOffset(uint64_t offset) override;

  // Caps the threads one call uses (the stream's thread included); 0, the
  // default, means every thread of the host kernel pool. For benchmarks and
  // for callers that share the cores with other work. Takes effect for calls
  // made afterwards.
  void set_max_threads(int max_threads);
  int max_threads() const;

  uint64_t seed() const;
  uint64_t offset() const;

 protected:
  absl::Status Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                       uint64_t count) override;
  absl::Status Gaussian(Stream* stream, DataType type, double mean, double stddev,
                        DeviceMemoryBase out, uint64_t count) override;
  absl::Status Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) override;

 private:
  explicit PhiloxRng(StreamExecutor* executor) : executor_(executor) {}

  enum class Kind { kBits, kUniformFloat, kUniformDouble, kNormalFloat, kNormalDouble };
  // Claims `count` values of `kind` from the generator and enqueues their
  // generation into `out` on `stream`.
  absl::Status Enqueue(Stream* stream, Kind kind, double mean, double stddev, DeviceMemoryBase out,
                       uint64_t count);

  StreamExecutor* const executor_;  // Outlives the plugin (it owns it).
  mutable Mutex mu_;
  uint64_t seed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t offset_ ABSL_GUARDED_BY(mu_) = 0;
  int max_threads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rill

#endif  // RILL_PLUGINS_RNG_PHILOX_PHILOX_RNG_H_
