#include "rill/platform/utils/host_function_kernel.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "rill/base/checked_math.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/device_memory.h"

namespace rill {
namespace {

// One ParallelFor call: workers claim chunks of indices until none is left.
struct Job {
  const std::function<void(int64_t)>* fn;
  int64_t n;
  int64_t chunk;
  std::atomic<int64_t> next{0};
  int users = 0;  // Pool threads inside Help(); guarded by the pool's mutex.

  // Claims and runs chunks; returns when none is left to claim.
  void Help() {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) return;
      const int64_t end = std::min(n, begin + chunk);
      for (int64_t i = begin; i < end; ++i) (*fn)(i);
    }
  }
};

// A fixed pool of (cores - 1) threads shared by every host kernel launch.
// Created on first use and never destroyed (its threads idle at exit).
class Pool {
 public:
  static Pool& Get() {
    static Pool* pool = new Pool();
    return *pool;
  }
  int size() const { return static_cast<int>(threads_.size()); }

  void Run(Job* job) {
    {
      MutexLock lock(&mu_);
      jobs_.push_back(job);
      cv_.SignalAll();
    }
    job->Help();
    {
      // Off the queue first, so no thread joins late; then wait for the
      // threads still running chunks they claimed.
      MutexLock lock(&mu_);
      jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
      while (job->users > 0) finished_cv_.Wait(&mu_);
    }
  }

 private:
  Pool() {
    const int n = std::max(1u, std::thread::hardware_concurrency()) - 1;
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Work(); });
  }

  void Work() {
    MutexLock lock(&mu_);
    for (;;) {
      while (jobs_.empty()) cv_.Wait(&mu_);
      Job* job = jobs_.front();
      ++job->users;
      mu_.Unlock();
      job->Help();
      mu_.Lock();
      // Every chunk is claimed: nobody else needs to join this job.
      jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
      if (--job->users == 0) finished_cv_.SignalAll();
    }
  }

  Mutex mu_;
  CondVar cv_;
  CondVar finished_cv_;
  std::deque<Job*> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace

void HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  Pool& pool = Pool::Get();
  if (pool.size() == 0 || n < 2) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.n = n;
  job.chunk = std::max<int64_t>(1, n / (8 * (pool.size() + 1)));
  pool.Run(&job);
}

absl::Status RunHostKernel(const HostBlockFn& fn, const ThreadDim& threads, const BlockDim& blocks,
                           const KernelArgs& args) {
  // Native argument values: a host pointer for memory, the bytes otherwise.
  std::vector<void*> pointers(args.size());
  std::vector<const void*> native(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_memory) {
      pointers[i] = HostPointer(args[i].memory);
      native[i] = &pointers[i];
    } else {
      native[i] = args[i].bytes.data();
    }
  }
  // A block that throws fails the launch (the blocks not yet started are
  // skipped); the exception never leaves this function, so it neither ends
  // the stream's thread nor unwinds through the parallel-for's pool.
  std::atomic<bool> threw{false};
  std::mutex error_mu;
  absl::Status error;
  auto run_block = [&](int64_t linear) {
    if (threw.load(std::memory_order_relaxed)) return;
    HostThread block;
    block.block_dim = threads;
    block.grid_dim = blocks;
    block.block_idx =
        Dim3{linear % blocks.x, (linear / blocks.x) % blocks.y, linear / (blocks.x * blocks.y)};
    try {
      fn(block, native.data());
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!threw.exchange(true)) error = CurrentExceptionStatus("host kernel");
    }
  };
  const int64_t num_blocks = blocks.product();
  // The front bounds each extent by the device description, but a grid may
  // hold nearly 2^63 blocks: the thread count is computed without wrapping.
  const std::optional<int64_t> num_threads = CheckedMul(num_blocks, threads.product());
  if (num_threads.has_value() && *num_threads < HostKernel::kParallelThreshold) {
    for (int64_t b = 0; b < num_blocks; ++b) run_block(b);
  } else {
    HostParallelFor(num_blocks, run_block);
  }
  std::lock_guard<std::mutex> lock(error_mu);
  return error;
}

}  // namespace rill
