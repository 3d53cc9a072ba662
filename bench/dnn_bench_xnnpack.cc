// The XNNPACK part of dnn_bench (bench/dnn_bench.cc): XNNPACK through Rill
// against XNNPACK called directly, and the two host DNN libraries side by
// side with what the tuned chain picks, on NHWC layers.
//
// Each iteration runs 8 convolutions back to back and then waits (the
// *_sync variants: one); GFLOP/s count all of them.
//  - xnn_direct/<layer>/n<N>: one xnn_create_convolution2d_nhwc_f32 made
//    before the loop; setup + xnn_run_operator per call on a
//    pthreadpool of the size the plugin uses (RILL_DNN_THREADS or the
//    cores), on the calling thread.
//  - xnn_rill/<layer>/n<N>: Stream::ThenConvolve + BlockHostUntilDone on
//    host device 0's "xnnpack" plugin (the filter compare per call
//    included: see plugins/dnn/xnnpack/xnnpack_dnn.h).
//  - onednn_nhwc/<layer>/n<N>: the same call on "onednn", NHWC/OHWI.
//  - chain/<layer>/n<N>: the chain "xnnpack,onednn" with kBestAlgorithm:
//    the AlgorithmSelector times both libraries on the shape once (in the
//    warm-up) and every iteration runs its choice.
//
// RATIO dnn.<layer>.n<N>.xnnpack = direct / Rill time; RATIO
// dnn.<layer>.n<N>.chain_vs_faster = the faster library's time / the
// chain's (>= 0.95 wanted); FIGURE lines give the GFLOP/s of each and the
// chain's pick.

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "bench/dnn_bench_layers.h"
#include "benchmark/benchmark.h"
#include "rill/platform/host/host_thread_budget.h"
#include "rill/plugins/dnn/algorithm_selector.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_dnn.h"
#include "rill/rill.h"

namespace rill {
namespace {

using dnn_bench::Flops;
using dnn_bench::kBatches;
using dnn_bench::kDepth;
using dnn_bench::kLayers;
using dnn_bench::Layer;
using dnn_bench::Shape;
using dnn_bench::Suffix;

int PoolThreads() {
  if (const char* v = std::getenv("RILL_DNN_THREADS"); v != nullptr && std::atoi(v) > 0)
    return std::atoi(v);
  return HostCores();
}

void Direct(benchmark::State& state, ConvolutionShape s, int depth) {
  if (xnn_initialize(nullptr) != xnn_status_success)
    return state.SkipWithError("xnn_initialize failed");
  pthreadpool_t pool = PoolThreads() > 1 ? pthreadpool_create(PoolThreads()) : nullptr;
  std::vector<float> x(s.input.ElementCount() + 16, 0.5f), w(s.filter.ElementCount(), 0.25f),
      y(s.output.ElementCount());
  xnn_operator_t op = nullptr;
  const auto& c = s.conv;
  if (xnn_create_convolution2d_nhwc_f32(
          c.pad_h, c.pad_w, c.pad_h, c.pad_w, s.filter.height, s.filter.width, c.stride_h,
          c.stride_w, c.dilation_h, c.dilation_w, 1, s.input.c, s.output.c, s.input.c, s.output.c,
          w.data(), nullptr, -INFINITY, INFINITY, 0, &op) != xnn_status_success) {
    return state.SkipWithError("xnn_create_convolution2d_nhwc_f32 failed");
  }
  auto run = [&] {
    xnn_setup_convolution2d_nhwc_f32(op, s.input.n, s.input.h, s.input.w, x.data(), y.data(), pool);
    return xnn_run_operator(op, pool);
  };
  if (run() != xnn_status_success) state.SkipWithError("xnn_run_operator failed");
  for (auto _ : state) {
    for (int i = 0; i < depth; ++i) run();
    benchmark::ClobberMemory();
  }
  xnn_delete_operator(op);
  if (pool != nullptr) pthreadpool_destroy(pool);
  state.counters["GFLOPs"] =
      benchmark::Counter(depth * Flops(s), benchmark::Counter::kIsIterationInvariantRate);
}

// Through Rill on host device 0 with DNN chain `chain` and `algorithm`.
void ThroughRill(benchmark::State& state, ConvolutionShape s, std::string chain, int64_t algorithm,
                 int depth) {
  StreamExecutor* exec =
      PlatformManager::Default().PlatformWithName("host").value()->ExecutorForDevice(0).value();
  if (!exec->SetPlugin(PluginKind::kDnn, chain).ok())
    return state.SkipWithError("SetPlugin failed");
  auto x = exec->AllocateOwnedArray<float>(s.input.ElementCount()).value();
  auto w = exec->AllocateOwnedArray<float>(s.filter.ElementCount()).value();
  auto y = exec->AllocateOwnedArray<float>(s.output.ElementCount()).value();
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  std::vector<float> init(s.input.ElementCount(), 0.5f), winit(s.filter.ElementCount(), 0.25f);
  stream->ThenMemcpy(x.ptr(), init.data(), init.size() * 4)
      .ThenMemcpy(w.ptr(), winit.data(), winit.size() * 4);
  const ConvolutionArgs args{s, *x, *w, *y, algorithm};
  stream->ThenConvolve(args);  // Warm-up: operator creation (and the chain's tuning).
  if (!stream->BlockHostUntilDone().ok()) return state.SkipWithError("stream failed");
  for (auto _ : state) {
    for (int i = 0; i < depth; ++i) stream->ThenConvolve(args);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(depth * Flops(s), benchmark::Counter::kIsIterationInvariantRate);
  if (algorithm == kBestAlgorithm) {
    absl::StatusOr<AlgorithmChoice> choice =
        AlgorithmSelector::Default().Select(exec, exec->AsDnn(), ConvolutionKind::kForward, s);
    if (choice.ok()) state.SetLabel(choice->plugin);
  }
}

}  // namespace

void RegisterXnnpack() {
  for (const Layer& l : kLayers) {
    for (int64_t n : kBatches) {
      const ConvolutionShape s = Shape(l, n, DataLayout::kNHWC);
      benchmark::RegisterBenchmark(("xnn_direct" + Suffix(l, n)).c_str(), Direct, s, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("xnn_rill" + Suffix(l, n)).c_str(), ThroughRill, s, "xnnpack",
                                   kDefaultAlgorithm, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("onednn_nhwc" + Suffix(l, n)).c_str(), ThroughRill, s, "onednn",
                                   kDefaultAlgorithm, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("chain" + Suffix(l, n)).c_str(), ThroughRill, s,
                                   "xnnpack,onednn", kBestAlgorithm, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("xnn_direct_sync" + Suffix(l, n)).c_str(), Direct, s, 1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("xnn_rill_sync" + Suffix(l, n)).c_str(), ThroughRill, s,
                                   "xnnpack", kDefaultAlgorithm, 1)
          ->UseRealTime();
    }
  }
}

void SummarizeXnnpack(const bench::Results& r, bench::Report& report) {
  auto find = [&](const std::string& name) -> const bench::Measured* {
    for (const std::string& key : {name + "/real_time", name}) {
      if (auto it = r.find(key); it != r.end() && it->second.real_ns_per_iter > 0)
        return &it->second;
    }
    return nullptr;
  };
  auto gflops = [](const bench::Measured* m) {
    return m->counters.count("GFLOPs") ? m->counters.at("GFLOPs") / 1e9 : 0;
  };
  for (const Layer& l : kLayers) {
    for (int64_t n : kBatches) {
      const std::string name = "dnn." + l.name + ".n" + std::to_string(n);
      const bench::Measured* direct = find("xnn_direct" + Suffix(l, n));
      const bench::Measured* xnn = find("xnn_rill" + Suffix(l, n));
      const bench::Measured* onednn = find("onednn_nhwc" + Suffix(l, n));
      const bench::Measured* chain = find("chain" + Suffix(l, n));
      if (direct != nullptr && xnn != nullptr) {
        report.Figure(name + ".xnnpack.gflops", gflops(xnn));
        report.Figure(name + ".xnnpack.direct_gflops", gflops(direct));
        report.Ratio(name + ".xnnpack", direct->real_ns_per_iter / xnn->real_ns_per_iter);
      }
      const bench::Measured* direct_sync = find("xnn_direct_sync" + Suffix(l, n));
      const bench::Measured* xnn_sync = find("xnn_rill_sync" + Suffix(l, n));
      if (direct_sync != nullptr && xnn_sync != nullptr) {
        report.Ratio(name + ".xnnpack.sync",
                     direct_sync->real_ns_per_iter / xnn_sync->real_ns_per_iter);
      }
      if (xnn != nullptr && onednn != nullptr && chain != nullptr) {
        report.Figure(name + ".onednn_nhwc.gflops", gflops(onednn));
        report.Figure(name + ".chain.gflops", gflops(chain));
        const double faster = std::min(xnn->real_ns_per_iter, onednn->real_ns_per_iter);
        report.Ratio(name + ".chain_vs_faster", faster / chain->real_ns_per_iter);
        report.Figure(name + ".xnnpack_over_onednn",
                      onednn->real_ns_per_iter / xnn->real_ns_per_iter);
      }
    }
  }
}

}  // namespace rill
