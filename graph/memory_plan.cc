#include "rill/graph/memory_plan.h"

#include <map>

#include "absl/container/flat_hash_map.h"
#include "rill/graph/autodiff.h"

namespace rill::graph {
namespace {

constexpr int kUnplanned = -2;
// A free block serves a request within this factor of its size (nnvm's
// match range); a smaller free block within it is grown.
constexpr uint64_t kMatchRange = 16;

uint64_t BytesOf(const EntryType& t) {
  return t.known() ? static_cast<uint64_t>(t.shape->NumElements()) * DTypeSize(*t.dtype) : 0;
}

}  // namespace

MemoryPlan PlanMemory(const PlanInput& in) {
  const Graph& g = *in.graph;
  const std::vector<int>& order = *in.order;
  const EntryTypes& types = *in.types;
  const std::vector<int>& ctx = *in.context;
  const int n = g.num_nodes();
  MemoryPlan p;
  p.block.resize(n);
  p.req.resize(n);
  p.fused.resize(n);
  p.sum_req.resize(n);
  p.released_after.resize(order.size());
  std::vector<std::vector<int>> refs(n);
  for (int i = 0; i < n; ++i) {
    p.block[i].assign(g.node(i).num_outputs(), kUnplanned);
    p.req[i].assign(g.node(i).num_outputs(), ops::OpReqType::kWriteTo);
    refs[i].assign(g.node(i).num_outputs(), 0);
  }
  for (int id : order) {
    for (const Entry& e : g.node(id).inputs) ++refs[e.node][e.index];
  }
  for (const Entry& e : in.pinned) ++refs[e.node][e.index];
  auto is_op = [&](int id) {
    const Node& nd = g.node(id);
    return !nd.is_variable() && nd.op != &GradSumOp() && nd.op != &CopyOp();
  };

  // Which gradient contributions their producer writes straight into the
  // sum: produced by an op for this sum only, on its context, one per
  // producer (a kernel must not get two outputs in one block).
  absl::flat_hash_map<Entry, int> fused_into;
  for (int id : order) {
    const Node& nd = g.node(id);
    if (nd.op != &GradSumOp()) continue;
    p.fused[id].assign(nd.inputs.size(), 0);
    if (!in.enable) continue;
    absl::flat_hash_set<int> producers;
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      const Entry& e = nd.inputs[k];
      if (!is_op(e.node) || refs[e.node][e.index] != 1 || in.pinned.contains(e) ||
          in.external.contains(e) || ctx[e.node] != ctx[id] || !producers.insert(e.node).second) {
        continue;
      }
      p.fused[id][k] = 1;
      fused_into[e] = id;
    }
  }

  std::vector<int64_t> live;  // Per block: remaining reads of the entries in it.
  std::vector<char> is_free;
  std::vector<std::multimap<uint64_t, int>> pool;
  auto alloc = [&](uint64_t bytes, int c) {
    if (in.enable) {
      if (static_cast<int>(pool.size()) <= c) pool.resize(c + 1);
      auto& free = pool[c];
      auto it = free.lower_bound(bytes);
      if (it != free.end() && it->first <= bytes * kMatchRange) {
        const int b = it->second;
        free.erase(it);
        is_free[b] = 0;
        return b;
      }
      if (it != free.begin()) {
        auto smaller = std::prev(it);
        if (smaller->first * kMatchRange >= bytes) {
          const int b = smaller->second;
          free.erase(smaller);
          p.blocks[b].bytes = bytes;
          is_free[b] = 0;
          return b;
        }
      }
    }
    p.blocks.push_back({bytes, c});
    live.push_back(0);
    is_free.push_back(0);
    return static_cast<int>(p.blocks.size()) - 1;
  };
  auto release = [&](int b, size_t pos) {
    if (b < 0 || live[b] != 0 || is_free[b]) return;
    is_free[b] = 1;
    p.released_after[pos].push_back(b);
    if (in.enable) {
      if (static_cast<int>(pool.size()) <= p.blocks[b].context)
        pool.resize(p.blocks[b].context + 1);
      pool[p.blocks[b].context].insert({p.blocks[b].bytes, b});
    }
  };

  absl::flat_hash_set<int> sum_started;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const int id = order[pos];
    const Node& nd = g.node(id);
    if (nd.is_variable()) {
      p.block[id][0] = MemoryPlan::kExternal;
      p.report.external_bytes += BytesOf(types[id][0]);
      continue;
    }
    absl::flat_hash_set<int> claimed;
    for (int o = 0; o < nd.num_outputs(); ++o) {
      const Entry e{id, o};
      const uint64_t bytes = BytesOf(types[id][o]);
      const int r = refs[id][o];
      if (in.external.contains(e)) {
        p.block[id][o] = MemoryPlan::kExternal;
        p.report.external_bytes += bytes;
        continue;
      }
      p.report.entries += 1;
      p.report.naive_bytes += bytes;
      if (nd.op == &GradSumOp()) {  // Its block may exist already (fused parts).
        if (p.block[id][0] == kUnplanned) p.block[id][0] = alloc(bytes, ctx[id]);
        live[p.block[id][0]] += r;
        continue;
      }
      auto f = fused_into.find(e);
      if (f != fused_into.end()) {
        const int s = f->second;
        const bool add = sum_started.contains(s) || in.sum_adds.contains(s);
        p.req[id][o] = add ? ops::OpReqType::kAddTo : ops::OpReqType::kWriteTo;
        p.report.addto += add;
        sum_started.insert(s);
        if (in.external.contains(Entry{s, 0})) {
          p.block[id][o] = MemoryPlan::kExternal;
          continue;
        }
        if (p.block[s][0] == kUnplanned) p.block[s][0] = alloc(bytes, ctx[s]);
        p.block[id][o] = p.block[s][0];
        live[p.block[id][o]] += r;
        continue;
      }
      if (in.enable) {
        for (const auto& [i, oo] : nd.op->inplace()) {
          if (oo != o || i >= static_cast<int>(nd.inputs.size())) continue;
          const Entry& ie = nd.inputs[i];
          const int b = p.block[ie.node][ie.index];
          if (b < 0 || live[b] != 1 || BytesOf(types[ie.node][ie.index]) != bytes ||
              p.blocks[b].context != ctx[id] || claimed.contains(b)) {
            continue;
          }
          p.block[id][o] = b;
          p.req[id][o] = ops::OpReqType::kWriteInplace;
          claimed.insert(b);
          p.report.inplace += 1;
          break;
        }
      }
      if (p.block[id][o] == kUnplanned) p.block[id][o] = alloc(bytes, ctx[id]);
      live[p.block[id][o]] += r;
    }
    if (nd.op == &GradSumOp()) {
      bool started = sum_started.contains(id) || in.sum_adds.contains(id);
      p.sum_req[id].assign(nd.inputs.size(), ops::OpReqType::kNullOp);
      for (size_t k = 0; k < nd.inputs.size(); ++k) {
        if (p.fused[id][k]) continue;
        p.sum_req[id][k] = started ? ops::OpReqType::kAddTo : ops::OpReqType::kWriteTo;
        p.report.addto += started;
        started = true;
      }
    }
    for (const Entry& e : nd.inputs) {
      const int b = p.block[e.node][e.index];
      if (b < 0) continue;
      --live[b];
      release(b, pos);
    }
    for (int o = 0; o < nd.num_outputs(); ++o) release(p.block[id][o], pos);
  }
  p.report.blocks = static_cast<int64_t>(p.blocks.size());
  for (const auto& b : p.blocks) p.report.planned_bytes += b.bytes;
  return p;
}

}  // namespace rill::graph
