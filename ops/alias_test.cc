// Outputs that share storage with inputs: an output that coincides with an
// input runs in place only for a pair the op declares (OpDef::set_inplace);
// any other overlap computes into temp space and copies (or adds) after the
// kernel. Every result is checked against a naive loop over the old values.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/ops/invoke.h"
#include "rill/ops/ops.h"
#include "rill/ops/prepared.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;

constexpr int kN = 1024;  // Enough work items for a device kernel to race.

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) + 1;
  return v;
}

class AliasTest : public testing::OpTest {};

// neg from x[0:n-1] into x[1:n], and from x[1:n] into x[0:n-1].
TEST_P(AliasTest, UnaryOpIntoAShiftedViewOfItsInput) {
  for (int shift : {1, -1}) {
    SCOPED_TRACE(shift);
    const std::vector<float> old = Iota(kN);
    Tensor x = Make(old, {kN});
    Tensor src = shift > 0 ? *x.Slice(0, kN - 1) : *x.Slice(1, kN);
    Tensor dst = shift > 0 ? *x.Slice(1, kN) : *x.Slice(0, kN - 1);
    auto r = Invoke("neg", {src}, {}, {dst});
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<float> want = old;
    const int s0 = shift > 0 ? 0 : 1, d0 = shift > 0 ? 1 : 0;
    for (int i = 0; i < kN - 1; ++i) want[d0 + i] = -old[s0 + i];
    auto got = x.ToHost<float>();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
  }
}

// An output that coincides with an input of a declared pair still runs in
// place and is right.
TEST_P(AliasTest, UnaryOpIntoItsOwnInputRunsInPlace) {
  const std::vector<float> old = Iota(kN);
  Tensor x = Make(old, {kN});
  ASSERT_TRUE(Invoke("neg", {x}, {}, {x}).ok());
  std::vector<float> want(kN);
  for (int i = 0; i < kN; ++i) want[i] = -old[i];
  EXPECT_EQ(*x.ToHost<float>(), want);
}

// ops::AddTo(x[1:n], x[0:n-1]) and neg with kAddTo into a shifted view.
TEST_P(AliasTest, AddToIntoAShiftedViewOfTheInput) {
  const std::vector<float> old = Iota(kN);
  Tensor x = Make(old, {kN});
  ASSERT_TRUE(ops::AddTo(*x.Slice(1, kN), *x.Slice(0, kN - 1)).ok());
  std::vector<float> want = old;
  for (int i = 0; i < kN - 1; ++i) want[i + 1] = old[i + 1] + old[i];
  EXPECT_EQ(*x.ToHost<float>(), want);

  Tensor y = Make(old, {kN});
  InvokeOptions add;
  add.reqs = {OpReqType::kAddTo};
  auto r = Invoke("neg", {*y.Slice(0, kN - 1)}, {}, {*y.Slice(1, kN)}, add);
  ASSERT_TRUE(r.ok()) << r.status();
  want = old;
  for (int i = 0; i < kN - 1; ++i) want[i + 1] = old[i + 1] - old[i];
  EXPECT_EQ(*y.ToHost<float>(), want);
}

// transpose has no in-place pair: written into its own input it goes
// through temp space.
TEST_P(AliasTest, TransposeIntoItsOwnInput) {
  constexpr int n = 33;
  const std::vector<float> old = Iota(n * n);
  Tensor x = Make(old, {n, n});
  auto r = Invoke("transpose", {x}, {}, {x});
  if (r.status().code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << r.status();
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<float> want(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) want[i * n + j] = old[j * n + i];
  }
  EXPECT_EQ(*x.ToHost<float>(), want);
}

TEST_P(AliasTest, MatmulIntoEitherOfItsInputs) {
  constexpr int n = 16;
  for (int into : {0, 1}) {
    SCOPED_TRACE(into);
    const std::vector<float> va = testing::RandomData<float>(n * n, 1);
    const std::vector<float> vb = testing::RandomData<float>(n * n, 2);
    Tensor a = Make(va, {n, n}), b = Make(vb, {n, n});
    auto r = Invoke("matmul", {a, b}, {}, {into == 0 ? a : b});
    if (r.status().code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << r.status();
    ASSERT_TRUE(r.ok()) << r.status();
    std::vector<float> want(n * n, 0.f);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += double{va[i * n + k]} * vb[k * n + j];
        want[i * n + j] = static_cast<float>(s);
      }
    }
    testing::ExpectNear(*(into == 0 ? a : b).ToHost<float>(), want, 1e-5, "matmul");
  }
}

// A binary op whose output coincides with input 0 (a declared pair) while
// input 1 overlaps it partly: temp space.
TEST_P(AliasTest, BinaryOpWithOneCoincidentAndOnePartialInput) {
  const std::vector<float> old = Iota(kN);
  Tensor x = Make(old, {kN});
  Tensor a = *x.Slice(1, kN), b = *x.Slice(0, kN - 1);
  ASSERT_TRUE(Invoke("mul", {a, b}, {}, {a}).ok());
  std::vector<float> want = old;
  for (int i = 0; i < kN - 1; ++i) want[i + 1] = old[i + 1] * old[i];
  EXPECT_EQ(*x.ToHost<float>(), want);
}

TEST_P(AliasTest, AWriteRequestOutOfRangeIsInvalidArgument) {
  Tensor x = Make<float>({1, 2, 3}, {3});
  Tensor y = Make<float>({0, 0, 0}, {3});
  for (int bad : {7, -1}) {
    InvokeOptions o;
    o.reqs = {static_cast<OpReqType>(bad)};
    auto r = Invoke("neg", {x}, {}, {y}, o);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(absl::StrCat("write request ", bad)), std::string::npos)
        << r.status();
    EXPECT_EQ(PreparedOp::Prepare(BuiltinOp("neg"), {x}, nullptr, {y}, o).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(*y.ToHost<float>(), std::vector<float>({0, 0, 0}));
}

// Two outputs of one call over the same bytes: refused, naming both.
TEST_P(AliasTest, OverlappingOutputsAreInvalidArgument) {
  Tensor w = Make<float>({1, 2, 3, 4}, {4});
  Tensor g = Make<float>({1, 1, 1, 1}, {4});
  Tensor m = Make<float>({0, 0, 0, 0}, {4});
  auto r = Invoke("sgd_mom_update", {w, g, m}, {{"lr", "0.1"}, {"momentum", "0.9"}}, {w, w});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("outputs 0"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("overlap"), std::string::npos) << r.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, AliasTest, ::testing::ValuesIn(testing::AllContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
