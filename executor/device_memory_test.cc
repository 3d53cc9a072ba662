#include "rill/executor/device_memory.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;

// A fake handle: DeviceMemoryBase never dereferences it.
void* Handle() { return reinterpret_cast<void*>(uintptr_t{0x1000}); }

TEST(DeviceMemoryBase, NullAndEquality) {
  DeviceMemoryBase null;
  EXPECT_TRUE(null.is_null());
  EXPECT_EQ(null.size(), 0u);
  DeviceMemoryBase a(Handle(), 64);
  EXPECT_FALSE(a.is_null());
  EXPECT_EQ(a, DeviceMemoryBase(Handle(), 64, 0));
  EXPECT_NE(a, DeviceMemoryBase(Handle(), 64, 8));
  EXPECT_NE(a, DeviceMemoryBase(Handle(), 32));
}

TEST(DeviceMemoryBase, ByteSlicesKeepTheHandleAndAddOffsets) {
  DeviceMemoryBase base(Handle(), 100, 20);  // Itself a view at offset 20.
  absl::StatusOr<DeviceMemoryBase> slice = base.GetByteSlice(10, 30);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->opaque(), Handle());
  EXPECT_EQ(slice->offset(), 30u);
  EXPECT_EQ(slice->size(), 30u);
  EXPECT_TRUE(base.GetByteSlice(0, 100).ok());
  EXPECT_TRUE(base.GetByteSlice(100, 0).ok());  // Empty, at the end.
  EXPECT_EQ(*base.GetByteSlice(0, 100), base);
}

TEST(DeviceMemoryBase, SlicesOutsideTheViewNameTheValues) {
  DeviceMemoryBase base(Handle(), 100);
  EXPECT_TRUE(HasError(base.GetByteSlice(90, 11).status(), absl::StatusCode::kInvalidArgument,
                       {"offset=90", "size=11", "size=100"}));
  EXPECT_TRUE(HasError(base.GetByteSlice(101, 0).status(), absl::StatusCode::kInvalidArgument,
                       {"offset=101"}));
  // offset + size wraps around 2^64: still rejected.
  EXPECT_TRUE(HasError(base.GetByteSlice(50, UINT64_MAX - 10).status(),
                       absl::StatusCode::kInvalidArgument, {"offset=50"}));
}

TEST(DeviceMemory, TypedSlicesCountElements) {
  DeviceMemory<double> doubles(DeviceMemoryBase(Handle(), 80));
  EXPECT_EQ(doubles.ElementCount(), 10u);
  absl::StatusOr<DeviceMemory<double>> slice = doubles.GetSlice(2, 5);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->offset(), 16u);
  EXPECT_EQ(slice->ElementCount(), 5u);
  EXPECT_TRUE(HasError(doubles.GetSlice(8, 3).status(), absl::StatusCode::kInvalidArgument,
                       {"offset=64", "size=24"}));
  // Element counts whose byte size overflows.
  EXPECT_TRUE(
      HasError(doubles.GetSlice(UINT64_MAX / 4, 1).status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      HasError(doubles.GetSlice(0, UINT64_MAX / 4).status(), absl::StatusCode::kInvalidArgument));
  // A partial trailing element is not counted.
  EXPECT_EQ(DeviceMemory<int32_t>(DeviceMemoryBase(Handle(), 7)).ElementCount(), 1u);
}

TEST(DeviceMemoryBase, ToStringNamesHandleOffsetAndSize) {
  const std::string text = DeviceMemoryBase(Handle(), 48, 16).ToString();
  EXPECT_NE(text.find("0x1000"), std::string::npos) << text;
  EXPECT_NE(text.find("offset=16"), std::string::npos) << text;
  EXPECT_NE(text.find("size=48"), std::string::npos) << text;
}

}  // namespace
}  // namespace rill
