#include "rill/base/attachments.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rill {
namespace {

// Logs its construction and destruction into a shared list.
struct Logged {
  Logged(std::vector<std::string>* log, std::string name) : log(log), name(std::move(name)) {
    log->push_back("make " + this->name);
  }
  ~Logged() { log->push_back("destroy " + name); }
  std::vector<std::string>* log;
  std::string name;
};
struct First : Logged {
  using Logged::Logged;
};
struct Second : Logged {
  using Logged::Logged;
};

TEST(Attachments, OneValuePerTypePerOwnerDestroyedWithItNewestFirst) {
  std::vector<std::string> log;
  {
    Attachments a, b;
    First& fa = a.Get<First>([&] { return std::make_unique<First>(&log, "a.first"); });
    EXPECT_EQ(&a.Get<First>([&] { return std::make_unique<First>(&log, "again"); }), &fa);
    Second& sa = a.Get<Second>([&] { return std::make_unique<Second>(&log, "a.second"); });
    First& fb = b.Get<First>([&] { return std::make_unique<First>(&log, "b.first"); });
    EXPECT_NE(&fa, &fb);  // Owners share nothing.
    EXPECT_EQ(a.Find<Second>(), &sa);
    EXPECT_EQ(b.Find<Second>(), nullptr);
  }
  // b is destroyed first (declared last); within a, newest first.
  EXPECT_EQ(log,
            (std::vector<std::string>{"make a.first", "make a.second", "make b.first",
                                      "destroy b.first", "destroy a.second", "destroy a.first"}));
}

TEST(Attachments, ClearDestroysNowAndGetMakesAgain) {
  std::vector<std::string> log;
  Attachments a;
  a.Get<First>([&] { return std::make_unique<First>(&log, "one"); });
  a.Clear();
  EXPECT_EQ(a.Find<First>(), nullptr);
  a.Get<First>([&] { return std::make_unique<First>(&log, "two"); });
  EXPECT_EQ(log, (std::vector<std::string>{"make one", "destroy one", "make two"}));
}

TEST(Attachments, ConcurrentFirstUseMakesOnce) {
  for (int round = 0; round < 20; ++round) {
    Attachments a;
    std::atomic<int> made{0};
    std::vector<int*> seen(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        seen[t] = &a.Get<int>([&] {
          made.fetch_add(1);
          return std::make_unique<int>(7);
        });
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(made.load(), 1);
    for (int* p : seen) EXPECT_EQ(p, seen[0]);
  }
}

}  // namespace
}  // namespace rill
