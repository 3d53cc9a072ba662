// gather_elements and _backward_gather_elements on every context present:
// every element type, both index types, axes (negative ones too), indices
// smaller than data off the axis, duplicate indices in the gradient, out
// of range indices and bad arguments, against naive host loops.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::ExpectNear;
using testing::RandomData;

using GatherElementsShapeTest = testing::OpTest;

// Indices as a tensor of int32 or int64.
Tensor MakeIndices(const std::vector<int64_t>& v, const Shape& s, DType t, Context ctx,
                   engine::Engine* eng) {
  if (t == DType::kI64) return *Tensor::FromHost<int64_t>(v, s, ctx, eng);
  std::vector<int32_t> w(v.begin(), v.end());
  return *Tensor::FromHost<int32_t>(w, s, ctx, eng);
}

// For each element of the indices (row-major), the flat index into data it
// reads: its own coordinates, with the axis' taken from the index (+ dim
// when negative).
std::vector<int64_t> NaiveSources(const Shape& data, const Shape& indices,
                                  const std::vector<int64_t>& idx, int axis) {
  std::vector<int64_t> src(indices.NumElements());
  for (int64_t t = 0; t < indices.NumElements(); ++t) {
    std::vector<int64_t> c(indices.rank());
    int64_t rem = t;
    for (int d = indices.rank() - 1; d >= 0; --d) {
      c[d] = rem % indices[d];
      rem /= indices[d];
    }
    c[axis] = idx[t] < 0 ? idx[t] + data[axis] : idx[t];
    int64_t off = 0;
    for (int d = 0; d < data.rank(); ++d) off = off * data[d] + c[d];
    src[t] = off;
  }
  return src;
}

struct Case {
  Shape data;
  int axis;
  Shape indices;
};

const Case kCases[] = {
    {{3, 4}, 0, {2, 4}},
    {{3, 4}, 1, {3, 2}},
    {{2, 3, 4}, -1, {2, 3, 6}},
    {{2, 3, 4}, 1, {1, 2, 3}},
    {{5}, 0, {7}},
    {{2, 3}, 0, {0, 3}},
    {{1, 3, 1, 2}, 2, {1, 3, 4, 2}},
    {{2, 1, 3, 2, 2}, -3, {2, 1, 2, 2, 1}},
};

// Indices in [-dim, dim) along the axis, per case.
std::vector<int64_t> Indices(const Case& c, int axis, uint64_t seed) {
  const int64_t n = c.data[axis];
  const auto r = RandomData<double>(c.indices.NumElements(), seed, -n, n);
  std::vector<int64_t> v;
  for (double x : r) v.push_back(static_cast<int64_t>(x));
  return v;
}

TEST_P(GatherElementsShapeTest, MatchesNaiveLoopsForEveryTypeAxisAndIndexType) {
  for (const Case& c : kCases) {
    const int axis = c.axis < 0 ? c.axis + c.data.rank() : c.axis;
    const auto idx = Indices(c, axis, 51);
    const auto src = NaiveSources(c.data, c.indices, idx, axis);
    const int64_t n = c.data.NumElements(), m = c.indices.NumElements();
    const Attrs attrs = {{"axis", std::to_string(c.axis)}};
    for (DType it : {DType::kI32, DType::kI64}) {
      Tensor ti = MakeIndices(idx, c.indices, it, ctx(), engine_.get());
      const std::string what =
          absl::StrCat("gather_elements ", c.data.ToString(), " axis ", c.axis, " at ",
                       DTypeName(it), c.indices.ToString(), " on ", ctx().ToString());
      // float32 under write, add and null requests.
      const auto x = RandomData<float>(n, 52);
      auto tx = Make<float>(x, c.data);
      std::vector<float> want(m);
      for (int64_t t = 0; t < m; ++t) want[t] = x[src[t]];
      auto r = Invoke("gather_elements", {tx, ti}, attrs);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      EXPECT_EQ((*r)[0].shape(), c.indices) << what;
      ExpectNear(*(*r)[0].ToHost<float>(), want, 0, what + " write");
      const auto base = RandomData<float>(m, 53);
      auto acc = Make<float>(base, c.indices);
      InvokeOptions o;
      o.reqs = {OpReqType::kAddTo};
      ASSERT_TRUE(Invoke("gather_elements", {tx, ti}, attrs, {acc}, o).ok()) << what;
      for (int64_t t = 0; t < m; ++t) want[t] += base[t];
      ExpectNear(*acc.ToHost<float>(), want, 1e-6, what + " add");
      o.reqs = {OpReqType::kNullOp};
      ASSERT_TRUE(Invoke("gather_elements", {tx, ti}, attrs, {acc}, o).ok()) << what;
      ExpectNear(*acc.ToHost<float>(), want, 1e-6, what + " null");
      // Every type as bytes (bool as 0/1; float16 as bits).
      for (DType dt : kAllDTypes) {
        const int size = DTypeSize(dt);
        std::vector<char> bytes(n * size);
        for (size_t i = 0; i < bytes.size(); ++i) {
          bytes[i] = static_cast<char>(dt == DType::kBool ? i % 2 : (i * 37 + 11) % 127);
        }
        auto td =
            *Tensor::FromHostBytes(bytes.data(), bytes.size(), c.data, dt, ctx(), engine_.get());
        auto g = ops::GatherElements(td, ti, c.axis);
        ASSERT_TRUE(g.ok()) << what << " " << DTypeName(dt) << ": " << g.status();
        EXPECT_EQ(g->dtype(), dt) << what;
        ASSERT_EQ(g->shape(), c.indices) << what;
        std::vector<char> got(m * size), wb(m * size);
        for (int64_t t = 0; t < m; ++t) std::memcpy(&wb[t * size], &bytes[src[t] * size], size);
        ASSERT_TRUE(g->ToHostBytes(got.data(), got.size()).ok()) << what;
        EXPECT_EQ(got, wb) << what << " " << DTypeName(dt);
      }
    }
  }
}

// The gradient: zeros shaped as data, each dy element added where its
// index points (duplicates accumulate), none to the indices.
TEST_P(GatherElementsShapeTest, GradientScatterAddsDuplicateIndices) {
  for (const Case& c : kCases) {
    const int axis = c.axis < 0 ? c.axis + c.data.rank() : c.axis;
    const auto idx = Indices(c, axis, 61);
    const auto src = NaiveSources(c.data, c.indices, idx, axis);
    const int64_t n = c.data.NumElements(), m = c.indices.NumElements();
    const auto dy = RandomData<double>(m, 62, -2, 2);
    std::vector<double> want(n, 0.0);
    for (int64_t t = 0; t < m; ++t) want[src[t]] += dy[t];
    for (DType it : {DType::kI32, DType::kI64}) {
      const std::string what =
          absl::StrCat("gather_elements gradient ", c.data.ToString(), " axis ", c.axis, " ",
                       DTypeName(it), " on ", ctx().ToString());
      Tensor ti = MakeIndices(idx, c.indices, it, ctx(), engine_.get());
      auto tx = Make<double>(RandomData<double>(n, 63), c.data);
      auto y = ops::GatherElements(tx, ti, c.axis);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status();
      std::vector<Tensor> in = {tx, ti}, out = {*y}, og = {Make<double>(dy, c.indices)};
      const OpDef& op = BuiltinOp("gather_elements");
      auto params = *op.params().Parse("gather_elements", {{"axis", std::to_string(c.axis)}});
      auto g = op.gradient()(GradientContext{params.get(), in, out, og});
      ASSERT_TRUE(g.ok()) << what << ": " << g.status();
      ASSERT_EQ(g->size(), 2u) << what;
      EXPECT_FALSE((*g)[1].defined()) << what;
      EXPECT_EQ((*g)[0].shape(), c.data) << what;
      ExpectNear(*(*g)[0].ToHost<double>(), want, 1e-12, what);
      // float32 and int32 through the backward op, written over a dirty output.
      std::vector<float> dyf(dy.begin(), dy.end()), wantf(n, 0.f);
      std::vector<int32_t> dyi(m), wanti(n, 0);
      for (int64_t t = 0; t < m; ++t) {
        wantf[src[t]] += dyf[t];
        dyi[t] = static_cast<int32_t>(t % 5) - 2;
        wanti[src[t]] += dyi[t];
      }
      const Attrs attrs = {{"axis", std::to_string(c.axis)}};
      auto dirty = Make<float>(std::vector<float>(n, 3.f), c.data);
      ASSERT_TRUE(
          Invoke("_backward_gather_elements",
                 {Make<float>(dyf, c.indices), Make<float>(std::vector<float>(n), c.data), ti},
                 attrs, {dirty})
              .ok())
          << what;
      ExpectNear(*dirty.ToHost<float>(), wantf, 1e-6, what + " float32");
      auto gi = Invoke(
          "_backward_gather_elements",
          {Make<int32_t>(dyi, c.indices), Make<int32_t>(std::vector<int32_t>(n), c.data), ti},
          attrs);
      ASSERT_TRUE(gi.ok()) << what << ": " << gi.status();
      EXPECT_EQ(*(*gi)[0].ToHost<int32_t>(), wanti) << what << " int32";
    }
  }
}

TEST_P(GatherElementsShapeTest, IndexOutOfRange) {
  std::vector<float> iota(8);
  for (int i = 0; i < 8; ++i) iota[i] = static_cast<float>(i);
  auto data = Make<float>(iota, {2, 4});
  auto bad = Make<int64_t>({1, 7, 0, -1}, {2, 2});
  auto low = Make<int32_t>({0, -3, 1}, {1, 3});
  auto r = Invoke("gather_elements", {data, bad}, {{"axis", "1"}});
  ASSERT_TRUE(r.ok()) << r.status();  // Checked as the kernel runs.
  auto r2 = Invoke("gather_elements", {data, low}, {{"axis", "0"}});
  ASSERT_TRUE(r2.ok()) << r2.status();
  auto dy = Make<float>({1, 1, 1, 1}, {2, 2});
  auto rb = Invoke("_backward_gather_elements", {dy, data, bad}, {{"axis", "1"}});
  ASSERT_TRUE(rb.ok()) << rb.status();
  // Every context checks every index: InvalidArgument naming it and the dim
  // (device kernels check the indices first, as gather's).
  absl::Status s = (*r)[0].WaitToRead();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("index 7 (at 1) is out of range for a dim of size 4"),
            std::string::npos)
      << s;
  s = (*r2)[0].WaitToRead();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("index -3 (at 1) is out of range for a dim of size 2"),
            std::string::npos)
      << s;
  s = (*rb)[0].WaitToRead();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("index 7 (at 1) is out of range for a dim of size 4"),
            std::string::npos)
      << s;
}

TEST_P(GatherElementsShapeTest, RejectsBadArguments) {
  auto data = Make<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  auto idx = Make<int32_t>({0, 1}, {1, 2});
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& r, const std::string& text) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status();
  };
  expect(Invoke("gather_elements", {data, idx}, {{"axis", "2"}}),
         "axis 2 is out of range for rank 2");
  expect(Invoke("gather_elements", {data, Make<int32_t>({0, 1}, {2})}), "differ in rank");
  expect(Invoke("gather_elements", {data, Make<int32_t>({0, 0, 0, 0}, {1, 4})}),
         "exceed data [2, 3] on axis 1");
  expect(Invoke("gather_elements", {data, Make<float>({0, 1}, {1, 2})}), "int32 or int64");
  expect(Invoke("gather_elements", {Make<float>({}, {0, 3}), idx}), "empty");
  expect(Invoke("gather_elements", {Make<float>({1}, Shape{}), Make<int32_t>({0}, Shape{})}),
         "out of range for rank 0");
  // Fewer along the axis is fine; so is more.
  EXPECT_TRUE(Invoke("gather_elements", {data, Make<int32_t>({0, 1, 1, 0, 1, 0}, {3, 2})}).ok());
  expect(Invoke("_backward_gather_elements", {Make<float>({1, 2, 3}, {1, 3}), data, idx}),
         "dy is [1, 3] but the indices are [1, 2]");
  expect(Invoke("_backward_gather_elements", {Make<double>({1, 2}, {1, 2}), data, idx}),
         "dy is float64 but data is float32");
}

INSTANTIATE_TEST_SUITE_P(AllContexts, GatherElementsShapeTest,
                         ::testing::ValuesIn(testing::OpSuiteContexts()), testing::ContextName);

}  // namespace
}  // namespace rill::ops
