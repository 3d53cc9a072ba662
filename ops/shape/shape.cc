// The shape ops (see shape.h).
#include "rill/ops/shape/shape.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"

namespace rill::ops {

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.rank());
  int64_t m = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    s[d] = m;
    m *= shape[d];
  }
  return s;
}

absl::StatusOr<CopyPlan> MakeCopyPlan(absl::Span<const int64_t> dims, absl::Span<const int64_t> src,
                                      absl::Span<const int64_t> dst) {
  std::vector<int64_t> d, s, t;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == src[i] * dims[i] && t.back() == dst[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = src[i];
      t.back() = dst[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(src[i]);
    t.push_back(dst[i]);
  }
  if (d.size() > static_cast<size_t>(kCopyMaxRank)) {
    return absl::UnimplementedError(absl::StrCat("a strided copy over dims (",
                                                 absl::StrJoin(dims, ", "), ") needs ", d.size(),
                                                 " axes; kernels handle ", kCopyMaxRank));
  }
  CopyPlan p;
  p.rank = static_cast<int64_t>(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    p.dims[i] = d[i];
    p.src_strides[i] = s[i];
    p.dst_strides[i] = t[i];
  }
  return p;
}

absl::StatusOr<std::vector<int64_t>> TransposeAxes(const TransposeParams& p, int rank) {
  std::vector<int64_t> axes(rank);
  if (p.axes.empty()) {
    for (int i = 0; i < rank; ++i) axes[i] = rank - 1 - i;
    return axes;
  }
  if (static_cast<int>(p.axes.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat("axes=(", absl::StrJoin(p.axes, ", "), ") has ",
                                                   p.axes.size(), " entries for a rank-", rank,
                                                   " input"));
  }
  std::vector<bool> seen(rank, false);
  for (int i = 0; i < rank; ++i) {
    absl::StatusOr<int> a = NormalizeAxis(p.axes[i], rank);
    if (!a.ok() || seen[*a]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axes=(", absl::StrJoin(p.axes, ", "), ") is not a permutation of the ", rank, " axes"));
    }
    seen[*a] = true;
    axes[i] = *a;
  }
  return axes;
}

absl::StatusOr<StridedCopy> TransposeCopy(const TensorArg& in, const TensorArg& out,
                                          absl::Span<const int64_t> axes) {
  const std::vector<int64_t> is = ContiguousStrides(in.shape);
  std::vector<int64_t> src(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) src[d] = is[axes[d]];
  StridedCopy c{in, out};
  RILL_ASSIGN_OR_RETURN(c.plan, MakeCopyPlan(out.shape.span(), src, ContiguousStrides(out.shape)));
  c.count = out.size();
  return c;
}

absl::Status SliceBounds(const Shape& in, const SliceParams& p, std::vector<int64_t>* begin,
                         Shape* out) {
  const int r = in.rank();
  if (p.begin.size() != p.end.size() || static_cast<int>(p.begin.size()) > r) {
    return absl::InvalidArgumentError(absl::StrCat(
        "begin=(", absl::StrJoin(p.begin, ", "), ") and end=(", absl::StrJoin(p.end, ", "),
        ") must have the same length, at most ", r, " (the input is ", in.ToString(), ")"));
  }
  begin->assign(r, 0);
  *out = in;
  for (size_t d = 0; d < p.begin.size(); ++d) {
    const int64_t n = in[d];
    int64_t b = p.begin[d] < 0 ? p.begin[d] + n : p.begin[d];
    int64_t e = p.end[d] < 0 ? p.end[d] + n : p.end[d];
    if (b < 0 || b > n || e < b || e > n) {
      return absl::InvalidArgumentError(absl::StrCat("slice [", p.begin[d], ", ", p.end[d],
                                                     ") of axis ", d, " (size ", n,
                                                     ") is out of range"));
    }
    (*begin)[d] = b;
    out->set_dim(d, e - b);
  }
  return absl::OkStatus();
}

absl::StatusOr<StridedCopy> SliceCopy(const TensorArg& big, const TensorArg& small,
                                      const SliceParams& p, bool backward) {
  std::vector<int64_t> begin;
  Shape shape;
  RILL_RETURN_IF_ERROR(SliceBounds(big.shape, p, &begin, &shape));
  const std::vector<int64_t> bs = ContiguousStrides(big.shape), ss = ContiguousStrides(small.shape);
  int64_t base = 0;
  for (size_t d = 0; d < begin.size(); ++d) base += begin[d] * bs[d];
  StridedCopy c;
  if (backward) {
    c.src = small;
    c.dst = big;
    c.dst_base = base;
    RILL_ASSIGN_OR_RETURN(c.plan, MakeCopyPlan(small.shape.span(), ss, bs));
  } else {
    c.src = big;
    c.dst = small;
    c.src_base = base;
    RILL_ASSIGN_OR_RETURN(c.plan, MakeCopyPlan(small.shape.span(), bs, ss));
  }
  c.count = small.size();
  return c;
}

absl::StatusOr<StridedCopy> ConcatCopy(const TensorArg& in, const TensorArg& out, int axis,
                                       int64_t offset) {
  const std::vector<int64_t> os = ContiguousStrides(out.shape);
  StridedCopy c{in, out};
  c.dst_base = offset * os[axis];
  RILL_ASSIGN_OR_RETURN(c.plan, MakeCopyPlan(in.shape.span(), ContiguousStrides(in.shape), os));
  c.count = in.size();
  return c;
}

absl::Status BadIndexError(int64_t index, int64_t at, int64_t dim) {
  return absl::InvalidArgumentError(absl::StrCat("index ", index, " (at ", at,
                                                 ") is out of range for a dim of size ", dim,
                                                 " (valid: [", -dim, ", ", dim, "))"));
}

absl::StatusOr<GatherPlan> MakeGatherPlan(const Shape& data, const Shape& indices, int64_t axis) {
  RILL_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, data.rank()));
  GatherPlan p;
  p.outer = 1;
  p.inner = 1;
  for (int d = 0; d < a; ++d) p.outer *= data[d];
  for (int d = a + 1; d < data.rank(); ++d) p.inner *= data[d];
  p.axis_dim = data[a];
  p.count = indices.NumElements();
  return p;
}

namespace {

// The axis of `data` that gather_elements gathers along, or why `indices`
// does not fit: the same rank, no larger off the axis.
absl::StatusOr<int> GatherElementsAxis(const Shape& data, const Shape& indices, int64_t axis) {
  RILL_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, data.rank()));
  if (indices.rank() != data.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("indices ", indices.ToString(), " and data ",
                                                   data.ToString(), " differ in rank"));
  }
  for (int d = 0; d < data.rank(); ++d) {
    if (d != a && indices[d] > data[d]) {
      return absl::InvalidArgumentError(absl::StrCat("indices ", indices.ToString(),
                                                     " exceed data ", data.ToString(), " on axis ",
                                                     d, " (only axis ", a, " is gathered along)"));
    }
  }
  if (data[a] == 0 && indices.NumElements() > 0) {
    return absl::InvalidArgumentError(absl::StrCat("gather_elements along axis ", axis, " of data ",
                                                   data.ToString(),
                                                   ": the axis is empty, so no index is in range"));
  }
  return a;
}

}  // namespace

absl::StatusOr<GatherElementsPlan> MakeGatherElementsPlan(const Shape& data, const Shape& indices,
                                                          int64_t axis) {
  RILL_ASSIGN_OR_RETURN(int a, GatherElementsAxis(data, indices, axis));
  GatherElementsPlan p;
  p.axis = -1;
  for (int d = 0; d < data.rank(); ++d) {
    const int64_t n = data[d], m = indices[d];
    if (d != a) {
      if (n == 1 && m == 1) continue;
      // Merged into the previous axis (off the gathered one) when the
      // indices span this one: their coordinates then agree.
      if (p.rank > 0 && p.rank - 1 != p.axis && m == n) {
        p.data_dims[p.rank - 1] *= n;
        p.index_dims[p.rank - 1] *= m;
        continue;
      }
    }
    if (p.rank == kCopyMaxRank) {
      return absl::UnimplementedError(absl::StrCat("gather_elements of ", data.ToString(), " at ",
                                                   indices.ToString(), " needs more than ",
                                                   kCopyMaxRank, " collapsed axes"));
    }
    if (d == a) p.axis = p.rank;
    p.data_dims[p.rank] = n;
    p.index_dims[p.rank] = m;
    ++p.rank;
  }
  return p;
}

namespace {

absl::Status ReshapeShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& in = ctx.in_shapes[0];
  const std::vector<int64_t>& want = ctx.p<ReshapeParams>().shape;
  const std::string text = absl::StrCat("shape=(", absl::StrJoin(want, ", "), ")");
  Shape s;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t v = want[i];
    if (v == 0) {
      if (static_cast<int>(i) >= in.rank()) {
        return absl::InvalidArgumentError(absl::StrCat(text, ": 0 at axis ", i, " but the input ",
                                                       in.ToString(), " has no such axis"));
      }
      v = in[i];
    } else if (v == -1) {
      if (infer >= 0)
        return absl::InvalidArgumentError(absl::StrCat(text, " has more than one -1"));
      infer = static_cast<int>(i);
      v = 1;
    } else if (v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(text, ": dimension ", v, " is negative"));
    }
    s.mutable_dims().push_back(v);
    if (v != 0 && known > INT64_MAX / v) {
      return absl::InvalidArgumentError(absl::StrCat(text, " overflows 64 bits"));
    }
    known *= v;
  }
  const int64_t n = in.NumElements();
  if (infer >= 0) {
    if (known == 0 || n % known != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot reshape ", in.ToString(), " (", n, " elements) to ", text));
    }
    s.set_dim(infer, n / known);
    known = n;
  }
  if (known != n) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", in.ToString(), " (", n,
                                                   " elements) to ", text, " (", known,
                                                   " elements)"));
  }
  (*out)[0] = s;
  return absl::OkStatus();
}

absl::Status FlattenShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& in = ctx.in_shapes[0];
  if (in.rank() == 0) {
    (*out)[0] = Shape{1, 1};
    return absl::OkStatus();
  }
  int64_t rest = 1;
  for (int d = 1; d < in.rank(); ++d) rest *= in[d];
  (*out)[0] = Shape{in[0], rest};
  return absl::OkStatus();
}

absl::Status TransposeShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& in = ctx.in_shapes[0];
  RILL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                        TransposeAxes(ctx.p<TransposeParams>(), in.rank()));
  Shape s = in;
  for (int d = 0; d < in.rank(); ++d) s.set_dim(d, in[axes[d]]);
  (*out)[0] = s;
  return absl::OkStatus();
}

absl::Status SliceShape(const InferContext& ctx, std::vector<Shape>* out) {
  std::vector<int64_t> begin;
  return SliceBounds(ctx.in_shapes[0], ctx.p<SliceParams>(), &begin, &(*out)[0]);
}

absl::Status SliceBackwardShape(const InferContext& ctx, std::vector<Shape>* out) {
  std::vector<int64_t> begin;
  Shape s;
  RILL_RETURN_IF_ERROR(SliceBounds(ctx.in_shapes[1], ctx.p<SliceParams>(), &begin, &s));
  if (s != ctx.in_shapes[0]) {
    return absl::InvalidArgumentError(absl::StrCat("dy is ", ctx.in_shapes[0].ToString(),
                                                   " but the slice of x is ", s.ToString()));
  }
  (*out)[0] = ctx.in_shapes[1];
  return absl::OkStatus();
}

absl::Status ConcatShape(const InferContext& ctx, std::vector<Shape>* out) {
  const Shape& first = ctx.in_shapes[0];
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(ctx.p<ConcatParams>().axis, first.rank()));
  Shape s = first;
  int64_t total = 0;
  for (size_t i = 0; i < ctx.in_shapes.size(); ++i) {
    const Shape& x = ctx.in_shapes[i];
    bool ok = x.rank() == first.rank();
    for (int d = 0; ok && d < x.rank(); ++d) ok = d == axis || x[d] == first[d];
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("concat along axis ", axis, ": input ", i,
                                                     " is ", x.ToString(), " but input 0 is ",
                                                     first.ToString()));
    }
    total += x[axis];
  }
  s.set_dim(axis, total);
  RILL_RETURN_IF_ERROR(s.Validate());
  (*out)[0] = s;
  return absl::OkStatus();
}

// data.shape[:axis] + indices.shape + data.shape[axis+1:].
absl::StatusOr<Shape> GatherOutShape(const Shape& data, const Shape& indices, int64_t axis) {
  RILL_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, data.rank()));
  if (data[a] == 0 && indices.NumElements() > 0) {
    return absl::InvalidArgumentError(absl::StrCat("gather along axis ", axis, " of data ",
                                                   data.ToString(),
                                                   ": the axis is empty, so no index is in range"));
  }
  Shape s;
  auto& dims = s.mutable_dims();
  dims.assign(data.span().begin(), data.span().begin() + a);
  dims.insert(dims.end(), indices.span().begin(), indices.span().end());
  dims.insert(dims.end(), data.span().begin() + a + 1, data.span().end());
  RILL_RETURN_IF_ERROR(s.Validate());
  return s;
}

absl::Status GatherShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(
      (*out)[0], GatherOutShape(ctx.in_shapes[0], ctx.in_shapes[1], ctx.p<GatherParams>().axis));
  return absl::OkStatus();
}

absl::Status CheckIndexType(DType t) {
  if (t == DType::kI32 || t == DType::kI64) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("indices are ", DTypeName(t), "; gathers take int32 or int64 indices"));
}

absl::Status GatherType(const InferContext& ctx, std::vector<DType>* out) {
  RILL_RETURN_IF_ERROR(CheckIndexType(ctx.in_types[1]));
  (*out)[0] = ctx.in_types[0];
  return absl::OkStatus();
}

// (dy, data, indices) -> d data: data's shape, dy the forward output's.
absl::Status GatherBackwardShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_ASSIGN_OR_RETURN(
      Shape s, GatherOutShape(ctx.in_shapes[1], ctx.in_shapes[2], ctx.p<GatherParams>().axis));
  if (s != ctx.in_shapes[0]) {
    return absl::InvalidArgumentError(absl::StrCat("dy is ", ctx.in_shapes[0].ToString(),
                                                   " but gather's output is ", s.ToString()));
  }
  (*out)[0] = ctx.in_shapes[1];
  return absl::OkStatus();
}

absl::Status GatherBackwardType(const InferContext& ctx, std::vector<DType>* out) {
  RILL_RETURN_IF_ERROR(CheckIndexType(ctx.in_types[2]));
  if (ctx.in_types[0] != ctx.in_types[1]) {
    return absl::InvalidArgumentError(absl::StrCat("dy is ", DTypeName(ctx.in_types[0]),
                                                   " but data is ", DTypeName(ctx.in_types[1])));
  }
  (*out)[0] = ctx.in_types[1];
  return absl::OkStatus();
}

absl::Status GatherElementsShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(
      GatherElementsAxis(ctx.in_shapes[0], ctx.in_shapes[1], ctx.p<GatherParams>().axis).status());
  (*out)[0] = ctx.in_shapes[1];
  return absl::OkStatus();
}

// (dy, data, indices) -> d data: data's shape, dy the indices'.
absl::Status GatherElementsBackwardShape(const InferContext& ctx, std::vector<Shape>* out) {
  RILL_RETURN_IF_ERROR(
      GatherElementsAxis(ctx.in_shapes[1], ctx.in_shapes[2], ctx.p<GatherParams>().axis).status());
  if (ctx.in_shapes[0] != ctx.in_shapes[2]) {
    return absl::InvalidArgumentError(absl::StrCat("dy is ", ctx.in_shapes[0].ToString(),
                                                   " but the indices are ",
                                                   ctx.in_shapes[2].ToString()));
  }
  (*out)[0] = ctx.in_shapes[1];
  return absl::OkStatus();
}

absl::Status CastType(const InferContext& ctx, std::vector<DType>* out) {
  (*out)[0] = ctx.p<CastParams>().dtype;
  return absl::OkStatus();
}
absl::Status SliceBackwardType(const InferContext& ctx, std::vector<DType>* out) {
  (*out)[0] = ctx.in_types[0];
  return absl::OkStatus();
}

absl::StatusOr<Tensor> One(const char* op, std::vector<Tensor> in,
                           std::shared_ptr<const void> params) {
  RILL_ASSIGN_OR_RETURN(auto r, Invoke(BuiltinOp(op), in, std::move(params)));
  return r[0];
}

absl::StatusOr<std::vector<Tensor>> ReshapeBack(const GradientContext& c) {  // reshape, flatten.
  ReshapeParams p;
  p.shape.assign(c.inputs[0].shape().span().begin(), c.inputs[0].shape().span().end());
  RILL_ASSIGN_OR_RETURN(Tensor g, One(op_names::kReshape, {c.out_grads[0]}, MakeParams(p)));
  return std::vector<Tensor>{g};
}

absl::StatusOr<std::vector<Tensor>> TransposeBack(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(auto axes,
                        TransposeAxes(c.p<TransposeParams>(), c.inputs[0].shape().rank()));
  TransposeParams inv;
  inv.axes.resize(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) inv.axes[axes[i]] = static_cast<int64_t>(i);
  RILL_ASSIGN_OR_RETURN(Tensor g, One(op_names::kTranspose, {c.out_grads[0]}, MakeParams(inv)));
  return std::vector<Tensor>{g};
}

absl::StatusOr<std::vector<Tensor>> SliceBack(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor g, One(op_names::kBackwardSlice, {c.out_grads[0], c.inputs[0]},
                                      MakeParams(c.p<SliceParams>())));
  return std::vector<Tensor>{g};
}

absl::StatusOr<std::vector<Tensor>> ConcatBack(const GradientContext& c) {
  const Shape& out = c.outputs[0].shape();
  RILL_ASSIGN_OR_RETURN(int axis, NormalizeAxis(c.p<ConcatParams>().axis, out.rank()));
  std::vector<Tensor> grads;
  int64_t offset = 0;
  for (const Tensor& x : c.inputs) {
    SliceParams p;
    p.begin.assign(axis + 1, 0);
    p.end.assign(out.span().begin(), out.span().begin() + axis + 1);
    p.begin[axis] = offset;
    p.end[axis] = offset + x.shape()[axis];
    offset += x.shape()[axis];
    RILL_ASSIGN_OR_RETURN(Tensor g, One(op_names::kSlice, {c.out_grads[0]}, MakeParams(p)));
    grads.push_back(g);
  }
  return grads;
}

absl::StatusOr<std::vector<Tensor>> GatherBack(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(Tensor g,
                        One(op_names::kBackwardGather, {c.out_grads[0], c.inputs[0], c.inputs[1]},
                            MakeParams(c.p<GatherParams>())));
  return std::vector<Tensor>{g, Tensor()};  // None to the indices.
}

absl::StatusOr<std::vector<Tensor>> GatherElementsBack(const GradientContext& c) {
  RILL_ASSIGN_OR_RETURN(
      Tensor g, One(op_names::kBackwardGatherElements, {c.out_grads[0], c.inputs[0], c.inputs[1]},
                    MakeParams(c.p<GatherParams>())));
  return std::vector<Tensor>{g, Tensor()};  // None to the indices.
}

constexpr uint32_t kAnyType = kAllTypesMask;

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  r.Check(r.Register(OpDef(op_names::kReshape)
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<ReshapeParams>().Required(
                             "shape", &ReshapeParams::shape, "new shape; -1 inferred, 0 kept"))
                         .set_infer_shape(ReshapeShape)
                         .set_inplace({{0, 0}})
                         .set_gradient(ReshapeBack)));
  r.Check(r.Register(OpDef(op_names::kFlatten)
                         .set_dtypes(kAnyType)
                         .set_infer_shape(FlattenShape)
                         .set_inplace({{0, 0}})
                         .set_gradient(ReshapeBack)));
  r.Check(r.Register(OpDef(op_names::kTranspose)
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<TransposeParams>().Field(
                             "axes", &TransposeParams::axes, "permutation; empty: reversed"))
                         .set_infer_shape(TransposeShape)
                         .set_gradient(TransposeBack)));
  r.Check(r.Register(
      OpDef(op_names::kSlice)
          .set_dtypes(kAnyType)
          .set_params(ParamSchema::For<SliceParams>()
                          .Required("begin", &SliceParams::begin, "per leading axis")
                          .Required("end", &SliceParams::end, "per leading axis, excluded"))
          .set_infer_shape(SliceShape)
          .set_gradient(SliceBack)));
  r.Check(r.Register(OpDef(op_names::kBackwardSlice)
                         .set_inputs({"dy", "x"})
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<SliceParams>()
                                         .Required("begin", &SliceParams::begin, "as forward")
                                         .Required("end", &SliceParams::end, "as forward"))
                         .set_infer_shape(SliceBackwardShape)
                         .set_infer_type(SliceBackwardType)));
  r.Check(r.Register(OpDef(op_names::kConcat)
                         .set_variadic_inputs()
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<ConcatParams>().Field(
                             "axis", &ConcatParams::axis, "axis to join (default 0)"))
                         .set_infer_shape(ConcatShape)
                         .set_gradient(ConcatBack)));
  r.Check(r.Register(OpDef(op_names::kCast)
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<CastParams>().Required(
                             "dtype", &CastParams::dtype, "target type"))
                         .set_infer_type(CastType)));
  // gather (ONNX Gather): out[o, k..., i] = data[o, indices[k...], i] along
  // `axis`; indices int32 or int64, negative ones from the end. An index out
  // of [-dim, dim) fails the op on every platform (BadIndexError, poisoning
  // the output): device kernels check the indices into temp space first
  // (ops/device_check.h).
  r.Check(r.Register(OpDef(op_names::kGather)
                         .set_inputs({"data", "indices"})
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<GatherParams>().Field(
                             "axis", &GatherParams::axis, "axis of data (default 0)"))
                         .set_infer_shape(GatherShape)
                         .set_infer_type(GatherType)
                         .set_resources({ResourceKind::kTempSpace})
                         .set_gradient(GatherBack)));
  // Zeros shaped as data, dy's slices added at the indices (duplicates
  // accumulate); indices as forward.
  r.Check(r.Register(OpDef(op_names::kBackwardGather)
                         .set_inputs({"dy", "data", "indices"})
                         .set_dtypes(kNumericTypes)
                         .set_params(ParamSchema::For<GatherParams>().Field(
                             "axis", &GatherParams::axis, "as forward"))
                         .set_infer_shape(GatherBackwardShape)
                         .set_infer_type(GatherBackwardType)
                         .set_resources({ResourceKind::kTempSpace})));
  // gather_elements (ONNX GatherElements): out[c] = data[c with c[axis] =
  // indices[c]], out shaped as the indices (data's rank, no larger off the
  // axis). Indices as gather's: one out of range fails the op.
  r.Check(r.Register(OpDef(op_names::kGatherElements)
                         .set_inputs({"data", "indices"})
                         .set_dtypes(kAnyType)
                         .set_params(ParamSchema::For<GatherParams>().Field(
                             "axis", &GatherParams::axis, "axis of data (default 0)"))
                         .set_infer_shape(GatherElementsShape)
                         .set_infer_type(GatherType)
                         .set_resources({ResourceKind::kTempSpace})
                         .set_gradient(GatherElementsBack)));
  // Zeros shaped as data, each dy element added where its index points
  // (duplicates accumulate).
  r.Check(r.Register(OpDef(op_names::kBackwardGatherElements)
                         .set_inputs({"dy", "data", "indices"})
                         .set_dtypes(kNumericTypes)
                         .set_params(ParamSchema::For<GatherParams>().Field(
                             "axis", &GatherParams::axis, "as forward"))
                         .set_infer_shape(GatherElementsBackwardShape)
                         .set_infer_type(GatherBackwardType)
                         .set_resources({ResourceKind::kTempSpace})));
  RegisterShapeHostKernels(r);
  RegisterShapeDeviceKernels(r);
}

}  // namespace rill::ops
