// Uses an installed Rill: finds the host platform by name, creates an
// executor and a stream, copies host->device, launches a typed host kernel,
// copies back and checks the result against a host reference. Prints OK and
// exits 0, or prints the failing status and exits 1.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "rill/rill.h"

namespace {

// y[i] = a * x[i] + y[i], one element per thread.
void SaxpyHost(const rill::HostThread& t, float a, const float* x, float* y, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) y[i] = a * x[i] + y[i];
}

absl::Status Run() {
  constexpr uint64_t kN = 100003;  // Odd, and large enough to run blocks in parallel.
  constexpr float kA = 2.5f;

  RILL_ASSIGN_OR_RETURN(rill::Platform * host,
                        rill::PlatformManager::Default().PlatformWithName("host"));
  RILL_ASSIGN_OR_RETURN(rill::StreamExecutor * executor, host->ExecutorForDevice(0));
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<rill::Stream> stream, executor->CreateStream());
  RILL_ASSIGN_OR_RETURN(auto x, executor->AllocateOwnedArray<float>(kN));
  RILL_ASSIGN_OR_RETURN(auto y, executor->AllocateOwnedArray<float>(kN));

  rill::KernelSpec spec("saxpy");
  spec.AddHostFunction<float, rill::DeviceMemory<float>, rill::DeviceMemory<float>, uint64_t>(
      SaxpyHost);
  RILL_ASSIGN_OR_RETURN(
      auto saxpy,
      (executor->LoadKernel<float, rill::DeviceMemory<float>, rill::DeviceMemory<float>, uint64_t>(
          spec)));

  std::vector<float> host_x(kN), host_y(kN), result(kN, -1.0f), expected(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    host_x[i] = static_cast<float>(i % 1000) * 0.5f;
    host_y[i] = static_cast<float>(i % 7) - 3.0f;
    expected[i] = kA * host_x[i] + host_y[i];
  }

  constexpr uint64_t kThreads = 256;
  const uint64_t bytes = kN * sizeof(float);
  stream->ThenMemcpy(x.ptr(), host_x.data(), bytes)
      .ThenMemcpy(y.ptr(), host_y.data(), bytes)
      .ThenLaunch(rill::ThreadDim(kThreads), rill::BlockDim((kN + kThreads - 1) / kThreads), saxpy,
                  kA, *x, *y, kN)
      .ThenMemcpy(result.data(), *y, bytes);
  RILL_RETURN_IF_ERROR(stream->BlockHostUntilDone());

  for (uint64_t i = 0; i < kN; ++i) {
    if (result[i] != expected[i]) {
      return absl::InternalError("saxpy mismatch at " + std::to_string(i) + ": got " +
                                 std::to_string(result[i]) + ", expected " +
                                 std::to_string(expected[i]));
    }
  }
  std::printf("rill_consumer: saxpy of %llu floats on %s matches the host reference\n",
              static_cast<unsigned long long>(kN), executor->DebugName().c_str());
  return absl::OkStatus();
}

}  // namespace

int main() {
  absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "rill_consumer: FAILED: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("OK\n");
  return 0;
}
