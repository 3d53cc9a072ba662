#include "rill/tensor/dtype.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rill {

int DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
    case DType::kBool:
      return 1;
  }
  return 1;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kF16:
      return "float16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

bool IsFloat(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16;
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  std::string n = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  for (DType t : kAllDTypes) {
    if (n == DTypeName(t)) return t;
  }
  if (n == "f32" || n == "float") return DType::kF32;
  if (n == "f64" || n == "double") return DType::kF64;
  if (n == "f16" || n == "half") return DType::kF16;
  if (n == "i32" || n == "int") return DType::kI32;
  if (n == "i64" || n == "long") return DType::kI64;
  if (n == "u8") return DType::kU8;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", n,
                   "'; expected one of float32, float64, float16, int32, int64, uint8, bool"));
}

}  // namespace rill
