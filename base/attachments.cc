#include "rill/base/attachments.h"

#include "rill/base/logging.h"

namespace rill {

int Attachments::NewIndex() {
  static std::atomic<int> next{0};
  const int i = next.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxTypes) {
    RILL_LOG(FATAL) << "Attachments: more than " << kMaxTypes << " attached types";
  }
  return i;
}

void* Attachments::MakeOnce(int index, absl::FunctionRef<void*()> make, void (*destroy)(void*)) {
  MutexLock lock(&mu_);
  if (void* p = slots_[index].load(std::memory_order_acquire)) return p;
  void* p = make();
  made_.emplace_back(index, destroy);
  slots_[index].store(p, std::memory_order_release);
  return p;
}

void Attachments::Clear() {
  std::vector<std::pair<int, void (*)(void*)>> made;
  {
    MutexLock lock(&mu_);
    made.swap(made_);
  }
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    void* p = slots_[it->first].exchange(nullptr, std::memory_order_acq_rel);
    if (p != nullptr) it->second(p);
  }
}

}  // namespace rill
