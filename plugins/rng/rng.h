#ifndef RILL_PLUGINS_RNG_RNG_H_
#define RILL_PLUGINS_RNG_RNG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/plugin.h"

namespace rill {

class Stream;

// Random number generation into device memory, as cuRAND's generator API:
// one generator per plugin instance (so per executor) with a 64-bit seed and
// a position (offset) in its stream of numbers; every call continues where
// the last one stopped, in stream order. The same seed and the same sequence
// of calls give the same numbers on every platform whose plugin implements
// Philox4x32-10 (host, CUDA, OpenCL).
//
// Each Do* call checks its arguments (InvalidArgument naming the bad value:
// empty or null buffers, a normal with stddev <= 0, an odd element count for
// normals, which come in pairs) and enqueues on `stream`. Stream::ThenPopulate*
// forward here. An implementation overrides the protected virtuals.
// Thread-safe; calls from several streams are ordered by call, not by stream.
class RngSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kRng;

  // What a capability query asks about: the distribution ("uniform",
  // "gaussian", "bits") and the element type (unused for bits).
  struct Operation {
    const char* distribution = "uniform";
    DataType type = DataType::kFloat;
    std::string ToString() const;  // "uniform double".
  };
  // Whether this plugin draws `op`: OK, or Unimplemented saying why. A call
  // this plugin does not support goes to its fallback() (plugins/
  // plugin_chain.h), which draws from its own generator (its own seed and
  // position). The default supports everything.
  virtual absl::Status Supports(const Operation& op) const;

  // Restarts the generator at `seed`, offset 0. (cuRAND's
  // curandSetPseudoRandomGeneratorSeed keeps the offset: to reproduce a
  // cuRAND sequence, set both.)
  virtual absl::Status SetSeed(uint64_t seed) = 0;
  // Skips to position `offset` of the current seed's stream.
  virtual absl::Status SetOffset(uint64_t offset) = 0;

  // Uniform in (0, 1], as cuRAND.
  absl::Status DoPopulateRandUniform(Stream* stream, DeviceMemory<float>* out);
  absl::Status DoPopulateRandUniform(Stream* stream, DeviceMemory<double>* out);
  // Normal with the given mean and stddev (> 0); the element count is even.
  absl::Status DoPopulateRandGaussian(Stream* stream, float mean, float stddev,
                                      DeviceMemory<float>* out);
  absl::Status DoPopulateRandGaussian(Stream* stream, double mean, double stddev,
                                      DeviceMemory<double>* out);
  // Raw 32-bit integers.
  absl::Status DoPopulateRandBits(Stream* stream, DeviceMemory<uint32_t>* out);

 protected:
  // Arguments are checked; `out` holds `count` elements of `type`.
  virtual absl::Status Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                               uint64_t count) = 0;
  virtual absl::Status Gaussian(Stream* stream, DataType type, double mean, double stddev,
                                DeviceMemoryBase out, uint64_t count) = 0;
  virtual absl::Status Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) = 0;
};

}  // namespace rill

#endif  // RILL_PLUGINS_RNG_RNG_H_
