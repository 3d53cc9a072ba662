#ifndef RILL_GRAPH_MEMORY_PLAN_H_
#define RILL_GRAPH_MEMORY_PLAN_H_

// Memory planning (nnvm's PlanMemory, in bytes of the real element type):
// reference counts per entry over the execution order; an output written
// over an input's block when the op allows it (OpDef::inplace), the input's
// block has no later reader and the byte sizes are equal; blocks released
// to a per-context pool and reused best-fit; gradient sums (`_grad_sum`)
// written by their producers with kAddTo into one block.

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "rill/graph/executor.h"
#include "rill/graph/graph.h"
#include "rill/graph/passes.h"
#include "rill/ops/op.h"

namespace rill::graph {

struct PlanInput {
  const Graph* graph = nullptr;
  // Execution order (every node run, variables included).
  const std::vector<int>* order = nullptr;
  const EntryTypes* types = nullptr;
  // Per node: an index of its context (blocks never cross contexts).
  const std::vector<int>* context = nullptr;
  // Entries bound to caller tensors (variables, gradient outputs).
  absl::flat_hash_set<Entry> external;
  // Entries that must survive the whole run (graph outputs).
  absl::flat_hash_set<Entry> pinned;
  // `_grad_sum` nodes whose result is added to (kAdd gradient request).
  absl::flat_hash_set<int> sum_adds;
  bool enable = true;  // Off: one block per entry, no in-place, no fused sums.
};

struct MemoryPlan {
  static constexpr int kExternal = -1;
  // Per [node][output]: the block, or kExternal.
  std::vector<std::vector<int>> block;
  // Per [node][output]: the write request.
  std::vector<std::vector<ops::OpReqType>> req;
  // Per `_grad_sum` node, per input: written into the sum by its producer
  // (so the sum node does nothing for it); else the executor adds it.
  std::vector<std::vector<char>> fused;
  // Per `_grad_sum` node, per input not fused: kWriteTo or kAddTo.
  std::vector<std::vector<ops::OpReqType>> sum_req;
  struct Block {
    uint64_t bytes = 0;
    int context = 0;
  };
  std::vector<Block> blocks;
  // Per position in the order: blocks whose last use is that node.
  std::vector<std::vector<int>> released_after;
  MemoryReport report;
};

MemoryPlan PlanMemory(const PlanInput& in);

}  // namespace rill::graph

#endif  // RILL_GRAPH_MEMORY_PLAN_H_
