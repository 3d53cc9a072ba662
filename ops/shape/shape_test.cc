// The shape ops on every context against naive host loops: reshape,
// flatten, transpose, slice, concat, gather under every write request, cast
// between every type pair (float16 included) and of NaN, infinities and
// out-of-range floats to integers, gradients, and errors.

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/ops.h"
#include "rill/ops/shape/half.h"
#include "rill/ops/testing/op_testing.h"

namespace rill::ops {
namespace {

using engine::Context;
using testing::AllContexts;
using testing::ExpectNear;
using testing::RandomData;

class ShapeTest : public testing::OpTest {
 public:
  // Runs op under write, add and null requests; checks against want.
  void Check(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs,
             const std::vector<float>& want, const Shape& want_shape) {
    const std::string what = op + " on " + ctx().ToString();
    auto r = Invoke(op, in, attrs);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    EXPECT_EQ((*r)[0].shape(), want_shape) << what;
    ExpectNear(*(*r)[0].ToHost<float>(), want, 0, what + " write");
    const auto base = RandomData<float>(want_shape.NumElements(), 9);
    auto acc = Make<float>(base, want_shape);
    InvokeOptions o;
    o.reqs = {OpReqType::kAddTo};
    ASSERT_TRUE(Invoke(op, in, attrs, {acc}, o).ok()) << what;
    std::vector<float> sum(want);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += base[i];
    ExpectNear(*acc.ToHost<float>(), sum, 1e-6, what + " add");
    o.reqs = {OpReqType::kNullOp};
    ASSERT_TRUE(Invoke(op, in, attrs, {acc}, o).ok()) << what;
    ExpectNear(*acc.ToHost<float>(), sum, 1e-6, what + " null");
  }
};

std::vector<float> Iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST_P(ShapeTest, ReshapeAndFlattenCopy) {
  const auto x = Iota(24);
  auto t = Make<float>(x, {2, 3, 4});
  Check("reshape", {t}, {{"shape", "(4, -1)"}}, x, {4, 6});
  Check("reshape", {t}, {{"shape", "(0, 12)"}}, x, {2, 12});
  Check("flatten", {t}, {}, x, {2, 12});
  // In place over its input (same storage).
  auto u = Make<float>(x, {2, 3, 4});
  auto view = *u.Reshape({6, 4});
  ASSERT_TRUE(Invoke("reshape", {u}, {{"shape", "(6, 4)"}}, {view}).ok());
  EXPECT_EQ(*view.ToHost<float>(), x);
  // Every type, float16 and bool included.
  auto h = *Tensor::FromHostBytes(std::vector<uint16_t>(6, 0x3C00).data(), 12, {2, 3}, DType::kF16,
                                  ctx(), engine_.get());
  auto hr = Invoke("reshape", {h}, {{"shape", "(3, 2)"}});
  ASSERT_TRUE(hr.ok()) << hr.status();
  uint16_t hb[6];
  ASSERT_TRUE((*hr)[0].ToHostBytes(hb, 12).ok());
  for (uint16_t b : hb) EXPECT_EQ(b, 0x3C00);
}

TEST_P(ShapeTest, TransposeMatchesNaiveLoops) {
  const Shape s{2, 3, 4, 5};
  const auto x = Iota(120);
  auto t = Make<float>(x, s);
  const std::vector<std::vector<int>> perms = {
      {3, 2, 1, 0}, {0, 2, 1, 3}, {1, 0, 3, 2}, {0, 1, 2, 3}};
  for (const auto& perm : perms) {
    Shape o{s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]};
    std::vector<float> want(120);
    int64_t k = 0;
    for (int64_t a = 0; a < o[0]; ++a)
      for (int64_t b = 0; b < o[1]; ++b)
        for (int64_t c = 0; c < o[2]; ++c)
          for (int64_t d = 0; d < o[3]; ++d) {
            int64_t idx[4];
            idx[perm[0]] = a;
            idx[perm[1]] = b;
            idx[perm[2]] = c;
            idx[perm[3]] = d;
            want[k++] = x[((idx[0] * 3 + idx[1]) * 4 + idx[2]) * 5 + idx[3]];
          }
    const Attrs attrs =
        perm == perms[0]
            ? Attrs{}
            : Attrs{{"axes", "(" + std::to_string(perm[0]) + "," + std::to_string(perm[1]) + "," +
                                 std::to_string(perm[2]) + "," + std::to_string(perm[3]) + ")"}};
    Check("transpose", {t}, attrs, want, o);
  }
  // int64 and uint8 elements.
  auto i = Make<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(*(*Invoke("transpose", {i}))[0].ToHost<int64_t>(),
            (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  auto b = Make<uint8_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(*(*Invoke("transpose", {b}))[0].ToHost<uint8_t>(),
            (std::vector<uint8_t>{1, 3, 5, 2, 4, 6}));
}

TEST_P(ShapeTest, SliceAndConcatMatchNaiveLoops) {
  const auto x = Iota(60);
  auto t = Make<float>(x, {3, 4, 5});
  std::vector<float> want;
  for (int a = 1; a < 3; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 1; c < 4; ++c) want.push_back(x[(a * 4 + b) * 5 + c]);
  Check("slice", {t}, {{"begin", "(1, 0, 1)"}, {"end", "(3, 4, -1)"}}, want, {2, 4, 3});
  Check("slice", {t}, {{"begin", "(1,)"}, {"end", "(2,)"}},
        std::vector<float>(x.begin() + 20, x.begin() + 40), {1, 4, 5});
  // concat along 1 of [2,1,3], [2,2,3].
  const auto a = Iota(6), b = RandomData<float>(12, 3);
  auto ta = Make<float>(a, {2, 1, 3});
  auto tb = Make<float>(b, {2, 2, 3});
  std::vector<float> cw;
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) cw.push_back(a[i * 3 + k]);
    for (int k = 0; k < 6; ++k) cw.push_back(b[i * 6 + k]);
  }
  Check("concat", {ta, tb}, {{"axis", "1"}}, cw, {2, 3, 3});
  std::vector<float> c0(a);
  c0.insert(c0.end(), a.begin(), a.end());
  Check("concat", {ta, ta}, {{"axis", "-3"}}, c0, {4, 1, 3});
}

TEST_P(ShapeTest, CastBetweenEveryTypePair) {
  const std::vector<double> vals = {0, 1, 2.5, -3, 100, 0.333251953125, 65504};
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      // Values every source type holds exactly (non-negative for uint8).
      std::vector<double> src;
      for (double v : vals) {
        if (from == DType::kU8 && (v < 0 || v > 255)) continue;
        if (to == DType::kU8 && (v < 0 || v > 255)) continue;
        if (from == DType::kBool && v != 0 && v != 1) continue;
        if ((from == DType::kI32 || from == DType::kI64 || from == DType::kU8) &&
            v != std::floor(v))
          continue;
        src.push_back(v);
      }
      const int fs = DTypeSize(from), ts = DTypeSize(to);
      std::vector<char> bytes(src.size() * fs);
      for (size_t i = 0; i < src.size(); ++i) {
        const double v = src[i];
        switch (from) {
          case DType::kF32: {
            float f = v;
            std::memcpy(&bytes[i * fs], &f, fs);
            break;
          }
          case DType::kF64:
            std::memcpy(&bytes[i * fs], &v, fs);
            break;
          case DType::kF16: {
            uint16_t h = FloatToHalf(v);
            std::memcpy(&bytes[i * fs], &h, fs);
            break;
          }
          case DType::kI32: {
            int32_t k = v;
            std::memcpy(&bytes[i * fs], &k, fs);
            break;
          }
          case DType::kI64: {
            int64_t k = v;
            std::memcpy(&bytes[i * fs], &k, fs);
            break;
          }
          default: {
            uint8_t k = v != 0 ? static_cast<uint8_t>(v) : 0;
            bytes[i] = static_cast<char>(k);
          }
        }
      }
      auto t =
          *Tensor::FromHostBytes(bytes.data(), bytes.size(), {static_cast<int64_t>(src.size())},
                                 from, ctx(), engine_.get());
      auto r = Invoke("cast", {t}, {{"dtype", DTypeName(to)}});
      const std::string what =
          std::string(DTypeName(from)) + " -> " + DTypeName(to) + " on " + ctx().ToString();
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      std::vector<char> out(src.size() * ts);
      ASSERT_TRUE((*r)[0].ToHostBytes(out.data(), out.size()).ok()) << what;
      for (size_t i = 0; i < src.size(); ++i) {
        // The value as the source holds it.
        double v = src[i];
        if (from == DType::kF16) v = HalfToFloat(FloatToHalf(v));
        if (from == DType::kF32) v = static_cast<float>(v);
        double got = 0, want = 0;
        switch (to) {
          case DType::kF32: {
            float f;
            std::memcpy(&f, &out[i * ts], 4);
            got = f;
            want = static_cast<float>(v);
            break;
          }
          case DType::kF64:
            std::memcpy(&got, &out[i * ts], 8);
            want = v;
            break;
          case DType::kF16: {
            uint16_t h;
            std::memcpy(&h, &out[i * ts], 2);
            got = HalfToFloat(h);
            want = HalfToFloat(FloatToHalf(v));
            break;
          }
          case DType::kI32: {
            int32_t k;
            std::memcpy(&k, &out[i * ts], 4);
            got = k;
            want = static_cast<int32_t>(v);
            break;
          }
          case DType::kI64: {
            int64_t k;
            std::memcpy(&k, &out[i * ts], 8);
            got = k;
            want = static_cast<int64_t>(v);
            break;
          }
          case DType::kU8:
            got = static_cast<uint8_t>(out[i]);
            want = static_cast<uint8_t>(v);
            break;
          case DType::kBool:
            got = static_cast<uint8_t>(out[i]);
            want = v != 0 ? 1 : 0;
            break;
        }
        EXPECT_EQ(got, want) << what << " of " << v;
      }
    }
  }
}

// Float to integer by the rule of docs/integer-semantics.md, spelled apart
// from float_to_int.h: NaN 0; the value truncated toward zero, then
// saturated to D's range.
template <typename D>
D WantFloatToInt(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  const int bits = static_cast<int>(sizeof(D)) * 8 - (std::is_signed_v<D> ? 1 : 0);
  if (t < static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
  if (t >= std::ldexp(1.0, bits)) return std::numeric_limits<D>::max();
  return static_cast<D>(t);
}

template <typename D>
void ExpectFloatToInt(const std::vector<char>& out, const std::vector<double>& held,
                      const std::string& what) {
  for (size_t i = 0; i < held.size(); ++i) {
    D got;
    std::memcpy(&got, &out[i * sizeof(D)], sizeof(D));
    EXPECT_EQ(got, WantFloatToInt<D>(held[i])) << what << " of " << held[i];
  }
}

// NaN, infinities and values beyond the integer type's range have one
// result on every context (a plain C conversion of them is undefined: x86
// gave INT_MIN, CUDA saturated).
TEST_P(ShapeTest, CastFloatToIntegerSaturatesOnEveryContext) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> vals = {std::nan(""),
                                    inf,
                                    -inf,
                                    1e30,
                                    -1e30,
                                    2.9,
                                    -2.9,
                                    -0.5,
                                    0.99,
                                    255.9,
                                    256,
                                    -1,
                                    65504,
                                    2147483647.5,
                                    2147483648.0,
                                    -2147483648.5,
                                    -2147483649.0,
                                    9.3e18,
                                    -9.3e18,
                                    9223372036854775807.0,
                                    -9223372036854775808.0,
                                    1e300};
  for (DType from : {DType::kF32, DType::kF64, DType::kF16}) {
    const int fs = DTypeSize(from);
    std::vector<char> bytes(vals.size() * fs);
    std::vector<double> held(vals.size());  // The value as the source holds it.
    for (size_t i = 0; i < vals.size(); ++i) {
      const double v = vals[i];
      const float f = std::isfinite(v) && std::fabs(v) > 3e38 ? std::copysign(INFINITY, v)
                                                              : static_cast<float>(v);
      if (from == DType::kF64) {
        std::memcpy(&bytes[i * fs], &v, fs);
        held[i] = v;
      } else if (from == DType::kF32) {
        std::memcpy(&bytes[i * fs], &f, fs);
        held[i] = f;
      } else {
        const uint16_t h = FloatToHalf(f);
        std::memcpy(&bytes[i * fs], &h, fs);
        held[i] = HalfToFloat(h);
      }
    }
    auto t = *Tensor::FromHostBytes(bytes.data(), bytes.size(), {static_cast<int64_t>(vals.size())},
                                    from, ctx(), engine_.get());
    for (DType to : {DType::kI32, DType::kI64, DType::kU8, DType::kBool}) {
      const std::string what =
          std::string(DTypeName(from)) + " -> " + DTypeName(to) + " on " + ctx().ToString();
      auto r = Invoke("cast", {t}, {{"dtype", DTypeName(to)}});
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      std::vector<char> out(vals.size() * DTypeSize(to));
      ASSERT_TRUE((*r)[0].ToHostBytes(out.data(), out.size()).ok()) << what;
      if (to == DType::kI32) ExpectFloatToInt<int32_t>(out, held, what);
      if (to == DType::kI64) ExpectFloatToInt<int64_t>(out, held, what);
      if (to == DType::kU8) ExpectFloatToInt<uint8_t>(out, held, what);
      if (to == DType::kBool) {
        for (size_t i = 0; i < held.size(); ++i)  // NaN is nonzero: true.
          EXPECT_EQ(out[i], held[i] != 0 ? 1 : 0) << what << " of " << held[i];
      }
    }
  }
}

// Integer to integer narrows modulo 2^bits on every context.
TEST_P(ShapeTest, CastBetweenIntegersWraps) {
  const std::vector<int64_t> wide = {(int64_t{1} << 32) + 5, -1, int64_t{1} << 31, 300,
                                     std::numeric_limits<int64_t>::min()};
  auto t = Make<int64_t>(wide, {static_cast<int64_t>(wide.size())});
  auto r32 = Invoke("cast", {t}, {{"dtype", "int32"}});
  ASSERT_TRUE(r32.ok()) << r32.status();
  EXPECT_EQ(*(*r32)[0].ToHost<int32_t>(),
            (std::vector<int32_t>{5, -1, std::numeric_limits<int32_t>::min(), 300, 0}))
      << ctx().ToString();
  auto r8 = Invoke("cast", {t}, {{"dtype", "uint8"}});
  ASSERT_TRUE(r8.ok()) << r8.status();
  EXPECT_EQ(*(*r8)[0].ToHost<uint8_t>(), (std::vector<uint8_t>{5, 255, 0, 44, 0}))
      << ctx().ToString();
  auto r32to8 = Invoke("cast", {(*r32)[0]}, {{"dtype", "uint8"}});
  ASSERT_TRUE(r32to8.ok()) << r32to8.status();
  EXPECT_EQ(*(*r32to8)[0].ToHost<uint8_t>(), (std::vector<uint8_t>{5, 255, 0, 44, 0}))
      << ctx().ToString();
}

TEST_P(ShapeTest, HalfConversionRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between two halves: to even (1.0); 1 + 3 * 2^-11 to 1 + 2^-9.
  const std::vector<float> x = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, 1e-8f, -2.0f,
                                0x1p-24f};
  auto t = Make<float>(x, {6});
  auto h = Invoke("cast", {t}, {{"dtype", "float16"}});
  ASSERT_TRUE(h.ok()) << h.status();
  uint16_t b[6];
  ASSERT_TRUE((*h)[0].ToHostBytes(b, 12).ok());
  EXPECT_EQ(b[0], 0x3C00);
  EXPECT_EQ(b[1], 0x3C02);
  EXPECT_EQ(b[2], 0x7C00);  // Overflow: infinity.
  EXPECT_EQ(b[3], 0x0000);
  EXPECT_EQ(b[4], 0xC000);
  EXPECT_EQ(b[5], 0x0001);  // Smallest subnormal.
  auto back = Invoke("cast", {(*h)[0]}, {{"dtype", "float32"}});
  ASSERT_TRUE(back.ok()) << back.status();
  const auto f = *(*back)[0].ToHost<float>();
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(f[2]));
  EXPECT_EQ(f[5], 0x1p-24f);
}

// The gradient functions give the adjoint: <g(dy), x> = <dy, f(x)>.
TEST_P(ShapeTest, GradientsAreAdjoints) {
  const auto x = RandomData<double>(24, 21), y = RandomData<double>(24, 22);
  auto tx = Make<double>(x, {2, 3, 4});
  struct Case {
    const char* op;
    Attrs attrs;
  };
  const Case cases[] = {{"transpose", {{"axes", "(1, 2, 0)"}}},
                        {"reshape", {{"shape", "(6, 4)"}}},
                        {"flatten", {}},
                        {"slice", {{"begin", "(0, 1)"}, {"end", "(2, 3)"}}},
                        {"concat", {{"axis", "2"}}}};
  for (const Case& c : cases) {
    const OpDef& op = BuiltinOp(c.op);
    std::vector<Tensor> in = {tx};
    if (std::string(c.op) == "concat") in.push_back(tx);
    auto params = *op.params().Parse(c.op, c.attrs);
    auto fx = Invoke(op, in, params);
    ASSERT_TRUE(fx.ok()) << c.op << ": " << fx.status();
    const int64_t n = (*fx)[0].NumElements();
    const auto dy = RandomData<double>(n, 23);
    auto tdy = Make<double>(dy, (*fx)[0].shape());
    GradientContext gc;
    gc.params = params.get();
    gc.inputs = in;
    gc.outputs = *fx;
    std::vector<Tensor> og = {tdy};
    gc.out_grads = og;
    auto g = op.gradient()(gc);
    ASSERT_TRUE(g.ok()) << c.op << ": " << g.status();
    const auto f = *(*fx)[0].ToHost<double>();
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < n; ++i) rhs += dy[i] * f[i];
    for (const Tensor& gi : *g) {
      const auto gv = *gi.ToHost<double>();
      ASSERT_EQ(gv.size(), x.size()) << c.op;
      for (size_t i = 0; i < x.size(); ++i) lhs += gv[i] * x[i];
    }
    EXPECT_NEAR(lhs, rhs, 1e-9) << c.op << " on " << ctx().ToString();
  }
  (void)y;
}

// ONNX Gather by the definition: out[o, k, i] = data[o, j(k), i] around
// `axis`, with j(k) = indices[k], + dim when negative. Elements as bytes.
std::vector<char> NaiveGather(const std::vector<char>& data, const Shape& ds, int size,
                              const std::vector<int64_t>& idx, int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= ds[d];
  for (int d = axis + 1; d < ds.rank(); ++d) inner *= ds[d];
  const int64_t n = ds[axis];
  std::vector<char> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t v : idx) {
      const int64_t j = v < 0 ? v + n : v;
      for (int64_t i = 0; i < inner * size; ++i)
        out.push_back(data[(o * n + j) * inner * size + i]);
    }
  }
  return out;
}

// Indices as a tensor of int32 or int64.
Tensor MakeIndices(const std::vector<int64_t>& v, const Shape& s, DType t, Context ctx,
                   engine::Engine* eng) {
  if (t == DType::kI64) return *Tensor::FromHost<int64_t>(v, s, ctx, eng);
  std::vector<int32_t> w(v.begin(), v.end());
  return *Tensor::FromHost<int32_t>(w, s, ctx, eng);
}

TEST_P(ShapeTest, GatherMatchesNaiveLoopsForEveryTypeAxisAndIndexType) {
  struct Case {
    Shape data;
    int axis;
    Shape indices;
    std::vector<int64_t> idx;
  };
  const Case cases[] = {
      {{3, 4, 5}, 0, {2}, {2, -1}},    {{3, 4, 5}, 1, {2, 3}, {0, -1, 3, -4, 1, 1}},
      {{3, 4, 5}, -1, {}, {-2}},       {{3, 4, 5}, -2, {4}, {3, 3, 0, -3}},
      {{6}, 0, {2, 2}, {5, -6, 0, 2}}, {{2, 3}, 1, {0}, {}},
  };
  for (const Case& c : cases) {
    const int axis = c.axis < 0 ? c.axis + c.data.rank() : c.axis;
    Shape want_shape;
    for (int d = 0; d < axis; ++d) want_shape.mutable_dims().push_back(c.data[d]);
    for (int64_t d : c.indices.span()) want_shape.mutable_dims().push_back(d);
    for (int d = axis + 1; d < c.data.rank(); ++d) want_shape.mutable_dims().push_back(c.data[d]);
    const Attrs attrs = {{"axis", std::to_string(c.axis)}};
    for (DType it : {DType::kI32, DType::kI64}) {
      Tensor ti = MakeIndices(c.idx, c.indices, it, ctx(), engine_.get());
      // float32 under write, add and null requests.
      const int64_t n = c.data.NumElements();
      const auto x = RandomData<float>(n, 31);
      std::vector<char> xb(n * 4);
      if (!xb.empty()) std::memcpy(xb.data(), x.data(), xb.size());  // Empty: null pointers.
      const auto wb = NaiveGather(xb, c.data, 4, c.idx, axis);
      std::vector<float> want(wb.size() / 4);
      if (!wb.empty()) std::memcpy(want.data(), wb.data(), wb.size());
      Check("gather", {Make<float>(x, c.data), ti}, attrs, want, want_shape);
      // Every type as bytes (bool as 0/1; float16 as bits).
      for (DType dt : kAllDTypes) {
        const int size = DTypeSize(dt);
        std::vector<char> bytes(n * size);
        for (size_t i = 0; i < bytes.size(); ++i) {
          bytes[i] = static_cast<char>(dt == DType::kBool ? i % 2 : (i * 37 + 11) % 127);
        }
        auto td =
            *Tensor::FromHostBytes(bytes.data(), bytes.size(), c.data, dt, ctx(), engine_.get());
        const std::string what = absl::StrCat("gather ", DTypeName(dt), c.data.ToString(), " axis ",
                                              c.axis, " ", DTypeName(it), " indices ",
                                              c.indices.ToString(), " on ", ctx().ToString());
        auto r = ops::Gather(td, ti, c.axis);
        ASSERT_TRUE(r.ok()) << what << ": " << r.status();
        EXPECT_EQ(r->dtype(), dt) << what;
        ASSERT_EQ(r->shape(), want_shape) << what;
        std::vector<char> got(want_shape.NumElements() * size);
        ASSERT_TRUE(r->ToHostBytes(got.data(), got.size()).ok()) << what;
        EXPECT_EQ(got, NaiveGather(bytes, c.data, size, c.idx, axis)) << what;
      }
    }
  }
}

// _backward_gather and gather's gradient: zeros shaped as data, each dy
// slice added at its index (duplicates accumulate), none to the indices.
TEST_P(ShapeTest, GatherGradientAccumulatesDuplicateIndices) {
  struct Case {
    Shape data;
    int axis;
    Shape indices;
    std::vector<int64_t> idx;
  };
  const Case cases[] = {
      {{4, 3}, 0, {5}, {2, 0, 2, -1, -2}},
      {{2, 5, 3}, 1, {2, 3}, {4, 4, -1, 0, 1, 4}},
      {{2, 3}, -1, {3}, {-3, 0, 0}},
      {{2, 3}, 0, {0}, {}},
  };
  for (const Case& c : cases) {
    const int axis = c.axis < 0 ? c.axis + c.data.rank() : c.axis;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= c.data[d];
    for (int d = axis + 1; d < c.data.rank(); ++d) inner *= c.data[d];
    const int64_t n = c.data[axis], k = c.indices.NumElements();
    for (DType it : {DType::kI32, DType::kI64}) {
      const std::string what = absl::StrCat("gather gradient ", c.data.ToString(), " axis ", c.axis,
                                            " ", DTypeName(it), " on ", ctx().ToString());
      Tensor ti = MakeIndices(c.idx, c.indices, it, ctx(), engine_.get());
      auto tx = Make<double>(RandomData<double>(c.data.NumElements(), 41), c.data);
      auto y = ops::Gather(tx, ti, c.axis);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status();
      const auto dy = RandomData<double>(outer * k * inner, 42);
      auto tdy = Make<double>(dy, y->shape());
      std::vector<double> want(c.data.NumElements(), 0.0);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t q = 0; q < k; ++q)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t j = c.idx[q] < 0 ? c.idx[q] + n : c.idx[q];
            want[(o * n + j) * inner + i] += dy[(o * k + q) * inner + i];
          }
      std::vector<Tensor> in = {tx, ti}, out = {*y}, og = {tdy};
      const OpDef& op = BuiltinOp("gather");
      auto params = *op.params().Parse("gather", {{"axis", std::to_string(c.axis)}});
      auto g = op.gradient()(GradientContext{params.get(), in, out, og});
      ASSERT_TRUE(g.ok()) << what << ": " << g.status();
      ASSERT_EQ(g->size(), 2u) << what;
      EXPECT_FALSE((*g)[1].defined()) << what;
      EXPECT_EQ((*g)[0].shape(), c.data) << what;
      ExpectNear(*(*g)[0].ToHost<double>(), want, 1e-12, what);
      // float32 through the backward op directly, written over a dirty output.
      std::vector<float> dyf(dy.begin(), dy.end()), wantf(want.begin(), want.end());
      auto txf = Make<float>(std::vector<float>(c.data.NumElements(), 7.f), c.data);
      auto dirty = Make<float>(std::vector<float>(c.data.NumElements(), 3.f), c.data);
      ASSERT_TRUE(Invoke("_backward_gather", {Make<float>(dyf, y->shape()), txf, ti},
                         {{"axis", std::to_string(c.axis)}}, {dirty})
                      .ok())
          << what;
      ExpectNear(*dirty.ToHost<float>(), wantf, 1e-6, what + " float32");
    }
  }
}

// An index out of [-dim, dim) fails gather and its backward with the host
// kernels' InvalidArgument on every context: device kernels check the
// indices first (ops/device_check.h) instead of clamping them.
TEST_P(ShapeTest, GatherIndexOutOfRange) {
  auto data = Make<float>(Iota(8), {2, 4});
  auto bad = Make<int64_t>({1, 7}, {2});
  auto low = Make<int32_t>({-5}, {1});
  auto huge = Make<int64_t>({0, 3, -4, int64_t{1} << 40}, {4});
  auto dy = Make<float>(std::vector<float>(4, 1.f), {2, 2});
  auto dy_low = Make<float>(std::vector<float>(2, 1.f), {2, 1});
  const struct {
    const char* op;
    std::vector<Tensor> in;
    const char* axis;
    std::string message;
  } cases[] = {
      {"gather", {data, bad}, "1", "index 7 (at 1) is out of range for a dim of size 4"},
      {"gather", {data, low}, "-1", "index -5 (at 0) is out of range for a dim of size 4"},
      {"gather",
       {data, huge},
       "1",
       "index 1099511627776 (at 3) is out of range for a dim of size 4 (valid: [-4, 4))"},
      {"_backward_gather",
       {dy, data, bad},
       "1",
       "index 7 (at 1) is out of range for a dim of size 4"},
      {"_backward_gather",
       {dy_low, data, low},
       "1",
       "index -5 (at 0) is out of range for a dim of size 4"},
  };
  for (const auto& c : cases) {
    const std::string what = absl::StrCat(c.op, " on ", ctx().ToString(), ": ", c.message);
    auto r = Invoke(c.op, c.in, {{"axis", c.axis}});
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();  // Checked as the kernel runs.
    const absl::Status s = (*r)[0].WaitToRead();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what << ": " << s;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << what << ": " << s;
  }
  // In range (negative from the end) still works after a failure.
  auto ok = Invoke("gather", {data, Make<int32_t>({-1, 0}, {2})}, {{"axis", "1"}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*(*ok)[0].ToHost<float>(), (std::vector<float>{3, 0, 7, 4}));
}

TEST_P(ShapeTest, GatherRejectsBadArguments) {
  auto data = Make<float>(Iota(6), {2, 3});
  auto idx = Make<int32_t>({0, 1}, {2});
  auto r = Invoke("gather", {data, idx}, {{"axis", "2"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("axis 2 is out of range for rank 2"), std::string::npos)
      << r.status();
  r = Invoke("gather", {data, Make<float>({0, 1}, {2})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("int32 or int64"), std::string::npos) << r.status();
  r = Invoke("gather", {Make<float>({}, {0, 3}), idx});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("empty"), std::string::npos) << r.status();
  r = Invoke("gather", {Make<float>({1}, Shape{}), idx});  // A scalar has no axis.
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = Invoke("_backward_gather", {Make<float>(Iota(6), {3, 2}), data, idx}, {{"axis", "1"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("[2, 2]"), std::string::npos) << r.status();
}

TEST_P(ShapeTest, BadInputsGetClearErrors) {
  auto t = Make<float>(Iota(6), {2, 3});
  auto r = Invoke("reshape", {t}, {{"shape", "(4, -1)"}});
  EXPECT_NE(r.status().message().find("shape=(4, -1)"), std::string::npos) << r.status();
  r = Invoke("reshape", {t}, {{"shape", "(-1, -1)"}});
  EXPECT_NE(r.status().message().find("more than one -1"), std::string::npos) << r.status();
  r = Invoke("reshape", {t}, {{"shape", "(4611686018427387904, 4)"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = Invoke("transpose", {t}, {{"axes", "(0, 0)"}});
  EXPECT_NE(r.status().message().find("axes=(0, 0)"), std::string::npos) << r.status();
  r = Invoke("slice", {t}, {{"begin", "(0, 2)"}, {"end", "(2, 5)"}});
  EXPECT_NE(r.status().message().find("[2, 5)"), std::string::npos) << r.status();
  auto u = Make<float>(Iota(4), {2, 2});
  r = Invoke("concat", {t, u}, {{"axis", "0"}});
  EXPECT_NE(r.status().message().find("[2, 2]"), std::string::npos) << r.status();
  r = Invoke("concat", {t, t}, {{"axis", "2"}});
  EXPECT_NE(r.status().message().find("axis"), std::string::npos) << r.status();
  r = Invoke("cast", {t}, {{"dtype", "int8"}});
  EXPECT_NE(r.status().message().find("int8"), std::string::npos) << r.status();
}

INSTANTIATE_TEST_SUITE_P(AllContexts, ShapeTest, ::testing::ValuesIn(testing::OpSuiteContexts()),
                         testing::ContextName);

}  // namespace
}  // namespace rill::ops
