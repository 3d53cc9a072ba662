#ifndef RILL_PLUGINS_RNG_CURAND_CURAND_RNG_H_
#define RILL_PLUGINS_RNG_CURAND_CURAND_RNG_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/plugins/rng/rng.h"

struct curandGenerator_st;  // cuRAND's generator (curandGenerator_t).

namespace rill {

class StreamExecutor;

// RngSupport for the CUDA platform through cuRAND's host API, registered as
// "curand", the CUDA default. One generator per plugin instance (so per
// executor): CURAND_RNG_PSEUDO_PHILOX4_32_10 with
// CURAND_ORDERING_PSEUDO_DEFAULT, created on first use on the executor's
// device (CudaDeviceScope) and destroyed with the plugin.
//
// Seed and offset mean what they mean for the host "philox" plugin
// (plugins/rng/philox/philox.h, which reproduces this very generator):
// SetSeed(s) is curandSetPseudoRandomGeneratorSeed(s) plus
// curandSetGeneratorOffset(0), SetOffset(o) is curandSetGeneratorOffset(o),
// both applied before the next generation. So the same seed, offset and
// sequence of calls give the host plugin's numbers: bits and uniforms bit
// for bit (philox.h lists the one layout difference after double calls);
// normals through the GPU's sin/cos/log, within a few ulp.
//
// Each call locks the plugin's mutex, binds the generator to the stream's
// cudaStream_t (curandSetStream) and enqueues the generation there
// (curandGenerate, curandGenerateUniform[Double],
// curandGenerateNormal[Double]), so calls are ordered by call as RngSupport
// says and run in stream order. Generations are also serialized on the
// device across streams (each waits, with cudaStreamWaitEvent, for the
// previous one's event), since they share the generator's device state,
// and the destructor waits for the last one. A call on a stream in an error state does
// nothing and returns that error (the generator does not advance). Output
// views must start at a multiple of the element size.
//
// Errors carry cuRAND's names ("curandGenerateUniform(n=1000):
// CURAND_STATUS_LAUNCH_FAILURE (201): kernel launch failure"),
// curand_status.h.
//
//   RngSupport* rng = executor->AsRng();   // "curand" on the cuda platform
//   RILL_RETURN_IF_ERROR(rng->SetSeed(42));
//   stream->ThenPopulateRandUniform(&buffer).ThenPopulateRandGaussian(0.f, 1.f, &noise);
//
// Thread-safe.
class CuRand : public RngSupport {
 public:
  static constexpr char kName[] = "curand";

  // InvalidArgument for an executor of another platform. Makes no CUDA
  // call: the generator is made on first use.
  static absl::StatusOr<std::unique_ptr<CuRand>> Create(StreamExecutor* executor);
  ~CuRand() override;
  CuRand(const CuRand&) = delete;
  CuRand& operator=(const CuRand&) = delete;

  std::string Name() const override { return kName; }
  std::string Version() const override;  // "cuRAND 10.4.0"
  absl::Status SetSeed(uint64_t seed) override;
  absl::Status SetOffset(uint64_t offset) override;

  // cuRAND's version, e.g. 10400 for 10.4.0 (curandGetVersion).
  static int LibraryVersion();

 protected:
  absl::Status Uniform(Stream* stream, DataType type, DeviceMemoryBase out,
                       uint64_t count) override;
  absl::Status Gaussian(Stream* stream, DataType type, double mean, double stddev,
                        DeviceMemoryBase out, uint64_t count) override;
  absl::Status Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) override;

 private:
  enum class Kind { kBits, kUniformFloat, kUniformDouble, kNormalFloat, kNormalDouble };

  CuRand(StreamExecutor* executor, int ordinal) : executor_(executor), ordinal_(ordinal) {}

  // Checks the stream and `out`, then enqueues `count` values of `kind`.
  absl::Status Generate(Stream* stream, Kind kind, double mean, double stddev, DeviceMemoryBase out,
                        uint64_t count);
  // Enqueues one generation of `n` values of `kind` into device address `p`
  // with `generator`, bound to the call's stream.
  static absl::Status Enqueue(curandGenerator_st* generator, Kind kind, double mean, double stddev,
                              void* p, size_t n);
  // The generator (made on first use; the device must be current), with a
  // pending seed or offset applied.
  absl::StatusOr<curandGenerator_st*> GeneratorLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StreamExecutor* const executor_;  // Owns the plugin.
  const int ordinal_;               // The executor's CUDA device.
  Mutex mu_;
  curandGenerator_st* generator_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t seed_ ABSL_GUARDED_BY(mu_) = 0;           // Last SetSeed (0 as the host plugin).
  uint64_t offset_ ABSL_GUARDED_BY(mu_) = 0;         // Pending offset while `pending_`.
  bool pending_ ABSL_GUARDED_BY(mu_) = true;         // seed_/offset_ not yet given to cuRAND.
  cudaEvent_t last_ ABSL_GUARDED_BY(mu_) = nullptr;  // After the last generation, if recorded_.
  bool recorded_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rill

#endif  // RILL_PLUGINS_RNG_CURAND_CURAND_RNG_H_
