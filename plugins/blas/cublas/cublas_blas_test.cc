// The cuBLAS plugin. Without a GPU (or driver) only the first group runs:
// registration for the cuda platform, the status mapping, and rejecting a
// host executor; the device tests skip with the platform's reason ("no CUDA
// device: ..."). On a GPU: every BlasSupport operation in float and double
// against naive host loops (gemm in all four transpose combinations,
// strided-batched and batched over arrays, views at an offset), stream
// ordering with host callbacks, the gemm-batched pointer buffer shared by
// two streams and grown, direct cuBLAS calls through WithHandle, and bad
// input. Tolerance as plugins/blas/blas_plugin_test.cc:
// |r - ref| <= 4 (k + 2) eps(T) scale, scale the same sum over |terms|.

#include "rill/plugins/blas/cublas/cublas_blas.h"

#include <cublas_v2.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/blas/blas_test_util.h"
#include "rill/plugins/blas/cublas/cublas_status.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

namespace rill {
namespace {

using ::rill::blas_testing::ExpectNear;
using ::rill::blas_testing::GemmRef;
using ::rill::blas_testing::NaiveGemm;
using ::rill::blas_testing::Random;
using ::rill::testing::HasError;
using ::rill::testing::IsOk;
using ::rill::testing::Must;

// --- Without a device.

TEST(CuBlasRegistryTest, RegisteredAsTheCudaDefault) {
  bool found = false;
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.platform != kCudaPlatformId || e.kind != PluginKind::kBlas || e.name != "cublas")
      continue;
    found = true;
    if (std::getenv("RILL_BLAS") == nullptr) {
      EXPECT_TRUE(e.is_default);
    }
  }
  EXPECT_TRUE(found) << "no \"cublas\" BLAS plugin registered for the cuda platform";
  EXPECT_TRUE(IsOk(
      PluginRegistry::Default().CheckRegistered(kCudaPlatformId, PluginKind::kBlas, "cublas")));
}

TEST(CuBlasStatusTest, NamesCodesAndCanonicalCodes) {
  EXPECT_TRUE(IsOk(CuBlasStatus(CUBLAS_STATUS_SUCCESS, "x")));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasSgemm"),
                       absl::StatusCode::kResourceExhausted,
                       {"cublasSgemm: ", "CUBLAS_STATUS_ALLOC_FAILED (3): "}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_INVALID_VALUE, "w"),
                       absl::StatusCode::kInvalidArgument, {"CUBLAS_STATUS_INVALID_VALUE (7)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate"),
                       absl::StatusCode::kUnavailable,
                       {"cublasCreate", "CUBLAS_STATUS_NOT_INITIALIZED (1)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_NOT_SUPPORTED, "w"),
                       absl::StatusCode::kUnimplemented, {"CUBLAS_STATUS_NOT_SUPPORTED (15)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_ARCH_MISMATCH, "w"),
                       absl::StatusCode::kUnimplemented, {"CUBLAS_STATUS_ARCH_MISMATCH (8)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_EXECUTION_FAILED, "w"),
                       absl::StatusCode::kInternal, {"CUBLAS_STATUS_EXECUTION_FAILED (13)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(CUBLAS_STATUS_INTERNAL_ERROR, "w"), absl::StatusCode::kInternal,
                       {"CUBLAS_STATUS_INTERNAL_ERROR (14)"}));
  EXPECT_TRUE(HasError(CuBlasStatus(12345, "w"), absl::StatusCode::kInternal, {"(12345)"}));
}

TEST(CuBlasStatusTest, LibraryVersionIsTheHeaders) {
  EXPECT_EQ(CuBlas::LibraryVersion(), CUBLAS_VERSION);
}

TEST(CuBlasCreateTest, RejectsAHostExecutor) {
  StreamExecutor* host =
      Must(Must(PlatformManager::Default().PlatformWithName("host"))->ExecutorForDevice(0));
  EXPECT_TRUE(HasError(CuBlas::Create(host).status(), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(
      HasError(CuBlas::Create(nullptr).status(), absl::StatusCode::kInvalidArgument, {"null"}));
}

// --- On a device.

class CuBlasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Platform*> cuda = PlatformManager::Default().PlatformWithName("cuda");
    if (!cuda.ok()) GTEST_SKIP() << "no CUDA platform: " << cuda.status();
    if ((*cuda)->VisibleDeviceCount() == 0) GTEST_SKIP() << (*cuda)->Availability();
    executor_ = Must((*cuda)->ExecutorForDevice(0));
    stream_ = Must(executor_->CreateStream());
    ASSERT_NE(executor_->AsBlas(), nullptr);
    ASSERT_EQ(executor_->AsBlas()->Name(), "cublas");
    blas_ = dynamic_cast<CuBlas*>(executor_->AsBlas());
    ASSERT_NE(blas_, nullptr);
  }

  template <typename T>
  ScopedDeviceMemory<T> Upload(const std::vector<T>& host) {
    ScopedDeviceMemory<T> d = Must(executor_->AllocateOwnedArray<T>(host.size()));
    stream_->ThenMemcpyH2D<T>(host, d.ptr());
    return d;
  }
  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& d, Stream* stream = nullptr) {
    stream = stream ? stream : stream_.get();
    std::vector<T> out(d.ElementCount());
    stream->ThenMemcpyD2H<T>(d, absl::MakeSpan(out));
    EXPECT_TRUE(IsOk(stream->BlockHostUntilDone()));
    return out;
  }

  // C = alpha op(A) op(B) + beta C, column-major, A and C as views at an
  // element offset, `batch` matrices through the strided form.
  template <typename T>
  void CheckGemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, int64_t batch) {
    SCOPED_TRACE(::testing::Message()
                 << "m=" << m << " n=" << n << " k=" << k << " " << TransposeName(ta)
                 << TransposeName(tb) << " batch=" << batch);
    const bool at = ta == Transpose::kTranspose, bt = tb == Transpose::kTranspose;
    const int64_t lda = (at ? k : m) + 1, ldb = (bt ? n : k) + 2, ldc = m + 3;
    const int64_t sa = lda * (at ? m : k), sb = ldb * (bt ? k : n), sc = ldc * n;
    const int64_t pad = 5;  // Elements before A and C: views at an offset.
    std::vector<T> a = Random<T>(pad + sa * batch, 1), b = Random<T>(sb * batch, 2),
                   c = Random<T>(pad + sc * batch, 3);
    const double alpha = 0.75, beta = -0.5;
    ScopedDeviceMemory<T> da = Upload(a), db = Upload(b), dc = Upload(c);
    DeviceMemory<T> a_view = Must(da->GetSlice(pad, sa * batch));
    DeviceMemory<T> c_view = Must(dc->GetSlice(pad, sc * batch));
    stream_->ThenBlasGemmStridedBatched<T>(ta, tb, m, n, k, static_cast<T>(alpha), a_view, lda, sa,
                                           *db, ldb, sb, static_cast<T>(beta), &c_view, ldc, sc,
                                           batch);
    std::vector<T> got = Download(*dc);
    std::vector<double> ref(c.begin(), c.end()), scale(c.size(), 0.0);  // Gaps stay exact.
    for (int64_t p = 0; p < batch; ++p) {
      GemmRef r = NaiveGemm(at, bt, m, n, k, alpha, &a[pad + p * sa], lda, &b[p * sb], ldb, beta,
                            &c[pad + p * sc], ldc);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
          ref[pad + p * sc + j * ldc + i] = r.value[j * m + i];
          scale[pad + p * sc + j * ldc + i] = r.scale[j * m + i];
        }
      }
    }
    ExpectNear(got, ref, scale, k);
  }

  template <typename T>
  void CheckLevel1AndGemv();

  // Batched gemm over `count` pairs of distinct m x k and k x n matrices
  // on `stream`, checked against the naive loop.
  template <typename T>
  void CheckGemmBatched(Stream* stream, int count, uint32_t seed);

  StreamExecutor* executor_ = nullptr;
  CuBlas* blas_ = nullptr;
  std::unique_ptr<Stream> stream_;
};

template <typename T>
void CuBlasTest::CheckLevel1AndGemv() {
  const int64_t n = 1000;
  std::vector<T> x = Random<T>(2 * n, 4), y = Random<T>(n, 5);
  ScopedDeviceMemory<T> dx = Upload(x), dy = Upload(y);
  ScopedDeviceMemory<T> results = Must(executor_->AllocateOwnedArray<T>(3));
  auto vec = [&](double alpha) {
    return VectorArgs{DataTypeOf<T>(), n, alpha, *dx, 2, *dy, 1, {}};
  };
  double dot = 0, dot_abs = 0, nrm = 0, asum = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += double{x[2 * i]} * y[i];
    dot_abs += std::fabs(double{x[2 * i]} * y[i]);
    nrm += double{x[2 * i]} * x[2 * i];
    asum += std::fabs(double{x[2 * i]});
  }
  VectorArgs d = vec(1), r2 = vec(1), as = vec(1);
  d.result = Must(results->GetSlice(0, 1));
  r2.result = Must(results->GetSlice(1, 1));
  as.result = Must(results->GetSlice(2, 1));
  stream_->ThenBlasDot(d).ThenBlasNrm2(r2).ThenBlasAsum(as);
  std::vector<T> r = Download(*results);
  ExpectNear<T>(r, {dot, std::sqrt(nrm), asum}, {dot_abs, std::sqrt(nrm), asum}, n);

  // y = 2 x + y, then x *= -1 (strided), then y2 = copy of y.
  stream_->ThenBlasAxpy(vec(2.0)).ThenBlasScal(vec(-1.0));
  ScopedDeviceMemory<T> dy2 = Must(executor_->AllocateOwnedArray<T>(n));
  VectorArgs copy = vec(1);
  copy.x = *dy;
  copy.incx = 1;
  copy.y = *dy2;
  stream_->ThenBlasCopy(copy);
  std::vector<T> got_y = Download(*dy2), got_x = Download(*dx);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(got_y[i], 2.0 * x[2 * i] + y[i], 4 * std::numeric_limits<T>::epsilon() * 3) << i;
    ASSERT_EQ(got_x[2 * i], -x[2 * i]) << i;
    ASSERT_EQ(got_x[2 * i + 1], x[2 * i + 1]) << "stride gap " << i;
  }

  // Gemv both ways with A 30 x 20, lda 31: y = 0.5 op(A) x + 2 y.
  const int64_t m = 30, cols = 20, lda = 31;
  const std::vector<T> a = Random<T>(lda * cols, 6);
  ScopedDeviceMemory<T> da = Upload(a);
  for (Transpose t : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    SCOPED_TRACE(TransposeName(t));
    const bool tr = t == Transpose::kTranspose;
    const int64_t xn = tr ? m : cols, yn = tr ? cols : m;
    const std::vector<T> gx = Random<T>(xn, 7), gy = Random<T>(yn, 8);
    ScopedDeviceMemory<T> dgx = Upload(gx), dgy = Upload(gy);
    stream_->ThenBlasGemv<T>(t, m, cols, T(0.5), *da, lda, *dgx, 1, T(2), dgy.ptr(), 1);
    std::vector<T> got = Download(*dgy);
    std::vector<double> ref(yn), scale(yn);
    for (int64_t o = 0; o < yn; ++o) {
      double sum = 0, abs = 0;
      for (int64_t i = 0; i < xn; ++i) {
        const double av = tr ? a[o * lda + i] : a[i * lda + o];
        sum += av * gx[i];
        abs += std::fabs(av * gx[i]);
      }
      ref[o] = 0.5 * sum + 2.0 * gy[o];
      scale[o] = 0.5 * abs + std::fabs(2.0 * gy[o]);
    }
    ExpectNear(got, ref, scale, xn);
  }
}

template <typename T>
void CuBlasTest::CheckGemmBatched(Stream* stream, int count, uint32_t seed) {
  const int64_t m = 6, n = 5, k = 4;
  std::vector<std::vector<T>> a(count), b(count), c(count);
  std::vector<ScopedDeviceMemory<T>> da, db, dc;
  GemmBatchedArgs args;
  args.shape = GemmArgs{DataTypeOf<T>(),
                        Transpose::kTranspose,
                        Transpose::kNoTranspose,
                        m,
                        n,
                        k,
                        1.5,
                        {},
                        k,
                        {},
                        k,
                        0.25,
                        {},
                        m};
  for (int i = 0; i < count; ++i) {
    a[i] = Random<T>(k * m, seed + 3 * i);
    b[i] = Random<T>(k * n, seed + 3 * i + 1);
    c[i] = Random<T>(m * n, seed + 3 * i + 2);
    for (auto [host, dev] : {std::pair{&a[i], &da}, std::pair{&b[i], &db}, std::pair{&c[i], &dc}}) {
      dev->push_back(Must(executor_->AllocateOwnedArray<T>(host->size())));
      stream->ThenMemcpyH2D<T>(*host, dev->back().ptr());
    }
    args.a.push_back(*da.back());
    args.b.push_back(*db.back());
    args.c.push_back(*dc.back());
  }
  stream->ThenBlasGemmBatched(args);
  for (int i = 0; i < count; ++i) {
    GemmRef r =
        NaiveGemm(true, false, m, n, k, 1.5, a[i].data(), k, b[i].data(), k, 0.25, c[i].data(), m);
    SCOPED_TRACE(::testing::Message() << "matrix " << i << " of " << count);
    ExpectNear(Download(*dc[i], stream), r.value, r.scale, k);
  }
}

TEST_F(CuBlasTest, GemmFloatEveryTranspose) {
  for (Transpose ta : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    for (Transpose tb : {Transpose::kNoTranspose, Transpose::kTranspose}) {
      CheckGemm<float>(ta, tb, 33, 17, 29, 1);
      CheckGemm<float>(ta, tb, 8, 40, 5, 3);
    }
  }
  CheckGemm<float>(Transpose::kNoTranspose, Transpose::kNoTranspose, 256, 128, 300, 1);
}

TEST_F(CuBlasTest, GemmDoubleEveryTranspose) {
  for (Transpose ta : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    for (Transpose tb : {Transpose::kNoTranspose, Transpose::kTranspose}) {
      CheckGemm<double>(ta, tb, 33, 17, 29, 1);
      CheckGemm<double>(ta, tb, 12, 7, 9, 2);
    }
  }
}

TEST_F(CuBlasTest, GemmBatchedArrays) {
  CheckGemmBatched<float>(stream_.get(), 3, 10);
  CheckGemmBatched<double>(stream_.get(), 2, 20);
}

// The pointer buffer is shared by every batched call of the plugin: two
// streams in turn, then a batch large enough to grow it.
TEST_F(CuBlasTest, GemmBatchedPointerBufferSharedAndGrown) {
  std::unique_ptr<Stream> other = Must(executor_->CreateStream());
  CheckGemmBatched<float>(stream_.get(), 4, 30);
  CheckGemmBatched<float>(other.get(), 5, 40);
  CheckGemmBatched<float>(stream_.get(), 300, 50);  // 300 * 3 pointers > the first 4 KiB.
  CheckGemmBatched<float>(other.get(), 2, 60);
}

TEST_F(CuBlasTest, Level1AndGemvFloat) { CheckLevel1AndGemv<float>(); }
TEST_F(CuBlasTest, Level1AndGemvDouble) { CheckLevel1AndGemv<double>(); }

TEST_F(CuBlasTest, OrderedWithHostCallbacksAndSkippedAfterFailure) {
  std::vector<float> x(256, 1.0f);
  ScopedDeviceMemory<float> dx = Upload(x);
  VectorArgs scal{DataType::kFloat, 256, 3, *dx, 1, {}, 1, {}};
  std::vector<float> twos(256, 2.0f);  // Written by a callback that must run before the scal.
  stream_->ThenDoHostCallback([&] {
    ASSERT_TRUE(IsOk(executor_->SynchronousMemcpy(dx.ptr(), twos.data(), 256 * sizeof(float))));
  });
  stream_->ThenBlasScal(scal);
  EXPECT_EQ(Download(*dx), std::vector<float>(256, 6.0f));

  std::unique_ptr<Stream> failed = Must(executor_->CreateStream());
  failed->ThenDoHostCallbackWithStatus([] { return absl::AbortedError("stop here"); })
      .ThenBlasScal(scal);
  EXPECT_TRUE(HasError(failed->BlockHostUntilDone(), absl::StatusCode::kAborted, {"stop here"}));
  EXPECT_EQ(Download(*dx), std::vector<float>(256, 6.0f)) << "the scal after the failure ran";
}

TEST_F(CuBlasTest, DirectCallsThroughTheHandle) {
  EXPECT_EQ(Must(blas_->Handle()), Must(blas_->Handle()));
  std::vector<float> x(64, 1.5f);
  ScopedDeviceMemory<float> dx = Upload(x);
  float* p = static_cast<float*>(CudaAddress(*dx));
  const float alpha = 2;
  EXPECT_TRUE(IsOk(blas_->WithHandle(stream_.get(), "cublasSscal", [&](cublasHandle_t h) {
    return cublasSscal(h, 64, &alpha, p, 1);
  })));
  EXPECT_EQ(Download(*dx), std::vector<float>(64, 3.0f));
  // cuBLAS's own argument errors come back with its names (lda < m).
  EXPECT_TRUE(HasError(blas_->WithHandle(stream_.get(), "cublasSgemm(lda=1)",
                                         [&](cublasHandle_t h) {
                                           return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4,
                                                              &alpha, p, 1, p, 4, &alpha, p, 4);
                                         }),
                       absl::StatusCode::kInvalidArgument,
                       {"cublasSgemm(lda=1)", "CUBLAS_STATUS_INVALID_VALUE (7)"}));
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

TEST_F(CuBlasTest, BadInput) {
  ScopedDeviceMemory<float> v = Must(executor_->AllocateOwnedArray<float>(16));
  VectorArgs misaligned{DataType::kFloat, 2, 1, Must(v->GetByteSlice(2, 8)), 1, {}, 1, {}};
  EXPECT_TRUE(HasError(blas_->DoBlasScal(stream_.get(), misaligned),
                       absl::StatusCode::kInvalidArgument, {"byte offset 2", "element size 4"}));
  // A stream of another platform's executor.
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  std::unique_ptr<Stream> host_stream = Must(Must(host->ExecutorForDevice(0))->CreateStream());
  VectorArgs ok{DataType::kFloat, 16, 1, *v, 1, {}, 1, {}};
  EXPECT_FALSE(blas_->DoBlasScal(host_stream.get(), ok).ok());
  EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
}

}  // namespace
}  // namespace rill
