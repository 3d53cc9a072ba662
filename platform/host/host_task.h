#ifndef RILL_PLATFORM_HOST_HOST_TASK_H_
#define RILL_PLATFORM_HOST_HOST_TASK_H_

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"

namespace rill {

// One unit of work on a host stream: a move-only callable returning
// absl::Status, stored inline when it fits kInlineSize bytes (a memcpy's
// captures, a BLAS call's argument struct, an absl::AnyInvocable) and on the
// heap otherwise.
//
// Why not absl::AnyInvocable: its inline buffer holds two pointers, so almost
// every stream operation allocated on the enqueueing thread and freed on the
// worker, and that cross-thread malloc traffic cost more than a small BLAS
// call (plugins/blas/README.md has the numbers).
//
//   HostTask task([dst, src, size] { std::memcpy(dst, src, size); return absl::OkStatus(); });
//   absl::Status s = std::move(task)();
class HostTask {
 public:
  static constexpr size_t kInlineSize = 232;

  HostTask() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, HostTask>>>
  HostTask(F&& f) {  // NOLINT: implicit, like std::function.
    using T = std::decay_t<F>;
    static_assert(std::is_invocable_r_v<absl::Status, T&&>, "a HostTask returns absl::Status");
    if constexpr (kFitsInline<T>) {
      ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
      ops_ = &kInlineOps<T>;
    } else {
      *reinterpret_cast<T**>(storage_) = new T(std::forward<F>(f));
      ops_ = &kHeapOps<T>;
    }
  }
  HostTask(HostTask&& other) noexcept { MoveFrom(other); }
  HostTask& operator=(HostTask&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  HostTask(const HostTask&) = delete;
  HostTask& operator=(const HostTask&) = delete;
  ~HostTask() { Reset(); }

  explicit operator bool() const { return ops_ != nullptr; }

  // Runs the callable (once). It stays alive until Reset or destruction.
  absl::Status operator()() && { return ops_->invoke(storage_); }

  // Destroys the callable and its captures.
  void Reset() {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    absl::Status (*invoke)(void* storage);
    void (*relocate)(void* dst, void* src) noexcept;  // Move-constructs dst, destroys src.
    void (*destroy)(void* storage) noexcept;
  };

  template <typename T>
  static constexpr bool kFitsInline =
      sizeof(T) <= kInlineSize &&
      alignof(T) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<T>;

  template <typename T>
  static constexpr Ops kInlineOps = {
      [](void* s) -> absl::Status { return std::move(*static_cast<T*>(s))(); },
      [](void* dst, void* src) noexcept {
        ::new (dst) T(std::move(*static_cast<T*>(src)));
        static_cast<T*>(src)->~T();
      },
      [](void* s) noexcept { static_cast<T*>(s)->~T(); },
  };

  template <typename T>
  static constexpr Ops kHeapOps = {
      [](void* s) -> absl::Status { return std::move(**static_cast<T**>(s))(); },
      [](void* dst, void* src) noexcept { *static_cast<T**>(dst) = *static_cast<T**>(src); },
      [](void* s) noexcept { delete *static_cast<T**>(s); },
  };

  void MoveFrom(HostTask& other) noexcept {
    ops_ = other.ops_;
    if (ops_ != nullptr) {
      ops_->relocate(storage_, other.storage_);
      other.ops_ = nullptr;
    }
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
};

}  // namespace rill

#endif  // RILL_PLATFORM_HOST_HOST_TASK_H_
