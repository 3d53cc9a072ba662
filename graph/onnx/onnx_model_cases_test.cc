// Model-level ONNX cases: the patterns exporters such as torch.onnx write
// (LSTM/GRU, attention blocks, embeddings, padding, pooling and conv with
// asymmetric pads, shape arithmetic, Resize), generated at test time by
// graph/onnx/gen_model_cases.py with NumPy reference outputs. Every case
// must import and pass on every context (unsupported is a failure here),
// within rtol 1e-4 and atol 1e-5 (float32 and float64 alike; integers
// exactly). The grad_*_f64 cases are also differentiated: the gradient of
// sum_k sum(output_k * r_k), for fixed random r_k, with respect to inputs
// and weights, against central finite differences of Forward runs.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/base/status_macros.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_case_runner.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::graph {
namespace {

namespace fs = std::filesystem;
using onnx_testing::CaseOptions;
using onnx_testing::CaseResult;
using onnx_testing::HostOf;
using onnx_testing::ImportCase;
using onnx_testing::ImportedCase;
using onnx_testing::Outcome;

// The generated cases, in a directory named after a hash of the generator
// (FNV-1a of its text), so an edited generator writes a fresh set.
fs::path CasesDir(std::string* why) {
  const std::string script = onnx_testing::ReadFile(RILL_ONNX_MODEL_CASES_SCRIPT);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : script) h = (h ^ ch) * 1099511628211ull;
  const fs::path out = absl::StrCat(RILL_ONNX_MODEL_CASES_DIR, "_", absl::Hex(h));
  const std::string cmd = absl::StrCat("/usr/bin/python3 '", RILL_ONNX_MODEL_CASES_SCRIPT, "' -o");
  if (!onnx_testing::GenerateOnce(out, cmd, why)) return {};
  // Drop the sets of other versions of the generator.
  const std::string prefix = fs::path(RILL_ONNX_MODEL_CASES_DIR).filename().string() + "_";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, prefix) && e.path() != out && !absl::StrContains(name, ".tmp.")) {
      fs::remove_all(e.path(), ec);
    }
  }
  return out;
}

CaseOptions ModelCaseOptions() {
  CaseOptions o;
  o.tolerance = {.rtol = 1e-4, .atol = 1e-5};
  o.dims_from_data = true;  // Symbolic batch dims take the fed data's sizes.
  o.fix_integer_inputs = false;
  return o;
}

// The context named `name` ("cpu", "host:0", ...), if present here.
std::optional<engine::Context> FindContext(const std::string& name) {
  for (const engine::Context& c : ops::testing::AllContexts()) {
    if (c.ToString() == name) return c;
  }
  return std::nullopt;
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  std::replace(s.begin(), s.end(), ':', '_');
  return s;
}

class OnnxModelCasesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxModelCasesTest, EveryCasePasses) {
  std::string why;
  const fs::path dir = CasesDir(&why);
  if (dir.empty()) GTEST_SKIP() << why;
  const std::optional<engine::Context> ctx = FindContext(GetParam());
  if (!ctx) GTEST_SKIP() << "no context " << GetParam() << " here (platform absent)";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(dir)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 40u) << "too few cases in " << dir;
  auto engine = ops::testing::MakeEngine();
  int passed = 0;
  for (const fs::path& c : cases) {
    const CaseResult r = onnx_testing::RunCase(c, *ctx, engine.get(), ModelCaseOptions());
    if (r.outcome == Outcome::kPass) {
      ++passed;
    } else {
      ADD_FAILURE() << c.filename().string()
                    << (r.outcome == Outcome::kUnsupported ? " (unsupported): " : ": ") << r.reason;
    }
  }
  std::printf("ONNX model cases on %s: %zu cases, %d pass\n", GetParam().c_str(), cases.size(),
              passed);
}

INSTANTIATE_TEST_SUITE_P(Contexts, OnnxModelCasesTest,
                         ::testing::Values("cpu", "host:0", "opencl:0", "cuda:0"), ParamName);

// --- Gradients by finite differences.

// Host values <-> tensors of a float type (float32 or float64).
absl::StatusOr<std::vector<double>> Values(const Tensor& t) {
  RILL_ASSIGN_OR_RETURN(OnnxHostTensor h, HostOf(t));
  return h.Doubles();
}

absl::StatusOr<Tensor> MakeLike(const Tensor& like, const std::vector<double>& v,
                                engine::Context ctx, engine::Engine* engine) {
  OnnxHostTensor h = OnnxHostTensor::Fill(like.dtype(), like.shape(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (like.dtype() == DType::kF64) {
      std::memcpy(h.bytes.data() + i * sizeof(double), &v[i], sizeof(double));
    } else {
      const float f = static_cast<float>(v[i]);
      std::memcpy(h.bytes.data() + i * sizeof(float), &f, sizeof(float));
    }
  }
  return TensorFromHost(h, ctx, engine);
}

struct GradCase {
  const char* name;
  std::vector<std::string> wrt;  // Fed inputs and initializers.
};

class OnnxModelGradTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Binds `c` with gradients for `wrt`, runs Forward(true) and Backward with
  // fresh random head gradients r_k (kept in r_); returns the gradients.
  absl::StatusOr<absl::flat_hash_map<std::string, Tensor>> Gradients(
      const ImportedCase& c, const std::vector<std::string>& wrt);
  // sum_k sum(outputs_k * r_k) for `args`, by Forward(false).
  absl::StatusOr<double> Loss(const ImportedCase& c,
                              const absl::flat_hash_map<std::string, Tensor>& args);
  // The central difference of Loss in element i of variable `name`.
  absl::StatusOr<double> FiniteDifference(const ImportedCase& c, const std::string& name, size_t i,
                                          double eps);
  void Check(const GradCase& g, const fs::path& dir);

  std::unique_ptr<engine::Engine> engine_ = ops::testing::MakeEngine();
  std::optional<engine::Context> ctx_;
  std::vector<std::vector<double>> r_;  // The head gradients, per output.
};

absl::StatusOr<absl::flat_hash_map<std::string, Tensor>> OnnxModelGradTest::Gradients(
    const ImportedCase& c, const std::vector<std::string>& wrt) {
  absl::flat_hash_map<std::string, Tensor> grads;
  for (const std::string& name : wrt) {
    if (!c.args.contains(name)) return absl::NotFoundError(absl::StrCat("no variable ", name));
    const Tensor& a = c.args.at(name);
    RILL_ASSIGN_OR_RETURN(
        grads[name], MakeLike(a, std::vector<double>(a.NumElements(), 0.0), *ctx_, engine_.get()));
  }
  BindOptions bo;
  bo.context = *ctx_;
  bo.engine = engine_.get();
  bo.canary = true;
  RILL_ASSIGN_OR_RETURN(auto exec, Executor::Bind(c.model.graph, c.args, grads, bo));
  RILL_RETURN_IF_ERROR(exec->Forward(/*is_train=*/true));
  std::vector<Tensor> heads;
  r_.clear();
  for (size_t k = 0; k < exec->outputs().size(); ++k) {
    const Tensor& y = exec->outputs()[k];
    r_.push_back(ops::testing::RandomData<double>(y.NumElements(), 100 + k));
    RILL_ASSIGN_OR_RETURN(Tensor head, MakeLike(y, r_.back(), *ctx_, engine_.get()));
    heads.push_back(head);
  }
  RILL_RETURN_IF_ERROR(exec->Backward(heads));
  return grads;
}

absl::StatusOr<double> OnnxModelGradTest::Loss(
    const ImportedCase& c, const absl::flat_hash_map<std::string, Tensor>& args) {
  RILL_ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                        onnx_testing::RunForward(c.model, args, *ctx_, engine_.get()));
  double loss = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    RILL_ASSIGN_OR_RETURN(std::vector<double> y, Values(outs[k]));
    for (size_t i = 0; i < y.size(); ++i) loss += y[i] * r_[k][i];
  }
  return loss;
}

absl::StatusOr<double> OnnxModelGradTest::FiniteDifference(const ImportedCase& c,
                                                           const std::string& name, size_t i,
                                                           double eps) {
  const Tensor& x = c.args.at(name);
  RILL_ASSIGN_OR_RETURN(std::vector<double> v, Values(x));
  double loss[2];
  for (int side = 0; side < 2; ++side) {
    std::vector<double> moved = v;
    moved[i] += side == 0 ? eps : -eps;
    absl::flat_hash_map<std::string, Tensor> args = c.args;
    RILL_ASSIGN_OR_RETURN(args[name], MakeLike(x, moved, *ctx_, engine_.get()));
    RILL_ASSIGN_OR_RETURN(loss[side], Loss(c, args));
  }
  return (loss[0] - loss[1]) / (2 * eps);
}

// Every element of every variable in g.wrt: float64 models, so a small
// step (1e-6) and a tight tolerance (1e-6 relative to 1 + |gradient|).
void OnnxModelGradTest::Check(const GradCase& g, const fs::path& dir) {
  SCOPED_TRACE(g.name);
  absl::StatusOr<ImportedCase> c =
      ImportCase(dir / g.name, *ctx_, engine_.get(), ModelCaseOptions());
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<absl::flat_hash_map<std::string, Tensor>> grads = Gradients(*c, g.wrt);
  ASSERT_TRUE(grads.ok()) << grads.status();
  double worst = 0;
  int checked = 0;
  for (const std::string& name : g.wrt) {
    absl::StatusOr<std::vector<double>> got = Values(grads->at(name));
    ASSERT_TRUE(got.ok()) << got.status();
    double largest = 0;
    for (size_t i = 0; i < got->size(); ++i, ++checked) {
      absl::StatusOr<double> want = FiniteDifference(*c, name, i, 1e-6);
      ASSERT_TRUE(want.ok()) << want.status();
      const double err = std::abs((*got)[i] - *want) / (1 + std::abs(*want));
      worst = std::max(worst, err);
      largest = std::max(largest, std::abs(*want));
      EXPECT_LE(err, 1e-6) << name << "[" << i << "]: backward " << (*got)[i]
                           << ", finite differences " << *want;
    }
    EXPECT_GT(largest, 1e-3) << name << ": the output does not depend on it (a vacuous check)";
  }
  std::printf("%s on %s: %d gradient elements, worst relative error %.3g\n", g.name,
              GetParam().c_str(), checked, worst);
}

TEST_P(OnnxModelGradTest, GradientsMatchFiniteDifferences) {
  std::string why;
  const fs::path dir = CasesDir(&why);
  if (dir.empty()) GTEST_SKIP() << why;
  ctx_ = FindContext(GetParam());
  if (!ctx_) GTEST_SKIP() << "no context " << GetParam() << " here (platform absent)";
  const std::vector<GradCase> cases = {
      {"grad_lstm_f64", {"X", "W", "R", "B", "initial_h", "initial_c"}},
      {"grad_gru_f64", {"X", "W", "R", "B", "initial_h"}},
      {"grad_pad_resize_f64", {"x", "w"}},
      {"grad_embedding_f64", {"table", "proj"}},
  };
  for (const GradCase& g : cases) Check(g, dir);
}

INSTANTIATE_TEST_SUITE_P(Contexts, OnnxModelGradTest,
                         ::testing::Values("cpu", "host:0", "opencl:0", "cuda:0"), ParamName);

}  // namespace
}  // namespace rill::graph
