#include "platform/host/host_stream.h"

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "platform/host/host_event.h"
#include "platform/host/host_executor.h"
#include "platform/host/host_kernel.h"

namespace rill {

namespace {

// Polls `done` for up to kSpinTime -- first with a CPU pause, which leaves
// the cache line to the other core, then yielding the core in case the
// thread we wait for needs it -- and returns whether it became true.
// The clock is read after every yield: on a busy machine one yield can
// last a scheduler slice, and a spinner that checked it only now and then
// would keep a core from the threads doing the work (it once held the
// caller of a multithreaded oneDNN convolution at 100% of a core).
template <typename Done>
bool SpinUntil(Done done) {
  constexpr auto kSpinTime = std::chrono::microseconds(50);
  constexpr int kPauses = 256;
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if (i < kPauses) {
      if ((i & 15) == 15 && std::chrono::steady_clock::now() > deadline) return false;
      __builtin_ia32_pause();
    } else {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
}

}  // namespace

HostStream::HostStream(StreamStatus* status, std::shared_ptr<HostStreamRegistry> registry)
    : status_(status), registry_(std::move(registry)) {
  registry_->Add(this);
  worker_ = std::thread([this] { WorkLoop(); });
  worker_id_ = worker_.get_id();
}

HostStream::~HostStream() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    work_cv_.Signal();
  }
  worker_.join();
  registry_->Remove(this);
}

void HostStream::Enqueue(HostTask task, bool run_after_error) {
  MutexLock lock(&mu_);
  if (queue_.size() >= kMaxQueued && std::this_thread::get_id() != worker_id_) {
    ++blocked_producers_;
    space_cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.size() < kMaxQueued; });
    --blocked_producers_;
  }
  queue_.push_back(Entry{std::move(task), run_after_error});
  ++enqueued_;
  pending_.fetch_add(1, std::memory_order_release);
  if (sleeping_) work_cv_.Signal();
}

void HostStream::WorkLoop() {
  std::vector<Entry> batch;
  for (;;) {
    // Poll for more work a little before sleeping, so a producer that queues
    // back to back never pays for a wake-up.
    SpinUntil([this] { return pending_.load(std::memory_order_acquire) != 0; });
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stop_) {
        sleeping_ = true;
        work_cv_.Wait(&mu_);
        sleeping_ = false;
      }
      if (queue_.empty() && stop_) return;
      batch.swap(queue_);
      pending_.fetch_sub(batch.size(), std::memory_order_relaxed);
      if (blocked_producers_ > 0) space_cv_.SignalAll();
    }
    for (Entry& entry : batch) {
      if (status_->ok() || entry.run_after_error) status_->Update(std::move(entry.task)());
      entry.task.Reset();  // Release captures before signalling completion.
      const uint64_t done = completed_.fetch_add(1, std::memory_order_seq_cst) + 1;
      if (done >= wake_at_.load(std::memory_order_seq_cst)) {
        MutexLock lock(&mu_);
        done_cv_.SignalAll();
      }
    }
    // A burst (up to kMaxQueued entries of ~256 bytes) must not pin its
    // memory for the stream's life.
    if (batch.capacity() > kKeepCapacity) {
      std::vector<Entry>().swap(batch);
    } else {
      batch.clear();
    }
  }
}

absl::Status HostStream::BlockHostUntilDone() {
  uint64_t target;
  {
    MutexLock lock(&mu_);
    target = enqueued_;
  }
  // Short work is usually done within microseconds: poll before sleeping.
  if (SpinUntil([&] { return completed_.load(std::memory_order_acquire) >= target; })) {
    return absl::OkStatus();
  }
  MutexLock lock(&mu_);
  wait_targets_.insert(target);
  wake_at_.store(*wait_targets_.begin(), std::memory_order_seq_cst);
  done_cv_.Wait(&mu_, [&] { return completed_.load(std::memory_order_seq_cst) >= target; });
  wait_targets_.erase(wait_targets_.find(target));
  wake_at_.store(wait_targets_.empty() ? UINT64_MAX : *wait_targets_.begin(),
                 std::memory_order_seq_cst);
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyHostToDevice(DeviceMemoryBase dst, const void* src, uint64_t size) {
  Enqueue([dst, src, size] {
    std::memcpy(HostPointer(dst), src, size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyDeviceToHost(void* dst, DeviceMemoryBase src, uint64_t size) {
  Enqueue([dst, src, size] {
    std::memcpy(dst, HostPointer(src), size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::MemcpyDeviceToDevice(DeviceMemoryBase dst, DeviceMemoryBase src,
                                              uint64_t size) {
  Enqueue([dst, src, size] {
    std::memmove(HostPointer(dst), HostPointer(src), size);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::Memset32(DeviceMemoryBase dst, uint32_t pattern, uint64_t size) {
  Enqueue([dst, pattern, size] {
    auto* out = static_cast<char*>(HostPointer(dst));
    for (uint64_t i = 0; i < size; i += 4) std::memcpy(out + i, &pattern, 4);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

absl::Status HostStream::RecordEvent(EventInterface* event) {
  std::shared_ptr<HostEventState> state = static_cast<HostEvent*>(event)->state();
  const uint64_t generation = state->BeginRecord();
  Enqueue(
      [this, state, generation] {
        state->Complete(generation, status_->Get());
        return absl::OkStatus();
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status HostStream::WaitForEvent(EventInterface* event) {
  std::shared_ptr<HostEventState> state = static_cast<HostEvent*>(event)->state();
  const uint64_t generation = state->latest();
  Enqueue([state, generation] { return state->Wait(generation); });
  return absl::OkStatus();
}

absl::Status HostStream::DoHostCallback(absl::AnyInvocable<absl::Status() &&> callback) {
  Enqueue(std::move(callback));
  return absl::OkStatus();
}

absl::Status HostStream::Notify(absl::AnyInvocable<void() &&> callback) {
  Enqueue(
      [cb = std::move(callback)]() mutable {
        std::move(cb)();
        return absl::OkStatus();
      },
      /*run_after_error=*/true);
  return absl::OkStatus();
}

absl::Status HostStream::Launch(const ThreadDim& threads, const BlockDim& blocks,
                                const KernelInterface& kernel, KernelArgs args) {
  // Holds the function, not the kernel, so the kernel may go before this runs.
  std::shared_ptr<const HostBlockFn> fn = static_cast<const HostKernel&>(kernel).fn();
  Enqueue([fn = std::move(fn), threads, blocks, args = std::move(args)] {
    return RunHostKernel(*fn, threads, blocks, args);
  });
  return absl::OkStatus();
}

}  // namespace rill
