#include "rill/ops/op.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/op_runner.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/stream.h"
#include "rill/tensor/storage_allocator.h"

namespace rill::ops {

const char* OpReqName(OpReqType req) {
  switch (req) {
    case OpReqType::kNullOp:
      return "null";
    case OpReqType::kWriteTo:
      return "write";
    case OpReqType::kWriteInplace:
      return "inplace";
    case OpReqType::kAddTo:
      return "add";
  }
  return "?";
}

std::string TensorArg::ToString() const { return absl::StrCat(DTypeName(dtype), shape.ToString()); }

bool OpDef::NeedsResource(ResourceKind kind) const {
  for (ResourceKind r : resources_) {
    if (r == kind) return true;
  }
  return false;
}

absl::Status SameShapeAsInput0(const InferContext& ctx, std::vector<Shape>* out) {
  for (Shape& s : *out) s = ctx.in_shapes[0];
  return absl::OkStatus();
}

absl::Status SameTypeAsInputs(const InferContext& ctx, std::vector<DType>* out) {
  for (size_t i = 1; i < ctx.in_types.size(); ++i) {
    if (ctx.in_types[i] != ctx.in_types[0]) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ",
                                                     DTypeName(ctx.in_types[i]), " but input 0 is ",
                                                     DTypeName(ctx.in_types[0])));
    }
  }
  for (DType& t : *out) t = ctx.in_types.empty() ? DType::kF32 : ctx.in_types[0];
  return absl::OkStatus();
}

absl::StatusOr<Stream*> OpContext::stream() {
  if (run_.stream != nullptr) return run_.stream;
  if (inline_stream_ == nullptr) {
    RILL_ASSIGN_OR_RETURN(inline_stream_, InlineStream(executor_));
  }
  return inline_stream_;
}

absl::Status OpContext::EnqueueOnHost(absl::AnyInvocable<absl::Status() &&> fn) {
  run_.stream->ThenDoHostCallbackWithStatus(std::move(fn));
  return absl::OkStatus();
}

absl::StatusOr<TensorArg> OpContext::Temp(const Shape& shape, DType dtype) {
  RILL_RETURN_IF_ERROR(shape.Validate(DTypeSize(dtype)));
  TensorArg t;
  t.shape = shape;
  t.dtype = dtype;
  if (t.bytes() == 0) return t;
  RILL_ASSIGN_OR_RETURN(StorageBlock b, StorageAllocator::For(executor_)->Allocate(t.bytes()));
  temps_->push_back(b);
  t.block = b.memory;
  t.host_base = b.host;
  return t;
}

absl::StatusOr<RngSupport*> OpContext::rng() {
  RILL_ASSIGN_OR_RETURN(PluginInterface * p, executor_->GetPlugin(PluginKind::kRng));
  return static_cast<RngSupport*>(p);
}

absl::StatusOr<std::vector<Tensor>> NoGradient(const GradientContext& ctx) {
  return std::vector<Tensor>(ctx.inputs.size());
}

}  // namespace rill::ops
