#include "rill/plugins/rng/curand/curand_rng.h"

#include <cuda_runtime_api.h>
#include <curand.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/platform/cuda/cuda_status.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/plugins/rng/curand/curand_status.h"
#include "rill/stream/stream.h"

namespace rill {

absl::StatusOr<std::unique_ptr<CuRand>> CuRand::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("curand: executor is null");
  RILL_ASSIGN_OR_RETURN(int ordinal, CudaDeviceOrdinal(executor));
  return std::unique_ptr<CuRand>(new CuRand(executor, ordinal));
}

CuRand::~CuRand() {
  MutexLock lock(&mu_);
  if (generator_ == nullptr && last_ == nullptr) return;
  CudaDeviceScope device(ordinal_);
  if (last_ != nullptr) {
    if (recorded_) cudaEventSynchronize(last_);  // The last generation is done with the generator.
    cudaEventDestroy(last_);
  }
  if (generator_ != nullptr) curandDestroyGenerator(generator_);
}

std::string CuRand::Version() const {
  const int v = LibraryVersion();  // major * 1000 + minor * 100 + patch
  return absl::StrCat("cuRAND ", v / 1000, ".", v % 1000 / 100, ".", v % 100);
}

int CuRand::LibraryVersion() {
  int version = 0;
  curandGetVersion(&version);
  return version;
}

absl::Status CuRand::SetSeed(uint64_t seed) {
  MutexLock lock(&mu_);
  seed_ = seed;
  offset_ = 0;
  pending_ = true;
  return absl::OkStatus();
}

absl::Status CuRand::SetOffset(uint64_t offset) {
  MutexLock lock(&mu_);
  offset_ = offset;
  pending_ = true;
  return absl::OkStatus();
}

absl::StatusOr<curandGenerator_st*> CuRand::GeneratorLocked() {
  if (generator_ == nullptr) {
    curandGenerator_t generator = nullptr;
    RILL_RETURN_IF_ERROR(
        CuRandStatus(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10),
                     absl::StrCat("curandCreateGenerator(PHILOX4_32_10, device ", ordinal_, ")")));
    const absl::Status ordered =
        CuRandStatus(curandSetGeneratorOrdering(generator, CURAND_ORDERING_PSEUDO_DEFAULT),
                     "curandSetGeneratorOrdering");
    if (!ordered.ok()) {
      curandDestroyGenerator(generator);
      return ordered;
    }
    generator_ = generator;
  }
  if (pending_) {
    // cuRAND keeps the offset across a new seed: set both, as RngSupport
    // restarts at offset 0 on SetSeed.
    RILL_RETURN_IF_ERROR(
        CuRandStatus(curandSetPseudoRandomGeneratorSeed(generator_, seed_),
                     absl::StrCat("curandSetPseudoRandomGeneratorSeed(", seed_, ")")));
    RILL_RETURN_IF_ERROR(CuRandStatus(curandSetGeneratorOffset(generator_, offset_),
                                      absl::StrCat("curandSetGeneratorOffset(", offset_, ")")));
    pending_ = false;
  }
  return generator_;
}

absl::Status CuRand::Uniform(Stream* stream, DataType type, DeviceMemoryBase out, uint64_t count) {
  return Generate(stream, type == DataType::kFloat ? Kind::kUniformFloat : Kind::kUniformDouble, 0,
                  1, out, count);
}

absl::Status CuRand::Gaussian(Stream* stream, DataType type, double mean, double stddev,
                              DeviceMemoryBase out, uint64_t count) {
  return Generate(stream, type == DataType::kFloat ? Kind::kNormalFloat : Kind::kNormalDouble, mean,
                  stddev, out, count);
}

absl::Status CuRand::Bits(Stream* stream, DeviceMemoryBase out, uint64_t count) {
  return Generate(stream, Kind::kBits, 0, 1, out, count);
}

absl::Status CuRand::Generate(Stream* stream, Kind kind, double mean, double stddev,
                              DeviceMemoryBase out, uint64_t count) {
  const bool doubles = kind == Kind::kUniformDouble || kind == Kind::kNormalDouble;
  const uint64_t element = doubles ? 8 : 4;
  if (out.offset() % element != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("curand: output starts at byte offset ", out.offset(),
                     ", not a multiple of the element size ", element));
  }
  RILL_ASSIGN_OR_RETURN(cudaStream_t cuda_stream,
                        CudaPluginStream(executor_, stream, kName, "AsRng()"));
  if (!stream->ok()) return stream->status();  // Skipped: the generator stays where it is.
  void* p = CudaAddress(out);
  const size_t n = static_cast<size_t>(count);
  CudaDeviceScope device(ordinal_);
  RILL_RETURN_IF_ERROR(device.status());
  MutexLock lock(&mu_);
  RILL_ASSIGN_OR_RETURN(curandGenerator_t generator, GeneratorLocked());
  RILL_RETURN_IF_ERROR(CuRandStatus(curandSetStream(generator, cuda_stream), "curandSetStream"));
  if (last_ == nullptr) {
    RILL_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&last_, cudaEventDisableTiming),
                                    "curand: cudaEventCreateWithFlags"));
  }
  if (recorded_) {  // After the previous generation, whatever its stream.
    RILL_RETURN_IF_ERROR(
        CudaStatus(cudaStreamWaitEvent(cuda_stream, last_, 0), "curand: cudaStreamWaitEvent"));
  }
  RILL_RETURN_IF_ERROR(Enqueue(generator, kind, mean, stddev, p, n));
  RILL_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(last_, cuda_stream), "curand: cudaEventRecord"));
  recorded_ = true;
  return absl::OkStatus();
}

absl::Status CuRand::Enqueue(curandGenerator_st* generator, Kind kind, double mean, double stddev,
                             void* p, size_t n) {
  switch (kind) {
    case Kind::kBits:
      return CuRandStatus(curandGenerate(generator, static_cast<unsigned int*>(p), n),
                          absl::StrCat("curandGenerate(n=", n, ")"));
    case Kind::kUniformFloat:
      return CuRandStatus(curandGenerateUniform(generator, static_cast<float*>(p), n),
                          absl::StrCat("curandGenerateUniform(n=", n, ")"));
    case Kind::kUniformDouble:
      return CuRandStatus(curandGenerateUniformDouble(generator, static_cast<double*>(p), n),
                          absl::StrCat("curandGenerateUniformDouble(n=", n, ")"));
    case Kind::kNormalFloat:
      return CuRandStatus(
          curandGenerateNormal(generator, static_cast<float*>(p), n, static_cast<float>(mean),
                               static_cast<float>(stddev)),
          absl::StrCat("curandGenerateNormal(n=", n, ", mean=", mean, ", stddev=", stddev, ")"));
    case Kind::kNormalDouble:
      return CuRandStatus(
          curandGenerateNormalDouble(generator, static_cast<double*>(p), n, mean, stddev),
          absl::StrCat("curandGenerateNormalDouble(n=", n, ", mean=", mean, ", stddev=", stddev,
                       ")"));
  }
  return absl::InternalError("curand: unknown kind");
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateCuRand(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<CuRand> rng, CuRand::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(rng));
}

}  // namespace

RILL_REGISTER_PLUGIN(curand, kCudaPlatformId, PluginKind::kRng, CuRand::kName, CreateCuRand,
                     /*make_default=*/true);

}  // namespace rill
