// The ONNX backend node tests (onnx.backend.test, node/): generated at test
// time by graph/onnx/gen_onnx_data.py, each case imported, run on one
// context with test_data_set_0's inputs and compared with its outputs
// (rtol 1e-3, atol 1e-7 as the ONNX backend tests; integers and bools
// exactly). A case is unsupported when its import says Unimplemented or it
// has sequence/optional values; every supported case must pass.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "rill/graph/onnx/onnx_case_runner.h"
#include "rill/graph/onnx/onnx_import.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

namespace fs = std::filesystem;
using onnx_testing::CaseResult;
using onnx_testing::Outcome;
using onnx_testing::ReadFile;

// The node/ directory, generated once. Empty with `why` set when
// python3-onnx is missing.
fs::path SuiteDir(std::string* why) {
  const fs::path out = RILL_ONNX_DATA_DIR;
  const std::string cmd =
      absl::StrCat("/usr/bin/python3 '", RILL_ONNX_GEN_SCRIPT, "' generate-data -o");
  if (!onnx_testing::GenerateOnce(out, cmd, why)) return {};
  return out / "node";
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
  onnx_testing::CaseOptions options;  // rtol 1e-3, atol 1e-7.
#ifdef RILL_ONNX_IMPERATIVE
  options.imperative = true;
#endif
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
    CaseResult r = onnx_testing::RunCase(dir, *ctx, engine.get(), options);
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
