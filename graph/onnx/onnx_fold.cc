// Constant folding at import: a node whose inputs are all known at import
// time (shape arithmetic such as Shape -> Gather -> Unsqueeze -> Concat,
// Range, computed ConstantOfShape shapes) is converted by its own converter
// into a scratch graph, which runs once on the CPU; its outputs become
// constants. One mechanism for every op type with a converter.

#include <onnx/onnx_pb.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_lowering.h"

namespace rill::graph {
namespace {

// What a folded node may read and make: bounded so that a hostile model
// cannot make the importer allocate without limit.
constexpr int64_t kMaxFoldBytes = int64_t{64} << 20;

}  // namespace

bool CanFold(const ImportState& s, const onnx::NodeProto& n) {
  int present = 0;
  int64_t bytes = 0;
  for (const std::string& in : n.input()) {
    if (in.empty()) continue;
    auto it = s.values.find(in);
    if (it == s.values.end() || !it->second.constant) return false;
    const ValueState& v = it->second;
    // Float initializers are weights: they stay parameters (trainable).
    if (v.initializer && IsFloat(v.constant->dtype)) return false;
    bytes += static_cast<int64_t>(v.constant->bytes.size());
    ++present;
  }
  if (present == 0 || bytes > kMaxFoldBytes) return false;
  for (const std::string& out : n.output()) {
    auto it = s.values.find(out);
    if (it == s.values.end() || !it->second.dims) continue;
    int64_t elements = 1;
    for (int64_t d : *it->second.dims) {
      if (d < 0) break;
      if (d > 0 && elements > kMaxFoldBytes / d) return false;
      elements *= d;
    }
    if (elements > kMaxFoldBytes / 8) return false;
  }
  return true;
}

absl::StatusOr<bool> FoldNode(ImportState& s, const onnx::NodeProto& n, int64_t opset,
                              const Converter& c) {
  ImportState t;
  t.context = engine::Context::Cpu();
  t.engine = s.engine;
  t.budget = s.budget;
  for (const std::string& in : n.input()) {
    if (in.empty()) continue;
    ValueState v = s.values.at(in);
    v.entry = Entry{};
    t.values[in] = std::move(v);
  }
  for (const std::string& out : n.output()) {
    if (out.empty()) continue;
    ValueState v;
    if (auto it = s.values.find(out); it != s.values.end()) {
      v.dims = it->second.dims;
      v.dtype = it->second.dtype;
    }
    t.values[out] = std::move(v);
  }
  NodeLowering l(t, n, opset);
  RILL_RETURN_IF_ERROR(c.fn(l));
  RILL_RETURN_IF_ERROR(t.graph.status());
  std::vector<int> computed;
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    const ValueState& v = t.values[n.output(i)];
    if (v.constant) continue;
    if (!v.entry.valid()) continue;  // The importer reports the missing output.
    Entry e = v.entry;
    if (t.graph.node(e.node).is_variable()) {
      // An input passed through (Identity): its constant is the output.
      t.values[n.output(i)].constant = t.values[t.graph.node(e.node).name].constant;
      continue;
    }
    t.graph.AddOutput(e, n.output(i));
    computed.push_back(i);
  }
  RILL_RETURN_IF_ERROR(t.graph.status());
  // Results of unbounded size (a Tile or Expand of a computed shape) are
  // not made here: the node is converted as usual.
  RILL_RETURN_IF_ERROR(t.InferNew());
  for (int i = 0; i < t.graph.num_nodes(); ++i) {
    for (int o = 0; o < t.graph.node(i).num_outputs(); ++o) {
      const EntryType* et = t.TypeOf(Entry{i, o});
      if (et == nullptr) return false;
      const int64_t bytes = et->shape->NumElements() * DTypeSize(*et->dtype);
      if (bytes < 0 || bytes > kMaxFoldBytes) return false;
    }
  }
  if (!computed.empty()) {
    BindOptions o;
    o.context = t.context;
    o.engine = t.engine;
    RILL_ASSIGN_OR_RETURN(auto exec, Executor::Bind(t.graph, t.tensors, {}, o));
    RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
    for (size_t k = 0; k < computed.size(); ++k) {
      const Tensor& y = exec->outputs()[k];
      OnnxHostTensor h;
      h.dtype = y.dtype();
      h.shape = y.shape();
      h.bytes.resize(y.ByteSize());
      RILL_RETURN_IF_ERROR(y.ToHostBytes(h.bytes.data(), h.bytes.size()));
      t.values[n.output(computed[k])].constant = std::move(h);
    }
  }
  for (const std::string& out : n.output()) {
    if (out.empty()) continue;
    std::optional<OnnxHostTensor>& h = t.values[out].constant;
    if (!h) continue;
    ValueState& v = s.values[out];
    v.dims = std::vector<int64_t>(h->shape.span().begin(), h->shape.span().end());
    v.dtype = h->dtype;
    v.constant = std::move(h);
  }
  return true;
}

}  // namespace rill::graph
