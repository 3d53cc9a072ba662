#include "rill/tensor/tensor.h"

#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"

namespace rill {
namespace tensor_internal {

// What a tensor and its views share. Destroyed with the last of them: its
// storage goes back to the allocator through DeleteVariable.
struct Chunk {
  engine::Engine* engine = nullptr;
  engine::Context ctx;
  StreamExecutor* executor = nullptr;
  StorageAllocator* allocator = nullptr;
  engine::VarHandle var;
  uint64_t bytes = 0;

  // The block is written once, under mu, before `allocated` is set
  // (release) and never again: a reader that sees `allocated` (acquire)
  // reads it without the lock, as every op push does.
  Mutex mu;
  StorageBlock block;
  std::atomic<bool> allocated{false};
  std::atomic<bool> freed{false};  // Set once, under mu.

  // Deletes the var; the storage returns to the allocator once every
  // function pushed before has completed.
  void Release() {
    StorageBlock b;
    {
      MutexLock lock(&mu);
      if (freed.load(std::memory_order_relaxed)) return;
      freed.store(true, std::memory_order_release);
      b = block;
    }
    StorageAllocator* alloc = allocator;
    absl::Status s = engine->DeleteVariable(
        [alloc, b](engine::RunContext) {
          alloc->Free(b);
          return absl::OkStatus();
        },
        engine::Context::Host(), var);
    if (!s.ok()) alloc->Free(b);  // The engine is shut down: nothing can still use it.
  }
  ~Chunk() { Release(); }
};

}  // namespace tensor_internal

using tensor_internal::Chunk;

absl::StatusOr<StreamExecutor*> ExecutorFor(const engine::Context& ctx) {
  return ExecutorFor(ctx, nullptr);
}

absl::StatusOr<StreamExecutor*> ExecutorFor(const engine::Context& ctx, engine::Engine* engine) {
  PlatformManager& pm = engine != nullptr ? engine->platforms() : PlatformManager::Default();
  if (ctx.is_host()) {
    RILL_ASSIGN_OR_RETURN(Platform * host, pm.PlatformWithName("host"));
    return host->ExecutorForDevice(0);
  }
  RILL_ASSIGN_OR_RETURN(Platform * platform, pm.PlatformWithId(ctx.platform));
  return platform->ExecutorForDevice(ctx.ordinal);
}

absl::StatusOr<Tensor> TensorAccess::Empty(const Shape& shape, DType dtype, engine::Context ctx,
                                           engine::Engine* engine, StreamExecutor* executor) {
  RILL_RETURN_IF_ERROR(shape.Validate(DTypeSize(dtype)));
  auto chunk = std::make_shared<Chunk>();
  chunk->engine = engine;
  chunk->ctx = ctx;
  chunk->executor = executor;
  chunk->allocator = StorageAllocator::For(executor);
  chunk->bytes = static_cast<uint64_t>(shape.NumElements()) * DTypeSize(dtype);
  chunk->var = engine->NewVariable();
  return Tensor(std::move(chunk), shape, dtype, 0);
}

StorageAllocator* TensorAccess::Allocator(const Tensor& t) {
  return t.chunk_ ? t.chunk_->allocator : nullptr;
}

absl::StatusOr<Tensor> Tensor::Empty(const Shape& shape, DType dtype, engine::Context ctx,
                                     engine::Engine* engine) {
  if (engine == nullptr) engine = &engine::Engine::Default();
  RILL_ASSIGN_OR_RETURN(StreamExecutor * executor, ExecutorFor(ctx, engine));
  return TensorAccess::Empty(shape, dtype, ctx, engine, executor);
}

engine::Context Tensor::context() const { return chunk_ ? chunk_->ctx : engine::Context(); }
engine::Engine* Tensor::engine() const { return chunk_ ? chunk_->engine : nullptr; }
engine::VarHandle Tensor::var() const { return chunk_ ? chunk_->var : engine::VarHandle(); }
StreamExecutor* Tensor::executor() const { return chunk_ ? chunk_->executor : nullptr; }

std::string Tensor::ToString() const {
  if (!chunk_) return "undefined tensor";
  return absl::StrCat(DTypeName(dtype_), shape_.ToString(), " on ", chunk_->ctx.ToString());
}

std::string Tensor::ViewString() const {
  if (!chunk_) return ToString();
  return absl::StrCat(ToString(), " at byte ", offset_);
}

absl::Status Tensor::TypeMismatch(const char* wanted) const {
  return absl::InvalidArgumentError(
      absl::StrCat("tensor ", ToString(), " holds ", DTypeName(dtype_), ", not ", wanted));
}

absl::Status Tensor::CheckUsable() const {
  if (!chunk_) {
    return absl::FailedPreconditionError(
        "use of an undefined tensor (default-constructed or moved-from)");
  }
  if (chunk_->freed.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(
        absl::StrCat("use of tensor ", ToString(), " after Free()"));
  }
  return absl::OkStatus();
}

absl::StatusOr<StorageBlock> Tensor::Storage() const {
  if (!chunk_) return CheckUsable();
  // Steady state: allocated, not freed; no lock.
  if (chunk_->allocated.load(std::memory_order_acquire) &&
      !chunk_->freed.load(std::memory_order_acquire)) {
    return chunk_->block;
  }
  MutexLock lock(&chunk_->mu);
  if (chunk_->freed.load(std::memory_order_relaxed)) {
    return absl::FailedPreconditionError(
        absl::StrCat("use of tensor ", ToString(), " after Free()"));
  }
  if (!chunk_->allocated.load(std::memory_order_relaxed)) {
    if (chunk_->bytes > 0) {
      RILL_ASSIGN_OR_RETURN(chunk_->block, chunk_->allocator->Allocate(chunk_->bytes));
    }
    chunk_->allocated.store(true, std::memory_order_release);
  }
  return chunk_->block;
}

absl::Status Tensor::Free() {
  RILL_RETURN_IF_ERROR(CheckUsable());
  chunk_->Release();
  return absl::OkStatus();
}

// --- Views.

absl::StatusOr<Tensor> Tensor::View(const Shape& shape, DType dtype, uint64_t byte_offset) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  RILL_RETURN_IF_ERROR(shape.Validate(DTypeSize(dtype)));
  const uint64_t bytes = static_cast<uint64_t>(shape.NumElements()) * DTypeSize(dtype);
  if (byte_offset % DTypeSize(dtype) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("view ", DTypeName(dtype), shape.ToString(), " at byte offset ", byte_offset,
                     " of ", ToString(), ": the offset is not a multiple of ", DTypeSize(dtype),
                     " (the element size), so the view would be misaligned"));
  }
  if (byte_offset > chunk_->bytes || bytes > chunk_->bytes - byte_offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "view ", DTypeName(dtype), shape.ToString(), " at byte offset ", byte_offset, " (", bytes,
        " bytes) reaches past the end of its storage (", chunk_->bytes, " bytes) of ", ToString()));
  }
  return Tensor(chunk_, shape, dtype, byte_offset);
}

absl::StatusOr<Tensor> Tensor::Reshape(const Shape& shape) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  Shape s = shape;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < s.rank(); ++i) {
    if (s[i] == -1 && infer < 0) {
      infer = i;
    } else if (s[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Reshape of ", ToString(), " to ",
                                                     shape.ToString(), ": bad dimension ", s[i]));
    } else {
      if (s[i] != 0 && known > INT64_MAX / s[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("Reshape to ", shape.ToString(), " overflows"));
      }
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || NumElements() % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat("Reshape of ", ToString(), " to ",
                                                     shape.ToString(), ": cannot infer the -1"));
    }
    s.set_dim(infer, NumElements() / known);
    known = NumElements();
  }
  if (known != NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("Reshape of ", ToString(), " (", NumElements(),
                                                   " elements) to ", shape.ToString(), " (", known,
                                                   " elements)"));
  }
  return Tensor(chunk_, s, dtype_, offset_);
}

absl::StatusOr<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  if (shape_.rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("Slice of scalar ", ToString()));
  }
  if (begin < 0 || end < begin || end > shape_[0]) {
    return absl::InvalidArgumentError(absl::StrCat("Slice [", begin, ", ", end, ") of ", ToString(),
                                                   ": out of range [0, ", shape_[0], "]"));
  }
  Shape s = shape_;
  s.set_dim(0, end - begin);
  const uint64_t row = shape_[0] == 0 ? 0 : ByteSize() / shape_[0];
  return Tensor(chunk_, s, dtype_, offset_ + begin * row);
}

absl::StatusOr<Tensor> Tensor::At(int64_t i) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  if (shape_.rank() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("At(", i, ") of scalar ", ToString()));
  }
  if (i < 0 || i >= shape_[0]) {  // Before i + 1, which could overflow.
    return absl::InvalidArgumentError(
        absl::StrCat("At(", i, ") of ", ToString(), ": out of range [0, ", shape_[0], ")"));
  }
  RILL_ASSIGN_OR_RETURN(Tensor row, Slice(i, i + 1));
  Shape s(absl::MakeConstSpan(shape_.dims()).subspan(1));
  return Tensor(row.chunk_, s, dtype_, row.offset_);
}

// --- Waiting and host transfers.

absl::Status Tensor::WaitToRead() const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  return chunk_->engine->WaitForVar(chunk_->var);
}

absl::Status Tensor::WaitToWrite() const { return WaitToRead(); }

absl::Status Tensor::ToHostBytes(void* data, uint64_t bytes) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  if (bytes != ByteSize()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ToHost of ", ToString(), " (", ByteSize(), " bytes) into ", bytes, " bytes"));
  }
  RILL_RETURN_IF_ERROR(WaitToRead());
  if (bytes == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(StorageBlock block, Storage());
  if (block.host != nullptr) {
    std::memcpy(data, static_cast<const char*>(block.host) + offset_, bytes);
    return absl::OkStatus();
  }
  RILL_ASSIGN_OR_RETURN(DeviceMemoryBase view, block.memory.GetByteSlice(offset_, bytes));
  return chunk_->executor->SynchronousMemcpy(data, view, bytes);
}

absl::StatusOr<Tensor> Tensor::FromHostBytes(const void* data, uint64_t bytes, const Shape& shape,
                                             DType dtype, engine::Context ctx,
                                             engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(Tensor t, Empty(shape, dtype, ctx, engine));
  if (bytes != t.ByteSize()) {
    return absl::InvalidArgumentError(absl::StrCat("FromHost: ", bytes, " bytes for ", t.ToString(),
                                                   " (", t.ByteSize(), " bytes)"));
  }
  if (bytes == 0) return t;
  RILL_ASSIGN_OR_RETURN(StorageBlock block, t.Storage());
  auto copy = std::make_shared<std::vector<char>>(static_cast<const char*>(data),
                                                  static_cast<const char*>(data) + bytes);
  engine::Engine* eng = t.engine();
  if (block.host != nullptr) {
    void* dst = block.host;
    RILL_RETURN_IF_ERROR(eng->PushSync(
        [dst, copy](engine::RunContext) {
          std::memcpy(dst, copy->data(), copy->size());
          return absl::OkStatus();
        },
        engine::Context::Host(), {}, {t.var()}, engine::FnProperty::kNormal, 0, "FromHost"));
    return t;
  }
  DeviceMemoryBase view = block.memory;
  RILL_RETURN_IF_ERROR(eng->PushSync(
      [view, copy, bytes](engine::RunContext rc) mutable {
        rc.stream->ThenMemcpy(&view, copy->data(), bytes).ThenNotify([copy](absl::Status) {});
        return absl::OkStatus();
      },
      ctx, {}, {t.var()}, engine::FnProperty::kCopyToDevice, 0, "FromHost"));
  return t;
}

// --- Copies between contexts.

absl::Status Tensor::CopyFrom(const Tensor& src) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  RILL_RETURN_IF_ERROR(src.CheckUsable());
  if (src.shape_ != shape_ || src.dtype_ != dtype_) {
    return absl::InvalidArgumentError(absl::StrCat("CopyFrom: source ", src.ToString(),
                                                   " does not match destination ", ToString()));
  }
  if (src.engine() != engine()) {
    return absl::InvalidArgumentError("CopyFrom: the tensors belong to different engines");
  }
  const uint64_t bytes = ByteSize();
  if (bytes == 0) return absl::OkStatus();
  RILL_ASSIGN_OR_RETURN(StorageBlock sb, src.Storage());
  RILL_ASSIGN_OR_RETURN(StorageBlock db, Storage());
  engine::Engine* eng = engine();
  const uint64_t so = src.offset_, doff = offset_;
  const std::string name = "CopyTo(" + context().ToString() + ")";
  if (sb.host != nullptr && db.host != nullptr) {
    const char* s = static_cast<const char*>(sb.host) + so;
    char* d = static_cast<char*>(db.host) + doff;
    return eng->PushSync(
        [s, d, bytes](engine::RunContext) {
          std::memmove(d, s, bytes);
          return absl::OkStatus();
        },
        engine::Context::Host(), {src.var()}, {var()}, engine::FnProperty::kNormal, 0, name);
  }
  RILL_ASSIGN_OR_RETURN(DeviceMemoryBase sview, sb.memory.GetByteSlice(so, bytes));
  RILL_ASSIGN_OR_RETURN(DeviceMemoryBase dview, db.memory.GetByteSlice(doff, bytes));
  if (db.host != nullptr) {  // Device to host, on the source's copy stream.
    char* d = static_cast<char*>(db.host) + doff;
    return eng->PushSync(
        [d, sview, bytes](engine::RunContext rc) {
          rc.stream->ThenMemcpy(d, sview, bytes);
          return absl::OkStatus();
        },
        src.context(), {src.var()}, {var()}, engine::FnProperty::kCopyFromDevice, 0, name);
  }
  if (sb.host != nullptr) {  // Host to device, on the destination's copy stream.
    const char* s = static_cast<const char*>(sb.host) + so;
    return eng->PushSync(
        [s, dview, bytes](engine::RunContext rc) mutable {
          rc.stream->ThenMemcpy(&dview, s, bytes);
          return absl::OkStatus();
        },
        context(), {src.var()}, {var()}, engine::FnProperty::kCopyToDevice, 0, name);
  }
  if (src.executor() == executor()) {  // Within one device.
    const StorageOverlap overlap = OverlapWith(src);
    if (overlap == StorageOverlap::kSame) return absl::OkStatus();  // Nothing moves.
    if (overlap == StorageOverlap::kPartial) {
      // Device copies (clEnqueueCopyBuffer, cuMemcpyDtoD) refuse or garble
      // overlapping ranges: stage through a copy on the same device.
      RILL_ASSIGN_OR_RETURN(Tensor staging, src.CopyTo(context()));
      return CopyFrom(staging);
    }
    return eng->PushSync(
        [sview, dview, bytes](engine::RunContext rc) mutable {
          rc.stream->ThenMemcpy(&dview, sview, bytes);
          return absl::OkStatus();
        },
        context(), {src.var()}, {var()}, engine::FnProperty::kCopyToDevice, 0, name);
  }
  // Between two devices without a direct path: stage through host memory.
  RILL_ASSIGN_OR_RETURN(Tensor staging, src.CopyTo(engine::Context::Host()));
  return CopyFrom(staging);
}

absl::StatusOr<Tensor> Tensor::CopyTo(engine::Context ctx) const {
  RILL_RETURN_IF_ERROR(CheckUsable());
  RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, ExecutorFor(ctx, engine()));
  RILL_ASSIGN_OR_RETURN(Tensor out, TensorAccess::Empty(shape_, dtype_, ctx, engine(), exec));
  RILL_RETURN_IF_ERROR(out.CopyFrom(*this));
  return out;
}

}  // namespace rill
