#ifndef RILL_TENSOR_TENSOR_H_
#define RILL_TENSOR_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/engine/engine.h"
#include "rill/executor/device_memory.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"
#include "rill/tensor/storage_allocator.h"

namespace rill {

class StreamExecutor;

namespace tensor_internal {
struct Chunk;
}

// How two views' byte ranges lie in one storage (Tensor::OverlapWith).
enum class StorageOverlap {
  kDisjoint,  // Different storage, ranges that do not meet, or a zero-byte view.
  kSame,      // Exactly the same bytes (whatever the shapes and types).
  kPartial,   // Some bytes in common, not all.
};
// The overlap of [a, a + a_bytes) and [b, b + b_bytes) in one storage.
inline StorageOverlap RangeOverlap(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return StorageOverlap::kDisjoint;
  if (a == b && a_bytes == b_bytes) return StorageOverlap::kSame;
  // Views lie within their storage, so the ends do not wrap.
  if (a >= b + b_bytes || b >= a + a_bytes) return StorageOverlap::kDisjoint;
  return StorageOverlap::kPartial;
}

// The executor behind an engine context: Context::Host() ("cpu", functions
// run on the engine's CPU workers) is the host platform's device 0, whose
// memory it shares; a device context is that platform's device. NotFound /
// Unavailable naming the context otherwise.
absl::StatusOr<StreamExecutor*> ExecutorFor(const engine::Context& ctx);
// The same among the platforms of `engine` (Engine::platforms(); null: the
// default engine's, PlatformManager::Default()).
absl::StatusOr<StreamExecutor*> ExecutorFor(const engine::Context& ctx, engine::Engine* engine);

// An n-dimensional array on one context (MXNet's NDArray): a shape, an
// element type, a context, and a chunk it shares with its views -- storage
// from the context's StorageAllocator, allocated on first use, and an engine
// var that orders every function touching it.
//
// Work on tensors is asynchronous: ops push engine functions and return.
// WaitToRead()/ToHost() wait for the functions that write the tensor and
// return their error: a failed op poisons its outputs, and reading one
// returns the error of the op that failed (its name and its inputs' shapes),
// every time it is read. Views (Reshape, Slice, At) share storage and var:
// writing one is writing the others.
//
// Storage is released through Engine::DeleteVariable when the last tensor
// of a chunk goes (or at Free()): after every function pushed before that
// touched it has completed, device work included, so a freed block is never
// reused under a function still reading it. The engine must outlive the
// tensors made on it.
//
//   RILL_ASSIGN_OR_RETURN(Tensor a, Tensor::FromHost<float>({1, 2, 3, 4}, {2, 2}, ctx));
//   RILL_ASSIGN_OR_RETURN(Tensor b, a.CopyTo(other_ctx));
//   RILL_ASSIGN_OR_RETURN(std::vector<float> v, b.ToHost<float>());
//
// A Tensor object is a cheap handle (a shared pointer and a shape).
// Thread-compatible; the chunk behind it is thread-safe.
class Tensor {
 public:
  Tensor() = default;

  // A tensor with uninitialized storage (allocated when first used).
  // `engine` null: engine::Engine::Default().
  static absl::StatusOr<Tensor> Empty(const Shape& shape, DType dtype, engine::Context ctx,
                                      engine::Engine* engine = nullptr);
  // A tensor holding a copy of `bytes` host bytes (exactly shape x dtype).
  static absl::StatusOr<Tensor> FromHostBytes(const void* data, uint64_t bytes, const Shape& shape,
                                              DType dtype, engine::Context ctx,
                                              engine::Engine* engine = nullptr);
  template <typename T>
  static absl::StatusOr<Tensor> FromHost(absl::Span<const T> data, const Shape& shape,
                                         engine::Context ctx, engine::Engine* engine = nullptr) {
    return FromHostBytes(data.data(), data.size() * sizeof(T), shape, DTypeOf<T>(), ctx, engine);
  }
  template <typename T>
  static absl::StatusOr<Tensor> FromHost(std::initializer_list<T> data, const Shape& shape,
                                         engine::Context ctx, engine::Engine* engine = nullptr) {
    return FromHost<T>(absl::Span<const T>(data.begin(), data.size()), shape, ctx, engine);
  }

  bool defined() const { return chunk_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t NumElements() const { return shape_.NumElements(); }
  uint64_t ByteSize() const { return static_cast<uint64_t>(NumElements()) * DTypeSize(dtype_); }
  // Offset of this view in its chunk's storage.
  uint64_t byte_offset() const { return offset_; }
  engine::Context context() const;
  engine::Engine* engine() const;
  engine::VarHandle var() const;
  StreamExecutor* executor() const;
  // "float32[2, 3] on host:0".
  std::string ToString() const;

  // --- Views: no copy; they share storage and var with this tensor.
  // Same element count; one dimension may be -1 (inferred).
  absl::StatusOr<Tensor> Reshape(const Shape& shape) const;
  // Rows [begin, end) along the first axis.
  absl::StatusOr<Tensor> Slice(int64_t begin, int64_t end) const;
  // Row `i` along the first axis, with that axis dropped.
  absl::StatusOr<Tensor> At(int64_t i) const;
  // Any view of the storage at `byte_offset` from its start: InvalidArgument
  // when it reaches past the end, or when the offset is not a multiple of
  // the element size (no view is ever misaligned).
  absl::StatusOr<Tensor> View(const Shape& shape, DType dtype, uint64_t byte_offset) const;

  // --- Copies, pushed to the engine (asynchronous).
  // A new tensor on `ctx` with this one's contents, copied on copy streams
  // (staged through host memory where there is no direct path).
  absl::StatusOr<Tensor> CopyTo(engine::Context ctx) const;
  // Copies `src` (same shape and dtype, any context) into this tensor. The
  // two may overlap in one storage (views of one tensor): the result is as
  // if `src` were read whole first (memmove), on every backend.
  absl::Status CopyFrom(const Tensor& src) const;

  // --- Waiting.
  // Wait for the functions that write (WaitToRead) or touch (WaitToWrite)
  // this tensor; the error of the op that failed, if one did.
  absl::Status WaitToRead() const;
  absl::Status WaitToWrite() const;
  // Waits, then copies the contents out. The bytes must match exactly.
  absl::Status ToHostBytes(void* data, uint64_t bytes) const;
  template <typename T>
  absl::StatusOr<std::vector<T>> ToHost() const {
    if (defined() && DTypeOf<T>() != dtype_ && !(dtype_ == DType::kBool && sizeof(T) == 1)) {
      return TypeMismatch(DTypeName(DTypeOf<T>()));
    }
    std::vector<T> out(defined() ? static_cast<size_t>(NumElements()) : 0);
    absl::Status s = ToHostBytes(out.data(), out.size() * sizeof(T));
    if (!s.ok()) return s;
    return out;
  }

  // Releases the storage after the functions already pushed that touch it;
  // every later use of this tensor and its views is FailedPrecondition.
  absl::Status Free();

  // --- For op implementations.
  // OK if the tensor is defined and not freed; FailedPrecondition otherwise.
  absl::Status CheckUsable() const;
  // The chunk's storage block, allocated on first call (null for a
  // zero-byte chunk).
  absl::StatusOr<StorageBlock> Storage() const;
  // Whether two tensors share a chunk (their bytes may still be disjoint:
  // see OverlapWith).
  bool SharesStorageWith(const Tensor& other) const { return chunk_ == other.chunk_; }
  // How this view's bytes and `other`'s lie in storage. One pointer
  // comparison when the chunks differ; never allocates.
  StorageOverlap OverlapWith(const Tensor& other) const {
    if (chunk_ != other.chunk_ || chunk_ == nullptr) return StorageOverlap::kDisjoint;
    return RangeOverlap(offset_, ByteSize(), other.offset_, other.ByteSize());
  }
  // ToString() and where the view starts: "float32[3] on cpu at byte 4".
  std::string ViewString() const;

 private:
  friend struct TensorAccess;
  Tensor(std::shared_ptr<tensor_internal::Chunk> chunk, Shape shape, DType dtype, uint64_t offset)
      : chunk_(std::move(chunk)), shape_(std::move(shape)), dtype_(dtype), offset_(offset) {}
  absl::Status TypeMismatch(const char* wanted) const;

  std::shared_ptr<tensor_internal::Chunk> chunk_;
  Shape shape_;
  DType dtype_ = DType::kF32;
  uint64_t offset_ = 0;
};

// For the ops layer: makes tensors on a known executor without looking it up.
struct TensorAccess {
  static absl::StatusOr<Tensor> Empty(const Shape& shape, DType dtype, engine::Context ctx,
                                      engine::Engine* engine, StreamExecutor* executor);
  static StorageAllocator* Allocator(const Tensor& t);
};

}  // namespace rill

#endif  // RILL_TENSOR_TENSOR_H_
