#ifndef RILL_PLATFORM_HOST_HOST_KERNEL_H_
#define RILL_PLATFORM_HOST_HOST_KERNEL_H_

// rill:internal -- not installed: the host backend's implementation; users include host_platform.h.

#include <cstdint>
#include <memory>

#include "rill/executor/stream_executor_interface.h"
#include "rill/stream/kernel_spec.h"

namespace rill {

// A host kernel: the spec's host block function. RunHostKernel() resolves the packed
// arguments (device memory becomes a host pointer) and runs every block of
// the grid; grids of at least kParallelThreshold threads are split over the
// calling thread and a process-wide pool of (cores - 1) threads.
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

#endif  // RILL_PLATFORM_HOST_HOST_KERNEL_H_
