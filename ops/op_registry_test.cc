// Kernels chosen by what they need: host memory, library plugins, device
// code, an exact platform; the order between them, dtypes, re-registration,
// the message when nothing fits, and the built-in registrations.
#include "rill/ops/op_registry.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/device_kernel.h"
#include "rill/ops/op_names.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/tensor/tensor.h"

namespace rill::ops {
namespace {

absl::Status K1(OpContext&) { return absl::OkStatus(); }
absl::Status K2(OpContext&) { return absl::OkStatus(); }
absl::Status K3(OpContext&) { return absl::OkStatus(); }
absl::Status K4(OpContext&) { return absl::OkStatus(); }

StreamExecutor* Executor(const char* platform, int ordinal) {
  absl::StatusOr<Platform*> p = PlatformManager::Default().PlatformWithName(platform);
  if (!p.ok() || (*p)->VisibleDeviceCount() <= ordinal) return nullptr;
  return (*p)->ExecutorForDevice(ordinal).value();
}

std::vector<KernelFn> Fns(const KernelChoice& c) {
  std::vector<KernelFn> out;
  for (const KernelDef& k : c) out.push_back(k.fn);
  return out;
}

TEST(OpRegistry, KernelsAreChosenByWhatTheyNeedInOrder) {
  OpRegistry r;
  ASSERT_TRUE(r.Register(OpDef("t")).ok());
  // Registered in an order unlike the choice's.
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::Libraries({PluginKind::kBlas}), {K2}).ok());
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::HostMemory(), {K1}).ok());
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::DeviceCode(DeviceCodeForms("t", {})), {K3}).ok());
  const OpDef& op = **r.Find("t");

  StreamExecutor* host = Executor("host", 0);
  ASSERT_NE(host, nullptr);
  absl::StatusOr<const KernelChoice*> c = OpRegistry::Choose(op, host);
  ASSERT_TRUE(c.ok()) << c.status();
  // Host memory first, then the library kernel; no device code on the host.
  EXPECT_EQ(Fns(**c), (std::vector<KernelFn>{K1, K2}));

  if (StreamExecutor* cl = Executor("opencl", 0)) {
    c = OpRegistry::Choose(op, cl);
    ASSERT_TRUE(c.ok()) << c.status();
    // No host memory on OpenCL; its OpenCL C, then CLBlast.
    EXPECT_EQ(Fns(**c), (std::vector<KernelFn>{K3, K2}));
  }

  // An exact platform beats every generic kernel; registering it later
  // makes executors that chose already choose again.
  ASSERT_TRUE(r.RegisterKernel("t", "host", {K4}).ok());
  c = OpRegistry::Choose(op, host);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Fns(**c), (std::vector<KernelFn>{K4, K1, K2}));
  // The same need again replaces its kernel.
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::HostMemory(), {K3}).ok());
  EXPECT_EQ(Fns(**OpRegistry::Choose(op, host)), (std::vector<KernelFn>{K4, K3, K2}));
  EXPECT_EQ(OpRegistry::KernelNeedsOf(op).size(), 4u);
}

TEST(OpRegistry, AKernelWithoutTheInputTypePassesToTheNext) {
  OpRegistry r;
  ASSERT_TRUE(r.Register(OpDef("t")).ok());
  ASSERT_TRUE(r.RegisterKernel("t", "host", {K1, kWriteReqs, DTypeBit(DType::kF64)}).ok());
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::HostMemory(), {K2}).ok());
  const OpDef& op = **r.Find("t");
  StreamExecutor* host = Executor("host", 0);
  EXPECT_EQ(OpRegistry::FindKernel(op, host, {DType::kF64})->fn, K1);
  EXPECT_EQ(OpRegistry::FindKernel(op, host, {DType::kF32})->fn, K2);
}

TEST(OpRegistry, NothingFitsSaysWhatEachKernelNeedsAndWhyNot) {
  OpRegistry r;
  ASSERT_TRUE(r.Register(OpDef("t")).ok());
  ASSERT_TRUE(r.RegisterKernel("t", "nosuch", {K1}).ok());
  ASSERT_TRUE(r.RegisterKernel("t", KernelNeeds::DeviceCode(DeviceCodeForms("t", {})), {K2}).ok());
  const OpDef& op = **r.Find("t");
  absl::StatusOr<const KernelChoice*> c = OpRegistry::Choose(op, Executor("host", 0));
  ASSERT_EQ(c.status().code(), absl::StatusCode::kUnimplemented) << c.status();
  const std::string m(c.status().message());
  EXPECT_NE(m.find("op 't' has no kernel for host:0"), std::string::npos) << m;
  EXPECT_NE(m.find("platform 'nosuch': host:0 is not of that platform"), std::string::npos) << m;
  EXPECT_NE(m.find("device code (OpenCL C): host:0 loads none of those forms"), std::string::npos)
      << m;
  EXPECT_NE(m.find("OpFallback"), std::string::npos) << m;

  if (StreamExecutor* cl = Executor("opencl", 0)) {
    OpRegistry r2;
    ASSERT_TRUE(r2.Register(OpDef("u")).ok());
    ASSERT_TRUE(r2.RegisterKernel("u", KernelNeeds::HostMemory(), {K1}).ok());
    ASSERT_TRUE(r2.RegisterKernel("u", KernelNeeds::Libraries({PluginKind::kDnn}), {K2}).ok());
    c = OpRegistry::Choose(**r2.Find("u"), cl);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kUnimplemented) << c.status();
    const std::string m2(c.status().message());
    EXPECT_NE(m2.find("host memory: "), std::string::npos) << m2;
    EXPECT_NE(m2.find("libraries dnn: no DNN plugin"), std::string::npos) << m2;
  }
}

TEST(OpRegistry, BadRegistrationsAreRefusedWithTheirReason) {
  OpRegistry r;
  ASSERT_TRUE(r.Register(OpDef("t")).ok());
  EXPECT_EQ(r.Register(OpDef("t")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.RegisterKernel("nope", KernelNeeds::HostMemory(), {K1}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(r.RegisterKernel("t", KernelNeeds::HostMemory(), {nullptr}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RegisterKernel("t", KernelNeeds::Libraries({}), {K1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RegisterKernel("t", KernelNeeds::Platform(""), {K1}).code(),
            absl::StatusCode::kInvalidArgument);
  OpDef loose("loose");
  EXPECT_EQ(OpRegistry::Choose(loose, Executor("host", 0)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  r.Check(absl::OkStatus());
  EXPECT_TRUE(r.registration_errors().empty());
  r.Check(absl::InternalError("x"));
  EXPECT_EQ(r.registration_errors().size(), 1u);
}

// Every built-in registration call succeeded, and every built-in op has a
// kernel on the CPU (host memory or the host's plugins).
TEST(OpRegistry, EveryBuiltinOpIsRegisteredAndRunsOnTheHost) {
  const OpRegistry& r = OpRegistry::Global();
  for (const absl::Status& s : r.registration_errors()) ADD_FAILURE() << s;
  StreamExecutor* host = Executor("host", 0);
  for (const std::string& name : r.OpNames()) {
    const OpDef& op = **r.Find(name);
    EXPECT_TRUE(OpRegistry::Choose(op, host).ok()) << OpRegistry::Choose(op, host).status();
  }
}

// op_names.h names every built-in op, and nothing else.
TEST(OpRegistry, TheNameConstantsAreTheBuiltinOps) {
  std::vector<std::string> constants(std::begin(op_names::kAll), std::end(op_names::kAll));
  std::sort(constants.begin(), constants.end());
  EXPECT_EQ(constants, OpRegistry::Global().OpNames());
}

}  // namespace
}  // namespace rill::ops
