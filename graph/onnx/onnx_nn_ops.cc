// Converters of the neural-network ONNX ops (Conv, pooling, normalization,
// Gemm, MatMul): 2-D windows (asymmetric padding and ceil_mode through an
// explicit pad), inference-form normalization composed from elementwise
// and reduce ops.

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>
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
  std::vector<int64_t> kernel, stride, dilation;
  std::vector<int64_t> pad_begin, pad_end;  // Per spatial axis.
};

// 2-D window attributes (auto_pad resolved; SAME with an odd total puts
// the extra element at the end for SAME_UPPER, at the start for SAME_LOWER).
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
  if (w.stride.size() != 2 || w.dilation.size() != 2) {
    return absl::InvalidArgumentError("strides and dilations must have 2 values");
  }
  for (int i = 0; i < 2; ++i) {
    if (w.kernel[i] <= 0 || w.stride[i] <= 0 || w.dilation[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel_shape, strides and dilations must be positive (axis ", i, ")"));
    }
  }
  const std::string auto_pad = l.String("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> p = l.Ints("pads");
    if (p.empty()) p = {0, 0, 0, 0};
    if (p.size() != 4) return absl::InvalidArgumentError("pads must have 4 values");
    for (int64_t v : p) {
      if (v < 0) return absl::InvalidArgumentError(absl::StrCat("pads has ", v));
    }
    w.pad_begin = {p[0], p[1]};
    w.pad_end = {p[2], p[3]};
  } else if (auto_pad == "VALID") {
    w.pad_begin = w.pad_end = {0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "auto_pad SAME"));
    if (dims.size() != 4) return L::Unsupported("only 2-D windows (4-D input)");
    for (int i = 0; i < 2; ++i) {
      const int64_t in = dims[2 + i], s = w.stride[i];
      const int64_t out = (in + s - 1) / s;
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * s + (w.kernel[i] - 1) * w.dilation[i] + 1 - in);
      const int64_t small = total / 2, big = total - small;
      w.pad_begin.push_back(auto_pad == "SAME_UPPER" ? small : big);
      w.pad_end.push_back(auto_pad == "SAME_UPPER" ? big : small);
    }
  } else {
    return L::Unsupported(absl::StrCat("auto_pad ", auto_pad));
  }
  return w;
}

// Pads what the op cannot pad itself (the asymmetric part) explicitly with
// `value`, leaving the op the symmetric part, returned.
absl::StatusOr<std::vector<int64_t>> SplitPads(L& l, Entry& x, const std::vector<int64_t>& dims,
                                               const std::vector<int64_t>& begin,
                                               const std::vector<int64_t>& end, double value) {
  std::vector<int64_t> sym(2), b(4, 0), e(4, 0);
  bool extra = false;
  for (int i = 0; i < 2; ++i) {
    sym[i] = std::min(begin[i], end[i]);
    b[2 + i] = begin[i] - sym[i];
    e[2 + i] = end[i] - sym[i];
    extra = extra || b[2 + i] || e[2 + i];
  }
  if (!extra) return sym;
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the input's element type");
  RILL_ASSIGN_OR_RETURN(x, PadEntry(l, x, dims, b, e, "constant", value, *t));
  return sym;
}

// A 1-D Conv, ConvTranspose or pooling (rank-3 input) as the 2-D one over
// [N, C, 1, L]: the node is rewritten with a unit height (inputs 0 and, for
// the convolutions, 1 reshaped; kernel_shape, strides, dilations,
// output_padding, output_shape and pads widened), converted, and the result
// reshaped back to [N, C', L'].
absl::Status Via2D(L& l, ConvertFn fn, bool has_weight) {
  onnx::NodeProto n = l.node();
  ImportState& s = l.state();
  for (int i = 0; i < (has_weight ? 2 : 1); ++i) {
    if (!l.has_input(i)) continue;
    RILL_ASSIGN_OR_RETURN(Entry x, l.In(i));
    ValueState v;
    v.entry = l.Op(op_names::kReshape, {x}, {{"shape", "(0, 0, 1, -1)"}});
    if (auto d = l.Dims(i)) {
      v.dims = *d;
      v.dims->insert(v.dims->begin() + 2, 1);
    }
    v.dtype = l.InType(i);
    const std::string name = s.UniqueName(absl::StrCat(n.input(i), "_2d"));
    s.reserved.insert(name);
    s.values[name] = std::move(v);
    n.set_input(i, name);
  }
  for (onnx::AttributeProto& a : *n.mutable_attribute()) {
    if (a.type() != onnx::AttributeProto::INTS) continue;
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    const std::string& k = a.name();
    if (k == "kernel_shape" || k == "strides" || k == "dilations" || k == "output_shape") {
      v.insert(v.begin(), 1);
    } else if (k == "output_padding") {
      v.insert(v.begin(), 0);
    } else if (k == "pads" && v.size() == 2) {
      v = {0, v[0], 0, v[1]};
    } else {
      continue;
    }
    a.clear_ints();
    for (int64_t x : v) a.add_ints(x);
  }
  std::vector<std::string> outs;
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    const std::string name = s.UniqueName(absl::StrCat(n.output(i), "_2d"));
    s.reserved.insert(name);
    s.values[name] = ValueState{};
    n.set_output(i, name);
  }
  NodeLowering l2(s, n, l.opset());
  RILL_RETURN_IF_ERROR(fn(l2));
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    const Entry y = s.values[n.output(i)].entry;
    if (!y.valid()) continue;
    l.SetOutput(i, l.Op(op_names::kReshape, {y}, {{"shape", "(0, 0, -1)"}}));
  }
  return absl::OkStatus();
}

absl::Status Conv(L& l) {
  std::vector<int64_t> kernel = l.Ints("kernel_shape");
  if (kernel.empty()) {
    auto wd = l.Dims(1);
    if (!wd || wd->size() < 2) return L::Unsupported("needs kernel_shape or the weight's rank");
    kernel.assign(wd->begin() + 2, wd->end());
  }
  if (auto r = l.Rank(0); r && *r == 3) return Via2D(l, Conv, true);
  if (auto r = l.Rank(0); r && *r != 4)
    return L::Unsupported(absl::StrCat("only 1-D and 2-D convolution (input rank ", *r, ")"));
  RILL_ASSIGN_OR_RETURN(Window w, WindowOf(l, kernel));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  std::vector<int64_t> pad = w.pad_begin;
  if (w.pad_begin != w.pad_end) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "asymmetric pads"));
    RILL_ASSIGN_OR_RETURN(pad, SplitPads(l, x, dims, w.pad_begin, w.pad_end, 0));
  }
  RILL_ASSIGN_OR_RETURN(Entry wt, l.In(1));
  Entry y = l.Op(op_names::kConv2d, {x, wt},
                 {{"stride", IntsAttr(w.stride)},
                  {"pad", IntsAttr(pad)},
                  {"dilation", IntsAttr(w.dilation)},
                  {"num_group", absl::StrCat(l.Int("group", 1))}});
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(Entry b, l.In(2));
    y = l.Op(op_names::kAdd, {y, l.Op(op_names::kReshape, {b}, {{"shape", "(1, -1, 1, 1)"}})});
  }
  return Out(l, y);
}

// ConvTranspose as the data gradient of the convolution it transposes:
// the full output (stride, dilation, output_padding) from
// _backward_conv2d_data, then cropped by the pads. Inference only: the
// backward op has no gradient of its own.
absl::Status ConvTranspose(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> xd, NeedDims(l, 0, "the output size"));
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> wd, NeedDims(l, 1, "the output size"));
  if (xd.size() == 3 && wd.size() == 3) return Via2D(l, ConvTranspose, true);
  if (xd.size() != 4 || wd.size() != 4) {
    return L::Unsupported(absl::StrCat("only 2-D (input rank ", xd.size(), ")"));
  }
  const int64_t g = l.Int("group", 1);
  if (g <= 0 || xd[1] != wd[0] || xd[1] % g != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("input channels ", xd[1], ", weight ", Shape(wd).ToString(), ", group ", g));
  }
  std::vector<int64_t> stride = l.Ints("strides"), dil = l.Ints("dilations"),
                       op = l.Ints("output_padding"), out_shape = l.Ints("output_shape");
  if (stride.empty()) stride = {1, 1};
  if (dil.empty()) dil = {1, 1};
  if (op.empty()) op = {0, 0};
  if (stride.size() != 2 || dil.size() != 2 || op.size() != 2) {
    return absl::InvalidArgumentError("strides, dilations, output_padding need 2 values");
  }
  if (out_shape.size() == 4) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  std::vector<int64_t> pads = l.Ints("pads");
  if (pads.empty()) pads = {0, 0, 0, 0};
  const std::string auto_pad = l.String("auto_pad", "NOTSET");
  std::vector<int64_t> full(2), begin(2), end(2);
  for (int i = 0; i < 2; ++i) {
    if (stride[i] <= 0 || dil[i] <= 0 || op[i] < 0 || op[i] >= std::max(stride[i], dil[i])) {
      return absl::InvalidArgumentError(
          "strides/dilations must be positive, output_padding "
          "smaller than the stride");
    }
    full[i] = (xd[2 + i] - 1) * stride[i] + (wd[2 + i] - 1) * dil[i] + 1 + op[i];
    int64_t total = -1;
    if (!out_shape.empty()) {
      if (out_shape.size() != 2) return absl::InvalidArgumentError("output_shape needs 2 values");
      total = full[i] - out_shape[i];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      total = full[i] - xd[2 + i] * stride[i];
    }
    if (total >= 0) {
      const bool upper = auto_pad == "SAME_UPPER";
      begin[i] = upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    } else if (total < -1 || (!out_shape.empty() && total < 0)) {
      return L::Unsupported("an output_shape larger than the full output");
    } else {
      if (pads.size() != 4) return absl::InvalidArgumentError("pads must have 4 values");
      begin[i] = pads[i];
      end[i] = pads[2 + i];
    }
    if (begin[i] < 0 || end[i] < 0 || begin[i] + end[i] >= full[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("pads (", begin[i], ", ", end[i], ") for an output of ", full[i]));
    }
  }
  const std::vector<int64_t> data = {xd[0], wd[1] * g, full[0], full[1]};
  const Shape ds(data);
  RILL_RETURN_IF_ERROR(ds.Validate(4));
  if (ds.NumElements() * 4 > (int64_t{256} << 20)) return L::Unsupported("an output over 256 MiB");
  RILL_ASSIGN_OR_RETURN(Entry shape_of, l.Const(OnnxHostTensor::Fill(DType::kF32, ds, 0)));
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry w, l.In(1));
  Entry y = l.Op(op_names::kBackwardConv2dData, {x, shape_of, w},
                 {{"stride", IntsAttr(stride)},
                  {"pad", "(0, 0)"},
                  {"dilation", IntsAttr(dil)},
                  {"num_group", absl::StrCat(g)}});
  if (begin != std::vector<int64_t>{0, 0} || end != std::vector<int64_t>{0, 0}) {
    y = l.Op(op_names::kSlice, {y},
             {{"begin", IntsAttr({0, 0, begin[0], begin[1]})},
              {"end", IntsAttr({data[0], data[1], full[0] - end[0], full[1] - end[1]})}});
  }
  if (l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(Entry b, l.In(2));
    y = l.Op(op_names::kAdd, {y, l.Op(op_names::kReshape, {b}, {{"shape", "(1, -1, 1, 1)"}})});
  }
  return Out(l, y);
}

// Pooling. Asymmetric pads and ceil_mode's extra end windows become an
// explicit pad: with the lowest float for max; with zeros for average,
// whose sum is then divided by a constant map of each window's divisor.
template <bool kMax>
absl::Status Pool(L& l) {
  if (l.wants_output(1)) return L::Unsupported("the Indices output");
  if (auto r = l.Rank(0); r && *r == 3) return Via2D(l, Pool<kMax>, false);
  if (auto r = l.Rank(0); r && *r != 4)
    return L::Unsupported(absl::StrCat("only 1-D and 2-D pooling (input rank ", *r, ")"));
  RILL_ASSIGN_OR_RETURN(Window w, WindowOf(l, l.Ints("kernel_shape")));
  if (w.dilation != std::vector<int64_t>{1, 1}) return L::Unsupported("dilations other than 1");
  const bool include_pad = !kMax && l.Int("count_include_pad", 0) != 0;
  std::vector<int64_t> end = w.pad_end;
  std::vector<int64_t> out(2), dims;
  if (l.Int("ceil_mode", 0) != 0 || w.pad_begin != w.pad_end) {
    RILL_ASSIGN_OR_RETURN(dims, NeedDims(l, 0, "ceil_mode or asymmetric pads"));
    for (int i = 0; i < 2; ++i) {
      const int64_t in = dims[2 + i], k = w.kernel[i], s = w.stride[i];
      const int64_t span = in + w.pad_begin[i] + w.pad_end[i] - k;
      if (span < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("pooling window ", k, " is larger than ", "the padded input axis ", in));
      }
      out[i] = span / s + 1;
      if (l.Int("ceil_mode", 0) != 0 && span % s != 0) {
        ++out[i];
        // The last window must start inside the input or its start pad.
        if ((out[i] - 1) * s >= in + w.pad_begin[i]) --out[i];
      }
      end[i] = std::max(w.pad_end[i], (out[i] - 1) * s + k - in - w.pad_begin[i]);
    }
  }
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  ops::Attrs a = {{"kernel", IntsAttr(w.kernel)},
                  {"stride", IntsAttr(w.stride)},
                  {"pool_type", kMax ? "max" : "avg"}};
  if (end == w.pad_begin) {
    a.push_back({"pad", IntsAttr(w.pad_begin)});
    if (!kMax) a.push_back({"count_include_pad", include_pad ? "true" : "false"});
    return Out(l, l.Op(op_names::kPooling, {x}, a));
  }
  if (kMax) {
    RILL_ASSIGN_OR_RETURN(std::vector<int64_t> sym, SplitPads(l, x, dims, w.pad_begin, end,
                                                              -std::numeric_limits<float>::max()));
    a.push_back({"pad", IntsAttr(sym)});
    return Out(l, l.Op(op_names::kPooling, {x}, a));
  }
  // Average: the window sums over zero padding, divided by the number of
  // elements ONNX counts: inside the input, or (count_include_pad) inside
  // the input and its explicit pads, never the ceil_mode overhang.
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> sym, SplitPads(l, x, dims, w.pad_begin, end, 0));
  a.push_back({"pad", IntsAttr(sym)});
  a.push_back({"count_include_pad", "true"});
  Entry sum = l.Op(op_names::kMulScalar, {l.Op(op_names::kPooling, {x}, a)},
                   {{"scalar", FloatAttr(static_cast<double>(w.kernel[0] * w.kernel[1]))}});
  OnnxHostTensor count = OnnxHostTensor::Fill(DType::kF32, Shape{1, 1, out[0], out[1]}, 0);
  float* c = reinterpret_cast<float*>(count.bytes.data());
  auto extent = [&](int i, int64_t o) {
    const int64_t start = o * w.stride[i] - w.pad_begin[i];
    const int64_t lo = include_pad ? start : std::max<int64_t>(start, 0);
    const int64_t hi =
        std::min(start + w.kernel[i], include_pad ? dims[2 + i] + w.pad_end[i] : dims[2 + i]);
    return std::max<int64_t>(hi - lo, 1);
  };
  for (int64_t i = 0; i < out[0]; ++i) {
    for (int64_t j = 0; j < out[1]; ++j) c[i * out[1] + j] = extent(0, i) * extent(1, j);
  }
  RILL_ASSIGN_OR_RETURN(Entry ce, l.Const(std::move(count)));
  return Out(l, l.Op(op_names::kDiv, {sum, ce}));
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
  if (l.Int("spatial", 1) == 0) return L::Unsupported("spatial=0 (before opset 9)");
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

// MeanVarianceNormalization: (x - mean) / std over `axes` (default 0, 2, 3).
absl::Status MeanVarianceNormalization(L& l) {
  std::vector<int64_t> axes = l.Ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  return Out(l, Normalize(l, x, axes, 1e-9).y);
}

// LRN: x / (bias + alpha / size * sum of squares over a window of
// channels)^beta; the window sum is an average pool over a [C, H*W] view.
absl::Status Lrn(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> d, NeedDims(l, 0, "the channel window is padded"));
  if (d.size() != 4) return L::Unsupported("only 4-D input");
  const int64_t size = l.Int("size", 0);
  if (size <= 0) return absl::InvalidArgumentError(absl::StrCat("size ", size));
  const double alpha = l.Float("alpha", 1e-4f), beta = l.Float("beta", 0.75f),
               bias = l.Float("bias", 1.f);
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the element type");
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  const std::vector<int64_t> view = {d[0], 1, d[1], d[2] * d[3]};
  Entry sq = l.Op(op_names::kReshape, {l.Op(op_names::kSquare, {x})}, {{"shape", IntsAttr(view)}});
  RILL_ASSIGN_OR_RETURN(
      sq, PadEntry(l, sq, view, {0, 0, (size - 1) / 2, 0}, {0, 0, size / 2, 0}, "constant", 0, *t));
  Entry sum =
      l.Op(op_names::kPooling, {sq},
           {{"kernel", IntsAttr({size, 1})}, {"pool_type", "avg"}, {"count_include_pad", "true"}});
  sum = l.Op(op_names::kReshape, {sum}, {{"shape", IntsAttr(d)}});
  Entry den = l.Op(op_names::kAddScalar,
                   {l.Op(op_names::kMulScalar, {sum}, {{"scalar", FloatAttr(alpha)}})},
                   {{"scalar", FloatAttr(bias)}});
  den = l.Op(op_names::kPowScalar, {den}, {{"scalar", FloatAttr(beta)}});
  return Out(l, l.Op(op_names::kDiv, {x, den}));
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

// Batch dimensions broadcast NumPy's way: each operand is expanded (an add
// of zeros) to the common batch shape, then one batched matmul.
absl::Status BroadcastMatMul(L& l, Entry a, Entry b, std::vector<int64_t> A, std::vector<int64_t> B,
                             bool a_vector, bool b_vector) {
  const size_t r = std::max(A.size(), B.size());
  A.insert(A.begin(), r - A.size(), 1);
  B.insert(B.begin(), r - B.size(), 1);
  std::vector<int64_t> batch;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (A[i] != B[i] && A[i] != 1 && B[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("batch dimensions ", A[i], " and ", B[i],
                                                     " at axis ", i, " do not broadcast"));
    }
    batch.push_back(std::max(A[i], B[i]));
  }
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the element type");
  auto expand = [&](Entry x, const std::vector<int64_t>& d) -> absl::StatusOr<Entry> {
    std::vector<int64_t> full = batch;
    full.push_back(d[r - 2]);
    full.push_back(d[r - 1]);
    x = l.Op(op_names::kReshape, {x}, {{"shape", IntsAttr(d)}});
    if (full == d) return x;
    const Shape s(full);
    RILL_RETURN_IF_ERROR(s.Validate(DTypeSize(*t)));
    if (s.NumElements() * DTypeSize(*t) > (int64_t{256} << 20)) {
      return L::Unsupported(absl::StrCat("a broadcast operand of ", s.ToString()));
    }
    RILL_ASSIGN_OR_RETURN(Entry zeros, l.Const(OnnxHostTensor::Fill(*t, s, 0)));
    return l.Op(op_names::kAdd, {x, zeros});
  };
  RILL_ASSIGN_OR_RETURN(a, expand(a, A));
  RILL_ASSIGN_OR_RETURN(b, expand(b, B));
  Entry y = l.Op(op_names::kMatmul, {a, b});
  std::vector<int64_t> out = batch;
  if (!a_vector) out.push_back(A[r - 2]);
  if (!b_vector) out.push_back(B[r - 1]);
  return Out(l, l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(out)}}));
}

// NumPy matmul: equal ranks with equal batch dimensions map directly; 1-D
// operands and a 2-D right operand under a batched left one are reshaped.
absl::Status MatMul(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry a, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry b, l.In(1));
  auto da = l.Dims(0), db = l.Dims(1);
  if (da && db && da->size() == db->size() && da->size() >= 2) {
    bool same = true;
    for (size_t i = 0; i + 2 < da->size(); ++i) same = same && (*da)[i] == (*db)[i];
    if (same) return Out(l, l.Op(op_names::kMatmul, {a, b}));
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
  if (A.size() < 2) return L::Unsupported("an operand of rank 0");
  if (B.size() != 2) return BroadcastMatMul(l, a, b, A, B, sa->size() == 1, sb->size() == 1);
  out.assign(A.begin(), A.end() - 1);
  out.push_back(B[1]);
  Entry a2 = l.Op(op_names::kReshape, {a}, {{"shape", IntsAttr({-1, A.back()})}});
  Entry b2 = sb->size() == 1 ? l.Op(op_names::kReshape, {b}, {{"shape", IntsAttr(B)}}) : b;
  Entry y = l.Op(op_names::kMatmul, {a2, b2});
  if (sa->size() == 1) out.erase(out.end() - 2);
  if (sb->size() == 1) out.pop_back();
  return Out(l, l.Op(op_names::kReshape, {y}, {{"shape", IntsAttr(out)}}));
}

// NegativeLogLikelihoodLoss of log-probabilities x [N, C, d...] and int
// targets t [N, d...]: a one-hot of t (an equal against the class indices)
// picks -x and the class weight; ignore_index and targets outside [0, C)
// weigh 0; mean divides by the sum of the weights.
absl::StatusOr<Entry> NllOf(L& l, Entry x, int target, int weight) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, NeedDims(l, 0, "the classes are enumerated"));
  if (dims.size() < 2) return absl::InvalidArgumentError("the input needs rank >= 2 (N, C, ...)");
  const int64_t c = dims[1];
  const int r = static_cast<int>(dims.size());
  auto tt = l.InType(target);
  if (!tt) return L::Unsupported("needs the target's element type");
  std::vector<int64_t> cls(c);
  for (int64_t k = 0; k < c; ++k) cls[k] = k;
  std::vector<int64_t> cls_shape(r, 1);
  cls_shape[1] = c;
  OnnxHostTensor classes = OnnxHostTensor::FromInt64s(cls, Shape(cls_shape));
  RILL_ASSIGN_OR_RETURN(Entry ce, l.Const(std::move(classes)));
  RILL_ASSIGN_OR_RETURN(Entry t, l.In(target));
  if (*tt != DType::kI64) t = l.Op(op_names::kCast, {t}, {{"dtype", "int64"}});
  std::vector<int64_t> t1 = dims;  // [N, 1, d...]
  t1[1] = 1;
  t = l.Op(op_names::kReshape, {t}, {{"shape", IntsAttr(t1)}});
  auto xt = l.InType(0);
  const std::string ft = DTypeName(xt ? *xt : DType::kF32);
  Entry onehot = l.Op(op_names::kCast, {l.Op(op_names::kEqual, {t, ce})}, {{"dtype", ft}});
  if (l.HasAttr("ignore_index")) {
    const int64_t ii = l.Int("ignore_index", 0);
    Entry keep = l.Op(
        op_names::kRsubScalar,
        {l.Op(op_names::kCast, {l.Op(op_names::kEqualScalar, {t}, {{"scalar", absl::StrCat(ii)}})},
              {{"dtype", ft}})},
        {{"scalar", "1"}});
    onehot = l.Op(op_names::kMul, {onehot, keep});
  }
  Entry w = onehot;
  if (weight >= 0 && l.has_input(weight)) {
    RILL_ASSIGN_OR_RETURN(Entry wv, l.In(weight));
    w = l.Op(op_names::kMul,
             {onehot, l.Op(op_names::kReshape, {wv}, {{"shape", IntsAttr(cls_shape)}})});
  }
  const ops::Attrs over_c = {{"axes", "(1)"}, {"keepdims", "false"}};
  Entry loss = l.Op(op_names::kNeg, {l.Op(op_names::kSum, {l.Op(op_names::kMul, {w, x})}, over_c)});
  const std::string reduction = l.String("reduction", "mean");
  if (reduction == "none") return loss;
  Entry total = l.Op(op_names::kSum, {loss}, {{"keepdims", "false"}});
  if (reduction == "sum") return total;
  if (reduction != "mean") return L::Unsupported(absl::StrCat("reduction '", reduction, "'"));
  Entry wsum = l.Op(op_names::kSum, {w}, {{"keepdims", "false"}});
  return l.Op(op_names::kDiv, {total, wsum});
}

absl::Status NegativeLogLikelihoodLoss(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  RILL_ASSIGN_OR_RETURN(Entry y, NllOf(l, x, 1, 2));
  return Out(l, y);
}

// NLL of log_softmax over axis 1; output 1 is the log-probabilities.
absl::Status SoftmaxCrossEntropyLoss(L& l) {
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry lp = l.Op(op_names::kLogSoftmax, {x}, {{"axis", "1"}});
  RILL_ASSIGN_OR_RETURN(Entry y, NllOf(l, lp, 1, 2));
  l.SetOutput(0, y);
  l.SetOutput(1, lp);
  return absl::OkStatus();
}

}  // namespace

void AddNnConverters(ConverterTable& t) {
  t.insert({
      {"AveragePool", {Pool<false>, kF32}},
      {"BatchNormalization", {BatchNormalization, kFloat}},
      {"Conv", {Conv, kF32}},
      {"ConvTranspose", {ConvTranspose, kF32}},
      {"Gemm", {Gemm, kFloat}},
      {"GlobalAveragePool", {GlobalPool<false>, kFloat}},
      {"GlobalMaxPool", {GlobalPool<true>, kFloat}},
      {"InstanceNormalization", {InstanceNormalization, kFloat}},
      {"LayerNormalization", {LayerNormalization, kFloat}},
      {"LRN", {Lrn, kF32}},
      {"MatMul", {MatMul, kFloat}},
      {"MaxPool", {Pool<true>, kF32}},
      {"MeanVarianceNormalization", {MeanVarianceNormalization, kFloat}},
      {"NegativeLogLikelihoodLoss", {NegativeLogLikelihoodLoss, kFloat}},
      {"SoftmaxCrossEntropyLoss", {SoftmaxCrossEntropyLoss, kFloat}},
  });
}

}  // namespace rill::graph
