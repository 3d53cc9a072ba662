// Tensors and ops against their peers, in one binary (ratios > 1: Rill is
// faster):
//  - dispatch: 10,000 dependent `y += x` on 64 floats on the CPU context,
//    against libtorch's eager `y.add_(x)` (under c10::InferenceMode and
//    NoGradGuard) when built with libtorch (bench/ops_bench.sh installs it);
//    and 10,000 independent small ops spread over two host devices;
//  - bandwidth: a 16M-float add through ops against a plain loop;
//  - library ops: matmul and conv2d through ops against the plugin called
//    on a stream directly;
//  - allocator: a cached alloc + free pair, and the variable-size scenario's
//    peak bytes against plain device allocation.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <vector>

#ifdef RILL_BENCH_LIBTORCH
#include <ATen/ATen.h>
#include <torch/torch.h>
#endif

#include "bench/bench_engine.h"
#include "bench/bench_report.h"
#include "rill/base/lock_count.h"
#include "rill/engine/engine.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"
#include "rill/tensor/storage_allocator.h"
#include "rill/tensor/tensor.h"

// Heap allocations made by each thread: the dispatch benchmark reads the
// pushing thread's count before and after a chain of pushes.
namespace {
thread_local uint64_t tls_allocations = 0;
}  // namespace

void* operator new(std::size_t n) {
  ++tls_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  ++tls_allocations;
  const std::size_t align = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace rill {
namespace {

constexpr int kChain = 10000;

engine::Engine* Engine() { return bench::BenchEngine(); }

void RillChain(benchmark::State& state) {
  auto x = *Tensor::FromHost<float>(std::vector<float>(64, 1.f), {64}, engine::Context::Host(),
                                    Engine());
  auto y = *Tensor::FromHost<float>(std::vector<float>(64, 0.f), {64}, engine::Context::Host(),
                                    Engine());
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) {
      if (!ops::AddTo(y, x).ok()) state.SkipWithError("AddTo failed");
    }
    if (!y.WaitToRead().ok()) state.SkipWithError("chain failed");
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// What one push costs the pushing thread at steady state: heap allocations
// (this binary counts operator new) and locks taken (rill::Mutex and
// SpinLock, base/lock_count.h), over a chain of `y += x` on 64 floats on
// the CPU context (allocs_per_push, locks_per_push) and on host:0
// (device_allocs_per_push, device_locks_per_push). Work that runs on the
// pushing thread (an inline CPU op) is included.
void PushCost(benchmark::State& state) {
  auto run = [&](engine::Context ctx, const char* allocs, const char* locks) {
    auto x = *Tensor::FromHost<float>(std::vector<float>(64, 1.f), {64}, ctx, Engine());
    auto y = *Tensor::FromHost<float>(std::vector<float>(64, 0.f), {64}, ctx, Engine());
    for (int i = 0; i < 1000; ++i) (void)ops::AddTo(y, x);  // Warm: caches, pools.
    (void)y.WaitToRead();
    const uint64_t a0 = tls_allocations, l0 = tls_lock_acquisitions;
    for (int i = 0; i < kChain; ++i) {
      if (!ops::AddTo(y, x).ok()) state.SkipWithError("AddTo failed");
    }
    const uint64_t a1 = tls_allocations, l1 = tls_lock_acquisitions;
    if (!y.WaitToRead().ok()) state.SkipWithError("chain failed");
    state.counters[allocs] = static_cast<double>(a1 - a0) / kChain;
    state.counters[locks] = static_cast<double>(l1 - l0) / kChain;
  };
  for (auto _ : state) {
    run(engine::Context::Host(), "allocs_per_push", "locks_per_push");
    run(*engine::Context::Device("host", 0), "device_allocs_per_push", "device_locks_per_push");
  }
}

// 10,000 independent in-place adds over 64 tensors, half on host:0 and half
// on host:1 (two virtual devices, each with its own streams).
void RillIndependent(benchmark::State& state) {
  std::vector<Tensor> ys, xs;
  for (int i = 0; i < 64; ++i) {
    auto ctx = *engine::Context::Device("host", i % 2);
    xs.push_back(*Tensor::FromHost<float>(std::vector<float>(64, 1.f), {64}, ctx, Engine()));
    ys.push_back(*Tensor::FromHost<float>(std::vector<float>(64, 0.f), {64}, ctx, Engine()));
  }
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) {
      if (!ops::AddTo(ys[i % 64], xs[i % 64]).ok()) state.SkipWithError("AddTo failed");
    }
    if (!Engine()->WaitForAll().ok()) state.SkipWithError("failed");
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

#ifdef RILL_BENCH_LIBTORCH
void TorchChain(benchmark::State& state, bool inference_mode) {
  at::set_num_threads(1);
  auto x = at::ones({64}), y = at::zeros({64});
  for (auto _ : state) {
    std::unique_ptr<c10::InferenceMode> im;
    std::unique_ptr<torch::NoGradGuard> ng;
    if (inference_mode)
      im = std::make_unique<c10::InferenceMode>();
    else
      ng = std::make_unique<torch::NoGradGuard>();
    for (int i = 0; i < kChain; ++i) y.add_(x);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void TorchIndependent(benchmark::State& state) {
  at::set_num_threads(1);
  c10::InferenceMode im;
  std::vector<at::Tensor> ys, xs;
  for (int i = 0; i < 64; ++i) {
    xs.push_back(at::ones({64}));
    ys.push_back(at::zeros({64}));
  }
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) ys[i % 64].add_(xs[i % 64]);
  }
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(kChain),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
#endif

// 16M floats: out = a + b through ops on the CPU context, and the plain loop.
constexpr int64_t kBig = 16 << 20;

void RillBigAdd(benchmark::State& state) {
  auto a = *Tensor::FromHost<float>(std::vector<float>(kBig, 1.f), {kBig}, engine::Context::Host(),
                                    Engine());
  auto b = *Tensor::FromHost<float>(std::vector<float>(kBig, 2.f), {kBig}, engine::Context::Host(),
                                    Engine());
  auto out = *Tensor::Empty({kBig}, DType::kF32, engine::Context::Host(), Engine());
  const ops::OpDef& add = ops::BuiltinOp("add");
  const Tensor in[2] = {a, b};
  for (auto _ : state) {
    if (!ops::Invoke(add, in, nullptr, absl::MakeConstSpan(&out, 1)).ok())
      state.SkipWithError("add failed");
    if (!out.WaitToRead().ok()) state.SkipWithError("add failed");
  }
  state.counters["GBps"] =
      benchmark::Counter(3.0 * kBig * sizeof(float), benchmark::Counter::kIsIterationInvariantRate);
}

void LoopBigAdd(benchmark::State& state) {
  std::vector<float> a(kBig, 1.f), b(kBig, 2.f), out(kBig);
  for (auto _ : state) {
    const float* pa = a.data();
    const float* pb = b.data();
    float* po = out.data();
    for (int64_t i = 0; i < kBig; ++i) po[i] = pa[i] + pb[i];
    benchmark::ClobberMemory();
  }
  state.counters["GBps"] =
      benchmark::Counter(3.0 * kBig * sizeof(float), benchmark::Counter::kIsIterationInvariantRate);
}

// matmul [256 x 512] x [512 x 256] through ops and through ThenBlasGemm.
constexpr int64_t kM = 256, kK = 512, kN = 256;

void RillMatmul(benchmark::State& state) {
  auto a = *Tensor::FromHost<float>(std::vector<float>(kM * kK, 0.5f), {kM, kK},
                                    engine::Context::Host(), Engine());
  auto b = *Tensor::FromHost<float>(std::vector<float>(kK * kN, 0.25f), {kK, kN},
                                    engine::Context::Host(), Engine());
  auto c = *Tensor::Empty({kM, kN}, DType::kF32, engine::Context::Host(), Engine());
  auto op = ops::OpRegistry::Global().Find("matmul");
  if (!op.ok()) {
    state.SkipWithError("no matmul op");
    return;
  }
  const Tensor in[2] = {a, b};
  for (auto _ : state) {
    if (!ops::Invoke(**op, in, nullptr, absl::MakeConstSpan(&c, 1)).ok())
      state.SkipWithError("matmul failed");
    if (!c.WaitToRead().ok()) state.SkipWithError("matmul failed");
  }
}

void DirectMatmul(benchmark::State& state) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  auto a = *exec->AllocateOwnedArray<float>(kM * kK);
  auto b = *exec->AllocateOwnedArray<float>(kK * kN);
  auto c = *exec->AllocateOwnedArray<float>(kM * kN);
  auto stream = *exec->CreateStream();
  std::vector<float> ha(kM * kK, 0.5f), hb(kK * kN, 0.25f);
  stream->ThenMemcpy(a.ptr(), ha.data(), ha.size() * 4)
      .ThenMemcpy(b.ptr(), hb.data(), hb.size() * 4);
  for (auto _ : state) {
    // Row-major C = A B as column-major C^T = B^T A^T.
    stream->ThenBlasGemm(GemmArgs{DataType::kFloat, Transpose::kNoTranspose,
                                  Transpose::kNoTranspose, kN, kM, kK, 1, *b, kN, *a, kK, 0, *c,
                                  kN});
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("gemm failed");
  }
}

// The allocator: one cached alloc + free pair.
void AllocatorPair(benchmark::State& state) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  StorageAllocator alloc(exec);
  alloc.Free(*alloc.Allocate(1 << 16));
  for (auto _ : state) {
    auto b = alloc.Allocate(1 << 16);
    benchmark::DoNotOptimize(b);
    alloc.Free(*b);
  }
}

// Variable sizes (as an NLP model's sequence lengths): peak bytes held with
// pooling against what plain allocation peaks at (the live bytes).
void Fragmentation(benchmark::State& state) {
  StreamExecutor* exec =
      *(*PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0);
  int64_t pool_peak = 0, plain_peak = 0;
  for (auto _ : state) {
    StorageAllocator alloc(exec);
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint64_t> size(1, 3 << 20);
    std::vector<std::pair<StorageBlock, uint64_t>> live;
    int64_t live_bytes = 0;
    for (int i = 0; i < 4000; ++i) {
      if (live.size() < 8) {
        const uint64_t want = size(rng) / (i % 3 + 1);
        live.emplace_back(*alloc.Allocate(want), want);
        live_bytes += static_cast<int64_t>(want);
        plain_peak = std::max(plain_peak, live_bytes);
      } else {
        for (int k = 0; k < 2; ++k) {
          const size_t j = rng() % live.size();
          alloc.Free(live[j].first);
          live_bytes -= static_cast<int64_t>(live[j].second);
          live.erase(live.begin() + static_cast<long>(j));
        }
      }
    }
    for (auto& [b, n] : live) alloc.Free(b);
    pool_peak = alloc.Stats().peak_bytes;
  }
  state.counters["pool_peak_MiB"] = pool_peak / 1048576.0;
  state.counters["plain_peak_MiB"] = plain_peak / 1048576.0;
}

void Summarize(const bench::Results& r, bench::Report& report) {
  auto get = [&](const std::string& name, const char* counter) -> double {
    for (const std::string& key : {name + "/real_time", name}) {
      auto it = r.find(key);
      if (it == r.end()) continue;
      if (counter == nullptr) return it->second.real_ns_per_iter;
      auto c = it->second.counters.find(counter);
      return c == it->second.counters.end() ? 0 : c->second;
    }
    return 0;
  };
  const double rill_chain = get("RillChain", "ns_per_op") * 1e9;
  report.Figure("ops.dispatch.chain.rill_ns_per_op", rill_chain);
  const double rill_ind = get("RillIndependent", "ns_per_op") * 1e9;
  report.Figure("ops.dispatch.independent_2dev.rill_ns_per_op", rill_ind);
#ifdef RILL_BENCH_LIBTORCH
  const double t_im = get("TorchChain/inference_mode", "ns_per_op") * 1e9;
  const double t_ng = get("TorchChain/no_grad", "ns_per_op") * 1e9;
  const double t_ind = get("TorchIndependent", "ns_per_op") * 1e9;
  report.Figure("ops.dispatch.chain.libtorch_inference_mode_ns_per_op", t_im);
  report.Figure("ops.dispatch.chain.libtorch_no_grad_ns_per_op", t_ng);
  if (rill_chain > 0) {
    report.Ratio("ops.dispatch.chain.vs_libtorch_inference_mode", t_im / rill_chain);
    report.Ratio("ops.dispatch.chain.vs_libtorch_no_grad", t_ng / rill_chain);
  }
  if (rill_ind > 0) report.Ratio("ops.dispatch.independent_2dev.vs_libtorch", t_ind / rill_ind);
#endif
  for (const char* c :
       {"allocs_per_push", "locks_per_push", "device_allocs_per_push", "device_locks_per_push"}) {
    report.Figure(std::string("ops.dispatch.add64.") + c, get("PushCost/iterations:1", c));
  }
  const double rill_bw = get("RillBigAdd", "GBps"), loop_bw = get("LoopBigAdd", "GBps");
  report.Figure("ops.add16M.rill_GBps", rill_bw / 1e9);
  report.Figure("ops.add16M.loop_GBps", loop_bw / 1e9);
  if (loop_bw > 0) report.Ratio("ops.add16M.vs_loop", rill_bw / loop_bw);
  const double mm = get("RillMatmul", nullptr), dmm = get("DirectMatmul", nullptr);
  if (mm > 0 && dmm > 0) report.Ratio("ops.matmul256x512x256.vs_plugin", dmm / mm);
  report.Figure("ops.allocator.cached_pair_ns", get("AllocatorPair", nullptr));
  report.Figure("ops.allocator.fragmentation.pool_peak_MiB",
                get("Fragmentation/iterations:1", "pool_peak_MiB"));
  report.Figure("ops.allocator.fragmentation.plain_peak_MiB",
                get("Fragmentation/iterations:1", "plain_peak_MiB"));
}

BENCHMARK(RillChain)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(PushCost)->Iterations(1);
#ifdef RILL_BENCH_LIBTORCH
BENCHMARK_CAPTURE(TorchChain, inference_mode, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(TorchChain, no_grad, false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(TorchIndependent)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
BENCHMARK(RillIndependent)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(RillBigAdd)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(LoopBigAdd)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(RillMatmul)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(DirectMatmul)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(AllocatorPair);
BENCHMARK(Fragmentation)->Iterations(1);

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  int rc = rill::bench::RunAndReport(argc, argv, rill::Summarize);
  rill::Engine()->Shutdown(false);
  return rc;
}
