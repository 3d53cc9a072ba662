// Tensors on every context: host round trips, views, copies between every
// pair of contexts, errors.
#include "rill/tensor/tensor.h"

#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "rill/engine/engine.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"

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

INSTANTIATE_TEST_SUITE_P(All, TensorTest, ::testing::ValuesIn(Contexts()),
                         [](const ::testing::TestParamInfo<Context>& i) {
                           std::string s = i.param.ToString();
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace rill
