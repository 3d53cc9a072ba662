// ReadyQueue against a sorted reference: every interleaving of pushes and
// pops returns entries by priority (higher first), then push order.

#include "rill/engine/ready_queue.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace rill::engine::internal {
namespace {

using Queue = ReadyQueue<int>;

// The entry a correct queue returns next among `live`, removed from it.
int TakeBest(std::vector<Queue::Entry>* live) {
  auto best = std::min_element(live->begin(), live->end(), [](const auto& a, const auto& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
  });
  const int item = best->item;
  live->erase(best);
  return item;
}

TEST(ReadyQueue, InOrderArrivalsComeOutInPushOrder) {
  Queue q;
  for (int i = 0; i < 100; ++i) q.Push({0, static_cast<uint64_t>(i), i});
  for (int i = 0; i < 100; ++i) EXPECT_EQ(q.Pop(), i);
  EXPECT_TRUE(q.empty());
}

TEST(ReadyQueue, HigherPriorityAndOlderPushesGoFirst) {
  Queue q;
  q.Push({0, 5, 5});
  q.Push({0, 6, 6});
  q.Push({0, 2, 2});   // Older than the FIFO's back: out of order.
  q.Push({3, 9, 9});   // Higher priority.
  q.Push({-1, 1, 1});  // Lower priority, oldest.
  EXPECT_EQ(q.InOrder(), (std::vector<int>{9, 2, 5, 6, 1}));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.Pop(), 9);
  EXPECT_EQ(q.Pop(), 2);
  EXPECT_EQ(q.Pop(), 5);
  EXPECT_EQ(q.Pop(), 6);
  EXPECT_EQ(q.Pop(), 1);
  EXPECT_TRUE(q.empty());
}

TEST(ReadyQueue, RandomInterleavingsMatchASortedReference) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Queue q;
    std::vector<Queue::Entry> live;
    uint64_t seq = 0;
    const int priorities = 1 + trial % 4;
    for (int step = 0; step < 300; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        ASSERT_EQ(q.Pop(), TakeBest(&live)) << "trial " << trial << " step " << step;
      } else {
        // Mostly in push order, sometimes an older seq (made ready late).
        const uint64_t s = rng() % 5 == 0 && seq > 10 ? seq - 1 - rng() % 10 : seq + 1000;
        ++seq;
        const Queue::Entry e{static_cast<int>(rng() % priorities),
                             s * 1000 + static_cast<uint64_t>(step), step};
        q.Push(e);
        live.push_back(e);
      }
      ASSERT_EQ(q.size(), live.size());
    }
    while (!live.empty()) ASSERT_EQ(q.Pop(), TakeBest(&live));
    EXPECT_TRUE(q.empty());
  }
}

}  // namespace
}  // namespace rill::engine::internal
