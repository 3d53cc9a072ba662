#ifndef RILL_OPS_TESTING_OP_TESTING_H_
#define RILL_OPS_TESTING_OP_TESTING_H_

// Helpers for op tests: every context present, a fresh engine, random host
// data, and comparison against a naive host reference.

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#if RILL_OP_CONFORMANCE
#include "rill/conformance/conformance.h"
#endif
#include "rill/engine/engine.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/invoke.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/tensor/tensor.h"

namespace rill::ops::testing {

#if RILL_OP_CONFORMANCE
// The op suite in a backend's conformance binary (rill::op_conformance):
// every device of the platforms under test, and the CPU context before
// host:0 when the host platform is one of them.
inline std::vector<engine::Context> AllContexts() {
  std::vector<engine::Context> out;
  for (const conformance::Device& d : conformance::AllDevices()) {
    if (d.platform->Name() == "host" && d.ordinal == 0) out.push_back(engine::Context::Host());
    out.push_back(engine::Context::Device(d.platform->id(), d.ordinal));
  }
  return out;
}
#else
// cpu, then every device of every platform registered here (host:0,
// host:1, opencl:0, cuda:N where a GPU exists).
inline std::vector<engine::Context> AllContexts() {
  std::vector<engine::Context> out{engine::Context::Host()};
  for (Platform* p : PlatformManager::Default().AllPlatforms()) {
    for (int i = 0; i < p->VisibleDeviceCount(); ++i)
      out.push_back(engine::Context::Device(p->id(), i));
  }
  return out;
}
#endif

#if RILL_OP_CONFORMANCE
inline std::vector<engine::Context> OpSuiteContexts() { return AllContexts(); }
#else
// The op suites' contexts: AllContexts(), and device 0 of every registered
// platform that has no device here (cuda:0 on a machine without a GPU),
// whose cases OpTest skips with the platform's reason.
inline std::vector<engine::Context> OpSuiteContexts() {
  std::vector<engine::Context> out = AllContexts();
  for (Platform* p : PlatformManager::Default().AllPlatforms()) {
    if (p->VisibleDeviceCount() == 0) out.push_back(engine::Context::Device(p->id(), 0));
  }
  return out;
}
#endif

// Whether the kernels of `ctx` run in host memory (host code, which can
// check values and fail; device kernels cannot).
inline bool HostMemoryContext(const engine::Context& ctx) {
  absl::StatusOr<StreamExecutor*> e = ExecutorFor(ctx);
  return e.ok() && (*e)->Supports(Feature::kHostAddressableMemory).ok();
}

inline std::string ContextName(const ::testing::TestParamInfo<engine::Context>& info) {
  std::string s = info.param.ToString();
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

inline std::unique_ptr<engine::Engine> MakeEngine() {
  engine::EngineOptions o;
  o.cpu_workers = 2;
  return *engine::Engine::Create(o);
}

// Flat index into an input of shape `s` broadcast to `so`, for output element i.
inline int64_t BroadcastIndex(int64_t i, const Shape& so, const Shape& s) {
  int64_t rem = i, idx = 0, m = 1;
  for (int d = so.rank() - 1; d >= 0; --d) {
    const int64_t k = rem % so[d];
    rem /= so[d];
    const int ds = s.rank() - so.rank() + d;
    if (ds >= 0) {
      idx += (s[ds] == 1 ? 0 : k) * m;
      m *= s[ds];
    }
  }
  return idx;
}

// Uniform in [lo, hi), deterministic per seed.
template <typename T>
std::vector<T> RandomData(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::is_integral_v<T> ? std::floor(u(rng)) : u(rng));
  return v;
}

// The fixture of the op suites: a fresh engine per test and the context
// under test (instantiate over AllContexts(), named by ContextName).
class OpTest : public ::testing::TestWithParam<engine::Context> {
 protected:
  // A context of a platform without a device (OpSuiteContexts) skips, with
  // the platform's reason.
  void SetUp() override {
    absl::StatusOr<StreamExecutor*> executor = ExecutorFor(ctx());
    if (!executor.ok()) GTEST_SKIP() << ctx().ToString() << ": " << executor.status();
  }
  std::unique_ptr<engine::Engine> engine_ = MakeEngine();
  engine::Context ctx() const { return GetParam(); }
  template <typename T>
  Tensor Make(const std::vector<T>& v, const Shape& s) {
    return *Tensor::FromHost<T>(v, s, ctx(), engine_.get());
  }
};

template <typename T>
void ExpectNear(const std::vector<T>& got, const std::vector<T>& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (std::isnan(w) && std::isnan(g)) continue;
    ASSERT_LE(std::abs(g - w), tol * (1 + std::abs(w)))
        << what << " at " << i << ": got " << g << ", want " << w;
  }
}

}  // namespace rill::ops::testing

#endif  // RILL_OPS_TESTING_OP_TESTING_H_
