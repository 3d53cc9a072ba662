#include "rill/graph/onnx/onnx_case_runner.h"

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/graph/testing/graph_testing.h"

namespace rill::graph::onnx_testing {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool PythonHasOnnx() {
  return std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
}

bool GenerateOnce(const fs::path& out, const std::string& command, std::string* why) {
  if (fs::exists(out)) return true;
  if (!PythonHasOnnx()) {
    *why = "/usr/bin/python3 cannot import onnx (install python3-onnx)";
    return false;
  }
  const fs::path tmp = absl::StrCat(out.string(), ".tmp.", ::getpid());
  const std::string cmd =
      absl::StrCat(command, " '", tmp.string(), "' >'", tmp.string(), ".log' 2>&1");
  if (std::system(cmd.c_str()) != 0) {
    *why = absl::StrCat("generating the test data failed: ", cmd);
    return false;
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) fs::remove_all(tmp, ec);  // Another process was first.
  fs::remove(tmp.string() + ".log", ec);
  return true;
}

bool ValuesClose(const OnnxHostTensor& got, const OnnxHostTensor& want, const Tolerance& tol,
                 std::string* why) {
  if (got.shape != want.shape || got.dtype != want.dtype) {
    *why = absl::StrCat("got ", DTypeName(got.dtype), got.shape.ToString(), ", want ",
                        DTypeName(want.dtype), want.shape.ToString());
    return false;
  }
  if (IsFloat(want.dtype)) {
    const std::vector<double> g = got.Doubles(), w = want.Doubles();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      if (!(std::abs(g[i] - w[i]) <= tol.atol + tol.rtol * std::abs(w[i]))) {
        *why = absl::StrCat("element ", i, ": got ", g[i], ", want ", w[i]);
        return false;
      }
    }
    return true;
  }
  if (got.bytes != want.bytes) {
    const std::vector<int64_t> g = got.Int64s(), w = want.Int64s();
    for (size_t i = 0; i < w.size(); ++i) {
      if (g[i] != w[i]) {
        *why = absl::StrCat("element ", i, ": got ", g[i], ", want ", w[i]);
        break;
      }
    }
    return false;
  }
  return true;
}

absl::StatusOr<OnnxHostTensor> HostOf(const Tensor& t) {
  OnnxHostTensor h;
  h.dtype = t.dtype();
  h.shape = t.shape();
  h.bytes.resize(t.ByteSize());
  RILL_RETURN_IF_ERROR(t.ToHostBytes(h.bytes.data(), h.bytes.size()));
  return h;
}

namespace {

// test_data_set_0/<kind>_<i>.pb. DataLoss (not Unimplemented: the case
// itself is supported) when it does not parse.
absl::StatusOr<onnx::TensorProto> ReadData(const fs::path& dir, const char* kind, size_t i) {
  onnx::TensorProto t;
  const std::string name = absl::StrCat(kind, "_", i, ".pb");
  if (!t.ParseFromString(ReadFile(dir / "test_data_set_0" / name))) {
    return absl::DataLossError(absl::StrCat(name, " does not parse"));
  }
  return t;
}

absl::Status AsDataLoss(const absl::Status& s) { return absl::DataLossError(s.message()); }

// dim_param -> the size the fed data has there.
void DimsFromData(const onnx::ModelProto& proto, const std::vector<std::string>& fed,
                  const fs::path& dir, OnnxImportOptions& opt) {
  for (size_t i = 0; i < fed.size(); ++i) {
    absl::StatusOr<onnx::TensorProto> t = ReadData(dir, "input", i);
    if (!t.ok()) continue;
    for (const auto& v : proto.graph().input()) {
      if (v.name() != fed[i] || !v.type().tensor_type().has_shape()) continue;
      const auto& dims = v.type().tensor_type().shape().dim();
      for (int a = 0; a < dims.size() && a < t->dims_size(); ++a) {
        if (!dims[a].dim_param().empty()) opt.dim_params[dims[a].dim_param()] = t->dims(a);
      }
    }
  }
}

}  // namespace

absl::StatusOr<ImportedCase> ImportCase(const fs::path& dir, engine::Context ctx,
                                        engine::Engine* engine, const CaseOptions& options) {
  const std::string bytes = ReadFile(dir / "model.onnx");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) return absl::InvalidArgumentError("model.onnx does not parse");
  for (const auto* list : {&proto.graph().input(), &proto.graph().output()}) {
    for (const auto& v : *list) {
      if (!v.type().has_tensor_type()) {
        return absl::UnimplementedError("sequence/optional/map values");
      }
    }
  }
  OnnxImportOptions opt;
  opt.context = ctx;
  opt.engine = engine;
  // input_<i>.pb feeds the i-th graph input that is not an initializer.
  std::set<std::string> initializers;
  for (const auto& t : proto.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> fed;
  for (const auto& v : proto.graph().input()) {
    if (!initializers.contains(v.name())) fed.push_back(v.name());
  }
  if (options.dims_from_data) DimsFromData(proto, fed, dir, opt);
  ImportedCase c;
  absl::StatusOr<OnnxModel> m = ImportOnnxBytes(bytes, opt, dir.filename().string());
  if (options.fix_integer_inputs && !m.ok() && absl::IsUnimplemented(m.status()) &&
      absl::StrContains(m.status().message(), "must be an initializer or a Constant")) {
    // Shapes, axes or other parameters fed as inputs: fix them at import, as
    // an engine that needs static shapes fixes its shape tensors. Fixed are
    // the integer inputs and the inputs no node reads as its data (input 0),
    // such as Resize's scales or OneHot's depth.
    std::set<std::string> data;
    for (const auto& n : proto.graph().node()) {
      if (n.input_size() > 0) data.insert(n.input(0));
    }
    for (size_t i = 0; i < fed.size(); ++i) {
      absl::StatusOr<onnx::TensorProto> t = ReadData(dir, "input", i);
      if (!t.ok()) continue;
      const bool integral =
          t->data_type() == onnx::TensorProto::INT64 || t->data_type() == onnx::TensorProto::INT32;
      if (!integral && data.contains(fed[i])) continue;
      absl::StatusOr<Tensor> x = TensorFromProto(*t, engine::Context::Host(), engine);
      if (x.ok()) opt.constant_inputs[fed[i]] = *x;
    }
    if (!opt.constant_inputs.empty()) {
      m = ImportOnnxBytes(bytes, opt, dir.filename().string());
      c.fixed_inputs = true;
    }
  }
  if (!m.ok()) return m.status();
  c.model = *std::move(m);
  c.args = c.model.initializers;
  for (size_t i = 0; i < fed.size(); ++i) {
    const auto& in = c.model.inputs;
    if (std::find(in.begin(), in.end(), fed[i]) == in.end()) continue;  // Fixed.
    RILL_ASSIGN_OR_RETURN(onnx::TensorProto t, ReadData(dir, "input", i));
    absl::StatusOr<Tensor> x = TensorFromProto(t, ctx, engine);
    if (!x.ok()) return AsDataLoss(x.status());
    c.args[fed[i]] = *x;
  }
  for (size_t i = 0; i < c.model.outputs.size(); ++i) {
    RILL_ASSIGN_OR_RETURN(onnx::TensorProto t, ReadData(dir, "output", i));
    absl::StatusOr<OnnxHostTensor> want = HostTensorFromProto(t);
    if (!want.ok()) return AsDataLoss(want.status());
    c.want.push_back(*std::move(want));
  }
  return c;
}

absl::StatusOr<std::vector<Tensor>> RunForward(const OnnxModel& m,
                                               const absl::flat_hash_map<std::string, Tensor>& args,
                                               engine::Context ctx, engine::Engine* engine,
                                               bool imperative) {
  if (imperative) return testing::EvaluateImperatively(m.graph, args, ctx, engine);
  BindOptions o;
  o.context = ctx;
  o.engine = engine;
  o.canary = true;  // Every case also checks the memory plan.
  RILL_ASSIGN_OR_RETURN(auto exec, Executor::Bind(m.graph, args, {}, o));
  RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
  return exec->outputs();
}

CaseResult RunCase(const fs::path& dir, engine::Context ctx, engine::Engine* engine,
                   const CaseOptions& options) {
  absl::StatusOr<ImportedCase> c = ImportCase(dir, ctx, engine, options);
  if (!c.ok()) {
    return {absl::IsUnimplemented(c.status()) ? Outcome::kUnsupported : Outcome::kFail,
            std::string(c.status().message())};
  }
  const bool fixed = c->fixed_inputs;
  absl::StatusOr<std::vector<Tensor>> outs =
      RunForward(c->model, c->args, ctx, engine, options.imperative);
  if (!outs.ok()) return {Outcome::kFail, std::string(outs.status().message()), fixed};
  for (size_t i = 0; i < c->want.size(); ++i) {
    absl::StatusOr<OnnxHostTensor> got = HostOf((*outs)[i]);
    if (!got.ok()) return {Outcome::kFail, std::string(got.status().message()), fixed};
    std::string why;
    if (!ValuesClose(*got, c->want[i], options.tolerance, &why)) {
      return {Outcome::kFail, absl::StrCat("output '", c->model.outputs[i], "': ", why), fixed};
    }
  }
  return {Outcome::kPass, "", fixed};
}

}  // namespace rill::graph::onnx_testing
