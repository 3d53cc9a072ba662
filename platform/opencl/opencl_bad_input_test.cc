// Bad input on the OpenCL backend: each case checks the status code and
// that the message names the bad value, and whether the error surfaces at
// enqueue (stream->ok() turns false at once) or when the work runs.
//
// Covered elsewhere, not repeated here:
//  - a source that does not compile (the status carries the build log) and
//    a kernel name not in the program: opencl_platform_test.cc
//    (BuildErrorCarriesTheLog); a spec without an OpenCL variant:
//    KernelConformance.LoadErrors.
//  - thread or block dims outside the DeviceDescription limits
//    (CL_DEVICE_MAX_WORK_ITEM_SIZES / CL_DEVICE_MAX_WORK_GROUP_SIZE):
//    KernelConformance.LaunchDimsOutsideTheDeviceLimitsAreInvalidArgument,
//    which runs on every OpenCL device; the front refuses them at enqueue.
//  - slices out of range (GetSlice / GetByteSlice) and copies past a view's
//    end: MemoryConformance.NestedAndTypedSlicesComposeOffsets and
//    CopyPastTheEndFailsTheStream (every OpenCL device).
//  - a misaligned sub-buffer offset for a kernel argument:
//    opencl_platform_test.cc.
// A global size that is not a multiple of the local size cannot be
// expressed: the global size is always ThreadDim * BlockDim.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rill/platform/opencl/opencl_executor.h"
#include "rill/platform/opencl/opencl_kernel.h"
#include "rill/platform/opencl/opencl_plugin.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

constexpr char kSource[] = R"CL(
__kernel void fill(__global int* out, int value, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = value + (int)i;
}
__kernel __attribute__((reqd_work_group_size(8, 1, 1)))
void fill8(__global int* out, int value) {
  out[get_global_id(0)] = value;
}
typedef struct { long x, y, z; } Extent;  // rill::Dim3's layout.
__kernel void extent(__global int* out, Extent e) {
  out[0] = (int)(e.x * e.y * e.z);
}
__kernel void vec(__global float* out, float4 v, uchar3 c) {
  out[0] = v.x + v.y + v.z + v.w + c.x + c.y + c.z;
}
__kernel void scratch(__global int* out, __local int* tmp) {
  tmp[get_local_id(0)] = 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tmp[0];
}
)CL";

// An OpenCL-only spec: it declares no parameter list, so LoadKernel<...>
// cannot check the parameters against one.
KernelSpec Spec(const char* name) {
  KernelSpec spec(name);
  spec.AddOpenClSource(kSource);
  return spec;
}

class OpenClBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* platform = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (platform->VisibleDeviceCount() == 0) GTEST_SKIP() << platform->Availability();
    executor_ = Must(platform->ExecutorForDevice(0));
    buffer_ = Must(executor_->AllocateOwnedArray<int32_t>(64));
  }
  std::unique_ptr<Stream> NewStream() { return Must(executor_->CreateStream()); }

  StreamExecutor* executor_ = nullptr;
  ScopedDeviceMemory<int32_t> buffer_;
};

// `fill` takes 3 parameters. The mismatch may be found at load (were the
// backend to check) or at launch; either way it names both counts. Today
// the load succeeds and ResolveArgs refuses the launch at enqueue.
TEST_F(OpenClBadInputTest, ArgumentCountMismatchNamesBothCounts) {
  absl::StatusOr<TypedKernel<DeviceMemory<int32_t>, int32_t>> two =
      executor_->LoadKernel<DeviceMemory<int32_t>, int32_t>(Spec("fill"));
  if (!two.ok()) {
    EXPECT_TRUE(HasError(two.status(), absl::StatusCode::kInvalidArgument, {"fill", "3", "2"}));
  } else {
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), *two, *buffer_, int32_t{1});
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"ThenLaunch(\"fill\"", "takes 3 argument(s), got 2"}));
  }

  // The untyped form with one argument too many.
  auto kernel = Must(executor_->LoadKernel(Spec("fill")));
  KernelArgs four = {PackKernelArg(*buffer_), PackKernelArg(int32_t{1}),
                     PackKernelArg(uint64_t{64}), PackKernelArg(uint64_t{0})};
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenLaunch(ThreadDim(8), BlockDim(1), *kernel, four);
  EXPECT_FALSE(stream->ok()) << "refused at enqueue";
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"\"fill\"", "takes 3 argument(s), got 4"}));
}

// A typed launch passes each argument with its C++ size. ResolveArgs checks
// it at enqueue against the parameter's declared type (the program is built
// with -cl-kernel-arg-info), naming the kernel, the argument, the declared
// type and its size, and what was passed.
TEST_F(OpenClBadInputTest, ArgumentSizeMismatchNamesTheArgumentAndBothSizes) {
  {  // int64_t for `int value`.
    auto kernel =
        Must(executor_->LoadKernel<DeviceMemory<int32_t>, int64_t, uint64_t>(Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, *buffer_, int64_t{1}, uint64_t{8});
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"argument 1 of kernel \"fill\" is `int` (4 bytes), got 8 bytes"}));
  }
  {  // uint32_t for `ulong n`.
    auto kernel =
        Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint32_t>(Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, *buffer_, int32_t{1}, uint32_t{8});
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"argument 2 of kernel \"fill\" is `ulong` (8 bytes), got 4 bytes"}));
  }
  {  // Device memory for `int value`.
    auto kernel =
        Must(executor_->LoadKernel<DeviceMemory<int32_t>, DeviceMemory<int32_t>, uint64_t>(
            Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, *buffer_, *buffer_, uint64_t{8});
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"argument 1 of kernel \"fill\" is `int` (4 bytes), got a buffer"}));
  }
  {  // Device memory (a cl_mem, as large as a ulong) for `ulong n`.
    auto kernel = Must(
        executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, DeviceMemory<int32_t>>(Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, *buffer_, int32_t{1}, *buffer_);
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {"argument 2 of kernel \"fill\" is `ulong` (8 bytes), got a buffer"}));
  }
  // The right sizes work on the same kernel.
  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint64_t>(Spec("fill")));
  std::vector<int32_t> out(64, -1);
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenLaunch(ThreadDim(8), BlockDim(8), kernel, *buffer_, int32_t{5}, uint64_t{64})
      .ThenMemcpyD2H<int32_t>(*buffer_, absl::MakeSpan(out));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out[63], 5 + 63);
}

// Vector parameters have OpenCL C's sizes, a 3-vector that of a 4-vector.
TEST_F(OpenClBadInputTest, VectorParametersHaveTheirOpenClSize) {
  struct UChar3 {
    uint8_t x, y, z;
  };
  struct UChar4 {
    uint8_t x, y, z, w;
  };
  struct Float4 {
    float x, y, z, w;
  };
  auto scalar = Must(executor_->LoadKernel<DeviceMemory<int32_t>, float, UChar4>(Spec("vec")));
  std::unique_ptr<Stream> refused = NewStream();
  refused->ThenLaunch(ThreadDim(1), BlockDim(1), scalar, *buffer_, 1.0f, UChar4{1, 2, 3, 0});
  EXPECT_TRUE(HasError(refused->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"argument 1 of kernel \"vec\" is `float4` (16 bytes), got 4 bytes"}));
  auto packed = Must(executor_->LoadKernel<DeviceMemory<int32_t>, Float4, UChar3>(Spec("vec")));
  std::unique_ptr<Stream> short_vector = NewStream();
  short_vector->ThenLaunch(ThreadDim(1), BlockDim(1), packed, *buffer_, Float4{1, 2, 3, 4},
                           UChar3{1, 2, 3});
  EXPECT_TRUE(HasError(short_vector->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"argument 2 of kernel \"vec\" is `uchar3` (4 bytes), got 3 bytes"}));

  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, Float4, UChar4>(Spec("vec")));
  float out = 0;
  std::unique_ptr<Stream> stream = NewStream();
  stream
      ->ThenLaunch(ThreadDim(1), BlockDim(1), kernel, *buffer_, Float4{1, 2, 3, 4},
                   UChar4{5, 6, 7, 0})
      .ThenMemcpy(&out, *buffer_, sizeof(float));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out, 1 + 2 + 3 + 4 + 5 + 6 + 7);
}

// A scalar for a `__global int*` parameter. OpenCL would take an 8-byte
// scalar's bytes as a cl_mem (PoCL 3.1 dereferences them and crashes the
// process in clSetKernelArg); ResolveArgs refuses it at enqueue.
TEST_F(OpenClBadInputTest, ScalarForABufferParameterIsInvalidArgument) {
  {
    auto kernel = Must(executor_->LoadKernel<uint64_t, int32_t, uint64_t>(Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, uint64_t{5}, int32_t{1}, uint64_t{8});
    EXPECT_FALSE(stream->ok()) << "refused at enqueue";
    EXPECT_TRUE(
        HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                 {"argument 0 of kernel \"fill\" is `__global int*`, got a value of 8 bytes"}));
  }
  {
    auto kernel = Must(executor_->LoadKernel<int32_t, int32_t, uint64_t>(Spec("fill")));
    std::unique_ptr<Stream> stream = NewStream();
    stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, int32_t{5}, int32_t{1}, uint64_t{8});
    EXPECT_TRUE(
        HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                 {"argument 0 of kernel \"fill\" is `__global int*`, got a value of 4 bytes"}));
  }
}

// A struct parameter's size is not known to Rill: OpenCL reports only its
// type name, and PoCL 3.1's clSetKernelArg accepts any size for it, so a
// struct of the wrong size cannot be caught (the kernel reads past the
// bytes passed). Device memory for it is refused at enqueue.
TEST_F(OpenClBadInputTest, BufferForAStructParameterIsInvalidArgument) {
  auto wrong =
      Must(executor_->LoadKernel<DeviceMemory<int32_t>, DeviceMemory<int32_t>>(Spec("extent")));
  std::unique_ptr<Stream> refused = NewStream();
  refused->ThenLaunch(ThreadDim(1), BlockDim(1), wrong, *buffer_, *buffer_);
  EXPECT_FALSE(refused->ok()) << "refused at enqueue";
  EXPECT_TRUE(HasError(refused->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                       {"argument 1 of kernel \"extent\" is `Extent` (by value), got a buffer"}));

  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, Dim3>(Spec("extent")));
  std::vector<int32_t> out(1, -1);
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenLaunch(ThreadDim(1), BlockDim(1), kernel, *buffer_, Dim3{2, 3, 4})
      .ThenMemcpy(out.data(), *buffer_, sizeof(int32_t));
  ASSERT_TRUE(IsOk(stream->BlockHostUntilDone()));
  EXPECT_EQ(out[0], 24);
}

// A launch cannot give a `__local` parameter its size: refused at enqueue.
TEST_F(OpenClBadInputTest, LocalParameterIsInvalidArgument) {
  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, uint64_t>(Spec("scratch")));
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, *buffer_, uint64_t{32});
  EXPECT_FALSE(stream->ok()) << "refused at enqueue";
  EXPECT_TRUE(
      HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
               {"argument 1 of kernel \"scratch\" is `__local int*`", "cannot size local memory"}));
}

// A program built without -cl-kernel-arg-info has no parameter info: the
// kernel is created all the same and ResolveArgs checks only the count,
// leaving the rest to clSetKernelArg.
TEST_F(OpenClBadInputTest, WithoutArgumentInfoOnlyTheCountIsChecked) {
  OpenClExecutor* cl = Must(AsOpenClExecutor(executor_));
  cl_program program = Must(cl->programs().GetOrBuild(kSource, "-cl-std=CL1.2", "no arg info"));
  absl::StatusOr<std::shared_ptr<OpenClKernelCore>> core =
      OpenClKernelCore::Create(program, "fill");
  clReleaseProgram(program);
  ASSERT_TRUE(IsOk(core.status()));
  ASSERT_EQ((*core)->num_args(), 3u);
  for (const OpenClParam& param : (*core)->params())
    EXPECT_EQ(param.kind, OpenClParam::Kind::kUnknown);

  KernelArgs mismatched = {PackKernelArg(*buffer_), PackKernelArg(*buffer_),
                           PackKernelArg(uint32_t{8})};
  EXPECT_TRUE(IsOk(ResolveArgs(**core, mismatched, cl->info().base_align).status()));
  KernelArgs two = {PackKernelArg(*buffer_), PackKernelArg(int32_t{1})};
  EXPECT_TRUE(HasError(ResolveArgs(**core, two, cl->info().base_align).status(),
                       absl::StatusCode::kInvalidArgument, {"takes 3 argument(s), got 2"}));
}

// The device allows 4096 work-items per group, but `fill8` requires groups
// of exactly 8 (reqd_work_group_size): within the DeviceDescription limits,
// so the front lets it through, and clEnqueueNDRangeKernel refuses it on
// the worker. The message names the local and global sizes.
TEST_F(OpenClBadInputTest, LocalSizeTheKernelDoesNotAllowNamesTheSizes) {
  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t>(Spec("fill8")));
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenLaunch(ThreadDim(4), BlockDim(4), kernel, *buffer_, int32_t{1});
  EXPECT_TRUE(HasError(
      stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
      {"\"fill8\"", "global=(16, 1, 1)", "local=(4, 1, 1)", "CL_INVALID_WORK_GROUP_SIZE"}));

  std::vector<int32_t> out(16, -1);
  std::unique_ptr<Stream> good = NewStream();
  good->ThenLaunch(ThreadDim(8), BlockDim(2), kernel, *buffer_, int32_t{3})
      .ThenMemcpy(out.data(), *buffer_, 16 * sizeof(int32_t));
  ASSERT_TRUE(IsOk(good->BlockHostUntilDone()));
  EXPECT_EQ(out, std::vector<int32_t>(16, 3));
}

// GetByteSlice cannot make a view past its allocation, but a view built by
// hand over a cl_mem (interop: DeviceMemoryBase(cl_mem, size, offset)) can
// lie outside it. The front only checks sizes against the view itself.
TEST_F(OpenClBadInputTest, ViewOutsideItsBufferIsRefused) {
  const uint64_t bytes = 64 * sizeof(int32_t);  // buffer_ is 256 bytes.
  const DeviceMemoryBase whole = *buffer_;
  EXPECT_TRUE(HasError(whole.GetByteSlice(224, 64).status(), absl::StatusCode::kInvalidArgument,
                       {"offset=224", "size=64", "size=256"}));
  DeviceMemoryBase beyond(whole.opaque(), 64, 224);  // Bytes [224, 288).
  std::vector<uint8_t> host(64, 7);

  // The front refuses every use of the view at enqueue (the executor's Owns
  // checks offset + size against the allocation), naming the operand.
  std::unique_ptr<Stream> writer = NewStream();
  writer->ThenMemcpy(&beyond, host.data(), 64);
  EXPECT_TRUE(HasError(writer->status(), absl::StatusCode::kInvalidArgument,
                       {"destination", "offset=224", "not in an allocation"}));
  std::unique_ptr<Stream> reader = NewStream();
  reader->ThenMemcpy(host.data(), beyond, 64);
  EXPECT_TRUE(
      HasError(reader->status(), absl::StatusCode::kInvalidArgument, {"source", "offset=224"}));
  std::unique_ptr<Stream> filler = NewStream();
  filler->ThenMemZero(&beyond, 64);
  EXPECT_TRUE(HasError(filler->status(), absl::StatusCode::kInvalidArgument,
                       {"destination", "offset=224"}));

  // As a kernel argument too.
  const uint64_t align = Must(AsOpenClExecutor(executor_))->info().base_align;
  ASSERT_GT(align, 0u);
  ASSERT_LT(align, bytes) << "the case needs an aligned offset inside the buffer";
  DeviceMemory<int32_t> past(DeviceMemoryBase(whole.opaque(), bytes, align));
  auto kernel = Must(executor_->LoadKernel<DeviceMemory<int32_t>, int32_t, uint64_t>(Spec("fill")));
  std::unique_ptr<Stream> launcher = NewStream();
  launcher->ThenLaunch(ThreadDim(8), BlockDim(1), kernel, past, int32_t{1}, uint64_t{8});
  EXPECT_TRUE(HasError(launcher->status(), absl::StatusCode::kInvalidArgument,
                       {"argument 0", absl::StrCat("offset=", align), "not in an allocation"}));
}

// Below the front (a plugin's or interop caller's view, which the front
// never checks), OpenCL refuses a copy or fill outside the buffer when the
// worker enqueues it; the stream's error names the call, offset and size.
TEST_F(OpenClBadInputTest, WorkerErrorsNameTheOffsetAndSize) {
  const DeviceMemoryBase whole = *buffer_;  // 256 bytes.
  DeviceMemoryBase beyond(whole.opaque(), 64, 224);
  std::vector<uint8_t> host(64, 7);
  struct Case {
    const char* name;
    std::function<absl::Status(OpenClStream*)> run;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"write", [&](OpenClStream* s) { return s->MemcpyHostToDevice(beyond, host.data(), 64); },
       "clEnqueueWriteBuffer(offset=224, size=64)"},
      {"read", [&](OpenClStream* s) { return s->MemcpyDeviceToHost(host.data(), beyond, 64); },
       "clEnqueueReadBuffer(offset=224, size=64)"},
      {"copy", [&](OpenClStream* s) { return s->MemcpyDeviceToDevice(beyond, whole, 64); },
       "clEnqueueCopyBuffer(src_offset=0, dst_offset=224, size=64)"},
      {"fill", [&](OpenClStream* s) { return s->Memset32(beyond, 0, 64); },
       "clEnqueueFillBuffer(Memset32, offset=224, size=64, pattern_size=1)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Stream> stream = NewStream();
    OpenClStream* backend = Must(OpenClPluginStream(executor_, stream.get(), "test", "the stream"));
    ASSERT_TRUE(IsOk(c.run(backend)));
    EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kInvalidArgument,
                         {c.expected, "CL_INVALID_VALUE"}));
  }
}

// No DNN plugin is registered for OpenCL: AsDnn() is null, GetPlugin says
// why, and a DNN call fails the stream with that reason and its context.
TEST_F(OpenClBadInputTest, DnnIsUnimplementedNamingThePlatform) {
  EXPECT_EQ(executor_->AsDnn(), nullptr);
  EXPECT_TRUE(HasError(executor_->GetPlugin(PluginKind::kDnn).status(),
                       absl::StatusCode::kUnimplemented, {"no DNN plugin for platform opencl"}));
  DeviceMemory<float> x(*buffer_);
  DeviceMemory<float> y(*buffer_);
  std::unique_ptr<Stream> stream = NewStream();
  stream->ThenConvolve(TensorDescriptor{}, x, FilterDescriptor{}, x, ConvolutionDescriptor{},
                       TensorDescriptor{}, &y);
  EXPECT_FALSE(stream->ok()) << "refused at enqueue";
  EXPECT_TRUE(HasError(stream->BlockHostUntilDone(), absl::StatusCode::kUnimplemented,
                       {"ThenConvolve", "no DNN plugin for platform opencl"}));
}

}  // namespace
}  // namespace rill
