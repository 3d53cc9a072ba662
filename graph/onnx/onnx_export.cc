#include "rill/graph/onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_export_ops.h"
#include "rill/graph/passes.h"

namespace rill::graph {
namespace {

// The IR version that first carries `opset` (7: opsets 13-14, 8: 15-17).
int64_t IrVersionFor(int64_t opset) { return opset >= 15 ? 8 : 7; }

void SetValueInfo(onnx::ValueInfoProto* v, const std::string& name, const EntryType& t,
                  bool dynamic_batch) {
  v->set_name(name);
  onnx::TypeProto::Tensor* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(OnnxTypeOf(*t.dtype));
  onnx::TensorShapeProto* shape = tt->mutable_shape();
  for (int i = 0; i < t.shape->rank(); ++i) {
    onnx::TensorShapeProto::Dimension* d = shape->add_dim();
    if (dynamic_batch && i == 0) {
      d->set_dim_param("N");
    } else {
      d->set_dim_value((*t.shape)[i]);
    }
  }
}

// Unimplemented for the first node, in order, whose op has no exporter.
absl::Status CheckMappings(const Graph& g, const std::vector<int>& order) {
  for (int id : order) {
    const Node& n = g.node(id);
    if (!n.is_variable() && FindExporter(n.op->name()) == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat(g.Describe(id), " has no ONNX mapping (op '", n.op->name(), "')"));
    }
  }
  return absl::OkStatus();
}

// InvalidArgument when `name` (from `what`) is no variable of `g`.
absl::Status CheckVariable(const Graph& g, const std::string& name, const char* what) {
  const int id = g.Find(name);
  if (id >= 0 && g.node(id).is_variable()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " names '", name, "', which is ",
                                                 id >= 0 ? g.Describe(id) : "no node",
                                                 ", not a variable of the graph"));
}

// The type of every variable in `order`: an initializer's tensor's, else the
// shape from input_shapes or the declaration and the declared type (float32
// by default). InvalidArgument naming a variable with no shape.
absl::StatusOr<absl::flat_hash_map<std::string, EntryType>> VariableTypes(
    const Graph& g, const std::vector<int>& order,
    const absl::flat_hash_map<std::string, Tensor>& initializers,
    const OnnxExportOptions& options) {
  for (const auto& [name, t] : initializers) {
    RILL_RETURN_IF_ERROR(CheckVariable(g, name, "initializers"));
    if (!t.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("initializer '", name, "' is an undefined tensor"));
    }
  }
  for (const auto& [name, s] : options.input_shapes) {
    RILL_RETURN_IF_ERROR(CheckVariable(g, name, "input_shapes"));
    if (initializers.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is in both initializers and input_shapes"));
    }
  }
  absl::flat_hash_map<std::string, EntryType> known;
  for (int id : order) {
    const Node& n = g.node(id);
    if (!n.is_variable()) continue;
    EntryType t;
    if (auto it = initializers.find(n.name); it != initializers.end()) {
      t.shape = it->second.shape();
      t.dtype = it->second.dtype();
    } else {
      auto s = options.input_shapes.find(n.name);
      if (s != options.input_shapes.end()) {
        t.shape = s->second;
      } else if (n.shape) {
        t.shape = *n.shape;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            g.Describe(id), " (", VarKindName(n.kind),
            ") has no shape: it is not in initializers, "
            "not in OnnxExportOptions::input_shapes, and the graph does not declare one"));
      }
      t.dtype = n.dtype.value_or(DType::kF32);
    }
    known[n.name] = std::move(t);
  }
  return known;
}

// Names the ONNX value of every entry a node or a graph output reads:
// variables keep their names, an op's first graph output takes the output's
// name, other entries "node" or "node:i". InvalidArgument for two outputs of
// one name, or an output named as a variable.
absl::Status NameValues(const Graph& g, const std::vector<int>& order, ExportState& s) {
  absl::flat_hash_set<Entry> used(g.outputs().begin(), g.outputs().end());
  for (int id : order) {
    for (const Entry& e : g.node(id).inputs) used.insert(e);
  }
  for (int id : order) {
    const Node& n = g.node(id);
    if (!n.is_variable()) continue;
    s.value_names.insert(n.name);
    s.values[Entry{id, 0}] = n.name;
  }
  absl::flat_hash_map<Entry, std::string> output_name;
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const std::string& o = g.output_names()[k];
    if (s.value_names.contains(o)) {
      const int id = g.Find(o);
      if (id >= 0 && g.node(id).is_variable()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph output ", k, " is named '", o, "', as a variable; ONNX names each value once"));
      }
      return absl::InvalidArgumentError(absl::StrCat("two graph outputs are named '", o, "'"));
    }
    s.value_names.insert(o);
    const Entry e = g.outputs()[k];
    if (!g.node(e.node).is_variable()) output_name.emplace(e, o);
  }
  for (int id : order) {
    const Node& n = g.node(id);
    if (n.is_variable()) continue;
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Entry e{id, i};
      if (!used.contains(e)) continue;
      auto it = output_name.find(e);
      s.values[e] = it != output_name.end()
                        ? it->second
                        : s.FreshValue(i == 0 ? n.name : absl::StrCat(n.name, ":", i));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<onnx::ModelProto> Export(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& initializers,
    const OnnxExportOptions& options) {
  RILL_RETURN_IF_ERROR(g.status());
  if (options.opset < 13 || options.opset > 17) {
    return absl::UnimplementedError(
        absl::StrCat("opset ", options.opset, " (Rill exports opsets 13 to 17)"));
  }
  if (g.outputs().empty()) return absl::InvalidArgumentError("the graph has no outputs");
  RILL_ASSIGN_OR_RETURN(std::vector<int> order, TopoOrder(g));
  RILL_RETURN_IF_ERROR(CheckMappings(g, order));
  RILL_ASSIGN_OR_RETURN(auto known, VariableTypes(g, order, initializers, options));
  onnx::ModelProto model;
  model.set_ir_version(IrVersionFor(options.opset));
  model.set_producer_name(options.producer_name);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  ExportState s;
  s.graph = &g;
  RILL_ASSIGN_OR_RETURN(s.types, InferTypes(g, order, known));
  s.proto = model.mutable_graph();
  s.proto->set_name(options.graph_name);
  RILL_RETURN_IF_ERROR(NameValues(g, order, s));
  // Variables in creation order: weights, then graph inputs.
  std::vector<int> vars;
  for (int id : order) {
    if (g.node(id).is_variable()) vars.push_back(id);
  }
  std::sort(vars.begin(), vars.end());
  for (int id : vars) {
    const Node& n = g.node(id);
    if (auto it = initializers.find(n.name); it != initializers.end()) {
      const Tensor& t = it->second;
      onnx::TensorProto* p = s.proto->add_initializer();
      p->set_name(n.name);
      p->set_data_type(OnnxTypeOf(t.dtype()));
      for (int64_t d : t.shape().span()) p->add_dims(d);
      std::string* bytes = p->mutable_raw_data();
      bytes->resize(t.ByteSize());
      RILL_RETURN_IF_ERROR(Annotate(t.ToHostBytes(bytes->data(), bytes->size()),
                                    absl::StrCat("initializer '", n.name, "'")));
    } else {
      SetValueInfo(s.proto->add_input(), n.name, s.types[id][0], options.dynamic_batch);
    }
  }
  for (int id : order) {
    if (g.node(id).is_variable()) continue;
    NodeExport x(s, id);
    RILL_RETURN_IF_ERROR(Annotate(FindExporter(g.node(id).op->name())(x), g.Describe(id)));
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const Entry e = g.outputs()[k];
    const std::string& o = g.output_names()[k];
    if (s.values.at(e) != o) {  // A second name for an entry, or a variable: a copy.
      onnx::NodeProto* n = s.proto->add_node();
      n->set_name(s.FreshNode(o));
      n->set_op_type("Identity");
      n->add_input(s.values.at(e));
      n->add_output(o);
    }
    SetValueInfo(s.proto->add_output(), o, s.types[e.node][e.index], options.dynamic_batch);
  }
  return model;
}

}  // namespace

absl::StatusOr<std::string> ExportOnnxBytes(
    const Graph& g, const absl::flat_hash_map<std::string, Tensor>& initializers,
    const OnnxExportOptions& options) {
  RILL_ASSIGN_OR_RETURN(onnx::ModelProto model, Export(g, initializers, options));
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    return absl::UnimplementedError(
        absl::StrCat("the model is ", model.ByteSizeLong(),
                     " bytes, over protobuf's 2 GiB (external data is not supported)"));
  }
  // The checker and ONNX's strict shape inference with type checks (what
  // Python's check_model(full_check=True) runs): a failure is our bug. The
  // inferred intermediate shapes stay in the model (value_info).
  try {
    onnx::checker::check_model(model);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(/*check_type_val=*/true, /*strict_mode_val=*/1));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("the exported model fails the ONNX checker: ", e.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return absl::InternalError("serializing the ONNX model failed");
  return bytes;
}

absl::Status ExportOnnxFile(const Graph& g,
                            const absl::flat_hash_map<std::string, Tensor>& initializers,
                            const std::string& path, const OnnxExportOptions& options) {
  RILL_ASSIGN_OR_RETURN(std::string bytes, ExportOnnxBytes(g, initializers, options));
  const std::string tmp = path + ".tmp";
  const std::string what = absl::StrCat("cannot write ONNX file '", path, "'");
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    return absl::ErrnoToStatus(errno, absl::StrCat(what, " (creating '", tmp, "')"));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 &&
            ::fsync(::fileno(f)) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, what);
  }
  return absl::OkStatus();
}

}  // namespace rill::graph
