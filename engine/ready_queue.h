#ifndef RILL_ENGINE_READY_QUEUE_H_
#define RILL_ENGINE_READY_QUEUE_H_

// rill:internal -- not installed: the engine's implementation; users include engine.h.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

namespace rill::engine::internal {

// Ready functions in the order they must be taken: higher priority first,
// then push order (lower seq first). Most functions arrive already in that
// order (one priority, pushed in order), so an in-order arrival is appended
// to a FIFO in O(1) and the rest go to a heap; Pop takes the better of the
// two fronts. Thread-hostile (the worker pool guards it).
template <typename T>
class ReadyQueue {
 public:
  struct Entry {
    int64_t priority;
    uint64_t seq;
    T item;
  };

  void Push(const Entry& e) {
    if (fifo_.empty() || Before(fifo_.back(), e)) {
      fifo_.push_back(e);
    } else {
      heap_.push(e);
    }
  }
  bool empty() const { return fifo_.empty() && heap_.empty(); }
  size_t size() const { return fifo_.size() + heap_.size(); }
  // The first entry in order. Requires !empty().
  T Pop() {
    if (heap_.empty() || (!fifo_.empty() && Before(fifo_.front(), heap_.top()))) {
      T item = fifo_.front().item;
      fifo_.pop_front();
      return item;
    }
    T item = heap_.top().item;
    heap_.pop();
    return item;
  }
  // Every entry in the order Pop would return them (for diagnostics).
  std::vector<T> InOrder() const {
    ReadyQueue copy = *this;
    std::vector<T> out;
    out.reserve(copy.size());
    while (!copy.empty()) out.push_back(copy.Pop());
    return out;
  }

 private:
  // Whether `a` is taken before `b`.
  static bool Before(const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
  }
  struct Later {  // The heap's top is the entry taken first.
    bool operator()(const Entry& a, const Entry& b) const { return Before(b, a); }
  };
  std::deque<Entry> fifo_;  // In order: each entry comes after the one before it.
  std::priority_queue<Entry, std::vector<Entry>, Later> heap_;
};

}  // namespace rill::engine::internal

#endif  // RILL_ENGINE_READY_QUEUE_H_
