// A libFuzzer target over the ONNX importer: each input is the bytes of an
// ONNX model, handed to graph::ImportOnnxBytes as a user's file would be.
// The import may fail; it must not crash, abort, hang or touch memory it
// does not own (AddressSanitizer and UndefinedBehaviorSanitizer watch), also
// inside libonnx's checker and shape inference, which see the model only
// after Rill has validated it. A small model that imports is then bound on
// the host with zero-filled inputs, which runs Rill's shape inference and
// memory planning over it. Seeds: tests/fuzz/corpus_onnx (tests/fuzz/README.md).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "rill/base/untrusted_file.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/tensor/tensor.h"

namespace rill::graph {
namespace {

// Bounds on what a model may make the bind step allocate: the fuzzer looks
// for crashes, not for models that are merely big.
constexpr int kMaxNodesToBind = 64;
constexpr int64_t kMaxInputElements = 1 << 12;
constexpr uint64_t kMaxInitializerBytes = 1 << 20;

// Binds `m` on the host when it is small: every input has a static shape of
// at most kMaxInputElements elements and the graph at most kMaxNodesToBind
// nodes. Errors are fine.
void BindSmall(const OnnxModel& m) {
  if (m.graph.num_nodes() > kMaxNodesToBind) return;
  uint64_t initializer_bytes = 0;
  for (const auto& [name, t] : m.initializers) initializer_bytes += t.ByteSize();
  if (initializer_bytes > kMaxInitializerBytes) return;
  absl::flat_hash_map<std::string, Tensor> args = m.initializers;
  for (int id = 0; id < m.graph.num_nodes(); ++id) {
    const Node& n = m.graph.node(id);
    if (!n.is_variable() || n.kind != VarKind::kInput) continue;
    if (!n.shape || !n.dtype || !n.shape->Validate(DTypeSize(*n.dtype)).ok() ||
        n.shape->NumElements() > kMaxInputElements) {
      return;
    }
    const std::string zeros(n.shape->NumElements() * DTypeSize(*n.dtype), '\0');
    absl::StatusOr<Tensor> t = Tensor::FromHostBytes(zeros.data(), zeros.size(), *n.shape, *n.dtype,
                                                     engine::Context::Host());
    if (!t.ok()) return;
    args[n.name] = *std::move(t);
  }
  BindOptions options;
  options.context = engine::Context::Host();
  (void)Executor::Bind(m.graph, args, {}, options).status();
}

}  // namespace
}  // namespace rill::graph

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A model may claim anything; what it makes Rill allocate is capped well
  // below the fuzzer's RSS limit.
  static const bool capped = [] {
    rill::SetFileAllocationCap(uint64_t{64} << 20);
    return true;
  }();
  (void)capped;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rill::graph::OnnxModel> m = rill::graph::ImportOnnxBytes(bytes, {}, "fuzz input");
  if (m.ok()) rill::graph::BindSmall(*m);
  return 0;
}
