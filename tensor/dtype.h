#ifndef RILL_TENSOR_DTYPE_H_
#define RILL_TENSOR_DTYPE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace rill {

// Element types of tensors. kF16 is a storage type: tensors of it can be
// created, copied, reshaped and cast to and from, but arithmetic kernels
// take f32/f64 (and integers where the op says so).
enum class DType : uint8_t { kF32, kF64, kF16, kI32, kI64, kU8, kBool };
inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kI32,
                                       DType::kI64, DType::kU8,  DType::kBool};

// Bytes per element: 4, 8, 2, 4, 8, 1, 1.
int DTypeSize(DType dtype);
// "float32", "float64", "float16", "int32", "int64", "uint8", "bool".
const char* DTypeName(DType dtype);
// The name above (also "f32", "float", "double", "half", ...) to the type;
// InvalidArgument listing the names for anything else.
absl::StatusOr<DType> ParseDType(std::string_view name);
bool IsFloat(DType dtype);  // f32, f64, f16.

// One bit per type, for sets of supported types.
constexpr uint32_t DTypeBit(DType t) { return 1u << static_cast<int>(t); }
inline constexpr uint32_t kFloatTypes = DTypeBit(DType::kF32) | DTypeBit(DType::kF64);
inline constexpr uint32_t kNumericTypes =
    kFloatTypes | DTypeBit(DType::kI32) | DTypeBit(DType::kI64) | DTypeBit(DType::kU8);
inline constexpr uint32_t kAllTypesMask =
    kNumericTypes | DTypeBit(DType::kF16) | DTypeBit(DType::kBool);

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kF32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kF64;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType DTypeOf<bool>() {
  return DType::kBool;
}

// Calls fn(T{}) with the C++ type of `dtype` among f32, f64, i32, i64, u8
// and bool (bool as uint8_t storage). kF16 is not arithmetic: the caller
// rejects it first.
template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF64:
      return fn(double{});
    case DType::kI32:
      return fn(int32_t{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kU8:
    case DType::kBool:
      return fn(uint8_t{});
    default:
      return fn(float{});
  }
}

}  // namespace rill

#endif  // RILL_TENSOR_DTYPE_H_
