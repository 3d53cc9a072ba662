// The graph executor (ratios > 1: the first is faster or smaller):
//  - memory planning: planned bytes over bytes-without-reuse for the
//    training graph (forward + backward) of the Fashion-MNIST CNN
//    (conv5x5x32-pool-conv5x5x64-pool-fc1024-fc10, batch 64) and of a
//    ResNet-18-shaped graph (batch 8, 3x64x64, 10 classes);
//  - bulk execution against one engine function per node: a chain of 200
//    small ops, and the CNN's training step (batch 16), for bulk sizes 1, 4,
//    15 and 64 (CnnStep64: the same step at batch 64, bulk 15);
//  - graph against imperative execution of the same training step (the same
//    ops through Invoke, gradients through the ops' gradient functions);
//  - the per-node cost of a bound inference graph: 1,000 tiny nodes
//    (mul_scalar and tanh on 1 or 16 floats) in one chain or in 8 chains,
//    bulk 15 (and the chain as one segment), Forward(false) plus the wait
//    for the outputs, on host:0 and cpu, against the same 1,000 prepared
//    calls run directly on one thread.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_engine.h"
#include "bench/bench_report.h"
#include "rill/engine/engine.h"
#include "rill/graph/executor.h"
#include "rill/graph/passes.h"
#include "rill/ops/invoke.h"
#include "rill/ops/prepared.h"
#include "rill/tensor/tensor.h"

namespace rill {
namespace {

using graph::Entry;
using graph::Graph;

engine::Engine* Engine() { return bench::BenchEngine(); }

Tensor Filled(const Shape& s, float lo, float hi, uint64_t seed) {
  std::vector<float> v(s.NumElements());
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    f = lo + (hi - lo) * static_cast<float>(x % 100000) / 100000.f;
  }
  return *Tensor::FromHost<float>(v, s, engine::Context::Host(), Engine());
}

struct Model {
  Graph g;
  absl::flat_hash_map<std::string, Shape> params;  // Name -> shape.
  Shape x, y;
};

// conv 5x5x32 same -> relu -> maxpool 2 -> conv 5x5x64 same -> relu -> maxpool 2
// -> fc 1024 relu -> fc 10 -> softmax cross-entropy (dropout left out).
Model Cnn(int batch) {
  Model m;
  Graph& g = m.g;
  m.x = {batch, 1, 28, 28};
  m.y = {batch};
  m.params = {{"k1", {32, 1, 5, 5}}, {"k2", {64, 32, 5, 5}}, {"w3", {1024, 64 * 7 * 7}},
              {"b3", {1024}},        {"w4", {10, 1024}},     {"b4", {10}}};
  const ops::Attrs pool{{"kernel", "(2, 2)"}, {"stride", "(2, 2)"}, {"pool_type", "max"}};
  Entry h = g.Op1("conv2d", {g.Input("x"), g.Param("k1")}, {{"pad", "(2, 2)"}}, "conv1");
  h = g.Op1("pooling", {g.Op1("relu", {h}, {}, "relu1")}, pool, "pool1");
  h = g.Op1("conv2d", {h, g.Param("k2")}, {{"pad", "(2, 2)"}}, "conv2");
  h = g.Op1("pooling", {g.Op1("relu", {h}, {}, "relu2")}, pool, "pool2");
  h = g.Op1("relu",
            {g.Op1("fully_connected",
                   {g.Op1("flatten", {h}, {}, "flat"), g.Param("w3"), g.Param("b3")}, {}, "fc3")},
            {}, "relu3");
  h = g.Op1("fully_connected", {h, g.Param("w4"), g.Param("b4")}, {}, "fc4");
  g.AddOutput(g.Op1("softmax_cross_entropy", {h, g.Input("y")}, {}, "loss"));
  return m;
}

// ResNet-18's topology: stem, four stages of two basic blocks, global
// average pool, fc; batch norm after every conv.
Model ResNet18(int batch, int size) {
  Model m;
  Graph& g = m.g;
  m.x = {batch, 3, size, size};
  m.y = {batch};
  int n = 0;
  auto conv_bn = [&](Entry x, int cin, int cout, int k, int stride, bool relu) {
    const std::string id = absl::StrCat(n++);
    m.params["k" + id] = {cout, cin, k, k};
    m.params["gamma" + id] = {cout};
    m.params["beta" + id] = {cout};
    Entry c = g.Op1("conv2d", {x, g.Param("k" + id)},
                    {{"stride", absl::StrCat(stride)}, {"pad", absl::StrCat(k / 2)}}, "conv" + id);
    Entry b = g.Op1("batch_norm", {c, g.Param("gamma" + id), g.Param("beta" + id)}, {}, "bn" + id);
    return relu ? g.Op1("relu", {b}, {}, "relu" + id) : b;
  };
  Entry h = conv_bn(g.Input("x"), 3, 64, 7, 2, true);
  h = g.Op1("pooling", {h},
            {{"kernel", "(3, 3)"}, {"stride", "(2, 2)"}, {"pad", "(1, 1)"}, {"pool_type", "max"}},
            "pool0");
  int cin = 64, spatial = size / 4;
  for (int stage = 0; stage < 4; ++stage) {
    const int cout = 64 << stage;
    for (int block = 0; block < 2; ++block) {
      const int stride = (stage > 0 && block == 0) ? 2 : 1;
      Entry a = conv_bn(h, cin, cout, 3, stride, true);
      a = conv_bn(a, cout, cout, 3, 1, false);
      Entry skip = (stride != 1 || cin != cout) ? conv_bn(h, cin, cout, 1, stride, false) : h;
      h = g.Op1("relu", {g.Op1("add", {a, skip})});
      cin = cout;
    }
    if (stage > 0) spatial /= 2;
  }
  h = g.Op1("pooling", {h}, {{"kernel", absl::StrCat(spatial)}, {"pool_type", "avg"}}, "gap");
  m.params["wfc"] = {10, 512};
  m.params["bfc"] = {10};
  h = g.Op1("fully_connected", {g.Op1("flatten", {h}), g.Param("wfc"), g.Param("bfc")}, {}, "fc");
  g.AddOutput(g.Op1("softmax_cross_entropy", {h, g.Input("y")}, {}, "loss"));
  return m;
}

struct Bound {
  absl::flat_hash_map<std::string, Tensor> args, grads;
};

Bound Arguments(const Model& m) {
  Bound b;
  b.args["x"] = Filled(m.x, -1, 1, 1);
  std::vector<float> y(m.y[0]);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 10);
  b.args["y"] = *Tensor::FromHost<float>(y, m.y, engine::Context::Host(), Engine());
  uint64_t seed = 2;
  for (const auto& [name, s] : m.params) {
    const bool bias = name[0] == 'b';
    const bool gamma = name.rfind("gamma", 0) == 0;
    b.args[name] =
        gamma ? Filled(s, 1, 1, seed) : Filled(s, bias ? 0 : -0.05f, bias ? 0 : 0.05f, seed);
    b.grads[name] = Filled(s, 0, 0, seed++);
  }
  return b;
}

std::unique_ptr<graph::Executor> BindModel(const Model& m, const Bound& b, int bulk,
                                           bool plan = true) {
  graph::BindOptions o;
  o.engine = Engine();
  o.bulk_size = bulk;
  o.plan_memory = plan;
  auto e = graph::Executor::Bind(m.g, b.args, b.grads, o);
  if (!e.ok()) {
    std::fprintf(stderr, "bind failed: %s\n", e.status().ToString().c_str());
    std::abort();
  }
  return *std::move(e);
}

// --- Memory planning.

void Memory(benchmark::State& state, bool resnet) {
  Model m = resnet ? ResNet18(8, 64) : Cnn(64);
  Bound b = Arguments(m);
  graph::MemoryReport r;
  for (auto _ : state) {
    auto e = BindModel(m, b, 15);
    r = e->memory();
    if (std::getenv("RILL_GRAPH_BENCH_PLAN") != nullptr)
      std::fprintf(stderr, "%s", e->DebugString().c_str());
  }
  state.counters["planned_MiB"] = r.planned_bytes / 1048576.0;
  state.counters["naive_MiB"] = r.naive_bytes / 1048576.0;
  state.counters["ratio"] = r.ratio();
  state.counters["inplace"] = static_cast<double>(r.inplace);
  state.counters["addto"] = static_cast<double>(r.addto);
  state.counters["blocks"] = static_cast<double>(r.blocks);
  state.counters["entries"] = static_cast<double>(r.entries);
}

// --- Bulk execution.

void Chain(benchmark::State& state) {
  const int bulk = static_cast<int>(state.range(0));
  Graph g;
  Entry h = g.Input("x");
  for (int i = 0; i < 200; ++i) {
    h = i % 2 ? g.Op1("tanh", {h}) : g.Op1("mul_scalar", {h}, {{"scalar", "0.9"}});
  }
  g.AddOutput(h);
  graph::BindOptions o;
  o.engine = Engine();
  o.bulk_size = bulk;
  auto e = *graph::Executor::Bind(g, {{"x", Filled({64}, -1, 1, 3)}}, {}, o);
  for (auto _ : state) {
    if (!e->Forward(false).ok() || !e->outputs()[0].WaitToRead().ok())
      state.SkipWithError("chain failed");
  }
}

void CnnStepOfBatch(benchmark::State& state, int batch) {
  const int bulk = static_cast<int>(state.range(0));
  Model m = Cnn(batch);
  Bound b = Arguments(m);
  auto e = BindModel(m, b, bulk);
  for (auto _ : state) {
    if (!e->Forward(true).ok() || !e->Backward().ok()) state.SkipWithError("step failed");
    for (const auto& [name, t] : b.grads) {
      if (!t.WaitToRead().ok()) state.SkipWithError("step failed");
    }
  }
  state.counters["images_per_s"] = benchmark::Counter(
      static_cast<double>(batch) * state.iterations(), benchmark::Counter::kIsRate);
}

void CnnStep(benchmark::State& state) { CnnStepOfBatch(state, 16); }
// The same step at batch 64 (the batch PyTorch comparisons use; docs/host_cnn_speed.md).
void CnnStep64(benchmark::State& state) { CnnStepOfBatch(state, 64); }

// The same step imperatively: forward with Invoke, backward with the ops'
// gradient functions in reverse order, contributions summed with add.
void CnnStepImperative(benchmark::State& state) {
  Model m = Cnn(16);
  Bound b = Arguments(m);
  const Graph& g = m.g;
  const std::vector<int> order = *graph::TopoOrder(g);
  for (auto _ : state) {
    std::vector<std::vector<Tensor>> val(g.num_nodes());
    for (int id : order) {
      const graph::Node& n = g.node(id);
      if (n.is_variable()) {
        val[id] = {b.args.at(n.name)};
        continue;
      }
      std::vector<Tensor> in;
      for (const Entry& e : n.inputs) in.push_back(val[e.node][e.index]);
      val[id] = *ops::Invoke(*n.op, in, n.params);
    }
    std::vector<std::vector<Tensor>> grad(g.num_nodes());
    for (int id = 0; id < g.num_nodes(); ++id) grad[id].resize(g.node(id).num_outputs());
    const Entry out = g.outputs()[0];
    grad[out.node][out.index] = *ops::Invoke("ones", {}, {{"shape", "()"}}, {},
                                             [] {
                                               ops::InvokeOptions o;
                                               o.context = engine::Context::Host();
                                               o.engine = Engine();
                                               return o;
                                             }())
                                     ->begin();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const graph::Node& n = g.node(*it);
      if (n.is_variable()) continue;
      std::vector<Tensor> in, outs = val[*it], og = grad[*it];
      for (const Entry& e : n.inputs) in.push_back(val[e.node][e.index]);
      bool any = false;
      for (const Tensor& t : og) any |= t.defined();
      if (!any) continue;
      for (size_t o = 0; o < og.size(); ++o) {
        if (!og[o].defined()) {
          og[o] = (*ops::Invoke("greater_scalar", {outs[o]},
                                {{"scalar", "inf"}}))[0];  // Zeros like it.
        }
      }
      ops::GradientContext gc{n.params.get(), in, outs, og};
      std::vector<Tensor> gi = *n.op->gradient()(gc);
      for (size_t i = 0; i < n.inputs.size() && i < gi.size(); ++i) {
        if (!gi[i].defined() || n.inputs[i].node == g.Find("x") || n.inputs[i].node == g.Find("y"))
          continue;
        Tensor& slot = grad[n.inputs[i].node][n.inputs[i].index];
        slot = slot.defined() ? (*ops::Invoke("add", {slot, gi[i]}))[0] : gi[i];
      }
    }
    for (const auto& [name, t] : b.grads) {
      const Tensor& gv = grad[g.Find(name)][0];
      if (!t.CopyFrom(gv).ok() || !t.WaitToRead().ok())
        state.SkipWithError("imperative step failed");
    }
  }
}

// --- Per-node cost: 1,000 tiny nodes, bound for inference.

constexpr int kTinyNodes = 1000;

// 0: host:0 (host functions on its streams); 1: cpu (the engine's workers).
engine::Context TinyContext(int64_t which) {
  return which == 0 ? *engine::Context::Device("host", 0) : engine::Context::Host();
}

// `width` chains of kTinyNodes / width nodes from x, alternating mul_scalar
// and tanh (values stay in (-1, 1)), each chain's end an output.
Graph TinyGraph(int width) {
  Graph g;
  const Entry x = g.Input("x");
  for (int c = 0; c < width; ++c) {
    Entry h = x;
    for (int i = 0; i < kTinyNodes / width; ++i) {
      h = i % 2 ? g.Op1("tanh", {h}) : g.Op1("mul_scalar", {h}, {{"scalar", "0.9"}});
    }
    g.AddOutput(h);
  }
  return g;
}

// range(0): TinyContext; range(1): floats per tensor; range(2): chains;
// range(3): bulk size.
void TinyGraphForward(benchmark::State& state) {
  const engine::Context ctx = TinyContext(state.range(0));
  const int64_t elems = state.range(1);
  const int width = static_cast<int>(state.range(2));
  std::vector<float> xv(elems, 0.5f);
  Tensor x = *Tensor::FromHost<float>(xv, {elems}, ctx, Engine());
  graph::BindOptions o;
  o.engine = Engine();
  o.context = ctx;
  o.bulk_size = static_cast<int>(state.range(3));
  auto e = graph::Executor::Bind(TinyGraph(width), {{"x", x}}, {}, o);
  if (!e.ok()) {
    state.SkipWithError(e.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    bool ok = (*e)->Forward(false).ok();
    for (const Tensor& t : (*e)->outputs()) ok &= t.WaitToRead().ok();
    if (!ok) state.SkipWithError("tiny graph failed");
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kTinyNodes,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

// The same kTinyNodes calls, prepared on cpu tensors and run one after the
// other on this thread (PreparedOp::Run, as a segment's function does):
// the kernels and OpRunner without the graph or the engine. range(0):
// floats per tensor.
void TinyDirect(benchmark::State& state) {
  const int64_t elems = state.range(0);
  std::vector<float> xv(elems, 0.5f);
  std::vector<Tensor> t{*Tensor::FromHost<float>(xv, {elems}, engine::Context::Host(), Engine())};
  for (int i = 0; i < 2; ++i)
    t.push_back(*Tensor::Empty({elems}, DType::kF32, engine::Context::Host(), Engine()));
  const ops::OpDef& tanh = ops::BuiltinOp("tanh");
  const ops::OpDef& mul = ops::BuiltinOp("mul_scalar");
  auto mul_params = *mul.params().Parse("mul_scalar", {{"scalar", "0.9"}});
  std::vector<ops::PreparedOp> calls;
  for (int i = 0; i < kTinyNodes; ++i) {
    const Tensor& in = t[i == 0 ? 0 : 1 + (i + 1) % 2];
    const Tensor& out = t[1 + i % 2];
    calls.push_back(i % 2 ? *ops::PreparedOp::Prepare(tanh, {in}, nullptr, {out})
                          : *ops::PreparedOp::Prepare(mul, {in}, mul_params, {out}));
  }
  for (const Tensor& x : t) (void)x.WaitToRead();
  const engine::RunContext rc{engine::Context::Host(), nullptr};
  for (auto _ : state) {
    for (const ops::PreparedOp& p : calls) {
      if (!p.Run(rc).ok()) state.SkipWithError("direct call failed");
    }
    benchmark::ClobberMemory();
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kTinyNodes,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

// The arithmetic alone: kTinyNodes loops over `elems` floats.
void TinyLoop(benchmark::State& state) {
  const int64_t elems = state.range(0);
  std::vector<float> a(elems, 0.5f), b(elems);
  for (auto _ : state) {
    for (int i = 0; i < kTinyNodes; i += 2) {
      for (int64_t k = 0; k < elems; ++k) b[k] = a[k] * 0.9f;
      for (int64_t k = 0; k < elems; ++k) a[k] = std::tanh(b[k]);
    }
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
}

void Summarize(const bench::Results& r, bench::Report& report) {
  auto get = [&](const std::string& name, const char* counter) {
    auto it = r.find(name);
    if (it == r.end()) return 0.0;
    if (counter == nullptr) return it->second.real_ns_per_iter;
    auto c = it->second.counters.find(counter);
    return c == it->second.counters.end() ? 0.0 : c->second;
  };
  for (const char* model : {"cnn", "resnet18"}) {
    const std::string name = absl::StrCat("Memory/", model, "/iterations:1");
    report.Figure(absl::StrCat("graph.memory.", model, ".planned_MiB"), get(name, "planned_MiB"));
    report.Figure(absl::StrCat("graph.memory.", model, ".naive_MiB"), get(name, "naive_MiB"));
    report.Figure(absl::StrCat("graph.memory.", model, ".planned_over_naive"), get(name, "ratio"));
    report.Figure(absl::StrCat("graph.memory.", model, ".inplace"), get(name, "inplace"));
    report.Figure(absl::StrCat("graph.memory.", model, ".addto"), get(name, "addto"));
  }
  const double chain1 = get("Chain/1/real_time", nullptr);
  const double step1 = get("CnnStep/1/real_time", nullptr);
  for (int bulk : {4, 15, 64}) {
    const double c = get(absl::StrCat("Chain/", bulk, "/real_time"), nullptr);
    const double s = get(absl::StrCat("CnnStep/", bulk, "/real_time"), nullptr);
    if (c > 0) report.Ratio(absl::StrCat("graph.bulk", bulk, ".chain200.vs_per_node"), chain1 / c);
    if (s > 0) report.Ratio(absl::StrCat("graph.bulk", bulk, ".cnn_step.vs_per_node"), step1 / s);
  }
  report.Figure("graph.chain200.per_node_us", chain1 / 1e3);
  report.Figure("graph.cnn_step.per_node_ms", step1 / 1e6);
  // Per node of the 1,000-node graphs (16 floats): host:0, cpu, direct.
  const double direct = get("TinyDirect/16/real_time", nullptr) / kTinyNodes / 1e3;
  const double loop = get("TinyLoop/16/real_time", nullptr) / kTinyNodes / 1e3;
  report.Figure("graph.per_node_us.direct", direct);
  report.Figure("graph.per_node_us.arithmetic", loop);
  for (const auto& [ctx, which] : {std::pair{"host0", 0}, std::pair{"cpu", 1}}) {
    for (const auto& [shape, width] : {std::pair{"chain", 1}, std::pair{"wide8", 8}}) {
      const double us =
          get(absl::StrCat("TinyGraphForward/", which, "/16/", width, "/15/real_time"), nullptr) /
          kTinyNodes / 1e3;
      const std::string suffix = width == 1 ? ctx : absl::StrCat(ctx, ".", shape);
      report.Figure(absl::StrCat("graph.per_node_us.", suffix), us);
      if (us > 0 && direct > 0)
        report.Ratio(absl::StrCat("graph.per_node.direct_vs_", suffix), direct / us);
    }
    report.Figure(absl::StrCat("graph.per_node_us.", ctx, ".one_segment"),
                  get(absl::StrCat("TinyGraphForward/", which, "/16/1/1000/real_time"), nullptr) /
                      kTinyNodes / 1e3);
  }
  const double imp = get("CnnStepImperative/real_time", nullptr);
  const double graph15 = get("CnnStep/15/real_time", nullptr);
  if (imp > 0 && graph15 > 0) report.Ratio("graph.cnn_step.vs_imperative", imp / graph15);
}

BENCHMARK_CAPTURE(Memory, cnn, false)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Memory, resnet18, true)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(Chain)->Arg(1)->Arg(4)->Arg(15)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(CnnStep)->Arg(1)->Arg(4)->Arg(15)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(CnnStep64)->Arg(15)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(CnnStepImperative)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(TinyGraphForward)
    ->Args({0, 1, 1, 15})
    ->Args({0, 16, 1, 15})
    ->Args({0, 16, 8, 15})
    ->Args({0, 16, 1, 1000})
    ->Args({1, 1, 1, 15})
    ->Args({1, 16, 1, 15})
    ->Args({1, 16, 8, 15})
    ->Args({1, 16, 1, 1000})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(TinyDirect)->Arg(1)->Arg(16)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(TinyLoop)->Arg(16)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  int rc = rill::bench::RunAndReport(argc, argv, rill::Summarize);
  rill::Engine()->Shutdown(false);
  return rc;
}
