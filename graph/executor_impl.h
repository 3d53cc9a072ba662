#ifndef RILL_GRAPH_EXECUTOR_IMPL_H_
#define RILL_GRAPH_EXECUTOR_IMPL_H_

// rill:internal -- not installed: the executor's state, shared by
// executor_build.cc (binding: placement, memory plan, prepared calls) and
// executor.cc (running: steps, engine pushes, canary checks).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "rill/engine/engine.h"
#include "rill/graph/executor.h"
#include "rill/graph/graph.h"
#include "rill/graph/memory_plan.h"
#include "rill/ops/prepared.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {

struct Step;

// A step's engine function, built once per pass kind (inference [0],
// training [1]) so that a push copies nothing: the vars it reads and
// writes, deduplicated as the engine would (a var both read and written is
// a write), and what the function's body needs. The body captures only a
// pointer to this (an AnyInvocable keeps that inline: no allocation).
struct StepRun {
  const Executor::Impl* impl = nullptr;
  const Step* step = nullptr;
  bool is_train = false;
  // On a device of the CPU context's platform (host:0): the function
  // enqueues one host callback that runs the nodes inline, as the CPU
  // context does on a worker, instead of one stream operation per node.
  bool one_callback = false;
  std::vector<engine::VarHandle> reads, writes;
};

// One engine function: consecutive op nodes on one context, or one copy.
struct Step {
  bool copy = false;
  int context = 0;
  std::vector<int> positions;  // Into Impl::order.
  std::string name;
  StepRun run[2];  // Made by Impl::PrepareSteps; unused for a copy.
};

struct Executor::Impl {
  ~Impl();
  Graph user_graph;  // As bound, for Reshape.
  absl::flat_hash_map<std::string, Tensor> user_args;
  Graph g;
  BindOptions opt;
  engine::Engine* eng = nullptr;
  absl::flat_hash_map<std::string, Tensor> args, grads;
  std::vector<engine::Context> contexts;
  // Per context: a device whose kernels are the CPU context's (the same
  // executor's platform), so a segment may run inline on its stream thread.
  std::vector<bool> runs_host_kernels;
  std::vector<int> node_ctx;
  EntryTypes types;
  std::vector<int> order;     // Forward nodes, then backward nodes.
  size_t num_forward = 0;     // Positions [0, num_forward) are the forward pass.
  std::vector<int> position;  // Per node: its index in order, or -1.
  std::vector<Entry> outputs;
  std::vector<Entry> head_grads;
  std::vector<Tensor> head_tensors;
  bool heads_are_ones = false;
  // The `_grad_sum` node of each requested gradient, and the caller's tensor.
  absl::flat_hash_map<int, Tensor> var_grad_sums;
  MemoryPlan plan;
  std::vector<Tensor> blocks;
  std::vector<std::vector<Tensor>> tensors;  // [node][output]
  // Per node: the prepared calls (an op node: one; a `_grad_sum`: one
  // identity per part not fused), for training [1] and inference [0].
  std::vector<std::vector<ops::PreparedOp>> prepared[2];
  std::vector<Step> forward_steps, backward_steps;
  bool trained_forward = false;
  // Canary mode: per block, the entry it holds (node * 256 + output), -1
  // when released.
  std::unique_ptr<std::atomic<int64_t>[]> owner;

  int CtxIndex(const engine::Context& c) {
    for (size_t i = 0; i < contexts.size(); ++i) {
      if (contexts[i] == c) return static_cast<int>(i);
    }
    contexts.push_back(c);
    return static_cast<int>(contexts.size()) - 1;
  }
  static int64_t Code(const Entry& e) { return static_cast<int64_t>(e.node) * 256 + e.index; }
  // The entry whose storage `e` is: a fused gradient part is its sum.
  Entry Home(const Entry& e) const {
    auto it = fused_home.find(e);
    return it == fused_home.end() ? e : it->second;
  }
  absl::flat_hash_map<Entry, Entry> fused_home;

  absl::Status Build(const Graph& fwd, const absl::flat_hash_map<std::string, Tensor>& args_in,
                     const absl::flat_hash_map<std::string, Tensor>& grads_in);
  absl::Status Allocate();
  // Nodes without a kernel on their device go to its platform's fallback.
  absl::Status PlaceOnFallbacks();
  // The fallback context index for a gradient sum into an array on context
  // `c`, when `c` cannot sum (no identity kernel) and has a fallback.
  absl::StatusOr<std::optional<int>> GradSumFallback(int c);
  absl::Status Prepare(bool is_train);
  std::vector<Step> MakeSteps(size_t begin, size_t end) const;
  // Fills each step's run[is_train] from prepared[is_train] (after Prepare).
  void PrepareSteps(std::vector<Step>& steps, bool is_train) const;
  absl::Status Push(const std::vector<Step>& steps, bool is_train);
  absl::Status RunNode(int pos, bool is_train, const engine::RunContext& rc) const;
  // A step's function: its nodes in order, or (one_callback) one host
  // callback on rc.stream running them inline.
  absl::Status RunStep(const StepRun& r, const engine::RunContext& rc) const;
  absl::Status PushCopy(int pos) const;
  // Canary mode: the blocks a node reads still hold its inputs; after it,
  // its outputs own their blocks and the blocks it released are filled.
  absl::Status CheckInputs(int pos) const;
  // (Blocks of `context` only; the outputs' tags too when `outputs`.)
  absl::Status AfterNode(int pos, const engine::RunContext& rc, int context, bool outputs) const;
  std::string EntryName(const Entry& e) const {
    const Node& n = g.node(e.node);
    return n.num_outputs() > 1 ? absl::StrCat(n.name, ":", e.index) : n.name;
  }
};

}  // namespace rill::graph

#endif  // RILL_GRAPH_EXECUTOR_IMPL_H_
