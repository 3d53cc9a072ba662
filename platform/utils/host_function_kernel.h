#ifndef RILL_PLATFORM_UTILS_HOST_FUNCTION_KERNEL_H_
#define RILL_PLATFORM_UTILS_HOST_FUNCTION_KERNEL_H_

#include <cstdint>
#include <memory>

#include "rill/executor/stream_executor_interface.h"
#include "rill/stream/kernel_spec.h"

namespace rill {

// Kernels that are host functions (KernelSpec::AddHostFunction), for any
// backend whose memory is host memory (Feature::kHostAddressableMemory): the
// host backend and, say, examples/toy_backend. LoadKernel keeps the spec's
// block function in a HostKernel; the stream's Launch calls RunHostKernel,
// which resolves the packed arguments (device memory becomes its host
// pointer) and runs every block of the grid. Grids of at least
// kParallelThreshold threads are split over the calling thread and a
// process-wide pool of (cores - 1) threads.
//
//   absl::StatusOr<std::unique_ptr<KernelInterface>> LoadKernel(const KernelSpec& spec) {
//     if (!spec.has_host_function()) return absl::UnimplementedError(...);
//     return std::make_unique<HostKernel>(spec.host_function());
//   }
//   // In the stream's worker, in order:
//   RunHostKernel(*static_cast<const HostKernel&>(kernel).fn(), threads, blocks, args);
//
// Thread-safe: launches from several streams may run at once.
class HostKernel : public KernelInterface {
 public:
  static constexpr int64_t kParallelThreshold = 1 << 14;

  explicit HostKernel(HostBlockFn fn) : fn_(std::make_shared<const HostBlockFn>(std::move(fn))) {}

  // The function, shared with launches still queued when the kernel goes.
  const std::shared_ptr<const HostBlockFn>& fn() const { return fn_; }

 private:
  std::shared_ptr<const HostBlockFn> fn_;
};

// Runs `fn` over the grid with `args` resolved to host values.
absl::Status RunHostKernel(const HostBlockFn& fn, const ThreadDim& threads, const BlockDim& blocks,
                           const KernelArgs& args);

// Runs fn(i) for i in [0, n) on the caller and the host kernel pool.
void HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace rill

#endif  // RILL_PLATFORM_UTILS_HOST_FUNCTION_KERNEL_H_
