// Two fresh runtimes in one process share no per-device state: executors,
// storage allocators, the op layer's kernel choices and the random
// generators are each their own.
#include "rill/ops/runtime.h"

#include <vector>

#include "gtest/gtest.h"
#include "rill/ops/invoke.h"
#include "rill/ops/ops.h"
#include "rill/tensor/storage_allocator.h"
#include "rill/tensor/tensor.h"

namespace rill {
namespace {

using engine::Context;

std::unique_ptr<Runtime> Fresh() {
  engine::EngineOptions o;
  o.cpu_workers = 2;
  absl::StatusOr<std::unique_ptr<Runtime>> r = Runtime::Create(o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : nullptr;
}

std::vector<float> Draw(Runtime& rt) {
  ops::InvokeOptions o;
  o.context = Context::Host();
  o.engine = &rt.engine();
  absl::StatusOr<std::vector<Tensor>> r =
      ops::Invoke("random_uniform", {}, {{"shape", "(256)"}}, {}, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *(*r)[0].ToHost<float>() : std::vector<float>();
}

TEST(Runtime, FreshRuntimesShareNoAllocatorKernelsOrRandomState) {
  std::unique_ptr<Runtime> a = Fresh(), b = Fresh(), c = Fresh();
  ASSERT_TRUE(a && b && c);
  const Context cpu = Context::Host();
  {
    Tensor xa =
        *Tensor::FromHost<float>(std::vector<float>(1 << 16, 1.f), {1 << 16}, cpu, &a->engine());
    Tensor xb = *Tensor::FromHost<float>(std::vector<float>{1, 2}, {2}, cpu, &b->engine());
    StreamExecutor* ea = xa.executor();
    StreamExecutor* eb = xb.executor();
    // Each runtime's CPU context is its own host platform's device 0.
    EXPECT_NE(ea, eb);
    EXPECT_NE(ea, ExecutorFor(cpu).value());
    EXPECT_EQ(ea, ExecutorFor(cpu, &a->engine()).value());
    EXPECT_NE(ea->serial(), eb->serial());  // Kernel choices and loaded kernels are per executor.
    // Allocators: what a allocates, b does not see.
    StorageAllocator* alloc_a = StorageAllocator::For(ea);
    StorageAllocator* alloc_b = StorageAllocator::For(eb);
    EXPECT_NE(alloc_a, alloc_b);
    ASSERT_TRUE(xa.WaitToRead().ok());
    ASSERT_TRUE(xb.WaitToRead().ok());
    EXPECT_GE(alloc_a->Stats().bytes_in_use, int64_t{1} << 18);
    EXPECT_LT(alloc_b->Stats().bytes_in_use, int64_t{1} << 18);
    // Ops run on each, through the same op definitions.
    Tensor ya = *ops::Neg(xa);
    EXPECT_EQ((*ya.ToHost<float>())[0], -1.f);
    EXPECT_EQ(ya.executor(), ea);
  }
  // Random state: a and c seeded alike draw alike, whatever b, seeded
  // otherwise, draws in between.
  ASSERT_TRUE(ops::Seed(cpu, 7, &a->engine()).ok());
  ASSERT_TRUE(ops::Seed(cpu, 99, &b->engine()).ok());
  ASSERT_TRUE(ops::Seed(cpu, 7, &c->engine()).ok());
  const std::vector<float> from_b = Draw(*b);
  const std::vector<float> from_a = Draw(*a);
  const std::vector<float> from_c = Draw(*c);
  ASSERT_EQ(from_a.size(), 256u);
  EXPECT_EQ(from_a, from_c);
  EXPECT_NE(from_a, from_b);
}

TEST(Runtime, DefaultIsTheProcessWideInstance) {
  Runtime& d = Runtime::Default();
  EXPECT_EQ(&d.platforms(), &PlatformManager::Default());
  EXPECT_EQ(&d.ops(), &ops::OpRegistry::Global());
  EXPECT_EQ(&d.engine(), &engine::Engine::Default());
  EXPECT_EQ(&Runtime::Default(), &d);
}

}  // namespace
}  // namespace rill
