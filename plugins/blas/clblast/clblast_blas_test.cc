// The CLBlast plugin on the OpenCL platform (PoCL's CPU device in CI):
// every BlasSupport operation in float and double against naive host
// loops, with sub-range (offset) operands, stream ordering with host
// callbacks, and bad input. Tolerance as plugins/blas/blas_plugin_test.cc:
// |r - ref| <= 4 (k + 2) eps(T) scale, scale the same sum over |terms|.
//
// The first CLBlast call of a process compiles its kernels (seconds with a
// cold PoCL cache); ctest keeps that cache in the build tree.

#include "rill/plugins/blas/clblast/clblast_blas.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/blas/blas_test_util.h"
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

class ClBlastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Platform* cl = Must(PlatformManager::Default().PlatformWithName("opencl"));
    if (cl->VisibleDeviceCount() == 0) GTEST_SKIP() << cl->Availability();
    executor_ = Must(cl->ExecutorForDevice(0));
    stream_ = Must(executor_->CreateStream());
    ASSERT_NE(executor_->AsBlas(), nullptr);
    ASSERT_EQ(executor_->AsBlas()->Name(), "clblast");
  }

  template <typename T>
  ScopedDeviceMemory<T> Upload(const std::vector<T>& host) {
    ScopedDeviceMemory<T> d = Must(executor_->AllocateOwnedArray<T>(host.size()));
    stream_->ThenMemcpyH2D<T>(host, d.ptr());
    return d;
  }
  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& d) {
    std::vector<T> out(d.ElementCount());
    stream_->ThenMemcpyD2H<T>(d, absl::MakeSpan(out));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return out;
  }

  // C = alpha op(A) op(B) + beta C, column-major, A and C as sub-ranges at
  // an element offset, batch of two through the strided form.
  template <typename T>
  void CheckGemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, int64_t batch) {
    SCOPED_TRACE(::testing::Message()
                 << "m=" << m << " n=" << n << " k=" << k << " ta=" << TransposeName(ta)
                 << " tb=" << TransposeName(tb) << " batch=" << batch);
    const bool at = ta == Transpose::kTranspose, bt = tb == Transpose::kTranspose;
    const int64_t lda = (at ? k : m) + 1, ldb = at ? k + 2 : k + 2, ldc = m + 3;
    const int64_t a_cols = at ? m : k, b_cols = bt ? k : n;
    const int64_t ldb_eff = bt ? n + 2 : ldb;
    const int64_t sa = lda * a_cols, sb = ldb_eff * b_cols, sc = ldc * n;
    const int64_t pad = 5;  // Elements before A and C: offset views.
    std::vector<T> a = Random<T>(pad + sa * batch, 1), b = Random<T>(sb * batch, 2),
                   c = Random<T>(pad + sc * batch, 3);
    const double alpha = 0.75, beta = -0.5;
    ScopedDeviceMemory<T> da = Upload(a), db = Upload(b), dc = Upload(c);
    DeviceMemory<T> a_view = Must(da->GetSlice(pad, sa * batch));
    DeviceMemory<T> c_view = Must(dc->GetSlice(pad, sc * batch));
    stream_->ThenBlasGemmStridedBatched<T>(ta, tb, m, n, k, static_cast<T>(alpha), a_view, lda, sa,
                                           *db, ldb_eff, sb, static_cast<T>(beta), &c_view, ldc, sc,
                                           batch);
    std::vector<T> got = Download(*dc);
    std::vector<double> ref(got.begin(), got.end()), scale(got.size(), 0.0);
    for (size_t i = 0; i < got.size(); ++i) ref[i] = c[i];  // Untouched elements stay exact.
    for (int64_t p = 0; p < batch; ++p) {
      const GemmRef r = NaiveGemm(at, bt, m, n, k, alpha, &a[pad + p * sa], lda, &b[p * sb],
                                  ldb_eff, beta, &c[pad + p * sc], ldc);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < m; ++i) {
          const size_t ci = pad + p * sc + j * ldc + i;
          ref[ci] = r.value[j * m + i];
          scale[ci] = r.scale[j * m + i];
        }
      }
    }
    ExpectNear(got, ref, scale, k);
  }

  template <typename T>
  void CheckLevel1AndGemv() {
    const int64_t n = 1000;
    std::vector<T> x = Random<T>(2 * n, 4), y = Random<T>(n, 5);
    ScopedDeviceMemory<T> dx = Upload(x), dy = Upload(y);
    ScopedDeviceMemory<T> results = Must(executor_->AllocateOwnedArray<T>(3));
    auto vec = [&](double alpha) {
      VectorArgs v;
      v.type = DataTypeOf<T>();
      v.n = n;
      v.alpha = alpha;
      v.x = *dx;
      v.incx = 2;
      v.y = *dy;
      v.incy = 1;
      return v;
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

    // y = 2 x + y, then x *= -1 (strided), then y2 = y copy.
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

    // Gemv: y = 0.5 A^T x + 2 y with A 30 x 20, lda 31.
    const int64_t m = 30, cols = 20, lda = 31;
    std::vector<T> a = Random<T>(lda * cols, 6), gx = Random<T>(m, 7), gy = Random<T>(cols, 8);
    ScopedDeviceMemory<T> da = Upload(a), dgx = Upload(gx), dgy = Upload(gy);
    stream_->ThenBlasGemv<T>(Transpose::kTranspose, m, cols, T(0.5), *da, lda, *dgx, 1, T(2),
                             dgy.ptr(), 1);
    std::vector<T> got = Download(*dgy);
    std::vector<double> ref(cols), scale(cols);
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0, abs = 0;
      for (int64_t i = 0; i < m; ++i) {
        sum += double{a[j * lda + i]} * gx[i];
        abs += std::fabs(double{a[j * lda + i]} * gx[i]);
      }
      ref[j] = 0.5 * sum + 2.0 * gy[j];
      scale[j] = 0.5 * abs + std::fabs(2.0 * gy[j]);
    }
    ExpectNear(got, ref, scale, m);
  }

  StreamExecutor* executor_ = nullptr;
  std::unique_ptr<Stream> stream_;
};

TEST_F(ClBlastTest, GemmFloat) {
  CheckGemm<float>(Transpose::kNoTranspose, Transpose::kNoTranspose, 33, 17, 29, 1);
  CheckGemm<float>(Transpose::kTranspose, Transpose::kNoTranspose, 8, 40, 5, 1);
  CheckGemm<float>(Transpose::kNoTranspose, Transpose::kTranspose, 64, 64, 64, 2);
}

TEST_F(ClBlastTest, GemmDouble) {
  CheckGemm<double>(Transpose::kNoTranspose, Transpose::kNoTranspose, 33, 17, 29, 1);
  CheckGemm<double>(Transpose::kTranspose, Transpose::kTranspose, 12, 7, 9, 3);
}

TEST_F(ClBlastTest, GemmBatchedArrays) {
  const int64_t m = 6, n = 5, k = 4;
  std::vector<float> a = Random<float>(m * k, 9), b = Random<float>(k * n, 10);
  ScopedDeviceMemory<float> da = Upload(a), db = Upload(b);
  ScopedDeviceMemory<float> c0 = Must(executor_->AllocateOwnedArray<float>(m * n));
  ScopedDeviceMemory<float> c1 = Must(executor_->AllocateOwnedArray<float>(m * n));
  GemmBatchedArgs args;
  args.shape.m = m;
  args.shape.n = n;
  args.shape.k = k;
  args.shape.lda = m;
  args.shape.ldb = k;
  args.shape.ldc = m;
  args.shape.alpha = 1;
  args.shape.beta = 0;
  args.a = {*da, *da};
  args.b = {*db, *db};
  args.c = {*c0, *c1};
  stream_->ThenMemZero(c0.ptr(), m * n * 4)
      .ThenMemZero(c1.ptr(), m * n * 4)
      .ThenBlasGemmBatched(args);
  std::vector<float> r0 = Download(*c0), r1 = Download(*c1);
  EXPECT_EQ(r0, r1);
  double ref = 0, abs = 0;
  for (int64_t l = 0; l < k; ++l) {
    ref += double{a[l * m]} * b[l];
    abs += std::fabs(double{a[l * m]} * b[l]);
  }
  EXPECT_NEAR(r0[0], ref, 4 * (k + 2) * 1.2e-7 * abs);
}

TEST_F(ClBlastTest, Level1AndGemvFloat) { CheckLevel1AndGemv<float>(); }
TEST_F(ClBlastTest, Level1AndGemvDouble) { CheckLevel1AndGemv<double>(); }

TEST_F(ClBlastTest, OrderedWithHostCallbacksAndSkippedAfterFailure) {
  std::vector<float> x(256, 1.0f);
  ScopedDeviceMemory<float> dx = Upload(x);
  VectorArgs scal;
  scal.n = 256;
  scal.alpha = 3;
  scal.x = *dx;
  // A callback that changes x on the device must run before the scal.
  std::vector<float> twos(256, 2.0f);
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

TEST_F(ClBlastTest, BadInput) {
  ScopedDeviceMemory<float> v = Must(executor_->AllocateOwnedArray<float>(16));
  VectorArgs misaligned;
  misaligned.n = 2;
  misaligned.x = Must(v->GetByteSlice(2, 8));
  EXPECT_TRUE(HasError(executor_->AsBlas()->DoBlasScal(stream_.get(), misaligned),
                       absl::StatusCode::kInvalidArgument, {"byte offset 2", "element size 4"}));
  // A stream of another platform's executor.
  Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
  std::unique_ptr<Stream> host_stream = Must(Must(host->ExecutorForDevice(0))->CreateStream());
  VectorArgs ok;
  ok.n = 16;
  ok.x = *v;
  EXPECT_FALSE(executor_->AsBlas()->DoBlasScal(host_stream.get(), ok).ok());
  EXPECT_TRUE(HasError(ClBlastStatus(-1016, "gemm"), absl::StatusCode::kInvalidArgument,
                       {"CLBlastInvalidLeadDimA", "-1016"}));
  EXPECT_TRUE(HasError(ClBlastStatus(-5, "gemm"), absl::StatusCode::kResourceExhausted,
                       {"CL_OUT_OF_RESOURCES"}));
}

}  // namespace
}  // namespace rill
