// Resize (nearest, linear and cubic, opsets 11-17) as matrix products: along each
// resized axis the output is a constant [in, out] interpolation matrix
// applied with matmul, so every coordinate mode is one code path, every
// device runs it and it has a gradient.

#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/graph/onnx/onnx_lowering.h"
#include "rill/ops/op_names.h"

namespace rill::graph {
namespace {

using L = NodeLowering;

// The input coordinate of output index `x` (ONNX coordinate_transformation_mode).
absl::StatusOr<double> SourceCoord(std::string_view mode, double x, double scale, int64_t in,
                                   int64_t out) {
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    // The resized length as ONNX defines it: in * scale, not rounded.
    const double resized = static_cast<double>(in) * scale;
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1);
  }
  if (mode == "asymmetric") return x / scale;
  if (mode == "half_pixel_symmetric") {
    const double adj = static_cast<double>(out) / (scale * static_cast<double>(in));
    const double center = static_cast<double>(in) / 2;
    return center * (1 - adj) + (x + 0.5) / scale - 0.5;
  }
  return L::Unsupported(absl::StrCat("coordinate_transformation_mode '", AsAbsl(mode), "'"));
}

absl::StatusOr<int64_t> Nearest(std::string_view mode, double c) {
  const double f = std::floor(c);
  if (mode == "round_prefer_floor") return static_cast<int64_t>(c - f == 0.5 ? f : std::round(c));
  if (mode == "round_prefer_ceil")
    return static_cast<int64_t>(c - f == 0.5 ? f + 1 : std::round(c));
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(c));
  return L::Unsupported(absl::StrCat("nearest_mode '", AsAbsl(mode), "'"));
}

// The [in, out] matrix M with y[o] = sum_i x[i] M[i, o] along one axis.
absl::StatusOr<OnnxHostTensor> InterpolationMatrix(L& l, DType t, int64_t in, int64_t out,
                                                   double scale, std::string_view mode) {
  const bool linear = mode == "linear";
  const std::string coord = l.String("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = l.String("nearest_mode", "round_prefer_floor");
  std::vector<double> m(in * out, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    RILL_ASSIGN_OR_RETURN(double c, SourceCoord(coord, static_cast<double>(o), scale, in, out));
    if (mode == "cubic") {
      // Keys' cubic convolution with ONNX's coefficient a; the four points
      // around c, clamped to the edge, or dropped (and the weights
      // renormalized) with exclude_outside.
      const double a = l.Float("cubic_coeff_a", -0.75f);
      const bool exclude = l.Int("exclude_outside", 0) != 0;
      const double i0 = std::floor(c), r = c - i0;
      const double w[4] = {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                           ((a + 2) * r - (a + 3)) * r * r + 1,
                           ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                           ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a};
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = static_cast<int64_t>(i0) - 1 + k;
        if (!exclude || (i >= 0 && i < in)) total += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        const int64_t i = static_cast<int64_t>(i0) - 1 + k;
        if (exclude && (i < 0 || i >= in)) continue;
        m[std::clamp<int64_t>(i, 0, in - 1) * out + o] += exclude ? w[k] / total : w[k];
      }
    } else if (linear) {
      c = std::clamp(c, 0.0, static_cast<double>(in - 1));
      const int64_t i0 = static_cast<int64_t>(std::floor(c));
      const int64_t i1 = std::min(i0 + 1, in - 1);
      const double r = c - static_cast<double>(i0);
      m[i0 * out + o] += 1 - r;
      m[i1 * out + o] += r;
    } else {
      RILL_ASSIGN_OR_RETURN(int64_t i, Nearest(nearest, c));
      m[std::clamp<int64_t>(i, 0, in - 1) * out + o] = 1;
    }
  }
  OnnxHostTensor h = OnnxHostTensor::Fill(t, Shape{in, out}, 0);
  for (int64_t k = 0; k < in * out; ++k) {
    if (t == DType::kF32) {
      reinterpret_cast<float*>(h.bytes.data())[k] = static_cast<float>(m[k]);
    } else if (t == DType::kF64) {
      reinterpret_cast<double*>(h.bytes.data())[k] = m[k];
    } else {
      return L::Unsupported(absl::StrCat("element type ", DTypeName(t)));
    }
  }
  return h;
}

absl::Status Resize(L& l) {
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                        NeedDims(l, 0, "the sizes are resolved at import"));
  const int r = static_cast<int>(dims.size());
  if (l.opset() < 11) return L::Unsupported("Resize before opset 11 (scales as input 1)");
  const std::string mode = l.String("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    return L::Unsupported(absl::StrCat("mode '", mode, "'"));
  }
  if (l.String("coordinate_transformation_mode", "") == "tf_crop_and_resize") {
    return L::Unsupported("coordinate_transformation_mode 'tf_crop_and_resize'");
  }
  if (l.Int("antialias", 0) != 0) return L::Unsupported("antialias=1");
  if (l.HasAttr("axes")) return L::Unsupported("the axes attribute");
  if (l.String("keep_aspect_ratio_policy", "stretch") != "stretch") {
    return L::Unsupported("keep_aspect_ratio_policy other than stretch");
  }
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (l.has_input(3)) {
    RILL_ASSIGN_OR_RETURN(sizes, l.ConstInts(3, "sizes"));
  }
  if (sizes.empty() && l.has_input(2)) {
    RILL_ASSIGN_OR_RETURN(scales, l.ConstDoubles(2, "scales"));
  }
  if (sizes.empty() && scales.empty())
    return absl::InvalidArgumentError("Resize needs scales or sizes");
  if (!sizes.empty() && sizes.size() != dims.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes has ", sizes.size(), " values for rank ", r));
  }
  if (!scales.empty() && scales.size() != dims.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scales has ", scales.size(), " values for rank ", r));
  }
  auto t = l.InType(0);
  if (!t) return L::Unsupported("needs the input's element type");
  RILL_ASSIGN_OR_RETURN(Entry x, l.In(0));
  Entry y = x;
  std::vector<int64_t> cur = dims;
  for (int a = 0; a < r; ++a) {
    int64_t out;
    double scale;
    if (!sizes.empty()) {
      out = sizes[a];
      scale = dims[a] == 0 ? 1.0 : static_cast<double>(out) / static_cast<double>(dims[a]);
    } else {
      scale = scales[a];
      if (!(scale > 0))
        return absl::InvalidArgumentError(absl::StrCat("scale ", scale, " of axis ", a));
      // Checked in double: a huge scale has no int64 value.
      const double want = std::floor(static_cast<double>(dims[a]) * scale);
      if (!(want >= 1 && want <= static_cast<double>(int64_t{1} << 20))) {
        return absl::InvalidArgumentError(absl::StrCat("scale ", scale, " of axis ", a, " of size ",
                                                       dims[a], " gives ", want,
                                                       " elements (at most 2^20)"));
      }
      out = static_cast<int64_t>(want);
    }
    if (out <= 0 || out > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(absl::StrCat("output size ", out, " of axis ", a));
    }
    if (out == dims[a] && scale == 1.0) continue;
    // The interpolation matrix is in x out: at most 16 Mi elements.
    if (dims[a] > 16384 || out > 16384 || dims[a] * out > (int64_t{1} << 24)) {
      return L::Unsupported(absl::StrCat("an axis resized from ", dims[a], " to ", out,
                                         " (the interpolation matrix would pass 16 Mi elements)"));
    }
    RILL_ASSIGN_OR_RETURN(OnnxHostTensor m, InterpolationMatrix(l, *t, dims[a], out, scale, mode));
    RILL_ASSIGN_OR_RETURN(Entry me, l.Const(std::move(m)));
    // Move axis a last, multiply, move it back.
    std::vector<int64_t> perm;
    for (int k = 0; k < r; ++k) {
      if (k != a) perm.push_back(k);
    }
    perm.push_back(a);
    std::vector<int64_t> inverse(r);
    for (int k = 0; k < r; ++k) inverse[perm[k]] = k;
    const bool last = a == r - 1;
    Entry z = last ? y : l.Op(op_names::kTranspose, {y}, {{"axes", IntsAttr(perm)}});
    std::vector<int64_t> moved;
    for (int64_t p : perm) moved.push_back(cur[p]);
    z = l.Op(op_names::kReshape, {z}, {{"shape", IntsAttr({-1, cur[a]})}});
    z = l.Op(op_names::kMatmul, {z, me});
    moved.back() = out;
    z = l.Op(op_names::kReshape, {z}, {{"shape", IntsAttr(moved)}});
    y = last ? z : l.Op(op_names::kTranspose, {z}, {{"axes", IntsAttr(inverse)}});
    cur[a] = out;
  }
  return Out(l, y == x ? l.Op(op_names::kIdentity, {x}) : y);
}

}  // namespace

void AddResizeConverters(ConverterTable& t) { t.insert({{"Resize", {Resize, kFloatTypes}}}); }

}  // namespace rill::graph
