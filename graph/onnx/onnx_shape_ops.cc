// Converters of ONNX data-movement ops: Pad, Tile, Split, Range, Gather,
// Where, Trilu, CastLike, the logical ops, DepthToSpace/SpaceToDepth,
// OneHot, EyeLike and the window functions. Pad, Tile and Split compose
// slice and concat over static shapes, so they run on every device and
// have gradients.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {

// The most one pad may add to an axis.
constexpr int64_t kMaxOnnxPad = int64_t{1} << 31;

Entry SliceAxis(NodeLowering& l, Entry x, const std::vector<int64_t>& dims, int axis, int64_t b,
                int64_t e) {
  std::vector<int64_t> begin(axis + 1, 0), end(dims.begin(), dims.begin() + axis + 1);
  begin[axis] = b;
  end[axis] = e;
  return l.Op(op_names::kSlice, {x}, {{"begin", IntsAttr(begin)}, {"end", IntsAttr(end)}});
}

absl::StatusOr<Entry> PadEntry(NodeLowering& l, Entry x, std::vector<int64_t> dims,
                               const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                               std::string_view mode, double value, DType dtype) {
  const int r = static_cast<int>(dims.size());
  if (begin.size() != dims.size() || end.size() != dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat("pads have ", begin.size() + end.size(),
                                                   " values for rank ", r, " (want ", 2 * r, ")"));
  }
  for (int a = 0; a < r; ++a) {
    // Bounded first, so that the sums below cannot wrap.
    for (int64_t p : {begin[a], end[a]}) {
      if (p < -dims[a] || p > kMaxOnnxPad) {
        return absl::InvalidArgumentError(absl::StrCat("pad ", p, " of axis ", a, " of size ",
                                                       dims[a], " is out of range [", -dims[a],
                                                       ", ", kMaxOnnxPad, "]"));
      }
    }
    // Negative pads crop.
    const int64_t cb = std::max<int64_t>(0, -begin[a]), ce = std::max<int64_t>(0, -end[a]);
    if (cb + ce > dims[a]) {
      return absl::InvalidArgumentError(
          absl::StrCat("pads crop ", cb + ce, " of axis ", a, " of size ", dims[a]));
    }
    if (cb + ce > 0) {
      x = SliceAxis(l, x, dims, a, cb, dims[a] - ce);
      dims[a] -= cb + ce;
    }
    const int64_t pb = std::max<int64_t>(0, begin[a]), pe = std::max<int64_t>(0, end[a]);
    if (pb == 0 && pe == 0) continue;
    const int64_t n = dims[a];
    if (mode != "constant" && n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(AsAbsl(mode), " padding of an empty axis ", a));
    }
    if (mode == "reflect" && (pb >= n || pe >= n)) {
      return absl::InvalidArgumentError(absl::StrCat("reflect pads (", pb, ", ", pe, ") of axis ",
                                                     a, " must be smaller than its size ", n));
    }
    if (pb + pe > 4096 && mode != "constant") {
      return NodeLowering::Unsupported(absl::StrCat(AsAbsl(mode), " pads over 4096 on one axis"));
    }
    std::vector<Entry> parts;
    auto block = [&](int64_t k) -> absl::StatusOr<Entry> {
      std::vector<int64_t> d = dims;
      d[a] = k;
      const Shape s(d);
      RILL_RETURN_IF_ERROR(s.Validate(DTypeSize(dtype)));
      if (s.NumElements() * DTypeSize(dtype) > (int64_t{256} << 20)) {
        return NodeLowering::Unsupported(absl::StrCat("a pad block of ", s.ToString()));
      }
      return l.Const(OnnxHostTensor::Fill(dtype, s, value));
    };
    if (mode == "constant") {
      if (pb > 0) {
        RILL_ASSIGN_OR_RETURN(Entry c, block(pb));
        parts.push_back(c);
      }
      parts.push_back(x);
      if (pe > 0) {
        RILL_ASSIGN_OR_RETURN(Entry c, block(pe));
        parts.push_back(c);
      }
    } else if (mode == "edge") {
      Entry first = SliceAxis(l, x, dims, a, 0, 1), last = SliceAxis(l, x, dims, a, n - 1, n);
      parts.insert(parts.end(), pb, first);
      parts.push_back(x);
      parts.insert(parts.end(), pe, last);
    } else if (mode == "reflect") {
      for (int64_t k = pb; k >= 1; --k) parts.push_back(SliceAxis(l, x, dims, a, k, k + 1));
      parts.push_back(x);
      for (int64_t k = 1; k <= pe; ++k) parts.push_back(SliceAxis(l, x, dims, a, n - 1 - k, n - k));
    } else {
      return NodeLowering::Unsupported(absl::StrCat("mode '", AsAbsl(mode), "'"));
    }
    x = l.Op(op_names::kConcat, parts, {{"axis", absl::StrCat(a)}});
    dims[a] += pb + pe;
  }
  return x;
}

namespace {

using L = NodeLowering;

constexpr uint32_t kNumeric = kNumericTypes;

absl::Status Pad(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "pads are resolved at import"));
  std::vector<int64_t> pads;
  double value = 0;
  if (l.opset() >= 11) {
    RILL_ASSIGN_OR_RETURN(pads, l.ConstInts(1, "pads"));
    if (l.has_input(2)) {
      RILL_ASSIGN_OR_RETURN(std::vector<double> v, l.ConstDoubles(2, "constant_value"));
      if (v.size() != 1) return absl::InvalidArgumentError("constant_value must be a scalar");
      value = v[0];
    }
    if (l.has_input(3)) return L::Unsupported("the axes input");
  } else {
    pads = l.Ints("pads");
    value = l.Float("value", 0.f);
  }
  const size_t r = dims.size();
  if (pads.size() != 2 * r) {
    return absl::InvalidArgumentError(
        absl::StrCat("pads has ", pads.size(), " values for rank ", r, " (want ", 2 * r, ")"));
  }
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the input's element type");
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  std::vector<int64_t> b(pads.begin(), pads.begin() + r), e(pads.begin() + r, pads.end());
  RILL_ASSIGN_OR_RETURN(Entry y,
                        PadEntry(l, x, dims, b, e, l.String("mode", "constant"), value, *t));
  return Out(l, y == x ? l.Op(op_names::kIdentity, {x}) : y);
}

absl::Status Tile(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "tiles are built at import"));
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, l.ConstInts(1, "repeats"));
  if (repeats.size() != dims.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats has ", repeats.size(), " values for rank ", dims.size()));
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry y = x;
  for (size_t a = 0; a < dims.size(); ++a) {
    if (repeats[a] < 0 || repeats[a] > 4096) {
      return absl::InvalidArgumentError(
          absl::StrCat("repeat ", repeats[a], " of axis ", a, " is out of range [0, 4096]"));
    }
    if (repeats[a] == 1) continue;
    if (repeats[a] == 0) return L::Unsupported("a repeat of 0 (an empty result)");
    y = l.Op(op_names::kConcat, std::vector<Entry>(repeats[a], y), {{"axis", absl::StrCat(a)}});
  }
  return Out(l, y == x ? l.Op(op_names::kIdentity, {x}) : y);
}

absl::Status Split(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "split points"));
  RILL_ASSIGN_OR_RETURN(int64_t axis, NormAxis(l.Int("axis", 0), static_cast<int>(dims.size())));
  std::vector<int64_t> sizes;
  if (l.opset() >= 13 && l.has_input(1)) {
    RILL_ASSIGN_OR_RETURN(sizes, l.ConstInts(1, "split"));
  } else if (l.opset() < 13) {
    sizes = l.Ints("split");
  }
  const int n = l.num_outputs();
  if (sizes.empty()) {
    if (dims[axis] % n != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis, " of size ", dims[axis], " does not split into ", n));
    }
    sizes.assign(n, dims[axis] / n);
  }
  CheckedInt<int64_t> total = 0;
  bool negative = false;
  for (int64_t s : sizes) {
    negative = negative || s < 0;
    total += s;
  }
  if (static_cast<int>(sizes.size()) != n || negative || !total.ok() ||
      total.value() != dims[axis]) {
    return absl::InvalidArgumentError(absl::StrCat("split [", absl::StrJoin(sizes, ", "),
                                                   "] does not cover axis ", axis, " of size ",
                                                   dims[axis], " in ", n, " outputs"));
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  int64_t at = 0;
  for (int i = 0; i < n; ++i) {
    l.SetOutput(i, SliceAxis(l, x, dims, static_cast<int>(axis), at, at + sizes[i]));
    at += sizes[i];
  }
  return absl::OkStatus();
}

// Computed at import: the inputs must be constants.
absl::Status Range(L& l) {
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the element type");
  RILL_ASSIGN_OR_RETURN(std::vector<double> start, l.ConstDoubles(0, "start"));
  RILL_ASSIGN_OR_RETURN(std::vector<double> limit, l.ConstDoubles(1, "limit"));
  RILL_ASSIGN_OR_RETURN(std::vector<double> delta, l.ConstDoubles(2, "delta"));
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) {
    return absl::InvalidArgumentError("Range takes scalars");
  }
  if (delta[0] == 0) return absl::InvalidArgumentError("Range delta is 0");
  const double count = std::max(0.0, std::ceil((limit[0] - start[0]) / delta[0]));
  if (!(count <= double{1 << 24})) {
    return absl::InvalidArgumentError(absl::StrCat("Range of ", count, " elements (over 2^24)"));
  }
  const int64_t n = static_cast<int64_t>(count);
  OnnxHostTensor out = OnnxHostTensor::Fill(*t, Shape{n}, 0);
  // Element i is start + i * delta, in the element type (integers exact).
  std::vector<int64_t> ints(n);
  std::vector<double> reals(n);
  for (int64_t i = 0; i < n; ++i) reals[i] = start[0] + static_cast<double>(i) * delta[0];
  if (*t == DType::kI32 || *t == DType::kI64) {
    for (int64_t i = 0; i < n; ++i) ints[i] = static_cast<int64_t>(std::llround(reals[i]));
    OnnxHostTensor i64 = OnnxHostTensor::FromInt64s(ints, Shape{n});
    if (*t == DType::kI64) {
      out = std::move(i64);
    } else {
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<int32_t*>(out.bytes.data())[i] = ints[i];
    }
  } else if (*t == DType::kF32) {
    for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(out.bytes.data())[i] = reals[i];
  } else if (*t == DType::kF64) {
    for (int64_t i = 0; i < n; ++i) reinterpret_cast<double*>(out.bytes.data())[i] = reals[i];
  } else {
    return L::Unsupported(absl::StrCat("element type ", DTypeName(*t)));
  }
  l.SetConstOutput(0, std::move(out));
  return absl::OkStatus();
}

// Gather and GatherElements: the op of the same name with the axis.
template <const char* kOp>
absl::Status GatherOp(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry i, l.In(1));
  return Out(l, l.Op(kOp, {x, i}, {{"axis", absl::StrCat(l.Int("axis", 0))}}));
}
using op_names::kGather, op_names::kGatherElements;

absl::Status CumSum(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axis, l.ConstInts(1, "axis"));
  if (axis.size() != 1) return absl::InvalidArgumentError("CumSum axis must be one value");
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kCumsum, {x},
                     {{"axis", absl::StrCat(axis[0])},
                      {"exclusive", absl::StrCat(l.Int("exclusive", 0))},
                      {"reverse", absl::StrCat(l.Int("reverse", 0))}}));
}

absl::Status Where(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry c, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(1));
  RILL_ASSIGN_OR_RETURN(Entry y, l.In(2));
  return Out(l, l.Op(op_names::kWhere, {c, x, y}));
}

absl::Status CastLike(L& l) {
  auto to = l.InType(1);
  if (!to) return L::Unsupported("needs the element type of input 1");
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kCast, {x}, {{"dtype", DTypeName(*to)}}));
}

// Logical ops on bool tensors, computed in float32 and cast back.
Entry AsFloat(L& l, Entry x) { return l.Op(op_names::kCast, {x}, {{"dtype", "float32"}}); }
Entry AsBool(L& l, Entry x) { return l.Op(op_names::kCast, {x}, {{"dtype", "bool"}}); }
Entry NotOf(L& l, Entry x01) { return l.Op(op_names::kRsubScalar, {x01}, {{"scalar", "1"}}); }

absl::Status Not(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, AsBool(l, NotOf(l, AsFloat(l, x))));
}

template <int kWhich>  // 0 And, 1 Or, 2 Xor.
absl::Status Logical(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  a = AsFloat(l, a);
  b = AsFloat(l, b);
  Entry y = kWhich == 0   ? l.Op(op_names::kMul, {a, b})
            : kWhich == 1 ? l.Op(op_names::kMaximum, {a, b})
                          : l.Op(op_names::kAbs, {l.Op(op_names::kSub, {a, b})});
  return Out(l, AsBool(l, y));
}

// a >= b is not (a < b); a <= b is not (a > b). In float32, so that the
// 1/0 of `greater` is the same for every input type.
template <bool kLessOrEqual>
absl::Status OrEqual(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  Entry gt = kLessOrEqual ? l.Op(op_names::kGreater, {a, b}) : l.Op(op_names::kGreater, {b, a});
  return Out(l, AsBool(l, NotOf(l, AsFloat(l, gt))));
}

// Upper (or lower) triangle of the last two axes, by a constant mask.
absl::Status Trilu(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "the mask is built at import"));
  if (dims.size() < 2) return absl::InvalidArgumentError("Trilu needs rank >= 2");
  int64_t k = 0;
  if (l.has_input(1)) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> kv, l.ConstInts(1, "k"));
    if (kv.size() != 1) return absl::InvalidArgumentError("Trilu k must be a scalar");
    k = kv[0];
  }
  const bool upper = l.Int("upper", 1) != 0;
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  RILL_RETURN_IF_ERROR(Shape({rows, cols}).Validate(1));
  if (rows * cols > (int64_t{64} << 20)) return L::Unsupported("a mask over 64 Mi elements");
  OnnxHostTensor mask = OnnxHostTensor::Fill(DType::kBool, Shape{rows, cols}, 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      mask.bytes[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
    }
  }
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the input's element type");
  RILL_ASSIGN_OR_RETURN(Entry m, l.Const(std::move(mask)));
  RILL_ASSIGN_OR_RETURN(Entry zero, l.Const(OnnxHostTensor::Fill(*t, Shape{}, 0)));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, l.Op(op_names::kWhere, {m, x, zero}));
}

// DepthToSpace (DCR or CRD) and SpaceToDepth: a reshape to 6-D, a
// transpose, a reshape back.
template <bool kToSpace>
absl::Status DepthSpace(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> d, NeedDims(l, 0, "the blocks are laid out"));
  if (d.size() != 4) return absl::InvalidArgumentError("needs a 4-D input (N, C, H, W)");
  const int64_t b = l.Int("blocksize", 0);
  if (b <= 0) return absl::InvalidArgumentError(absl::StrCat("blocksize ", b));
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  std::vector<int64_t> six, perm, out;
  if (kToSpace) {
    if (c % (b * b) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(c, " channels for blocksize ", b));
    }
    if (l.String("mode", "DCR") == "DCR") {
      six = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      six = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0) {
      return absl::InvalidArgumentError(absl::StrCat(h, "x", w, " for blocksize ", b));
    }
    six = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry y = l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr(six)}});
  y = l.Op(op_names::kTranspose, {y}, {{"axes", IntsAttr(perm)}});
  return Out(l, l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(out)}}));
}

// OneHot(indices, depth, values = [off, on]): negative indices count from
// depth; an equal against the classes selects on or off.
absl::Status OneHot(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<double> depth_v, l.ConstDoubles(1, "depth"));
  if (depth_v.size() != 1 || !(depth_v[0] >= 1) || depth_v[0] > (1 << 20)) {
    return absl::InvalidArgumentError("OneHot depth must be one value in [1, 2^20]");
  }
  const int64_t depth = static_cast<int64_t>(depth_v[0]);
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> d, NeedDims(l, 0, "the classes are enumerated"));
  const int r = static_cast<int>(d.size()) + 1;
  RILL_ASSIGN_OR_RETURN(int64_t axis, NormAxis(l.Int("axis", -1), r));
  auto vt = l.InType(2);
  if (!vt) return L::Unsupported("needs the element type of values");
  RILL_ASSIGN_OR_RETURN(Entry idx, l.In(0));
  idx = l.Op(op_names::kCast, {idx}, {{"dtype", "int64"}});
  RILL_ASSIGN_OR_RETURN(Entry zero, l.Const(OnnxHostTensor::FromInt64s({0}, Shape{})));
  Entry negative = l.Op(op_names::kGreater, {zero, idx});
  idx = l.Op(op_names::kAdd,
             {idx, l.Op(op_names::kMulScalar, {negative}, {{"scalar", absl::StrCat(depth)}})});
  std::vector<int64_t> unsq = d;
  unsq.insert(unsq.begin() + axis, 1);
  idx = l.Op(op_names::kReshape, {idx}, {{"shape", IntsAttr(unsq)}});
  std::vector<int64_t> cls(depth), cls_shape(r, 1);
  for (int64_t k = 0; k < depth; ++k) cls[k] = k;
  cls_shape[axis] = depth;
  RILL_ASSIGN_OR_RETURN(Entry ce, l.Const(OnnxHostTensor::FromInt64s(cls, Shape(cls_shape))));
  RILL_ASSIGN_OR_RETURN(Entry values, l.In(2));
  Entry off = l.Op(op_names::kReshape, {SliceAxis(l, values, {2}, 0, 0, 1)}, {{"shape", "()"}});
  Entry on = l.Op(op_names::kReshape, {SliceAxis(l, values, {2}, 0, 1, 2)}, {{"shape", "()"}});
  return Out(l, l.Op(op_names::kWhere, {l.Op(op_names::kEqual, {idx, ce}), on, off}));
}

// Constants of a static shape: EyeLike and the window functions.
absl::Status EyeLike(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> d, NeedDims(l, 0, "the result is a constant"));
  if (d.size() != 2) return absl::InvalidArgumentError("EyeLike needs a 2-D input");
  DType t = l.InType(0).value_or(DType::kF32);
  if (l.HasAttr("dtype")) {
    RILL_ASSIGN_OR_RETURN(t, DTypeFromOnnx(static_cast<int32_t>(l.Int("dtype", 1))));
  }
  RILL_RETURN_IF_ERROR(Shape(d).Validate(DTypeSize(t)));
  if (d[0] * d[1] > (int64_t{16} << 20)) return L::Unsupported("over 16 Mi elements");
  // Past the matrix, k puts no ones; clamped so that i + k cannot wrap.
  const int64_t k = std::clamp<int64_t>(l.Int("k", 0), -d[0], d[1]);
  std::vector<double> v(d[0] * d[1], 0.0);
  for (int64_t i = 0; i < d[0]; ++i) {
    if (i + k >= 0 && i + k < d[1]) v[i * d[1] + i + k] = 1;
  }
  l.SetConstOutput(0, OnnxHostTensor::FromDoubles(v, Shape(d), t));
  return absl::OkStatus();
}

// a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D), D = N (periodic) or N - 1.
template <int kWhich>  // 0 Hann, 1 Hamming, 2 Blackman.
absl::Status Window(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> size, l.ConstInts(0, "size"));
  if (size.size() != 1 || size[0] < 0 || size[0] > (1 << 24)) {
    return absl::InvalidArgumentError("the window size must be one value in [0, 2^24]");
  }
  RILL_ASSIGN_OR_RETURN(DType t, DTypeFromOnnx(static_cast<int32_t>(l.Int("output_datatype", 1))));
  const int64_t n = size[0];
  const double den = static_cast<double>(l.Int("periodic", 1) != 0 ? n : n - 1);
  const double a0 = kWhich == 0 ? 0.5 : kWhich == 1 ? 25.0 / 46 : 0.42;
  const double a1 = kWhich == 0 ? 0.5 : kWhich == 1 ? 21.0 / 46 : 0.5;
  const double a2 = kWhich == 2 ? 0.08 : 0.0;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double x = 2 * M_PI * static_cast<double>(i) / den;
    v[i] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  l.SetConstOutput(0, OnnxHostTensor::FromDoubles(v, Shape{n}, t));
  return absl::OkStatus();
}

}  // namespace

void AddShapeConverters(ConverterTable& t) {
  t.insert({
      {"And", {Logical<0>, 0}},
      {"BlackmanWindow", {Window<2>, 0}},
      {"CumSum", {CumSum, 0}},
      {"DepthToSpace", {DepthSpace<true>, 0}},
      {"EyeLike", {EyeLike, 0}},
      {"CastLike", {CastLike, 0}},
      {"Gather", {GatherOp<kGather>, 0}},
      {"GatherElements", {GatherOp<kGatherElements>, 0}},
      {"GreaterOrEqual", {OrEqual<false>, kNumeric}},
      {"HammingWindow", {Window<1>, 0}},
      {"HannWindow", {Window<0>, 0}},
      {"LessOrEqual", {OrEqual<true>, kNumeric}},
      {"Not", {Not, 0}},
      {"OneHot", {OneHot, 0}},
      {"Or", {Logical<1>, 0}},
      {"Pad", {Pad, 0}},
      {"Range", {Range, 0}},
      {"SpaceToDepth", {DepthSpace<false>, 0}},
      {"Split", {Split, 0}},
      {"Tile", {Tile, 0}},
      {"Trilu", {Trilu, 0}},
      {"Where", {Where, 0}},
      {"Xor", {Logical<2>, 0}},
  });
}

}  // namespace rill::graph
