#include "rill/ops/op_runner.h"

#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/stream/stream.h"
#include "rill/tensor/storage_allocator.h"

namespace rill::ops {

absl::StatusOr<Stream*> InlineStream(StreamExecutor* executor) {
  // By serial, never reused: a stream of a destroyed executor is detached
  // (its calls fail) and never found again; it goes with the thread.
  thread_local absl::flat_hash_map<uint32_t, std::unique_ptr<Stream>> streams;
  auto& slot = streams[executor->serial()];
  if (slot == nullptr || !slot->ok()) {
    RILL_ASSIGN_OR_RETURN(slot, executor->CreateStream());
  }
  return slot.get();
}

std::string OpRunner::Describe(const OpCall& call, const engine::Context& ctx) {
  std::string s = absl::StrCat("op '", call.op->name(), "' (");
  for (size_t i = 0; i < call.in.size(); ++i)
    absl::StrAppend(&s, i ? ", " : "", call.in[i].ToString());
  absl::StrAppend(&s, " on ", ctx.ToString(), ")");
  return s;
}

namespace {

// Copies `src` over `dst` (same size) in the kernel's stream order.
absl::Status CopyArg(OpContext& ctx, const TensorArg& src, const TensorArg& dst) {
  if (src.bytes() == 0) return absl::OkStatus();
  if (src.host_base != nullptr && dst.host_base != nullptr) {
    const char* s = src.data<char>();
    char* d = dst.data<char>();
    const uint64_t n = src.bytes();
    return ctx.RunOnHost([s, d, n]() -> absl::Status {
      std::memmove(d, s, n);
      return absl::OkStatus();
    });
  }
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  DeviceMemoryBase d = dst.view();
  stream->ThenMemcpy(&d, src.view(), src.bytes());
  return stream->ok() ? absl::OkStatus() : stream->status();
}

}  // namespace

absl::Status OpRunner::Run(const OpCall& call, const engine::RunContext& rc) {
  std::vector<StorageBlock> temps;
  OpContext ctx;
  ctx.op_ = call.op;
  ctx.params_ = call.params.get();
  ctx.run_ = rc;
  ctx.executor_ = call.executor;
  ctx.is_train_ = call.is_train;
  ctx.temps_ = &temps;
  ctx.in_ = call.in;

  // Write requests the kernel cannot honour, and outputs that overlap an
  // input (OpCall::through_temp), go to temp outputs, fixed up after it
  // runs.
  absl::Span<const TensorArg> outs = call.out;
  absl::Span<const OpReqType> reqs = call.req;
  std::vector<TensorArg> kout;
  std::vector<OpReqType> kreq;
  std::vector<int> fixups;
  absl::Status status;
  for (size_t i = 0; i < call.out.size(); ++i) {
    const bool aliased = !call.through_temp.empty() && call.through_temp[i];
    if (!aliased && (call.kernel.reqs & ReqBit(call.req[i]))) continue;
    if (kout.empty()) {
      kout.assign(call.out.begin(), call.out.end());
      kreq.assign(call.req.begin(), call.req.end());
    }
    absl::StatusOr<TensorArg> tmp = ctx.Temp(call.out[i].shape, call.out[i].dtype);
    if (!tmp.ok()) {
      status = tmp.status();
      break;
    }
    kout[i] = *tmp;
    kreq[i] = OpReqType::kWriteTo;
    if (call.req[i] != OpReqType::kNullOp) fixups.push_back(static_cast<int>(i));
  }
  if (!kout.empty()) {
    outs = kout;
    reqs = kreq;
  }
  ctx.out_ = outs;
  ctx.req_ = reqs;
  if (status.ok()) status = call.kernel.fn(ctx);
  // On the CPU context the fix-ups below run at once: first let the library
  // work the kernel queued on its stream finish.
  if (!fixups.empty() && ctx.inline_stream_ != nullptr && status.ok()) {
    status = ctx.inline_stream_->BlockHostUntilDone();
  }
  for (size_t f = 0; f < fixups.size() && status.ok(); ++f) {
    const int i = fixups[f];
    if (call.req[i] == OpReqType::kAddTo) {
      // out += tmp, with the platform's accumulate kernel.
      TensorArg ins[2] = {call.out[i], kout[i]};
      OpReqType inplace = OpReqType::kWriteInplace;
      OpContext acc = ctx;
      acc.in_ = absl::MakeConstSpan(ins);
      acc.out_ = absl::MakeConstSpan(&call.out[i], 1);
      acc.req_ = absl::MakeConstSpan(&inplace, 1);
      acc.params_ = nullptr;
      if (call.accumulate == nullptr) {
        status = absl::UnimplementedError("no '_accumulate' kernel on this platform for kAddTo");
      } else {
        status = call.accumulate(acc);
      }
      ctx.inline_stream_ = acc.inline_stream_;
    } else {
      status = CopyArg(ctx, kout[i], call.out[i]);
    }
  }
  if (ctx.inline_stream_ != nullptr) {
    absl::Status s = ctx.inline_stream_->BlockHostUntilDone();
    if (status.ok()) status = s;
  }
  // Temp space goes back in stream order: at once when inline (its work has
  // finished), else after the stream's work so far.
  if (!temps.empty()) {
    StorageAllocator* alloc = StorageAllocator::For(call.executor);
    if (rc.stream == nullptr) {
      for (const StorageBlock& b : temps) alloc->Free(b);
    } else {
      rc.stream->ThenNotify([alloc, temps = std::move(temps)](absl::Status) {
        for (const StorageBlock& b : temps) alloc->Free(b);
      });
    }
  }
  if (status.ok() && rc.stream != nullptr && !rc.stream->ok()) status = rc.stream->status();
  if (!status.ok()) return Annotate(status, Describe(call, rc.ctx) + " failed");
  return absl::OkStatus();
}

}  // namespace rill::ops
