#ifndef RILL_BASE_ATTACHMENTS_H_
#define RILL_BASE_ATTACHMENTS_H_

#include <array>
#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "rill/base/mutex.h"

namespace rill {

// State that a layer keeps on an object it does not own: the tensor layer's
// storage allocator and the op layer's loaded kernels on a StreamExecutor,
// the op layer's random vars on an engine. One value per type T per owner,
// made on first use and destroyed with the owner (newest first), so nothing
// outlives what it belongs to and no process-wide map is keyed by the
// owner's address.
//
//   struct KernelCache { ... };
//   KernelCache& cache = executor->attachments().Get<KernelCache>(
//       [] { return std::make_unique<KernelCache>(); });
//
// Get is lock-free once T is made. At most kMaxTypes types exist in a
// process (a layer attaches a few); more is a fatal error. Thread-safe.
class Attachments {
 public:
  static constexpr int kMaxTypes = 16;

  Attachments() = default;
  ~Attachments() { Clear(); }
  Attachments(const Attachments&) = delete;
  Attachments& operator=(const Attachments&) = delete;

  // The owner's T, made by `make()` (a std::unique_ptr<T>) on first use;
  // `make` runs at most once per owner (concurrent callers wait for it).
  template <typename T, typename Make>
  T& Get(Make&& make) {
    const int i = IndexOf<T>();
    if (void* p = slots_[i].load(std::memory_order_acquire)) return *static_cast<T*>(p);
    return *static_cast<T*>(MakeOnce(
        i, [&]() -> void* { return std::forward<Make>(make)().release(); },
        [](void* p) { delete static_cast<T*>(p); }));
  }
  // The owner's T if made; nullptr otherwise.
  template <typename T>
  T* Find() const {
    return static_cast<T*>(slots_[IndexOf<T>()].load(std::memory_order_acquire));
  }
  // Destroys every value now, newest first (an owner whose values need it
  // alive calls this first in its destructor). Get may make them again.
  void Clear();

 private:
  static int NewIndex();
  template <typename T>
  static int IndexOf() {
    static const int index = NewIndex();
    return index;
  }
  void* MakeOnce(int index, absl::FunctionRef<void*()> make, void (*destroy)(void*));

  std::array<std::atomic<void*>, kMaxTypes> slots_{};
  Mutex mu_;
  std::vector<std::pair<int, void (*)(void*)>> made_ ABSL_GUARDED_BY(mu_);  // Oldest first.
};

}  // namespace rill

#endif  // RILL_BASE_ATTACHMENTS_H_
