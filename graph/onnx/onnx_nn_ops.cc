// Converters of the neural-network ONNX ops (Conv, pooling, normalization,
// Gemm, MatMul): 2-D windows with symmetric padding, inference-form
// normalization composed from elementwise and reduce ops.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {
namespace {

using L = NodeLowering;

constexpr uint32_t kF32 = DTypeBit(DType::kF32);
constexpr uint32_t kFloat = kFloatTypes;

// ------------------------------------------------------------------------- nn

struct Window {
  std::vector<int64_t> kernel, stride, pad, dilation;
};

// 2-D window attributes with symmetric padding (auto_pad resolved).
absl::StatusOr<Window> WindowOf(L& l, std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  if (w.kernel.size() != 2) {
    return L::Unsupported(
        absl::StrCat("only 2-D windows (kernel_shape has ", w.kernel.size(), " axes)"));
  }
  w.stride = l.Ints("strides");
  if (w.stride.empty()) w.stride = {1, 1};
  w.dilation = l.Ints("dilations");
  if (w.dilation.empty()) w.dilation = {1, 1};
  const std::string auto_pad = l.String("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> p = l.Ints("pads");
    if (p.empty()) p = {0, 0, 0, 0};
    if (p.size() != 4) return absl::InvalidArgumentError("pads must have 4 values");
    if (p[0] != p[2] || p[1] != p[3]) {
      return L::Unsupported(absl::StrCat("asymmetric pads (", absl::StrJoin(p, ", "), ")"));
    }
    w.pad = {p[0], p[1]};
  } else if (auto_pad == "VALID") {
    w.pad = {0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "auto_pad SAME"));
    if (dims.size() != 4) return L::Unsupported("only 2-D windows (4-D input)");
    for (int i = 0; i < 2; ++i) {
      const int64_t in = dims[2 + i], s = w.stride[i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * s + (w.kernel[i] - 1) * w.dilation[i] + 1 - in);
      if (total % 2 != 0)
        return L::Unsupported(absl::StrCat("auto_pad ", auto_pad, " with odd total padding"));
      w.pad.push_back(total / 2);
    }
  } else {
    return L::Unsupported(absl::StrCat("auto_pad ", auto_pad));
  }
  return w;
}

absl::Status Conv(L& l) {
  std::vector<int64_t> kernel = l.Ints("kernel_shape");
  if (kernel.empty()) {
    auto wd = l.Dims(1);
    if (!wd || wd->size() < 2) return L::Unsupported("needs kernel_shape or the weight's rank");
    kernel.assign(wd->begin() + 2, wd->end());
  }
  if (auto r = l.Rank(0); r && *r != 4)
    return L::Unsupported(absl::StrCat("only 2-D convolution (input rank ", *r, ")"));
  RILL_ASSIGN_OR_RETURN(Window w, WindowOf(l, kernel));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry wt, l.In(1));
  Entry y = l.Op(op_names::kConv2d, {x, wt},
                 {{"stride", IntsAttr(w.stride)},
                  {"pad", IntsAttr(w.pad)},
                  {"dilation", IntsAttr(w.dilation)},
                  {"num_group", absl::StrCat(l.Int("group", 1))}});
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(Entry b, l.In(2));
    y = l.Op(op_names::kAdd, {y, l.Op(op_names::kReshape, {b}, {{"shape", "(1, -1, 1, 1)"}})});
  }
  return Out(l, y);
}

template <bool kMax>
absl::Status Pool(L& l) {
  if (l.wants_output(1)) return L::Unsupported("the Indices output");
  if (auto r = l.Rank(0); r && *r != 4)
    return L::Unsupported(absl::StrCat("only 2-D pooling (input rank ", *r, ")"));
  RILL_ASSIGN_OR_RETURN(Window w, WindowOf(l, l.Ints("kernel_shape")));
  if (w.dilation != std::vector<int64_t>{1, 1}) return L::Unsupported("dilations other than 1");
  if (l.Int("ceil_mode", 0) != 0) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "ceil_mode"));
    for (int i = 0; i < 2; ++i) {
      const int64_t span = dims[2 + i] + 2 * w.pad[i] - w.kernel[i];
      if (span % w.stride[i] != 0) return L::Unsupported("ceil_mode=1 where it rounds up");
    }
  }
  ops::Attrs a = {{"kernel", IntsAttr(w.kernel)},
                  {"stride", IntsAttr(w.stride)},
                  {"pad", IntsAttr(w.pad)},
                  {"pool_type", kMax ? "max" : "avg"}};
  if (!kMax) a.push_back({"count_include_pad", l.Int("count_include_pad", 0) ? "true" : "false"});
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kPooling, {x}, a));
}

template <bool kMax>
absl::Status GlobalPool(L& l) {
  RILL_ASSIGN_OR_RETURN(int r, NeedRank(l, 0, "global pooling reduces axes 2.."));
  std::vector<int64_t> axes;
  for (int i = 2; i < r; ++i) axes.push_back(i);
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(kMax ? op_names::kMax : op_names::kMean, {x},
                     {{"axes", IntsAttr(axes)}, {"keepdims", "true"}}));
}

// A per-channel [C] vector shaped to broadcast against NCHW... of rank r.
Entry PerChannel(L& l, Entry v, int r) {
  std::vector<int64_t> s = {-1};
  for (int i = 2; i < r; ++i) s.push_back(1);
  return l.Op(op_names::kReshape, {v}, {{"shape", IntsAttr(s)}});
}

absl::Status BatchNormalization(L& l) {
  if (l.Int("training_mode", 0) != 0)
    return L::Unsupported("training_mode=1 (Rill imports inference graphs)");
  for (int i = 1; i < l.num_outputs(); ++i) {
    if (l.wants_output(i)) return L::Unsupported("running mean/var outputs (training mode)");
  }
  RILL_ASSIGN_OR_RETURN(int r, NeedRank(l, 0, "per-channel parameters broadcast over axes 2.."));
  if (r < 2) return absl::InvalidArgumentError("BatchNormalization input needs rank >= 2");
  std::vector<Entry> in;
  for (int i = 0; i < 5; ++i) {
    RILL_ASSIGN_OR_RETURN(Entry e, l.In(i));
    in.push_back(e);
  }
  // y = (x - mean) * (scale / sqrt(var + eps)) + bias.
  Entry sd = l.Op(op_names::kSqrt, {l.Op(op_names::kAddScalar, {in[4]},
                                         {{"scalar", FloatAttr(l.Float("epsilon", 1e-5f))}})});
  Entry k = l.Op(op_names::kDiv, {in[1], sd});
  Entry y = l.Op(op_names::kSub, {in[0], PerChannel(l, in[3], r)});
  y = l.Op(op_names::kMul, {y, PerChannel(l, k, r)});
  return Out(l, l.Op(op_names::kAdd, {y, PerChannel(l, in[2], r)}));
}

// (x - mean) / sqrt(var + eps) over `axes`, also returning mean and 1/std.
struct Normalized {
  Entry y, mean, inv_std;
};
Normalized Normalize(L& l, Entry x, const std::vector<int64_t>& axes, double eps) {
  const ops::Attrs red = {{"axes", IntsAttr(axes)}, {"keepdims", "true"}};
  Normalized n;
  n.mean = l.Op(op_names::kMean, {x}, red);
  Entry d = l.Op(op_names::kSub, {x, n.mean});
  Entry var = l.Op(op_names::kMean, {l.Op(op_names::kSquare, {d})}, red);
  n.inv_std = l.Op(
      op_names::kRdivScalar,
      {l.Op(op_names::kSqrt, {l.Op(op_names::kAddScalar, {var}, {{"scalar", FloatAttr(eps)}})})},
      {{"scalar", "1"}});
  n.y = l.Op(op_names::kMul, {d, n.inv_std});
  return n;
}

absl::Status InstanceNormalization(L& l) {
  RILL_ASSIGN_OR_RETURN(int r, NeedRank(l, 0, "normalizes over axes 2.."));
  std::vector<int64_t> axes;
  for (int i = 2; i < r; ++i) axes.push_back(i);
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry scale, l.In(1));
  RILL_ASSIGN_OR_RETURN(Entry bias, l.In(2));
  Normalized n = Normalize(l, x, axes, l.Float("epsilon", 1e-5f));
  Entry y = l.Op(op_names::kMul, {n.y, PerChannel(l, scale, r)});
  return Out(l, l.Op(op_names::kAdd, {y, PerChannel(l, bias, r)}));
}

absl::Status LayerNormalization(L& l) {
  RILL_ASSIGN_OR_RETURN(int r, NeedRank(l, 0, "normalizes over axes from axis"));
  RILL_ASSIGN_OR_RETURN(int64_t axis, NormAxis(l.Int("axis", -1), r));
  if (l.Int("stash_type", 1) != 1) return L::Unsupported("stash_type other than float");
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry scale, l.In(1));
  Normalized n = Normalize(l, x, axes, l.Float("epsilon", 1e-5f));
  Entry y = l.Op(op_names::kMul, {n.y, scale});
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(Entry b, l.In(2));
    y = l.Op(op_names::kAdd, {y, b});
  }
  l.SetOutput(0, y);
  l.SetOutput(1, n.mean);
  l.SetOutput(2, n.inv_std);
  return absl::OkStatus();
}

absl::Status Gemm(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  Entry y = l.Op(op_names::kMatmul, {a, b},
                 {{"transpose_a", l.Int("transA", 0) ? "true" : "false"},
                  {"transpose_b", l.Int("transB", 0) ? "true" : "false"}});
  const double alpha = l.Float("alpha", 1.f), beta = l.Float("beta", 1.f);
  if (alpha != 1) y = l.Op(op_names::kMulScalar, {y}, {{"scalar", FloatAttr(alpha)}});
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(Entry c, l.In(2));
    if (beta != 1) c = l.Op(op_names::kMulScalar, {c}, {{"scalar", FloatAttr(beta)}});
    y = l.Op(op_names::kAdd, {y, c});
  }
  return Out(l, y);
}

// NumPy matmul: equal ranks with equal batch dimensions map directly; 1-D
// operands and a 2-D right operand under a batched left one are reshaped.
absl::Status MatMul(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  auto da = l.Dims(0), db = l.Dims(1);
  if (da && db && da->size() == db->size() && da->size() >= 2) {
    for (size_t i = 0; i + 2 < da->size(); ++i) {
      if ((*da)[i] != (*db)[i]) return L::Unsupported("broadcasting batch dimensions");
    }
    return Out(l, l.Op(op_names::kMatmul, {a, b}));
  }
  auto sa = l.StaticDims(0), sb = l.StaticDims(1);
  if (!sa || !sb) {
    if (!da || !db) return L::Unsupported("needs the ranks of its inputs");
    return L::Unsupported("operands of different ranks need static shapes");
  }
  std::vector<int64_t> out;
  std::vector<int64_t> A = *sa, B = *sb;
  if (A.size() == 1) A.insert(A.begin(), 1);
  if (B.size() == 1) B.push_back(1);
  if (A.size() < 2 || B.size() != 2) return L::Unsupported("broadcasting batch dimensions");
  out.assign(A.begin(), A.end() - 1);
  out.push_back(B[1]);
  Entry a2 = l.Op(op_names::kReshape, {a}, {{"shape", IntsAttr({-1, A.back()})}});
  Entry b2 = sb->size() == 1 ? l.Op(op_names::kReshape, {b}, {{"shape", IntsAttr(B)}}) : b;
  Entry y = l.Op(op_names::kMatmul, {a2, b2});
  if (sa->size() == 1) out.erase(out.end() - 2);
  if (sb->size() == 1) out.pop_back();
  return Out(l, l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(out)}}));
}

}  // namespace

void AddNnConverters(ConverterTable& t) {
  t.insert({
      {"AveragePool", {Pool<false>, kF32}},
      {"BatchNormalization", {BatchNormalization, kFloat}},
      {"Conv", {Conv, kF32}},
      {"Gemm", {Gemm, kFloat}},
      {"GlobalAveragePool", {GlobalPool<false>, kFloat}},
      {"GlobalMaxPool", {GlobalPool<true>, kFloat}},
      {"InstanceNormalization", {InstanceNormalization, kFloat}},
      {"LayerNormalization", {LayerNormalization, kFloat}},
      {"MatMul", {MatMul, kFloat}},
      {"MaxPool", {Pool<true>, kF32}},
  });
}

}  // namespace rill::graph
