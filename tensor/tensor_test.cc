// Tensors on every context: host round trips, views, copies between every
// pair of contexts, errors.
#include "rill/tensor/tensor.h"

#include <memory>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/stream.h"

namespace rill {
namespace {

using engine::Context;

std::vector<Context> Contexts() {
  std::vector<Context> out{Context::Host()};
  for (Platform* p : PlatformManager::Default().AllPlatforms()) {
    for (int i = 0; i < p->VisibleDeviceCount(); ++i) out.push_back(Context::Device(p->id(), i));
  }
  return out;
}

class TensorTest : public ::testing::TestWithParam<Context> {
 protected:
  std::unique_ptr<engine::Engine> engine_ = *engine::Engine::Create({});
};

TEST_P(TensorTest, RoundTripsAndViews) {
  std::vector<float> data(24);
  std::iota(data.begin(), data.end(), 0.f);
  auto t = Tensor::FromHost<float>(data, {4, 6}, GetParam(), engine_.get());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t->ToHost<float>(), data);
  auto r = t->Reshape({2, -1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape(), Shape({2, 12}));
  auto s = t->Slice(1, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s->ToHost<float>(), std::vector<float>(data.begin() + 6, data.begin() + 18));
  auto row = t->At(3);
  EXPECT_EQ(*row->ToHost<float>(), std::vector<float>(data.begin() + 18, data.end()));
  EXPECT_EQ(t->Reshape({5, 5}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Slice(2, 5).status().code(), absl::StatusCode::kInvalidArgument);
  auto past = t->View({4, 6}, DType::kF32, 4);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(past.status().message().find("past the end"), std::string::npos) << past.status();
  auto empty = Tensor::Empty({0, 3}, DType::kF32, GetParam(), engine_.get());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->ToHost<float>()->empty());
  EXPECT_EQ(t->ToHost<double>().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(TensorTest, CopiesToEveryOtherContext) {
  std::vector<int32_t> data(1000);
  std::iota(data.begin(), data.end(), 7);
  auto t = *Tensor::FromHost<int32_t>(data, {10, 100}, GetParam(), engine_.get());
  auto target = *Tensor::Empty({10, 100}, DType::kI32, GetParam(), engine_.get());
  ASSERT_TRUE(target.CopyFrom(t).ok());
  for (Context dst : Contexts()) {
    auto c = t.CopyTo(dst);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->context(), dst);
    EXPECT_EQ(*c->ToHost<int32_t>(), data) << GetParam().ToString() << " -> " << dst.ToString();
    // And a slice back into the middle of this one.
    auto back = c->Slice(2, 3);
    auto into = *target.Slice(5, 6);
    ASSERT_TRUE(into.CopyFrom(*back).ok());
  }
  auto got = *target.ToHost<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(got.begin() + 500, got.begin() + 600),
            std::vector<int32_t>(data.begin() + 200, data.begin() + 300));
}

TEST_P(TensorTest, UseAfterFreeAndUndefinedAreFailedPrecondition) {
  auto t = *Tensor::FromHost<float>({1, 2}, {2}, GetParam(), engine_.get());
  auto v = *t.Reshape({1, 2});
  ASSERT_TRUE(t.Free().ok());
  EXPECT_EQ(v.ToHost<float>().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.Free().code(), absl::StatusCode::kFailedPrecondition);
  Tensor none;
  EXPECT_EQ(none.WaitToRead().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Tensor::FromHost<float>({1, 2, 3}, {2}, GetParam(), engine_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Empty({-1}, DType::kF32, GetParam(), engine_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Tensor::Empty({INT64_MAX / 2, 4}, DType::kF32, GetParam(), engine_.get()).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// Copies between overlapping views of one storage, both directions, and
// onto itself: memmove semantics on every backend.
TEST_P(TensorTest, CopyFromAnOverlappingViewOfTheSameStorage) {
  constexpr int n = 1000;
  std::vector<int32_t> old(n);
  std::iota(old.begin(), old.end(), 3);
  for (int shift : {3, -3, 0}) {
    SCOPED_TRACE(shift);
    auto t = *Tensor::FromHost<int32_t>(old, {n}, GetParam(), engine_.get());
    const int m = n - (shift < 0 ? -shift : shift);
    const int s0 = shift >= 0 ? 0 : -shift, d0 = shift >= 0 ? shift : 0;
    absl::Status s = t.Slice(d0, d0 + m)->CopyFrom(*t.Slice(s0, s0 + m));
    ASSERT_TRUE(s.ok()) << s;
    std::vector<int32_t> want = old;
    for (int i = 0; i < m; ++i) want[d0 + i] = old[s0 + i];
    auto got = t.ToHost<int32_t>();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
  }
}

TEST_P(TensorTest, AViewWhoseOffsetIsNotAMultipleOfTheElementSizeIsRefused) {
  auto t = *Tensor::FromHost<float>({1, 2, 3, 4}, {4}, GetParam(), engine_.get());
  auto v = t.View({2}, DType::kF32, 2);
  ASSERT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
  EXPECT_NE(v.status().message().find("byte offset 2"), std::string::npos) << v.status();
  EXPECT_NE(v.status().message().find("multiple of 4"), std::string::npos) << v.status();
  // Through a byte view: its slices may start anywhere, a float view may not.
  auto bytes = *t.View({16}, DType::kU8, 0);
  auto odd = bytes.Slice(1, 9);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(t.View({2}, DType::kF64, 4).status().code(), absl::StatusCode::kInvalidArgument);
  auto ok = t.View({2}, DType::kF32, 8);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok->ToHost<float>(), std::vector<float>({3, 4}));
}

TEST_P(TensorTest, AtAnIndexNearInt64MaxIsOutOfRange) {
  auto t = *Tensor::FromHost<float>({1, 2, 3, 4}, {2, 2}, GetParam(), engine_.get());
  for (int64_t i : {INT64_MAX, INT64_MAX - 1, int64_t{2}, int64_t{-1}, INT64_MIN}) {
    auto r = t.At(i);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_NE(r.status().message().find(absl::StrCat("At(", i, ")")), std::string::npos)
        << r.status();
  }
  EXPECT_EQ(*t.At(1)->ToHost<float>(), std::vector<float>({3, 4}));
}

TEST_P(TensorTest, OverlapWithTellsSamePartialAndDisjointViews) {
  auto t = *Tensor::Empty({8}, DType::kF32, GetParam(), engine_.get());
  auto other = *Tensor::Empty({8}, DType::kF32, GetParam(), engine_.get());
  const Tensor a = *t.Slice(0, 4), b = *t.Slice(4, 8), c = *t.Slice(2, 6);
  EXPECT_EQ(a.OverlapWith(b), StorageOverlap::kDisjoint);
  EXPECT_EQ(a.OverlapWith(c), StorageOverlap::kPartial);
  EXPECT_EQ(c.OverlapWith(b), StorageOverlap::kPartial);
  EXPECT_EQ(t.OverlapWith(a), StorageOverlap::kPartial);
  EXPECT_EQ(t.OverlapWith(*t.Reshape({2, 4})), StorageOverlap::kSame);
  EXPECT_EQ(a.OverlapWith(*t.View({4}, DType::kI32, 0)), StorageOverlap::kSame);
  EXPECT_EQ(t.OverlapWith(*t.Slice(3, 3)), StorageOverlap::kDisjoint);  // Zero bytes.
  EXPECT_EQ(t.OverlapWith(other), StorageOverlap::kDisjoint);
  EXPECT_EQ(t.OverlapWith(Tensor()), StorageOverlap::kDisjoint);
}

// Below Tensor: a device-to-device copy between overlapping ranges of one
// buffer is done (memmove) or refused as InvalidArgument by the backend
// (OpenCL: CL_MEM_COPY_OVERLAP), never an Internal error.
TEST_P(TensorTest, AnOverlappingDeviceCopyOnAStreamIsNeverInternal) {
  auto t = *Tensor::Empty({64}, DType::kF32, GetParam(), engine_.get());
  StorageBlock block = *t.Storage();
  if (block.host != nullptr) GTEST_SKIP() << "host memory: Tensor copies with memmove";
  auto stream = *t.executor()->CreateStream();
  DeviceMemoryBase src = *block.memory.GetByteSlice(0, 128);
  DeviceMemoryBase dst = *block.memory.GetByteSlice(16, 128);
  stream->ThenMemcpy(&dst, src, 128);
  absl::Status s = stream->BlockHostUntilDone();
  EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument) << s;
}

INSTANTIATE_TEST_SUITE_P(All, TensorTest, ::testing::ValuesIn(Contexts()),
                         [](const ::testing::TestParamInfo<Context>& i) {
                           std::string s = i.param.ToString();
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace rill
