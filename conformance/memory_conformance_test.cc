// Conformance: device memory. Round trips at many sizes, sub-ranges at many
// offsets, device-to-device copies, fills, statistics, and the bad inputs of
// allocation, deallocation and copies.

#include <cstdint>
#include <cstring>
#include <vector>

#include "rill/conformance/conformance.h"

namespace rill::conformance {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

// Bytes that differ between positions and between calls with another seed.
std::vector<uint8_t> Pattern(uint64_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  for (uint64_t i = 0; i < size; ++i)
    bytes[i] = static_cast<uint8_t>((i * 131 + seed * 17 + 7) % 251);
  return bytes;
}

class MemoryConformance : public ConformanceTest {
 protected:
  // Writes `bytes` into `memory` and blocks; the stream must stay OK.
  void Upload(DeviceMemoryBase* memory, const std::vector<uint8_t>& bytes) {
    stream_->ThenMemcpy(memory, bytes.data(), bytes.size());
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  }
  std::vector<uint8_t> Download(const DeviceMemoryBase& memory) {
    std::vector<uint8_t> bytes(memory.size(), 0xEE);
    stream_->ThenMemcpy(bytes.data(), memory, bytes.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return bytes;
  }
};

const uint64_t kSizes[] = {1,  3,    4,    7,    8,    63,        64,
                           65, 1000, 4095, 4096, 4097, (1 << 20), (1 << 20) + 3};

TEST_P(MemoryConformance, StreamRoundTripAtManySizes) {
  for (uint64_t size : kSizes) {
    SCOPED_TRACE(size);
    ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(size);
    ASSERT_EQ(buffer->size(), size);
    const std::vector<uint8_t> in = Pattern(size, static_cast<uint32_t>(size));
    std::vector<uint8_t> out(size, 0xEE);
    stream_->ThenMemcpy(buffer.ptr(), in.data(), size).ThenMemcpy(out.data(), *buffer, size);
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    ASSERT_EQ(out, in);
  }
}

TEST_P(MemoryConformance, SynchronousRoundTripAtManySizes) {
  for (uint64_t size : kSizes) {
    SCOPED_TRACE(size);
    ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(size);
    DeviceMemoryBase base = *buffer;
    const std::vector<uint8_t> in = Pattern(size, 3);
    std::vector<uint8_t> out(size, 0xEE);
    ASSERT_TRUE(IsOk(executor_->SynchronousMemcpy(&base, in.data(), size)));
    ASSERT_TRUE(IsOk(executor_->SynchronousMemcpy(out.data(), base, size)));
    ASSERT_EQ(out, in);
  }
}

TEST_P(MemoryConformance, TypedSpanRoundTrip) {
  std::vector<float> in(257);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5f * static_cast<float>(i) - 3.0f;
  std::vector<float> out(in.size(), -1.0f);
  ScopedDeviceMemory<float> buffer = Allocate<float>(in.size());
  EXPECT_EQ(buffer->ElementCount(), in.size());
  stream_->ThenMemcpyH2D<float>(in, buffer.ptr())
      .ThenMemcpyD2H<float>(*buffer, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(out, in);
}

TEST_P(MemoryConformance, ZeroByteCopyIsANoOp) {
  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(16);
  Upload(buffer.ptr(), Pattern(16, 1));
  const uint8_t host = 0;
  uint8_t sink = 0x5A;
  stream_->ThenMemcpy(buffer.ptr(), &host, 0).ThenMemcpy(&sink, *buffer, 0);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(sink, 0x5A);
  EXPECT_EQ(Download(*buffer), Pattern(16, 1));
}

// Writes into sub-ranges change exactly those bytes; reads from sub-ranges
// see exactly those bytes.
TEST_P(MemoryConformance, SubRangesAtManyOffsets) {
  const uint64_t n = 4096 + 7;
  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(n);
  const uint64_t ranges[][2] = {{0, 1},  {0, n},    {1, 1},     {3, 5},   {4, 4},
                                {7, 64}, {7, 4096}, {n - 1, 1}, {1000, 3}};
  for (const auto& [offset, size] : ranges) {
    SCOPED_TRACE(::testing::Message() << "offset " << offset << " size " << size);
    std::vector<uint8_t> expected = Pattern(n, 1);
    Upload(buffer.ptr(), expected);
    const std::vector<uint8_t> patch = Pattern(size, 2);
    std::copy(patch.begin(), patch.end(), expected.begin() + offset);

    absl::StatusOr<DeviceMemoryBase> slice = buffer->GetByteSlice(offset, size);
    ASSERT_TRUE(slice.ok()) << slice.status();
    EXPECT_EQ(slice->size(), size);
    EXPECT_EQ(slice->offset(), offset);
    stream_->ThenMemcpy(&*slice, patch.data(), size);
    std::vector<uint8_t> read_back(size, 0xEE);
    stream_->ThenMemcpy(read_back.data(), *slice, size);
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_EQ(read_back, patch);
    EXPECT_EQ(Download(*buffer), expected);
  }
}

TEST_P(MemoryConformance, NestedAndTypedSlicesComposeOffsets) {
  ScopedDeviceMemory<int32_t> buffer = Allocate<int32_t>(100);
  std::vector<int32_t> values(100);
  for (int i = 0; i < 100; ++i) values[i] = 1000 + i;
  stream_->ThenMemcpy(buffer.ptr(), values.data(), 400);

  absl::StatusOr<DeviceMemory<int32_t>> outer = buffer->GetSlice(10, 50);  // elements 10..59
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_EQ(outer->ElementCount(), 50u);
  absl::StatusOr<DeviceMemory<int32_t>> inner = outer->GetSlice(5, 3);  // elements 15..17
  ASSERT_TRUE(inner.ok()) << inner.status();
  EXPECT_EQ(inner->offset(), 15 * sizeof(int32_t));
  std::vector<int32_t> got(3, -1);
  stream_->ThenMemcpyD2H<int32_t>(*inner, absl::MakeSpan(got));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(got, (std::vector<int32_t>{1015, 1016, 1017}));

  // A slice bounds its copies even though the allocation goes on.
  EXPECT_TRUE(HasError(outer->GetSlice(45, 6).status(), absl::StatusCode::kInvalidArgument,
                       {"offset=180", "size=24"}));
  std::vector<int32_t> four(4);
  stream_->ThenMemcpy(four.data(), *inner, 16);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"16 bytes", "overrun"}));
}

TEST_P(MemoryConformance, DeviceToDeviceCopies) {
  ScopedDeviceMemory<uint8_t> a = Allocate<uint8_t>(4099);
  ScopedDeviceMemory<uint8_t> b = Allocate<uint8_t>(4099);
  ScopedDeviceMemory<uint8_t> c = Allocate<uint8_t>(4099);
  if (absl::Status s = RequireFeature(executor_, Feature::kDeviceToDeviceCopy,
                                      [&] {
                                        std::unique_ptr<Stream> probe = NewStream();
                                        probe->ThenMemcpy(b.ptr(), *a, 16);
                                        return probe->BlockHostUntilDone();
                                      });
      !s.ok()) {
    GTEST_SKIP() << s;
  }
  const std::vector<uint8_t> in = Pattern(4099, 9);
  // A chain a -> b -> c, each step depending on the one before.
  stream_->ThenMemcpy(a.ptr(), in.data(), in.size())
      .ThenMemcpy(b.ptr(), *a, in.size())
      .ThenMemcpy(c.ptr(), *b, in.size());
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(Download(*c), in);

  // Between sub-ranges: a[5, 5+1000) -> c[2001, 3001).
  Upload(c.ptr(), Pattern(4099, 4));
  DeviceMemoryBase src = Must(a->GetByteSlice(5, 1000));
  DeviceMemoryBase dst = Must(c->GetByteSlice(2001, 1000));
  stream_->ThenMemcpy(&dst, src, 1000);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  std::vector<uint8_t> expected = Pattern(4099, 4);
  std::copy(in.begin() + 5, in.begin() + 1005, expected.begin() + 2001);
  EXPECT_EQ(Download(*c), expected);
}

TEST_P(MemoryConformance, Memset32FillsExactlyTheRange) {
  const uint32_t pattern = 0xDEADBEEF;
  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(4096 + 12);
  std::vector<uint8_t> expected = Pattern(buffer->size(), 5);
  Upload(buffer.ptr(), expected);
  DeviceMemoryBase middle = Must(buffer->GetByteSlice(4, 4096));
  stream_->ThenMemset32(&middle, pattern, 4096);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  for (uint64_t i = 4; i < 4100; i += 4) std::memcpy(&expected[i], &pattern, 4);
  EXPECT_EQ(Download(*buffer), expected);

  stream_->ThenMemset32(buffer.ptr(), pattern, 6);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"size 6", "multiple of 4"}));
}

TEST_P(MemoryConformance, MemZeroIncludingOddSizes) {
  for (uint64_t offset : {0, 1, 4}) {
    for (uint64_t size : {1, 3, 4, 7, 13, 4096, 4099}) {
      SCOPED_TRACE(::testing::Message() << "offset " << offset << " size " << size);
      ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(offset + size + 5);
      std::vector<uint8_t> expected = Pattern(buffer->size(), 6);
      for (uint8_t& b : expected) b |= 1;  // No zero bytes before the fill.
      Upload(buffer.ptr(), expected);
      DeviceMemoryBase range = Must(buffer->GetByteSlice(offset, size));
      stream_->ThenMemZero(&range, size);
      ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
      std::fill(expected.begin() + offset, expected.begin() + offset + size, 0);
      ASSERT_EQ(Download(*buffer), expected);
    }
  }
}

TEST_P(MemoryConformance, MemoryStatsCountAllocations) {
  const MemoryStats before = executor_->GetMemoryStats();
  EXPECT_EQ(before.bytes_limit, executor_->GetDeviceDescription().memory_bytes);
  EXPECT_GT(before.bytes_limit, 0);
  {
    ScopedDeviceMemory<uint8_t> a = Allocate<uint8_t>(1000);
    ScopedDeviceMemory<uint8_t> b = Allocate<uint8_t>(24);
    const MemoryStats during = executor_->GetMemoryStats();
    EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, 1024);
    EXPECT_EQ(during.num_allocs - before.num_allocs, 2);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
  }
  const MemoryStats after = executor_->GetMemoryStats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.num_allocs, before.num_allocs);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + 1024);
}

TEST_P(MemoryConformance, PinnedHostMemoryWorksAsCopyEndpoint) {
  if (absl::Status s = RequireFeature(executor_, Feature::kPinnedHostMemory,
                                      [&] { return executor_->HostMemoryAllocate(64).status(); });
      !s.ok()) {
    GTEST_SKIP() << s;
  }
  absl::StatusOr<void*> pinned = executor_->HostMemoryAllocate(4096);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  auto* bytes = static_cast<uint8_t*>(*pinned);
  const std::vector<uint8_t> in = Pattern(4096, 8);
  std::memcpy(bytes, in.data(), in.size());
  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(4096);
  stream_->ThenMemcpy(buffer.ptr(), bytes, 4096).ThenMemZero(buffer.ptr(), 0);
  std::vector<uint8_t> out(4096);
  stream_->ThenMemcpy(out.data(), *buffer, 4096);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(out, in);
  EXPECT_TRUE(IsOk(executor_->HostMemoryDeallocate(*pinned)));
  EXPECT_TRUE(
      HasError(executor_->HostMemoryDeallocate(*pinned), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(executor_->HostMemoryAllocate(0).status(),
                       absl::StatusCode::kInvalidArgument, {"0 bytes"}));
}

// --- Bad input.

TEST_P(MemoryConformance, AllocateZeroBytesIsInvalidArgument) {
  EXPECT_TRUE(HasError(executor_->Allocate(0).status(), absl::StatusCode::kInvalidArgument,
                       {"0 bytes", executor_->DebugName()}));
  EXPECT_TRUE(
      HasError(executor_->AllocateArray<float>(0).status(), absl::StatusCode::kInvalidArgument));
}

TEST_P(MemoryConformance, AllocateBeyondTheDeviceIsResourceExhausted) {
  const int64_t limit = executor_->GetDeviceDescription().memory_bytes;
  ASSERT_GT(limit, 0);
  const uint64_t too_much = static_cast<uint64_t>(limit) + 1;
  EXPECT_TRUE(HasError(executor_->Allocate(too_much).status(), absl::StatusCode::kResourceExhausted,
                       {std::to_string(too_much)}));
  EXPECT_TRUE(HasError(executor_->AllocateArray<double>(UINT64_MAX / 4).status(),
                       absl::StatusCode::kInvalidArgument, {"overflow"}));
  // The device still works afterwards.
  ScopedDeviceMemory<uint8_t> ok = Allocate<uint8_t>(64);
  EXPECT_FALSE(ok.is_null());
}

TEST_P(MemoryConformance, DeallocateRejectsSubRangesAndUnknownHandles) {
  DeviceMemoryBase memory = Must(executor_->Allocate(256));
  DeviceMemoryBase inner = Must(memory.GetByteSlice(16, 64));
  EXPECT_TRUE(HasError(executor_->Deallocate(&inner), absl::StatusCode::kInvalidArgument,
                       {"sub-range", "offset=16"}));
  // Starts at offset 0 but is shorter than the allocation: still a sub-range.
  DeviceMemoryBase prefix = Must(memory.GetByteSlice(0, 128));
  EXPECT_TRUE(
      HasError(executor_->Deallocate(&prefix), absl::StatusCode::kInvalidArgument, {"128"}));
  int not_device_memory = 0;
  DeviceMemoryBase unknown(&not_device_memory, sizeof(int));
  EXPECT_TRUE(HasError(executor_->Deallocate(&unknown), absl::StatusCode::kInvalidArgument));

  // The allocation is still intact and usable.
  const std::vector<uint8_t> in = Pattern(256, 2);
  Upload(&memory, in);
  EXPECT_EQ(Download(memory), in);

  DeviceMemoryBase copy = memory;
  EXPECT_TRUE(IsOk(executor_->Deallocate(&memory)));
  EXPECT_TRUE(memory.is_null());
  EXPECT_TRUE(HasError(executor_->Deallocate(&copy), absl::StatusCode::kInvalidArgument))
      << "double free must be reported";
  EXPECT_TRUE(IsOk(executor_->Deallocate(&memory))) << "freeing null is a no-op";
}

TEST_P(MemoryConformance, CopyPastTheEndFailsTheStream) {
  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(100);
  std::vector<uint8_t> host(200, 1);
  stream_->ThenMemcpy(buffer.ptr(), host.data(), 101);
  EXPECT_FALSE(stream_->ok());
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"ThenMemcpy(host->device, 101 bytes)", "101 bytes overrun", "size=100"}));

  std::unique_ptr<Stream> reader = NewStream();
  reader->ThenMemcpy(host.data(), *buffer, 200);
  EXPECT_TRUE(HasError(reader->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"device->host, 200 bytes", "200 bytes overrun"}));

  std::unique_ptr<Stream> d2d = NewStream();
  ScopedDeviceMemory<uint8_t> small = Allocate<uint8_t>(50);
  d2d->ThenMemcpy(small.ptr(), *buffer, 100);
  EXPECT_TRUE(HasError(d2d->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"device->device", "100 bytes overrun the destination"}));

  std::unique_ptr<Stream> fill = NewStream();
  fill->ThenMemZero(small.ptr(), 51);
  EXPECT_TRUE(HasError(fill->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"ThenMemZero(51 bytes)"}));

  DeviceMemoryBase base = *buffer;
  EXPECT_TRUE(HasError(executor_->SynchronousMemcpy(&base, host.data(), 101),
                       absl::StatusCode::kInvalidArgument, {"101 bytes overrun"}));
  EXPECT_TRUE(HasError(executor_->SynchronousMemcpy(host.data(), base, 150),
                       absl::StatusCode::kInvalidArgument, {"150 bytes overrun"}));
}

TEST_P(MemoryConformance, CopyWithNullHandleFailsTheStream) {
  std::vector<uint8_t> host(16, 1);
  DeviceMemoryBase null_memory;
  stream_->ThenMemcpy(&null_memory, host.data(), 16);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"destination device memory is null"}));

  std::unique_ptr<Stream> reader = NewStream();
  reader->ThenMemcpy(host.data(), null_memory, 16);
  EXPECT_TRUE(HasError(reader->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"source device memory is null"}));

  ScopedDeviceMemory<uint8_t> buffer = Allocate<uint8_t>(16);
  std::unique_ptr<Stream> null_host = NewStream();
  null_host->ThenMemcpy(buffer.ptr(), nullptr, 16);
  EXPECT_TRUE(HasError(null_host->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"source host pointer is null"}));

  std::unique_ptr<Stream> null_pointer = NewStream();
  null_pointer->ThenMemcpy(static_cast<DeviceMemoryBase*>(nullptr), host.data(), 16);
  EXPECT_TRUE(HasError(null_pointer->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument));

  EXPECT_TRUE(HasError(executor_->SynchronousMemcpy(&null_memory, host.data(), 16),
                       absl::StatusCode::kInvalidArgument, {"null"}));

  std::vector<float> wrong(3);
  DeviceMemory<float> floats(*buffer);  // 4 floats
  std::unique_ptr<Stream> span = NewStream();
  span->ThenMemcpyD2H<float>(floats, absl::MakeSpan(wrong));
  EXPECT_TRUE(HasError(span->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"12 bytes does not match"}));
}

INSTANTIATE_TEST_SUITE_P(AllDevices, MemoryConformance, ::testing::ValuesIn(AllDevices()),
                         DeviceTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MemoryConformance);

}  // namespace
}  // namespace rill::conformance
