#include "rill/graph/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"
#include "rill/ops/shape/half.h"

namespace rill::graph {
namespace {

template <typename T>
T Load(const std::string& bytes, int64_t i) {
  T v;
  std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Store(std::string& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
}

// static_cast, except that a floating-point value converted to an integer
// saturates (NaN gives 0): a model's constants may hold any value, and a
// conversion out of range is undefined behavior.
template <typename Out, typename In>
Out CastTo(In v) {
  if constexpr (std::is_integral_v<Out> && std::is_floating_point_v<In>) {
    using Limits = std::numeric_limits<Out>;
    const double d = static_cast<double>(v);
    if (std::isnan(d)) return 0;
    // The max of a 64-bit type rounds up to 2^63 in double: >= is one past.
    if (d <= static_cast<double>(Limits::min())) return Limits::min();
    if (d >= static_cast<double>(Limits::max())) return Limits::max();
    return static_cast<Out>(d);
  } else {
    return static_cast<Out>(v);
  }
}

template <typename Out>
std::vector<Out> Convert(const OnnxHostTensor& t) {
  const int64_t n = t.size();
  std::vector<Out> out(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::kF32:
        out[i] = CastTo<Out>(Load<float>(t.bytes, i));
        break;
      case DType::kF64:
        out[i] = CastTo<Out>(Load<double>(t.bytes, i));
        break;
      case DType::kF16:
        out[i] = CastTo<Out>(ops::HalfToFloat(Load<uint16_t>(t.bytes, i)));
        break;
      case DType::kI32:
        out[i] = CastTo<Out>(Load<int32_t>(t.bytes, i));
        break;
      case DType::kI64:
        out[i] = CastTo<Out>(Load<int64_t>(t.bytes, i));
        break;
      case DType::kU8:
      case DType::kBool:
        out[i] = CastTo<Out>(Load<uint8_t>(t.bytes, i));
        break;
    }
  }
  return out;
}

// Copies a typed repeated field into `out` as elements of `dtype`.
template <typename Field>
void CopyTyped(const Field& f, DType dtype, std::string& out) {
  for (int i = 0; i < f.size(); ++i) {
    switch (dtype) {
      case DType::kF32:
        Store<float>(out, i, static_cast<float>(f.Get(i)));
        break;
      case DType::kF64:
        Store<double>(out, i, static_cast<double>(f.Get(i)));
        break;
      // FLOAT16 in int32_data holds the raw 16 bits.
      case DType::kF16:
        Store<uint16_t>(out, i, static_cast<uint16_t>(f.Get(i)));
        break;
      case DType::kI32:
        Store<int32_t>(out, i, static_cast<int32_t>(f.Get(i)));
        break;
      case DType::kI64:
        Store<int64_t>(out, i, static_cast<int64_t>(f.Get(i)));
        break;
      case DType::kU8:
        Store<uint8_t>(out, i, static_cast<uint8_t>(f.Get(i)));
        break;
      case DType::kBool:
        Store<uint8_t>(out, i, f.Get(i) != 0 ? 1 : 0);
        break;
    }
  }
}

}  // namespace

std::vector<int64_t> OnnxHostTensor::Int64s() const { return Convert<int64_t>(*this); }
std::vector<double> OnnxHostTensor::Doubles() const { return Convert<double>(*this); }

OnnxHostTensor OnnxHostTensor::FromInt64s(const std::vector<int64_t>& v, Shape shape) {
  OnnxHostTensor t;
  t.dtype = DType::kI64;
  t.shape = std::move(shape);
  t.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
  return t;
}

OnnxHostTensor OnnxHostTensor::Fill(DType dtype, const Shape& shape, double value) {
  return FromDoubles(std::vector<double>(shape.NumElements(), value), shape, dtype);
}

OnnxHostTensor OnnxHostTensor::FromDoubles(const std::vector<double>& v, const Shape& shape,
                                           DType dtype) {
  OnnxHostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  const int64_t n = shape.NumElements();
  t.bytes.resize(n * DTypeSize(dtype));
  for (int64_t i = 0; i < n && i < static_cast<int64_t>(v.size()); ++i) {
    const double value = v[i];
    switch (dtype) {
      case DType::kF32:
        Store<float>(t.bytes, i, static_cast<float>(value));
        break;
      case DType::kF64:
        Store<double>(t.bytes, i, value);
        break;
      case DType::kF16:
        Store<uint16_t>(t.bytes, i, ops::FloatToHalf(static_cast<float>(value)));
        break;
      case DType::kI32:
        Store<int32_t>(t.bytes, i, CastTo<int32_t>(value));
        break;
      case DType::kI64:
        Store<int64_t>(t.bytes, i, CastTo<int64_t>(value));
        break;
      case DType::kU8:
        Store<uint8_t>(t.bytes, i, CastTo<uint8_t>(value));
        break;
      case DType::kBool:
        Store<uint8_t>(t.bytes, i, value != 0 ? 1 : 0);
        break;
    }
  }
  return t;
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::kF32;
    case onnx::TensorProto::DOUBLE:
      return DType::kF64;
    case onnx::TensorProto::FLOAT16:
      return DType::kF16;
    case onnx::TensorProto::INT32:
      return DType::kI32;
    case onnx::TensorProto::INT64:
      return DType::kI64;
    case onnx::TensorProto::UINT8:
      return DType::kU8;
    case onnx::TensorProto::BOOL:
      return DType::kBool;
    default:
      return absl::UnimplementedError(absl::StrCat("element type ", OnnxTypeName(elem_type),
                                                   " is not supported (Rill has float32, float64, "
                                                   "float16, int32, int64, uint8, bool)"));
  }
}

std::string OnnxTypeName(int32_t elem_type) {
  if (onnx::TensorProto::DataType_IsValid(elem_type)) {
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type));
  }
  return absl::StrCat("type ", elem_type);
}

namespace {

// The number of elements the typed field of `t` holds for its data type.
int64_t TypedCount(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      return t.float_data_size();
    case onnx::TensorProto::DOUBLE:
      return t.double_data_size();
    case onnx::TensorProto::INT64:
      return t.int64_data_size();
    default:  // INT32, UINT8, BOOL, FLOAT16 live in int32_data.
      return t.int32_data_size();
  }
}

}  // namespace

absl::StatusOr<OnnxHostTensor> HostTensorFromProto(const onnx::TensorProto& t, FileBudget* budget) {
  const std::string what = absl::StrCat("tensor '", t.name(), "'");
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::UnimplementedError(
        absl::StrCat(what, " has external data; load it into the model first"));
  }
  if (t.has_segment()) return absl::UnimplementedError(absl::StrCat(what, " is segmented"));
  absl::StatusOr<DType> dtype = DTypeFromOnnx(t.data_type());
  if (!dtype.ok()) return Annotate(dtype.status(), what);
  OnnxHostTensor h;
  h.dtype = *dtype;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return absl::InvalidArgumentError(absl::StrCat(what, " has a negative dimension ", d));
    h.shape.mutable_dims().push_back(d);
  }
  RILL_RETURN_IF_ERROR(Annotate(h.shape.Validate(DTypeSize(h.dtype)), what));
  const int64_t n = h.shape.NumElements();
  RILL_ASSIGN_OR_RETURN(const int64_t want,
                        CheckedProduct(absl::StrCat(what, "'s byte count"),
                                       {n, static_cast<int64_t>(DTypeSize(h.dtype))}));
  // What the tensor claims against what it holds, before allocating.
  if (t.has_raw_data()) {
    if (t.raw_data().size() != static_cast<uint64_t>(want)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " of ", OnnxTypeName(t.data_type()), " ", h.shape.ToString(),
                       " needs ", want, " bytes of raw data, has ", t.raw_data().size()));
    }
  } else if (const int64_t have = TypedCount(t); have != n) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of ", OnnxTypeName(t.data_type()), " ",
                                                   h.shape.ToString(), " needs ", n,
                                                   " elements, has ", have));
  }
  if (budget != nullptr) RILL_RETURN_IF_ERROR(budget->Take(what, static_cast<uint64_t>(want)));
  if (t.has_raw_data()) {
    h.bytes = t.raw_data();
    if (h.dtype == DType::kBool) {
      for (char& c : h.bytes) c = c != 0 ? 1 : 0;
    }
    return h;
  }
  h.bytes.assign(want, '\0');
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      CopyTyped(t.float_data(), h.dtype, h.bytes);
      break;
    case onnx::TensorProto::DOUBLE:
      CopyTyped(t.double_data(), h.dtype, h.bytes);
      break;
    case onnx::TensorProto::INT64:
      CopyTyped(t.int64_data(), h.dtype, h.bytes);
      break;
    default:
      CopyTyped(t.int32_data(), h.dtype, h.bytes);
      break;
  }
  return h;
}

absl::StatusOr<Tensor> TensorFromHost(const OnnxHostTensor& t, engine::Context ctx,
                                      engine::Engine* engine) {
  return Tensor::FromHostBytes(t.bytes.data(), t.bytes.size(), t.shape, t.dtype, ctx, engine);
}

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& t, engine::Context ctx,
                                       engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(OnnxHostTensor h, HostTensorFromProto(t));
  return TensorFromHost(h, ctx, engine);
}

}  // namespace rill::graph
