// KernelSpec, argument packing and launch dimensions, without a device.

#include "rill/stream/kernel.h"

#include <cstring>
#include <set>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "gtest/gtest.h"
#include "rill/stream/kernel_spec.h"
#include "rill/stream/launch_dim.h"

namespace rill {
namespace {

TEST(Dim3, ProductAndToString) {
  EXPECT_EQ(Dim3{}.product(), 1);
  EXPECT_EQ((Dim3{2, 3, 4}.product()), 24);
  EXPECT_EQ((Dim3{7, 1, 0}.ToString()), "(7, 1, 0)");
  EXPECT_EQ(ThreadDim(5), (Dim3{5, 1, 1}));
  EXPECT_EQ(BlockDim(1, 2, 3), (Dim3{1, 2, 3}));
}

TEST(KernelSpec, RecordsEveryVariant) {
  KernelSpec spec("k");
  EXPECT_FALSE(spec.has_host_function());
  EXPECT_EQ(spec.host_arity(), -1);
  EXPECT_EQ(spec.host_signature(), nullptr);
  const unsigned char fatbin[] = {1, 2, 3};
  spec.AddCudaPtx("ptx text").AddCudaFatbin(fatbin, sizeof(fatbin)).AddOpenClSource("cl text");
  EXPECT_EQ(spec.name(), "k");
  EXPECT_EQ(spec.cuda_ptx(), "ptx text");
  EXPECT_EQ(spec.cuda_fatbin(), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(spec.opencl_source(), "cl text");
  EXPECT_FALSE(spec.has_host_function());

  spec.AddHostFunction<float, DeviceMemory<int>>([](const HostThread&, float, int*) {});
  EXPECT_TRUE(spec.has_host_function());
  EXPECT_EQ(spec.host_arity(), 2);
  EXPECT_EQ(*spec.host_signature(), typeid(KernelSignature<float, DeviceMemory<int>>));
  EXPECT_NE(*spec.host_signature(), typeid(KernelSignature<double, DeviceMemory<int>>));
}

// Any platform's own format, keyed by its id: one variant per platform, a
// second AddVariant for the same platform replaces the first.
TEST(KernelSpec, KeepsOneVariantPerPlatform) {
  static const PlatformIdInfo kMineInfo{"mine"}, kOtherInfo{"other"};
  KernelSpec spec("k");
  EXPECT_EQ(spec.variant(&kMineInfo), nullptr);
  spec.AddVariant(&kMineInfo, {"mine-bytecode", {1, 2}}).AddVariant(&kOtherInfo, {"spirv", {9}});
  ASSERT_NE(spec.variant(&kMineInfo), nullptr);
  EXPECT_EQ(spec.variant(&kMineInfo)->format, "mine-bytecode");
  EXPECT_EQ(spec.variant(&kMineInfo)->data, (std::vector<uint8_t>{1, 2}));
  spec.AddVariant(&kMineInfo, {"mine-bytecode-v2", {3}});
  EXPECT_EQ(spec.variant(&kMineInfo)->format, "mine-bytecode-v2");
  EXPECT_EQ(spec.variant(&kMineInfo)->data, (std::vector<uint8_t>{3}));
  EXPECT_EQ(spec.variant(&kOtherInfo)->format, "spirv");
}

// The block function runs every thread of the block once, with the
// block's coordinates, and passes memory as a raw pointer.
TEST(KernelSpec, HostBlockFunctionRunsEveryThreadOfTheBlock) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> seen;
  KernelSpec spec("visit");
  spec.AddHostFunction<DeviceMemory<int>, int>([&seen](const HostThread& t, int* p, int v) {
    seen.emplace_back(t.thread_idx.x, t.thread_idx.y, t.thread_idx.z);
    EXPECT_EQ(t.block_idx, (Dim3{1, 2, 0}));
    EXPECT_EQ(t.global_x(), 1 * 2 + t.thread_idx.x);
    *p += v;
  });
  int target = 0;
  void* memory = &target;
  int value = 10;
  const void* args[] = {&memory, &value};
  HostThread block;
  block.block_dim = Dim3{2, 3, 2};
  block.grid_dim = Dim3{4, 4, 1};
  block.block_idx = Dim3{1, 2, 0};
  spec.host_function()(block, args);
  EXPECT_EQ(target, 120);
  ASSERT_EQ(seen.size(), 12u);
  EXPECT_EQ(std::set(seen.begin(), seen.end()).size(), 12u) << "each thread once";
}

TEST(TypedKernel, PackConvertsArgumentsToTheParameterTypes) {
  int storage[4];
  DeviceMemory<int> memory(DeviceMemoryBase(storage, sizeof(storage)));
  KernelArgs args = TypedKernel<double, DeviceMemory<int>, uint8_t>::Pack(3, memory, 7);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_FALSE(args[0].is_memory);
  ASSERT_EQ(args[0].bytes.size(), sizeof(double));
  double d;
  std::memcpy(&d, args[0].bytes.data(), sizeof(d));
  EXPECT_EQ(d, 3.0) << "an int argument is packed as the double parameter";
  EXPECT_TRUE(args[1].is_memory);
  EXPECT_EQ(args[1].memory, memory);
  ASSERT_EQ(args[2].bytes.size(), 1u);
  EXPECT_EQ(args[2].bytes[0], 7);
  EXPECT_FALSE(TypedKernel<int>().is_loaded());
}

}  // namespace
}  // namespace rill
