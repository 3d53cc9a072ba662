// The ONNX backend node tests (onnx.backend.test, node/): generated at test
// time by graph/onnx/gen_onnx_data.py, each case imported, run on one
// context with test_data_set_0's inputs and compared with its outputs
// (rtol 1e-3, atol 1e-7 as the ONNX backend tests; integers and bools
// exactly). A case is unsupported when its import says Unimplemented or it
// has sequence/optional values; every supported case must pass.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/graph/onnx/onnx_tensor.h"
#include "rill/graph/testing/graph_testing.h"
#include "rill/ops/testing/op_testing.h"
#ifndef RILL_ONNX_IMPERATIVE
#include "rill/graph/executor.h"
#endif

namespace rill::graph {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The node/ directory, generated once (into a temporary then renamed, so
// concurrent test processes do not see half a suite). Empty with `why` set
// when python3-onnx is missing.
fs::path SuiteDir(std::string* why) {
  const fs::path out = RILL_ONNX_DATA_DIR;
  if (fs::exists(out / "node")) return out / "node";
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0) {
    *why = "/usr/bin/python3 cannot import onnx (install python3-onnx)";
    return {};
  }
  const fs::path tmp = absl::StrCat(out.string(), ".tmp.", ::getpid());
  const std::string cmd =
      absl::StrCat("/usr/bin/python3 '", RILL_ONNX_GEN_SCRIPT, "' generate-data -o '", tmp.string(),
                   "' >'", tmp.string(), ".log' 2>&1");
  if (std::system(cmd.c_str()) != 0) {
    *why = absl::StrCat("generating the ONNX node tests failed: ", cmd);
    return {};
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) fs::remove_all(tmp, ec);  // Another process was first.
  fs::remove(tmp.string() + ".log", ec);
  return out / "node";
}

enum class Outcome { kUnsupported, kPass, kFail };
struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string reason;
  bool fixed_inputs = false;  // Integer inputs (shapes, axes) fixed at import.
};

bool ValuesClose(const OnnxHostTensor& got, const OnnxHostTensor& want, std::string* why) {
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
      if (!(std::abs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::abs(w[i]))) {
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

absl::StatusOr<std::vector<Tensor>> Run(const OnnxModel& m,
                                        const absl::flat_hash_map<std::string, Tensor>& args,
                                        engine::Context ctx, engine::Engine* engine) {
#ifdef RILL_ONNX_IMPERATIVE
  return testing::EvaluateImperatively(m.graph, args, ctx, engine);
#else
  BindOptions o;
  o.context = ctx;
  o.engine = engine;
  o.canary = true;  // Every case also checks the memory plan.
  RILL_ASSIGN_OR_RETURN(auto exec, Executor::Bind(m.graph, args, {}, o));
  RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/false));
  return exec->outputs();
#endif
}

CaseResult RunCase(const fs::path& dir, engine::Context ctx, engine::Engine* engine) {
  const std::string bytes = ReadFile(dir / "model.onnx");
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) return {Outcome::kFail, "model.onnx does not parse"};
  for (const auto* list : {&proto.graph().input(), &proto.graph().output()}) {
    for (const auto& v : *list) {
      if (!v.type().has_tensor_type())
        return {Outcome::kUnsupported, "sequence/optional/map values"};
    }
  }
  OnnxImportOptions opt;
  opt.context = ctx;
  opt.engine = engine;
  const fs::path data = dir / "test_data_set_0";
  // input_<i>.pb feeds the i-th graph input that is not an initializer.
  std::set<std::string> initializers;
  for (const auto& t : proto.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> fed;
  for (const auto& v : proto.graph().input()) {
    if (!initializers.contains(v.name())) fed.push_back(v.name());
  }
  absl::StatusOr<OnnxModel> m = ImportOnnxBytes(bytes, opt, dir.filename().string());
  bool fixed = false;
  if (!m.ok() && absl::IsUnimplemented(m.status()) &&
      absl::StrContains(m.status().message(), "must be an initializer or a Constant")) {
    // Shapes or axes fed as inputs: fix the integer inputs at import, as an
    // engine that needs static shapes fixes its shape tensors.
    for (size_t i = 0; i < fed.size(); ++i) {
      onnx::TensorProto t;
      if (!t.ParseFromString(ReadFile(data / absl::StrCat("input_", i, ".pb")))) continue;
      if (t.data_type() != onnx::TensorProto::INT64 && t.data_type() != onnx::TensorProto::INT32)
        continue;
      absl::StatusOr<Tensor> x = TensorFromProto(t, engine::Context::Host(), engine);
      if (x.ok()) opt.constant_inputs[fed[i]] = *x;
    }
    if (!opt.constant_inputs.empty()) {
      m = ImportOnnxBytes(bytes, opt, dir.filename().string());
      fixed = true;
    }
  }
  if (!m.ok()) {
    return {absl::IsUnimplemented(m.status()) ? Outcome::kUnsupported : Outcome::kFail,
            std::string(m.status().message())};
  }
  absl::flat_hash_map<std::string, Tensor> args = m->initializers;
  for (size_t i = 0; i < fed.size(); ++i) {
    if (std::find(m->inputs.begin(), m->inputs.end(), fed[i]) == m->inputs.end())
      continue;  // Fixed.
    onnx::TensorProto t;
    if (!t.ParseFromString(ReadFile(data / absl::StrCat("input_", i, ".pb")))) {
      return {Outcome::kFail, absl::StrCat("input_", i, ".pb does not parse")};
    }
    absl::StatusOr<Tensor> x = TensorFromProto(t, ctx, engine);
    if (!x.ok()) return {Outcome::kFail, std::string(x.status().message())};
    args[fed[i]] = *x;
  }

  absl::StatusOr<std::vector<Tensor>> outs = Run(*m, args, ctx, engine);
  if (!outs.ok()) return {Outcome::kFail, std::string(outs.status().message()), fixed};
  for (size_t i = 0; i < m->outputs.size(); ++i) {
    onnx::TensorProto t;
    if (!t.ParseFromString(ReadFile(data / absl::StrCat("output_", i, ".pb")))) {
      return {Outcome::kFail, absl::StrCat("output_", i, ".pb does not parse")};
    }
    absl::StatusOr<OnnxHostTensor> want = HostTensorFromProto(t);
    if (!want.ok()) return {Outcome::kFail, std::string(want.status().message())};
    const Tensor& y = (*outs)[i];
    OnnxHostTensor got;
    got.dtype = y.dtype();
    got.shape = y.shape();
    got.bytes.resize(y.ByteSize());
    absl::Status s = y.ToHostBytes(got.bytes.data(), got.bytes.size());
    if (!s.ok()) return {Outcome::kFail, std::string(s.message())};
    std::string why;
    if (!ValuesClose(got, *want, &why)) {
      return {Outcome::kFail, absl::StrCat("output '", m->outputs[i], "': ", why), fixed};
    }
  }
  return {Outcome::kPass, "", fixed};
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, Suite) {
  std::string why;
  const fs::path suite = SuiteDir(&why);
  if (suite.empty()) GTEST_SKIP() << why;
  std::optional<engine::Context> ctx;
  for (const engine::Context& c : ops::testing::AllContexts()) {
    if (c.ToString() == GetParam()) ctx = c;
  }
  if (!ctx) GTEST_SKIP() << "no context " << GetParam() << " here (platform absent)";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(suite)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  const std::vector<std::string> supported_list = SupportedOnnxOps();
  const std::set<std::string> supported(supported_list.begin(), supported_list.end());
  std::map<std::string, int> missing_ops;  // Op type -> cases it appears in.
  int only_supported_ops = 0, imported = 0, passed = 0, fixed = 0;
  std::vector<std::string> failures;
  std::map<std::string, int> unsupported_reasons;
  auto engine = ops::testing::MakeEngine();
  for (const fs::path& dir : cases) {
    onnx::ModelProto proto;
    proto.ParseFromString(ReadFile(dir / "model.onnx"));
    bool all = true;
    std::set<std::string> types;
    for (const auto& n : proto.graph().node()) types.insert(n.op_type());
    for (const std::string& t : types) {
      if (!supported.contains(t)) {
        all = false;
        ++missing_ops[t];
      }
    }
    only_supported_ops += all;
    CaseResult r = RunCase(dir, *ctx, engine.get());
    const std::string name = dir.filename().string();
    switch (r.outcome) {
      case Outcome::kUnsupported:
        if (all) {
          // Supported op types, refused for an attribute, type or shape: say which.
          const size_t colon = r.reason.find(": ");
          ++unsupported_reasons[colon == std::string::npos ? r.reason : r.reason.substr(colon + 2)];
        }
        break;
      case Outcome::kPass:
        ++imported;
        ++passed;
        fixed += r.fixed_inputs;
        break;
      case Outcome::kFail:
        ++imported;
        failures.push_back(absl::StrCat(name, ": ", r.reason));
        break;
    }
  }
  std::vector<std::string> missing;
  for (const auto& [t, n] : missing_ops) missing.push_back(absl::StrCat(t, "(", n, ")"));
  std::printf(
      "ONNX node tests on %s: %zu cases, %d use only supported op types, %d supported (imported), "
      "%d pass (%d of them with integer inputs fixed at import), %zu fail\n",
      GetParam().c_str(), cases.size(), only_supported_ops, imported, passed, fixed,
      failures.size());
  std::printf("unsupported op types (cases): %s\n", absl::StrJoin(missing, " ").c_str());
  std::printf("supported op types refused by attribute/type/shape (cases):\n");
  for (const auto& [reason, n] : unsupported_reasons) std::printf("  %d x %s\n", n, reason.c_str());
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Contexts, OnnxNodeTest,
                         ::testing::Values("cpu", "host:0", "opencl:0", "cuda:0"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), ':', '_');
                           return s;
                         });

}  // namespace
}  // namespace rill::graph
