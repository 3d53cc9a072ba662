#include "rill/plugins/rng/rng.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/plugins/plugin_chain.h"
#include "rill/plugins/plugin_check.h"

namespace rill {
namespace {

absl::Status CheckOut(Stream* stream, const DeviceMemoryBase* out, uint64_t element_size) {
  if (out == nullptr) return absl::InvalidArgumentError("output buffer is null");
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  RILL_RETURN_IF_ERROR(CheckBuffer(stream, "output", *out, 1));
  if (out->size() % element_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output ", out->ToString(), " is not a whole number of ", element_size, "-byte elements"));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CheckGaussian(Stream* stream, T stddev, const DeviceMemory<T>* out) {
  RILL_RETURN_IF_ERROR(CheckOut(stream, out, sizeof(T)));
  if (!(stddev > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("stddev ", stddev, " must be > 0"));
  }
  if (out->ElementCount() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("normal numbers come in pairs: element count ",
                                                   out->ElementCount(), " is odd"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RngSupport::Operation::ToString() const {
  if (std::string_view(distribution) == "bits") return "bits uint32";
  return absl::StrCat(distribution, " ", DataTypeName(type));
}

absl::Status RngSupport::Supports(const Operation&) const { return absl::OkStatus(); }

absl::Status RngSupport::DoPopulateRandUniform(Stream* stream, DeviceMemory<float>* out) {
  RILL_RETURN_IF_ERROR(CheckOut(stream, out, sizeof(float)));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, RouteCall(this, Operation{"uniform", DataType::kFloat}));
  return rng->Uniform(stream, DataType::kFloat, *out, out->ElementCount());
}

absl::Status RngSupport::DoPopulateRandUniform(Stream* stream, DeviceMemory<double>* out) {
  RILL_RETURN_IF_ERROR(CheckOut(stream, out, sizeof(double)));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, RouteCall(this, Operation{"uniform", DataType::kDouble}));
  return rng->Uniform(stream, DataType::kDouble, *out, out->ElementCount());
}

absl::Status RngSupport::DoPopulateRandGaussian(Stream* stream, float mean, float stddev,
                                                DeviceMemory<float>* out) {
  RILL_RETURN_IF_ERROR(CheckGaussian(stream, stddev, out));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, RouteCall(this, Operation{"gaussian", DataType::kFloat}));
  return rng->Gaussian(stream, DataType::kFloat, mean, stddev, *out, out->ElementCount());
}

absl::Status RngSupport::DoPopulateRandGaussian(Stream* stream, double mean, double stddev,
                                                DeviceMemory<double>* out) {
  RILL_RETURN_IF_ERROR(CheckGaussian(stream, stddev, out));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng,
                        RouteCall(this, Operation{"gaussian", DataType::kDouble}));
  return rng->Gaussian(stream, DataType::kDouble, mean, stddev, *out, out->ElementCount());
}

absl::Status RngSupport::DoPopulateRandBits(Stream* stream, DeviceMemory<uint32_t>* out) {
  RILL_RETURN_IF_ERROR(CheckOut(stream, out, sizeof(uint32_t)));
  RILL_ASSIGN_OR_RETURN(RngSupport * rng, RouteCall(this, Operation{"bits", DataType::kFloat}));
  return rng->Bits(stream, *out, out->ElementCount());
}

}  // namespace rill
