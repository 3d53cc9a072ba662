// One small call into each layer library that is linked, so its archive
// and the outside libraries it needs (zlib, protobuf and ONNX, cairo) are
// really linked and run in an outside project.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rill/base/status_macros.h"

#if defined(RILL_HAVE_ENGINE)
#include "rill/engine/engine.h"
#endif
#if defined(RILL_HAVE_TENSOR)
#include "rill/tensor/dtype.h"
#endif
#if defined(RILL_HAVE_OPS)
#include "rill/ops/op_registry.h"
#endif
#if defined(RILL_HAVE_GRAPH)
#include "rill/graph/graph.h"
#endif
#if defined(RILL_HAVE_GRAPH_ONNX)
#include "rill/graph/onnx/onnx_import.h"
#endif
#if defined(RILL_HAVE_IO)
#include "rill/io/idx_reader.h"
#endif
#if defined(RILL_HAVE_KVSTORE)
#include "rill/kvstore/kvstore.h"
#endif
#if defined(RILL_HAVE_TRAIN)
#include "rill/train/convnet.h"
#include "rill/train/report.h"
#endif

namespace rill_consumer_all {

absl::Status TouchLayers() {
#if defined(RILL_HAVE_ENGINE)
  {
    RILL_ASSIGN_OR_RETURN(auto engine, rill::engine::Engine::Create(rill::engine::EngineOptions{}));
    rill::engine::VarHandle v = engine->NewVariable();
    int value = 0;
    RILL_RETURN_IF_ERROR(engine->PushSync(
        [&](rill::engine::RunContext) {
          value = 42;
          return absl::OkStatus();
        },
        rill::engine::Context::Host(), {}, {v}));
    RILL_RETURN_IF_ERROR(engine->WaitForVar(v));
    if (value != 42) return absl::InternalError("engine: the pushed function did not run");
    std::printf("rill_consumer_all: engine ran a function\n");
  }
#endif
#if defined(RILL_HAVE_TENSOR)
  RILL_ASSIGN_OR_RETURN(rill::DType f32, rill::ParseDType("f32"));
  if (rill::DTypeSize(f32) != 4) return absl::InternalError("tensor: f32 is not 4 bytes");
#endif
#if defined(RILL_HAVE_OPS)
  const size_t ops = rill::ops::OpRegistry::Global().OpNames().size();
  if (ops == 0) return absl::InternalError("ops: no built-in op registered");
  std::printf("rill_consumer_all: %zu ops registered\n", ops);
#endif
#if defined(RILL_HAVE_GRAPH)
  {
    rill::graph::Graph g;
    g.AddOutput(g.Input("x", rill::Shape{2, 3}), "y");
  }
#endif
#if defined(RILL_HAVE_GRAPH_ONNX)
  // Not a model: the importer must say so (protobuf and ONNX are linked).
  if (rill::graph::ImportOnnxBytes("not an onnx model").ok()) {
    return absl::InternalError("graph_onnx: garbage bytes imported");
  }
#endif
#if defined(RILL_HAVE_IO)
  if (rill::io::ReadIdx("/nonexistent/rill-consumer-all.idx.gz").ok()) {
    return absl::InternalError("io: a missing file was read");
  }
#endif
#if defined(RILL_HAVE_KVSTORE)
  if (rill::kvstore::KVStore::Create("no_such_store").ok()) {
    return absl::InternalError("kvstore: an unknown store type was created");
  }
#endif
#if defined(RILL_HAVE_TRAIN)
  {
    RILL_ASSIGN_OR_RETURN(auto params, rill::train::ConvNetParams(rill::train::ConvNetOptions{}));
    if (params.empty()) return absl::InternalError("train: the convnet has no parameters");
    std::vector<rill::train::EpochRecord> epochs(2);
    epochs[0] = {1, 0.9, 0.7, 0.8, 0.75, 1.0, 100.0, false};
    epochs[1] = {2, 0.6, 0.8, 0.6, 0.80, 1.0, 100.0, false};
    const std::string png =
        (std::filesystem::temp_directory_path() / "rill_consumer_all_curve.png").string();
    RILL_RETURN_IF_ERROR(rill::train::WriteCurvePng(png, epochs, "rill_consumer_all"));  // cairo
    std::filesystem::remove(png);
  }
#endif
  return absl::OkStatus();
}

}  // namespace rill_consumer_all
