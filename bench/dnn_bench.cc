// DNN convolution forward through Rill against the same oneDNN primitive
// called directly; with XNNPACK built, also XNNPACK through Rill against
// XNNPACK called directly and the tuned "xnnpack,onednn" chain against the
// faster of the two (bench/dnn_bench_xnnpack.cc).
//
// Each iteration runs kDepth (8) convolutions back to back, then waits once
// (a network's layers on one stream); the *_sync variants wait after every
// convolution, which adds a round trip between threads per call.
//  - rill/<layer>/n<N>: Stream::ThenConvolve (algorithm "auto", an explicit
//    workspace of the reported size) x 8 + BlockHostUntilDone, on host
//    device 0's "onednn" plugin.
//  - rill_ws/<layer>/n<N>: the same without a workspace: the plugin
//    allocates the scratchpad through the executor for each call.
//  - direct/<layer>/n<N>: oneDNN called directly the way the plugin calls
//    it: the same primitive (1x1 on the caller's layouts; otherwise the
//    layouts oneDNN prefers, with reorders from and to the caller's each
//    call), executed on a dnnl::stream on the calling thread + wait. Both
//    implementations are printed.
// Layers (ResNet-50 stage 1, NCHW float): conv3x3 = 64 -> 64 channels,
// 56x56, 3x3, pad 1; conv1x1 = 256 -> 64 channels, 56x56, 1x1.
//
// Ends with FIGURE dnn.<layer>.n<N>.onednn.gflops (and .direct_gflops)
// and RATIO dnn.<layer>.n<N>.onednn = direct time / Rill time (higher is
// better; 1 means no overhead), RATIO dnn.<layer>.onednn = their geometric
// mean over N. Run it through bench/dnn_bench.sh (interleaved repetitions,
// medians) when the machine is quiet.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_report.h"
#include "bench/dnn_bench_layers.h"
#include "benchmark/benchmark.h"
#include "rill/plugins/dnn/onednn/onednn_common.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"
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

StreamExecutor* Executor() {
  StreamExecutor* exec =
      PlatformManager::Default().PlatformWithName("host").value()->ExecutorForDevice(0).value();
  if (!exec->SetPlugin(PluginKind::kDnn, OneDnn::kName).ok()) std::abort();
  return exec;
}

void Rill(benchmark::State& state, ConvolutionShape shape, bool workspace, int depth) {
  StreamExecutor* exec = Executor();
  auto x = exec->AllocateOwnedArray<float>(shape.input.ElementCount()).value();
  auto w = exec->AllocateOwnedArray<float>(shape.filter.ElementCount()).value();
  auto y = exec->AllocateOwnedArray<float>(shape.output.ElementCount()).value();
  const ConvolutionAlgorithm algorithm =
      exec->AsDnn()->GetConvolutionAlgorithms(ConvolutionKind::kForward, shape).value()[0];
  ScopedDeviceMemory<uint8_t> ws;
  if (workspace && algorithm.workspace_bytes > 0) {
    ws = exec->AllocateOwnedArray<uint8_t>(algorithm.workspace_bytes).value();
  }
  std::unique_ptr<Stream> stream = exec->CreateStream().value();
  std::vector<float> init(shape.input.ElementCount(), 0.5f),
      winit(shape.filter.ElementCount(), 0.25f);
  stream->ThenMemcpy(x.ptr(), init.data(), init.size() * 4)
      .ThenMemcpy(w.ptr(), winit.data(), winit.size() * 4);
  const ConvolutionArgs args{shape, *x, *w, *y, OneDnn::kAuto, *ws};
  stream->ThenConvolve(args);  // Warm-up: primitive creation, first touch.
  if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  for (auto _ : state) {
    for (int i = 0; i < depth; ++i) stream->ThenConvolve(args);
    if (!stream->BlockHostUntilDone().ok()) state.SkipWithError("stream failed");
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(depth * Flops(shape), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(algorithm.implementation);
}

void Direct(benchmark::State& state, ConvolutionShape shape, int depth) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc src = onednn::TensorMd(shape.input), wei = onednn::FilterMd(shape.filter, 1),
                     dst = onednn::TensorMd(shape.output);
  // The recipe a oneDNN user follows, and the plugin too: a 1x1 convolution
  // on the caller's layouts (one gemm); otherwise the layouts oneDNN prefers
  // (format_tag::any) with reorders from and to the caller's, every call.
  const bool plain = shape.filter.height == 1 && shape.filter.width == 1;
  auto any = [](const memory::desc& md) {
    return memory::desc(md.dims(), md.data_type(), memory::format_tag::any);
  };
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, plain ? src : any(src),
      plain ? wei : any(wei), plain ? dst : any(dst), {1, 1}, {0, 0},
      {shape.conv.pad_h, shape.conv.pad_w}, {shape.conv.pad_h, shape.conv.pad_w});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine);
  dnnl::convolution_forward conv(pd);
  memory x(src, engine), w(wei, engine), y(dst, engine), scratch(pd.scratchpad_desc(), engine);
  std::fill_n(static_cast<float*>(x.get_data_handle()), shape.input.ElementCount(), 0.5f);
  std::fill_n(static_cast<float*>(w.get_data_handle()), shape.filter.ElementCount(), 0.25f);
  // Staged copies and their reorders where oneDNN chose another layout.
  struct Stage {
    memory user, staged;
    dnnl::reorder reorder;
  };
  std::vector<Stage> in, out;
  auto stage = [&](memory& user, const memory::desc& chosen, bool input) -> memory {
    if (chosen == user.get_desc()) return user;
    memory staged(chosen, engine);
    (input ? in : out)
        .push_back(
            {user, staged, input ? dnnl::reorder(user, staged) : dnnl::reorder(staged, user)});
    return staged;
  };
  const memory xs = stage(x, pd.src_desc(), true), ws = stage(w, pd.weights_desc(), true),
               ys = stage(y, pd.dst_desc(), false);
  dnnl::stream s(engine);
  const std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, xs},
                                                {DNNL_ARG_WEIGHTS, ws},
                                                {DNNL_ARG_DST, ys},
                                                {DNNL_ARG_SCRATCHPAD, scratch}};
  auto run = [&](int calls) {
    for (int i = 0; i < calls; ++i) {
      for (Stage& st : in) st.reorder.execute(s, st.user, st.staged);
      conv.execute(s, args);
      for (Stage& st : out) st.reorder.execute(s, st.staged, st.user);
    }
    s.wait();
  };
  run(1);  // Warm-up, as Rill.
  for (auto _ : state) {
    run(depth);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(depth * Flops(shape), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(pd.impl_info_str());
}

void Register() {
  for (const Layer& l : kLayers) {
    for (int64_t n : kBatches) {
      const ConvolutionShape shape = Shape(l, n);
      // Interleaved, so drifting machine load hits both sides alike.
      benchmark::RegisterBenchmark(("direct" + Suffix(l, n)).c_str(), Direct, shape, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("rill" + Suffix(l, n)).c_str(), Rill, shape, true, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("rill_ws" + Suffix(l, n)).c_str(), Rill, shape, false, kDepth)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("direct_sync" + Suffix(l, n)).c_str(), Direct, shape, 1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("rill_sync" + Suffix(l, n)).c_str(), Rill, shape, true, 1)
          ->UseRealTime();
    }
  }
}

void Summarize(const bench::Results& r, bench::Report& report) {
  // Every benchmark's time, for bench/dnn_bench.sh, which runs each side in
  // a process of its own and computes the ratios from these.
  for (const auto& [name, m] : r) {
    std::string key = name.substr(0, name.rfind("/real_time"));
    report.Figure("dnn.ns." + key, m.real_ns_per_iter);
  }
  auto find = [&](const std::string& name) -> const bench::Measured* {
    for (const std::string& key : {name + "/real_time", name}) {
      if (auto it = r.find(key); it != r.end()) return &it->second;
    }
    return nullptr;
  };
  auto gflops = [](const bench::Measured* m) {
    return m->counters.count("GFLOPs") ? m->counters.at("GFLOPs") / 1e9 : 0;
  };
  for (const Layer& l : kLayers) {
    double log_sum = 0;
    int count = 0;
    for (int64_t n : kBatches) {
      const bench::Measured* rill = find("rill" + Suffix(l, n));
      const bench::Measured* rill_ws = find("rill_ws" + Suffix(l, n));
      const bench::Measured* direct = find("direct" + Suffix(l, n));
      if (rill == nullptr || direct == nullptr || rill->real_ns_per_iter <= 0) continue;
      const std::string name = "dnn." + l.name + ".n" + std::to_string(n) + ".onednn";
      report.Figure(name + ".gflops", gflops(rill));
      report.Figure(name + ".direct_gflops", gflops(direct));
      const double ratio = direct->real_ns_per_iter / rill->real_ns_per_iter;
      report.Ratio(name, ratio);
      if (rill_ws != nullptr && rill_ws->real_ns_per_iter > 0) {
        report.Ratio(name + ".no_workspace", direct->real_ns_per_iter / rill_ws->real_ns_per_iter);
      }
      const bench::Measured* rill_sync = find("rill_sync" + Suffix(l, n));
      const bench::Measured* direct_sync = find("direct_sync" + Suffix(l, n));
      if (rill_sync != nullptr && direct_sync != nullptr && rill_sync->real_ns_per_iter > 0) {
        report.Ratio(name + ".sync", direct_sync->real_ns_per_iter / rill_sync->real_ns_per_iter);
      }
      log_sum += std::log(ratio);
      ++count;
    }
    if (count > 0) report.Ratio("dnn." + l.name + ".onednn", std::exp(log_sum / count));
  }
}

}  // namespace
}  // namespace rill

#ifdef RILL_BENCH_XNNPACK
namespace rill {
// bench/dnn_bench_xnnpack.cc.
void RegisterXnnpack();
void SummarizeXnnpack(const bench::Results& r, bench::Report& report);
}  // namespace rill
#endif

int main(int argc, char** argv) {
  std::printf("%s\n", rill::OneDnn::LibraryVersion().c_str());
  rill::Register();
#ifdef RILL_BENCH_XNNPACK
  rill::RegisterXnnpack();
  return rill::bench::RunAndReport(argc, argv,
                                   [](const rill::bench::Results& r, rill::bench::Report& report) {
                                     rill::Summarize(r, report);
                                     rill::SummarizeXnnpack(r, report);
                                   });
#else
  return rill::bench::RunAndReport(argc, argv, rill::Summarize);
#endif
}
