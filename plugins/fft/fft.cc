#include "rill/plugins/fft/fft.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/plugin_check.h"
#include "rill/stream/stream.h"

namespace rill {

const char* FftTypeName(FftType type) {
  switch (type) {
    case FftType::kC2C:
      return "c2c";
    case FftType::kR2C:
      return "r2c";
    case FftType::kC2R:
      return "c2r";
  }
  return "?";
}

const char* FftDirectionName(FftDirection direction) {
  return direction == FftDirection::kForward ? "forward" : "inverse";
}

namespace {

// Spans and sizes stay far below this, so products of them cannot overflow.
constexpr int64_t kMaxElements = int64_t{1} << 56;

std::string LayoutString(const FftLayout& l) {
  return absl::StrCat("{embed=[", absl::StrJoin(l.embed, ","), "] stride=", l.stride,
                      " dist=", l.distance, "}");
}

// Whether the input (output) side of `type` holds real values.
bool RealInput(FftType type) { return type == FftType::kR2C; }
bool RealOutput(FftType type) { return type == FftType::kC2R; }

// The logical sizes of one side: the dims, with the last one n/2 + 1 on the
// complex side of a real transform.
std::vector<int64_t> SideDims(const FftPlanSpec& spec, bool real_side) {
  std::vector<int64_t> dims = spec.dims;
  if (spec.type != FftType::kC2C && !real_side) dims.back() = dims.back() / 2 + 1;
  return dims;
}

// a * b, or an error when it passes kMaxElements.
absl::StatusOr<int64_t> Mul(int64_t a, int64_t b, const char* what) {
  const std::optional<int64_t> product = CheckedMul(a, b);
  if (!product.has_value() || *product > kMaxElements) {
    return absl::InvalidArgumentError(absl::StrCat(what, " overflows: ", a, " * ", b));
  }
  return *product;
}

// Fills in the defaults of one side's layout and checks it.
absl::StatusOr<FftLayout> ResolveLayout(const char* side, const FftLayout& given,
                                        const FftPlanSpec& spec, bool real_side) {
  const std::vector<int64_t> logical = SideDims(spec, real_side);
  FftLayout l = given;
  if (l.embed.empty()) {
    l.embed = logical;
    const bool padded =
        real_side && spec.type != FftType::kC2C && spec.placement == FftPlacement::kInPlace;
    if (padded) l.embed.back() = 2 * (spec.dims.back() / 2 + 1);
  } else if (l.embed.size() != logical.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        side, ".embed has ", l.embed.size(), " sizes for a rank-", logical.size(), " transform"));
  }
  for (size_t i = 0; i < logical.size(); ++i) {
    if (l.embed[i] < logical[i]) {
      return absl::InvalidArgumentError(absl::StrCat(side, ".embed[", i, "]=", l.embed[i],
                                                     " is smaller than the ", side, "'s size ",
                                                     logical[i], " in that dimension"));
    }
  }
  if (l.stride < 0 || l.distance < 0) {
    return absl::InvalidArgumentError(absl::StrCat(side, ".stride=", l.stride, " and ", side,
                                                   ".distance=", l.distance,
                                                   " must be >= 1 (or 0 for the default)"));
  }
  if (l.stride == 0) l.stride = 1;
  int64_t volume = l.stride;
  for (int64_t e : l.embed) {
    RILL_ASSIGN_OR_RETURN(volume, Mul(volume, e, "layout size"));
  }
  if (l.distance == 0) l.distance = volume;
  RILL_RETURN_IF_ERROR(Mul(l.distance, spec.batch, "batch span").status());
  return l;
}

// Elements spanned by one side of a resolved spec.
uint64_t SpanElements(const FftPlanSpec& spec, const FftLayout& l, bool real_side) {
  const std::vector<int64_t> logical = SideDims(spec, real_side);
  uint64_t last = 0, pitch = 1;
  for (int i = static_cast<int>(logical.size()) - 1; i >= 0; --i) {
    last += static_cast<uint64_t>(logical[i] - 1) * pitch;
    pitch *= static_cast<uint64_t>(l.embed[i]);
  }
  return static_cast<uint64_t>(spec.batch - 1) * l.distance + last * l.stride + 1;
}

uint64_t ElementBytes(const FftPlanSpec& spec, bool real_side) {
  return (real_side ? 1 : 2) * static_cast<uint64_t>(SizeOf(spec.precision));
}

}  // namespace

std::string FftPlanSpec::ToString() const {
  return absl::StrCat(FftTypeName(type), " ", FftDirectionName(direction), " ",
                      DataTypeName(precision), " [", absl::StrJoin(dims, ","), "] x", batch,
                      placement == FftPlacement::kInPlace ? " in-place" : " out-of-place", " in",
                      LayoutString(input), " out", LayoutString(output));
}

absl::StatusOr<FftPlanSpec> ResolveFftPlanSpec(const FftPlanSpec& spec) {
  if (spec.rank() < 1 || spec.rank() > 3) {
    return absl::InvalidArgumentError(absl::StrCat("FFT rank ", spec.rank(), " (dims=[",
                                                   absl::StrJoin(spec.dims, ","),
                                                   "]) is not supported: it must be 1, 2 or 3"));
  }
  for (int i = 0; i < spec.rank(); ++i) {
    if (spec.dims[i] < 1 || spec.dims[i] > kMaxElements) {
      return absl::InvalidArgumentError(absl::StrCat("FFT size dims[", i, "]=", spec.dims[i],
                                                     " must be >= 1 (dims=[",
                                                     absl::StrJoin(spec.dims, ","), "])"));
    }
  }
  if (spec.batch < 1 || spec.batch > kMaxElements) {
    return absl::InvalidArgumentError(absl::StrCat("FFT batch=", spec.batch, " must be >= 1"));
  }
  if (spec.precision != DataType::kFloat && spec.precision != DataType::kDouble) {
    return absl::InvalidArgumentError("FFT precision must be float or double");
  }
  if ((spec.type == FftType::kR2C && spec.direction != FftDirection::kForward) ||
      (spec.type == FftType::kC2R && spec.direction != FftDirection::kInverse)) {
    return absl::InvalidArgumentError(
        absl::StrCat("an ", FftTypeName(spec.type), " transform is always ",
                     spec.type == FftType::kR2C ? "forward" : "inverse", ", not ",
                     FftDirectionName(spec.direction)));
  }
  FftPlanSpec resolved = spec;
  RILL_ASSIGN_OR_RETURN(resolved.input,
                        ResolveLayout("input", spec.input, spec, RealInput(spec.type)));
  RILL_ASSIGN_OR_RETURN(resolved.output,
                        ResolveLayout("output", spec.output, spec, RealOutput(spec.type)));
  return resolved;
}

uint64_t FftInputBytes(const FftPlanSpec& s) {
  return SpanElements(s, s.input, RealInput(s.type)) * ElementBytes(s, RealInput(s.type));
}

uint64_t FftOutputBytes(const FftPlanSpec& s) {
  return SpanElements(s, s.output, RealOutput(s.type)) * ElementBytes(s, RealOutput(s.type));
}

// --- FftSupport.

absl::Status FftSupport::CheckStream(Stream* stream) const {
  RILL_RETURN_IF_ERROR(CheckPluginStream(stream));
  if (stream->parent() != executor_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stream belongs to ", stream->parent()->DebugName(), ", but this ", Name(),
                     " plugin serves ", executor_->DebugName(), ": use that executor's AsFft()"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FftPlan>> FftSupport::CreatePlan(Stream* stream,
                                                                const FftPlanSpec& spec) {
  RILL_RETURN_IF_ERROR(CheckStream(stream));
  RILL_ASSIGN_OR_RETURN(FftPlanSpec resolved, ResolveFftPlanSpec(spec));
  return CreatePlanFromResolvedSpec(stream, resolved);
}

absl::StatusOr<FftPlan*> FftSupport::GetOrCreateCachedPlan(Stream* stream,
                                                           const FftPlanSpec& spec) {
  RILL_RETURN_IF_ERROR(CheckStream(stream));
  RILL_ASSIGN_OR_RETURN(FftPlanSpec resolved, ResolveFftPlanSpec(spec));
  MutexLock lock(&cache_mu_);  // Held while planning: one plan per shape.
  auto it = cache_.find(resolved);
  if (it != cache_.end()) return it->second.get();
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<FftPlan> plan,
                        CreatePlanFromResolvedSpec(stream, resolved));
  FftPlan* raw = plan.get();
  cache_.emplace(std::move(resolved), std::move(plan));
  return raw;
}

size_t FftSupport::CachedPlanCount() const {
  MutexLock lock(&cache_mu_);
  return cache_.size();
}

absl::Status FftSupport::DoFftChecked(Stream* stream, FftPlan* plan, FftType type,
                                      DataType precision, const DeviceMemoryBase& in,
                                      DeviceMemoryBase* out) {
  RILL_RETURN_IF_ERROR(CheckStream(stream));
  if (plan == nullptr) return absl::InvalidArgumentError("FFT plan is null");
  if (out == nullptr) return absl::InvalidArgumentError("FFT output is null");
  if (plan->executor() != executor_ || plan->plugin_name() != Name()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the FFT plan was made by the ", plan->plugin_name(), " plugin of ",
        plan->executor() ? plan->executor()->DebugName() : "no executor", ", not by the ", Name(),
        " plugin of the stream's executor ", executor_->DebugName()));
  }
  const FftPlanSpec& s = plan->spec();
  if (s.type != type || s.precision != precision) {
    return absl::InvalidArgumentError(
        absl::StrCat("the plan is ", FftTypeName(s.type), " ", DataTypeName(s.precision), " (",
                     s.ToString(), "), but the buffers' element types are those of ",
                     FftTypeName(type), " ", DataTypeName(precision)));
  }
  const bool same = !in.is_null() && in.opaque() == out->opaque() && in.offset() == out->offset();
  if (s.placement == FftPlacement::kInPlace && !same) {
    return absl::InvalidArgumentError(absl::StrCat("the plan is in-place, but input ",
                                                   in.ToString(), " and output ", out->ToString(),
                                                   " differ"));
  }
  if (s.placement == FftPlacement::kOutOfPlace && same) {
    return absl::InvalidArgumentError(
        absl::StrCat("the plan is out-of-place, but input and output are the same memory ",
                     in.ToString(), ": plan with FftPlacement::kInPlace"));
  }
  RILL_RETURN_IF_ERROR(CheckBuffer(stream, "input", in, FftInputBytes(s)));
  RILL_RETURN_IF_ERROR(CheckBuffer(stream, "output", *out, FftOutputBytes(s)));
  if (s.placement == FftPlacement::kOutOfPlace && in.opaque() == out->opaque()) {
    // Views of one allocation: the bytes the transform reads and writes
    // (both checked to lie within it, so no sum wraps) must be disjoint.
    const uint64_t in_end = in.offset() + FftInputBytes(s),
                   out_end = out->offset() + FftOutputBytes(s);
    if (in.offset() < out_end && out->offset() < in_end) {
      return absl::InvalidArgumentError(
          absl::StrCat("the plan is out-of-place, but input bytes [", in.offset(), ", ", in_end,
                       ") and output bytes [", out->offset(), ", ", out_end,
                       ") of one allocation overlap: use disjoint views, or plan with "
                       "FftPlacement::kInPlace and identical views"));
    }
  }
  return ExecutePlan(stream, plan, in, *out);
}

#define RILL_FFT_DO(In, Out, type, precision)                                               \
  absl::Status FftSupport::DoFft(Stream* stream, FftPlan* plan, const DeviceMemory<In>& in, \
                                 DeviceMemory<Out>* out) {                                  \
    return DoFftChecked(stream, plan, type, precision, in, out);                            \
  }
RILL_FFT_DO(std::complex<float>, std::complex<float>, FftType::kC2C, DataType::kFloat)
RILL_FFT_DO(std::complex<double>, std::complex<double>, FftType::kC2C, DataType::kDouble)
RILL_FFT_DO(float, std::complex<float>, FftType::kR2C, DataType::kFloat)
RILL_FFT_DO(double, std::complex<double>, FftType::kR2C, DataType::kDouble)
RILL_FFT_DO(std::complex<float>, float, FftType::kC2R, DataType::kFloat)
RILL_FFT_DO(std::complex<double>, double, FftType::kC2R, DataType::kDouble)
#undef RILL_FFT_DO

}  // namespace rill
