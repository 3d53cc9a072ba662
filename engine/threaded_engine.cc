// The threaded engine: ready functions go to worker pools -- one for host
// (CPU) functions, and per device one for compute and one for copies,
// created on first use. Workers take functions by priority, then push order.
// A thread waiting in WaitForAll or WaitForVar runs ready host functions too.

#include <algorithm>
#include <map>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "rill/engine/engine_base.h"
#include "rill/engine/engine_kinds.h"
#include "rill/engine/worker_pool.h"

namespace rill::engine::internal {
namespace {

class ThreadedEngine : public EngineBase {
 public:
  explicit ThreadedEngine(const EngineOptions& options) : EngineBase(options) {
    // Create checked cpu_workers against kMaxWorkers; so is one per core.
    int cpu = options.cpu_workers > 0
                  ? options.cpu_workers
                  : static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 2,
                                                          EngineOptions::kMaxWorkers + 1) -
                                     1);
    cpu_pool_ = std::make_unique<WorkerPool>("cpu", cpu, 0, Runner(), Idler(), &LookAhead);
    next_worker_id_ = cpu;
  }
  ~ThreadedEngine() override { Shutdown(false); }

 protected:
  void Dispatch(OprBlock* op, bool sole) override {
    if (op->ctx.is_host()) {
      cpu_pool_->Push(op, sole);
      return;
    }
    const FnProperty prop = op->opr->prop;
    const bool copy = prop == FnProperty::kCopyToDevice || prop == FnProperty::kCopyFromDevice;
    DevicePool(op->ctx, copy)->Push(op, sole);
  }

  bool HelpUntil(absl::FunctionRef<bool()> done) override {
    return options_.waiting_thread_helps && cpu_pool_->Help(kWaitingThread, done);
  }
  void WakeHelpers() override {
    // Most calls find no helper: then no worker is woken for nothing.
    if (AnyoneHelping()) cpu_pool_->WakeHelpers();
  }

  void StopThreads() override {
    cpu_pool_->Stop();
    MutexLock lock(&mu_);
    for (auto& [key, pool] : device_pools_) pool->Stop();
  }

  void DescribeQueued(std::string* out) override {
    std::string names;
    auto describe = [&](const OprBlock* op) { absl::StrAppend(&names, " ", DescribeOp(op)); };
    cpu_pool_->DescribeQueued(describe);
    {
      MutexLock lock(&mu_);
      for (auto& [key, pool] : device_pools_) pool->DescribeQueued(describe);
    }
    if (!names.empty()) absl::StrAppend(out, "ready, waiting for a worker:", names, "\n");
  }

 private:
  WorkerPool::RunFn Runner() {
    return [this](OprBlock* op, int worker) { Run(op, worker); };
  }
  WorkerPool::IdleFn Idler() {
    return [this] { WorkerIdle(); };
  }

  WorkerPool* DevicePool(const Context& ctx, bool copy) {
    MutexLock lock(&mu_);
    auto key = std::make_tuple(ctx.platform, ctx.ordinal, copy);
    auto it = device_pools_.find(key);
    if (it != device_pools_.end()) return it->second.get();
    const int threads = copy ? options_.copy_workers_per_device : options_.workers_per_device;
    auto pool = std::make_unique<WorkerPool>(absl::StrCat(ctx.ToString(), copy ? " copy" : ""),
                                             std::max(1, threads), next_worker_id_, Runner(),
                                             Idler(), &LookAhead);
    next_worker_id_ += std::max(1, threads);
    return device_pools_.emplace(key, std::move(pool)).first->second.get();
  }

  std::unique_ptr<WorkerPool> cpu_pool_;
  Mutex mu_;
  std::map<std::tuple<PlatformId, int, bool>, std::unique_ptr<WorkerPool>> device_pools_
      ABSL_GUARDED_BY(mu_);
  int next_worker_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::unique_ptr<Engine> NewThreadedEngine(const EngineOptions& options) {
  auto engine = std::make_unique<ThreadedEngine>(options);
  engine->StartBackground();
  return engine;
}

}  // namespace rill::engine::internal
