// Converters of the ONNX reductions, ArgMax/ArgMin, Softmax/LogSoftmax
// and Hardmax.

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {
namespace {

using L = NodeLowering;

constexpr uint32_t kFloat = kFloatTypes;
constexpr uint32_t kSum = kFloatTypes | DTypeBit(DType::kI32) | DTypeBit(DType::kI64);

// ----------------------------------------------------------------- reductions

// y = f(x) reduced by `op`, then g(y). Axes from the attribute (or, for
// ReduceSum since 13, input 1).
absl::Status Reduce(L& l, const char* pre, const char* op, const char* post) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        AxesOf(l, l.node().op_type() == "ReduceSum" ? 1 : -1));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  if (axes.empty() && l.Int("noop_with_empty_axes", 0) != 0)
    return Out(l, l.Op(op_names::kIdentity, {x}));
  const bool keep = l.Int("keepdims", 1) != 0;
  if (pre) x = l.Op(pre, {x});
  Entry y = l.Op(op, {x}, {{"axes", IntsAttr(axes)}, {"keepdims", keep ? "true" : "false"}});
  if (post) y = l.Op(post, {y});
  return Out(l, y);
}
absl::Status ReduceProd(L& l) { return Reduce(l, nullptr, op_names::kProd, nullptr); }
absl::Status ReduceSum(L& l) { return Reduce(l, nullptr, op_names::kSum, nullptr); }
absl::Status ReduceMean(L& l) { return Reduce(l, nullptr, op_names::kMean, nullptr); }
absl::Status ReduceMax(L& l) { return Reduce(l, nullptr, op_names::kMax, nullptr); }
absl::Status ReduceMin(L& l) { return Reduce(l, op_names::kNeg, op_names::kMax, op_names::kNeg); }
absl::Status ReduceSumSquare(L& l) { return Reduce(l, op_names::kSquare, op_names::kSum, nullptr); }
absl::Status ReduceL1(L& l) { return Reduce(l, op_names::kAbs, op_names::kSum, nullptr); }
absl::Status ReduceL2(L& l) {
  return Reduce(l, op_names::kSquare, op_names::kSum, op_names::kSqrt);
}
absl::Status ReduceLogSum(L& l) { return Reduce(l, nullptr, op_names::kSum, op_names::kLog); }
absl::Status ReduceLogSumExp(L& l) {
  return Reduce(l, op_names::kExp, op_names::kSum, op_names::kLog);
}

// The first index of the maximum; with select_last_index, the first of the
// input reversed along the axis (a gather), counted from the end.
template <bool kMin>
absl::Status ArgMax(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  if (kMin) x = l.Op(op_names::kNeg, {x});
  int64_t axis = l.Int("axis", 0);
  int64_t last = -1;
  if (l.Int("select_last_index", 0) != 0) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "select_last_index"));
    RILL_ASSIGN_OR_RETURN(axis, NormAxis(axis, static_cast<int>(dims.size())));
    const int64_t n = dims[axis];
    std::vector<int64_t> rev(n);
    for (int64_t k = 0; k < n; ++k) rev[k] = n - 1 - k;
    RILL_ASSIGN_OR_RETURN(Entry idx, l.Const(OnnxHostTensor::FromInt64s(rev, Shape{n})));
    x = l.Op(op_names::kGather, {x, idx}, {{"axis", absl::StrCat(axis)}});
    last = n - 1;
  }
  Entry y =
      l.Op(op_names::kArgmax, {x},
           {{"axis", absl::StrCat(axis)}, {"keepdims", l.Int("keepdims", 1) ? "true" : "false"}});
  if (last >= 0) y = l.Op(op_names::kRsubScalar, {y}, {{"scalar", absl::StrCat(last)}});
  return Out(l, y);
}

// One-hot of the first maximum along the axis (before opset 13: of the
// input flattened to 2-D at the axis).
absl::Status Hardmax(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "the classes are enumerated"));
  const int r = static_cast<int>(dims.size());
  RILL_ASSIGN_OR_RETURN(int64_t axis, NormAxis(l.Int("axis", l.opset() >= 13 ? -1 : 1), r));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  std::vector<int64_t> work = dims;
  if (l.opset() < 13) {
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < r; ++i) (i < axis ? outer : inner) *= dims[i];
    work = {outer, inner};
    x = l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr(work)}});
    axis = 1;
  }
  const int64_t n = work[axis];
  std::vector<int64_t> cls(n), cls_shape(work.size(), 1);
  for (int64_t k = 0; k < n; ++k) cls[k] = k;
  cls_shape[axis] = n;
  RILL_ASSIGN_OR_RETURN(Entry ce, l.Const(OnnxHostTensor::FromInt64s(cls, Shape(cls_shape))));
  Entry a = l.Op(op_names::kArgmax, {x}, {{"axis", absl::StrCat(axis)}, {"keepdims", "true"}});
  auto t = l.InType(0);
  Entry y = l.Op(op_names::kCast, {l.Op(op_names::kEqual, {a, ce})},
                 {{"dtype", DTypeName(t ? *t : DType::kF32)}});
  if (l.opset() < 13) y = l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(dims)}});
  return Out(l, y);
}

template <bool kLog>
absl::Status Softmax(L& l) {
  const char* op = kLog ? op_names::kLogSoftmax : op_names::kSoftmax;
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  int64_t axis = l.Int("axis", l.opset() >= 13 ? -1 : 1);
  std::optional<int> r = l.Rank(0);
  if (r && axis < 0) axis += *r;
  if (l.opset() >= 13 || axis == -1 || (r && axis == *r - 1)) {
    return Out(l, l.Op(op, {x}, {{"axis", absl::StrCat(axis)}}));
  }
  // Before opset 13: softmax of the input flattened to 2-D at `axis`.
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        NeedDims(l, 0, "softmax before opset 13 flattens at axis"));
  RILL_ASSIGN_OR_RETURN(axis, NormAxis(axis, static_cast<int>(dims.size())));
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
  Entry f = l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr({outer, -1})}});
  Entry y = l.Op(op, {f}, {{"axis", "1"}});
  return Out(l, l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(dims)}}));
}

}  // namespace

void AddReduceConverters(ConverterTable& t) {
  t.insert({
      {"ArgMax", {ArgMax<false>, kFloat}},
      {"ArgMin", {ArgMax<true>, kFloat}},
      {"Hardmax", {Hardmax, kFloat}},
      {"LogSoftmax", {Softmax<true>, kFloat}},
      {"ReduceL1", {ReduceL1, kSum}},
      {"ReduceL2", {ReduceL2, kFloat}},
      {"ReduceLogSum", {ReduceLogSum, kFloat}},
      {"ReduceLogSumExp", {ReduceLogSumExp, kFloat}},
      {"ReduceMax", {ReduceMax, kFloat}},
      {"ReduceMean", {ReduceMean, kFloat}},
      {"ReduceMin", {ReduceMin, kFloat}},
      {"ReduceProd", {ReduceProd, kSum}},
      {"ReduceSum", {ReduceSum, kSum}},
      {"ReduceSumSquare", {ReduceSumSquare, kSum}},
      {"Softmax", {Softmax<false>, kFloat}},
  });
}

}  // namespace rill::graph
