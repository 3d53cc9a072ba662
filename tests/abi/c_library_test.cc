// The C library plugin (examples/c_library, librill_c_library.so) loaded at
// run time through PlatformManager::LoadPlugin, on a host executor:
//  - "c_blas": sgemm/dgemm with every transpose, strided batches with gaps,
//    padded leading dimensions and views at an offset; sgemv/dgemv with
//    strided vectors; each against a naive loop written here and against
//    the in-tree "openblas" plugin on the same inputs;
//  - the chain "c_blas,openblas": what c_blas lacks (axpy) goes to openblas
//    (counted as a hand-on) and is right, while gemm stays on c_blas; with
//    c_blas alone axpy is Unimplemented;
//  - "c_dnn": forward convolution, float and double, with padding, stride,
//    dilation and groups, against dnn_test_reference.h's naive loop, into
//    NaN-filled outputs (Rill's convolution overwrites y: the plugin must not
//    read it); with onednn built, "c_dnn,onednn" hands backward data on.
//
// Tolerances as plugins/blas/blas_plugin_test.cc: a result summing k
// products is within 4 (k + 2) eps(T) sum |products| of the reference in
// long double (double for convolutions). The elements a call must not touch
// (padding beyond ld, gaps between batches and strided elements) must be
// exact.
//
// Needs: RILL_PLUGIN_DIR (the folder of librill_c_library.so) or
// RILL_C_LIBRARY_PATH (its path), rill::openblas linked, and rill::onednn
// for the chain test (skipped without it).

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/blas/blas_test_util.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/dnn/dnn_test_reference.h"
#include "rill/rill.h"
#include "rill/testing/status_testing.h"

// The plugin's file: RILL_C_LIBRARY_PATH, else librill_c_library.so in
// RILL_PLUGIN_DIR (the build's plugins/ folder).
#if !defined(RILL_C_LIBRARY_PATH) && defined(RILL_PLUGIN_DIR)
#define RILL_C_LIBRARY_PATH RILL_PLUGIN_DIR "/librill_c_library.so"
#endif
#ifndef RILL_C_LIBRARY_PATH
#error "define RILL_PLUGIN_DIR (the folder of librill_c_library.so) or RILL_C_LIBRARY_PATH"
#endif

namespace rill {
namespace {

using ::rill::blas_testing::Random;
using testing::HasError;
using testing::IsOk;
using testing::Must;
using Acc = long double;  // Reference accumulator.

constexpr Transpose kN = Transpose::kNoTranspose, kT = Transpose::kTranspose;

// Loads the plugin once for the whole binary. AlreadyExists means it was
// loaded before (RILL_PLUGIN_PATH naming its folder): fine too.
absl::Status LoadCLibrary() {
  static const absl::Status* status = new absl::Status([] {
    absl::Status s = PlatformManager::Default().LoadPlugin(RILL_C_LIBRARY_PATH);
    return s.code() == absl::StatusCode::kAlreadyExists ? absl::OkStatus() : s;
  }());
  return *status;
}

template <typename T>
::testing::AssertionResult Near(const char* what, size_t i, T got, Acc ref, Acc scale,
                                int64_t terms) {
  const Acc tol = 4 * (terms + 2) * static_cast<Acc>(std::numeric_limits<T>::epsilon()) * scale;
  if (std::fabs(static_cast<Acc>(got) - ref) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << "[" << i << "] = " << got << ", reference " << static_cast<double>(ref)
         << ", tolerance " << static_cast<double>(tol);
}

// host:0 with a stream; device upload and download.
class CLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(IsOk(LoadCLibrary())) << RILL_C_LIBRARY_PATH;
    Platform* host = Must(PlatformManager::Default().PlatformWithName("host"));
    exec_ = Must(host->ExecutorForDevice(0));
    stream_ = Must(exec_->CreateStream());
  }

  // A device copy of `host`, freed with the test. With `lead` > 0 the copy
  // sits `lead` elements into its allocation and the view returned starts
  // there (its offset is not 0).
  template <typename T>
  DeviceMemory<T> Upload(const std::vector<T>& host, uint64_t lead = 0) {
    auto owned = std::make_shared<ScopedDeviceMemory<T>>(
        Must(exec_->AllocateOwnedArray<T>(host.size() + lead)));
    keep_.push_back(owned);
    DeviceMemory<T> view = Must((**owned).GetSlice(lead, host.size()));
    stream_->ThenMemcpy(&view, host.data(), host.size() * sizeof(T));
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));  // `host` may be a temporary.
    return view;
  }
  template <typename T>
  std::vector<T> Download(const DeviceMemory<T>& memory) {
    std::vector<T> host(memory.ElementCount());
    stream_->ThenMemcpy(host.data(), memory, memory.size());
    EXPECT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    return host;
  }

  // The executor's plugin `name` of `kind`, created on first use.
  template <typename Interface>
  Interface* Plugin(std::string_view name) {
    return static_cast<Interface*>(Must(exec_->GetPlugin(Interface::kKind, name)));
  }

  StreamExecutor* exec_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::vector<std::shared_ptr<void>> keep_;
};

// ---------------------------------------------------------------------------
// BLAS.

class CBlasTest : public CLibraryTest {
 protected:
  void SetUp() override {
    CLibraryTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kBlas, "c_blas")));
    ASSERT_NE(exec_->AsBlas(), nullptr);
    ASSERT_EQ(exec_->AsBlas()->Name(), "c_blas");
  }

  template <typename T>
  void CheckGemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, int64_t batch);
  template <typename T>
  void CheckGemv(Transpose t);
};

// Checks one stored C (matrix `s` of the batch) against the naive reference
// and, element by element, against `other` (another library's result on
// the same inputs): every computed element, the padding rows untouched.
template <typename T>
void ExpectGemm(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c_in,
                const std::vector<T>& c_out, const std::vector<T>& other, size_t a0, size_t b0,
                size_t c0, Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                int64_t ldb, int64_t ldc, double alpha, double beta) {
  auto A = [&](int64_t i, int64_t l) {
    return static_cast<Acc>(ta == kT ? a[a0 + l + i * lda] : a[a0 + i + l * lda]);
  };
  auto B = [&](int64_t l, int64_t j) {
    return static_cast<Acc>(tb == kT ? b[b0 + j + l * ldb] : b[b0 + l + j * ldb]);
  };
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < ldc && (j < n - 1 || i < m); ++i) {
      const size_t at = c0 + i + j * ldc;
      if (i >= m) {
        ASSERT_EQ(c_out[at], c_in[at]) << "padding row " << i << " of column " << j << " changed";
        continue;
      }
      Acc sum = 0, abs_sum = 0;
      for (int64_t l = 0; l < k; ++l) {
        sum += A(i, l) * B(l, j);
        abs_sum += std::fabs(A(i, l) * B(l, j));
      }
      const Acc ref = alpha * sum + beta * static_cast<Acc>(c_in[at]);
      const Acc scale = std::fabs(alpha) * abs_sum + std::fabs(beta * static_cast<Acc>(c_in[at]));
      ASSERT_TRUE(Near("c (c_blas)", at, c_out[at], ref, scale, k));
      // Against openblas: both within the bound of the reference, so within
      // twice the bound of each other.
      ASSERT_TRUE(
          Near("c (c_blas vs openblas)", at, c_out[at], static_cast<Acc>(other[at]), 2 * scale, k));
    }
  }
}

template <typename T>
void CBlasTest::CheckGemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k,
                          int64_t batch) {
  SCOPED_TRACE(::testing::Message()
               << "gemm " << TransposeName(ta) << TransposeName(tb) << " m=" << m << " n=" << n
               << " k=" << k << " batch=" << batch << " sizeof(T)=" << sizeof(T));
  const bool t_a = ta == kT, t_b = tb == kT;
  // Leading dimensions larger than minimal; batch strides with gaps.
  const int64_t a_rows = t_a ? k : m, a_cols = t_a ? m : k;
  const int64_t b_rows = t_b ? n : k, b_cols = t_b ? k : n;
  const int64_t lda = a_rows + 3, ldb = b_rows + 2, ldc = m + 4;
  const int64_t stride_a = lda * a_cols + 5, stride_b = ldb * b_cols + 1, stride_c = ldc * n + 7;
  const double alpha = 0.75, beta = -0.5;
  const std::vector<T> a = Random<T>(stride_a * batch, 1), b = Random<T>(stride_b * batch, 2),
                       c = Random<T>(stride_c * batch, 3);
  // Views at an offset into their allocations (opaque + offset).
  DeviceMemory<T> da = Upload(a, 3), db = Upload(b, 1), dc = Upload(c, 2), dc_ref = Upload(c, 5);
  GemmArgs args{
      DataTypeOf<T>(), ta,       tb,       m,       n, k, alpha, da, lda, db, ldb, beta, dc, ldc,
      batch,           stride_a, stride_b, stride_c};
  stream_->ThenBlasGemm(args);  // The executor's BLAS: c_blas.
  GemmArgs ref_args = args;
  ref_args.c = dc_ref;
  ASSERT_TRUE(IsOk(Plugin<BlasSupport>("openblas")->DoBlasGemm(stream_.get(), ref_args)));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const std::vector<T> out = Download(dc), other = Download(dc_ref);
  for (int64_t s = 0; s < batch; ++s) {
    ExpectGemm(a, b, c, out, other, s * stride_a, s * stride_b, s * stride_c, ta, tb, m, n, k, lda,
               ldb, ldc, alpha, beta);
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The gaps between strided matrices are untouched.
  for (int64_t s = 0; s + 1 < batch; ++s) {
    for (int64_t at = s * stride_c + (n - 1) * ldc + m; at < (s + 1) * stride_c; ++at) {
      ASSERT_EQ(out[at], c[at]) << "gap element " << at << " changed";
    }
  }
}

TEST_F(CBlasTest, GemmEveryTranspose) {
  for (Transpose ta : {kN, kT}) {
    for (Transpose tb : {kN, kT}) {
      CheckGemm<float>(ta, tb, 13, 9, 11, 1);
      CheckGemm<double>(ta, tb, 13, 9, 11, 1);
      CheckGemm<float>(ta, tb, 67, 45, 129, 1);
      CheckGemm<double>(ta, tb, 67, 45, 129, 1);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_F(CBlasTest, GemmStridedBatched) {
  for (Transpose ta : {kN, kT}) {
    for (Transpose tb : {kN, kT}) {
      CheckGemm<float>(ta, tb, 7, 5, 6, 3);
      CheckGemm<double>(ta, tb, 33, 17, 21, 3);
      if (HasFatalFailure()) return;
    }
  }
}

template <typename T>
void CBlasTest::CheckGemv(Transpose t) {
  SCOPED_TRACE(::testing::Message() << "gemv " << TransposeName(t) << " sizeof(T)=" << sizeof(T));
  const int64_t m = 17, n = 10, lda = 20, incx = 2, incy = 3;
  const double alpha = -1.25, beta = 0.5;
  const int64_t xn = t == kT ? m : n, yn = t == kT ? n : m;
  const std::vector<T> a = Random<T>(lda * n, 7), x = Random<T>((xn - 1) * incx + 1, 8),
                       y = Random<T>((yn - 1) * incy + 1, 9);
  DeviceMemory<T> da = Upload(a, 1), dx = Upload(x, 2), dy = Upload(y, 3), dy_ref = Upload(y);
  stream_->ThenBlasGemv<T>(t, m, n, static_cast<T>(alpha), da, lda, dx, incx, static_cast<T>(beta),
                           &dy, incy);
  const GemvArgs ref_args{DataTypeOf<T>(), t, m, n, alpha, da, lda, dx, incx, beta, dy_ref, incy};
  ASSERT_TRUE(IsOk(Plugin<BlasSupport>("openblas")->DoBlasGemv(stream_.get(), ref_args)));
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  const std::vector<T> out = Download(dy), other = Download(dy_ref);
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    if (i % incy != 0) {
      ASSERT_EQ(out[i], y[i]) << "y[" << i << "] between strided elements changed";
      continue;
    }
    const int64_t r = i / incy;
    Acc sum = 0, abs_sum = 0;
    for (int64_t l = 0; l < xn; ++l) {
      const Acc p = static_cast<Acc>(t == kT ? a[l + r * lda] : a[r + l * lda]) * x[l * incx];
      sum += p;
      abs_sum += std::fabs(p);
    }
    const Acc ref = alpha * sum + beta * static_cast<Acc>(y[i]);
    const Acc scale = std::fabs(alpha) * abs_sum + std::fabs(beta * y[i]);
    ASSERT_TRUE(Near("y (c_blas)", i, out[i], ref, scale, xn));
    ASSERT_TRUE(
        Near("y (c_blas vs openblas)", i, out[i], static_cast<Acc>(other[i]), 2 * scale, xn));
  }
}

TEST_F(CBlasTest, GemvBothTransposes) {
  CheckGemv<float>(kN);
  CheckGemv<float>(kT);
  CheckGemv<double>(kN);
  CheckGemv<double>(kT);
}

// Work runs in stream order: each gemm reads what the copy before it wrote.
TEST_F(CBlasTest, RunsInStreamOrder) {
  const int64_t n = 32;
  std::vector<float> a(n * n, 0.f);
  const std::vector<float> b = Random<float>(n * n, 3);
  for (int64_t i = 0; i < n; ++i) a[i + i * n] = 2.f;  // 2 I
  DeviceMemory<float> da = Upload(std::vector<float>(n * n, 0.f)), db = Upload(b),
                      dc = Upload(std::vector<float>(n * n, 1.f));
  std::vector<float> out(n * n, -1.f);
  for (int rep = 0; rep < 20; ++rep) {
    stream_->ThenMemcpy(&da, a.data(), a.size() * sizeof(float))
        .ThenBlasGemm<float>(kN, kN, n, n, n, 1.f, da, n, db, n, 0.f, &dc, n)
        .ThenMemcpy(out.data(), dc, out.size() * sizeof(float))
        .ThenMemZero(&da, a.size() * sizeof(float));
  }
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  for (int64_t i = 0; i < n * n; ++i) ASSERT_EQ(out[i], 2.f * b[i]) << i;
}

// With "c_blas,openblas", axpy (no c_blas entry) goes to openblas -- one
// hand-on counted on each side -- and is right; gemm stays on c_blas.
TEST_F(CBlasTest, ChainHandsWhatCBlasLacksToOpenBlas) {
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kBlas, "c_blas,openblas")));
  EXPECT_EQ(Must(exec_->PluginChain(PluginKind::kBlas)),
            (std::vector<std::string>{"c_blas", "openblas"}));
  BlasSupport* c_blas = exec_->AsBlas();
  ASSERT_NE(c_blas, nullptr);
  ASSERT_EQ(c_blas->Name(), "c_blas");
  BlasSupport* openblas = Plugin<BlasSupport>("openblas");
  ASSERT_EQ(c_blas->fallback(), openblas);

  const int64_t n = 33, incx = 2, incy = 3;
  const std::vector<double> x = Random<double>((n - 1) * incx + 1, 11),
                            y = Random<double>((n - 1) * incy + 1, 12);
  const double alpha = 0.625;
  DeviceMemory<double> dx = Upload(x, 1), dy = Upload(y, 2);
  const uint64_t handed_on = c_blas->calls_handed_on(), taken_over = openblas->calls_taken_over();
  stream_->ThenBlasAxpy(n, alpha, dx, incx, &dy, incy);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(c_blas->calls_handed_on(), handed_on + 1);
  EXPECT_EQ(openblas->calls_taken_over(), taken_over + 1);
  const std::vector<double> out = Download(dy);
  for (size_t i = 0; i < y.size(); ++i) {
    if (i % incy != 0) {
      ASSERT_EQ(out[i], y[i]) << "y[" << i << "] between strided elements changed";
      continue;
    }
    const Acc xi = x[i / incy * incx], yi = y[i];
    ASSERT_TRUE(
        Near("axpy y", i, out[i], alpha * xi + yi, std::fabs(alpha * xi) + std::fabs(yi), 1));
  }

  // A gemm is c_blas's own: no hand-on.
  const int64_t k = 8;
  const std::vector<float> a = Random<float>(k * k, 13), b = Random<float>(k * k, 14);
  DeviceMemory<float> da = Upload(a), db = Upload(b), dc = Upload(std::vector<float>(k * k, 0.f));
  stream_->ThenBlasGemm<float>(kN, kN, k, k, k, 1.f, da, k, db, k, 0.f, &dc, k);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(c_blas->calls_handed_on(), handed_on + 1);
  const blas_testing::GemmRef ref =
      blas_testing::NaiveGemm(false, false, k, k, k, 1.0, a.data(), k, b.data(), k, 0.0,
                              std::vector<float>(k * k, 0.f).data(), k);
  blas_testing::ExpectNear(Download(dc), ref.value, ref.scale, k);
}

// c_blas alone has no axpy: Unimplemented.
TEST_F(CBlasTest, AloneLacksAxpy) {
  DeviceMemory<float> dx = Upload(std::vector<float>(4, 1.f)), dy = Upload(std::vector<float>(4));
  stream_->ThenBlasAxpy(4, 1.f, dx, 1, &dy, 1);
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kUnimplemented));
}

// ---------------------------------------------------------------------------
// DNN.

struct ConvCase {
  const char* name;
  TensorDescriptor input;
  FilterDescriptor filter;
  ConvolutionDescriptor conv;
};

std::vector<ConvCase> ConvCases() {
  return {
      {"3x3 pad 1",
       {.n = 2, .c = 3, .h = 7, .w = 6},
       {.output_channels = 4, .input_channels = 3, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1}},
      {"stride, dilation, uneven pad",
       {.n = 1, .c = 5, .h = 11, .w = 9},
       {.output_channels = 3, .input_channels = 5, .height = 3, .width = 2},
       {.pad_h = 2, .pad_w = 0, .stride_h = 2, .stride_w = 1, .dilation_h = 2, .dilation_w = 3}},
      {"2 groups, stride, dilation",
       {.n = 2, .c = 4, .h = 6, .w = 7},
       {.output_channels = 6, .input_channels = 2, .height = 3, .width = 2},
       {.pad_h = 1,
        .pad_w = 1,
        .stride_h = 1,
        .stride_w = 2,
        .dilation_h = 1,
        .dilation_w = 2,
        .group_count = 2}},
      {"depthwise stride 2",
       {.n = 1, .c = 4, .h = 5, .w = 5},
       {.output_channels = 4, .input_channels = 1, .height = 3, .width = 3},
       {.pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 2, .group_count = 4}},
      {"1x1",
       {.n = 3, .c = 8, .h = 4, .w = 4},
       {.output_channels = 5, .input_channels = 8, .height = 1, .width = 1},
       {}},
  };
}

template <typename T>
::testing::AssertionResult Matches(const char* what, const std::vector<T>& got,
                                   const testing::Reference& ref) {
  const double eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 4 * (ref.terms + 2) * eps * ref.scale[i];
    if (!(std::fabs(got[i] - ref.value[i]) <= tol)) {  // NaN fails.
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", reference "
                                           << ref.value[i] << ", tolerance " << tol;
    }
  }
  return ::testing::AssertionSuccess();
}

class CDnnTest : public CLibraryTest {
 protected:
  void SetUp() override {
    CLibraryTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "c_dnn")));
    ASSERT_NE(exec_->AsDnn(), nullptr);
    ASSERT_EQ(exec_->AsDnn()->Name(), "c_dnn");
  }

  // Forward convolution of `shape` (its types set to T) into a NaN-filled y.
  template <typename T>
  void CheckForward(ConvolutionShape shape) {
    shape.input.type = shape.filter.type = shape.output.type = DataTypeOf<T>();
    SCOPED_TRACE(shape.ToString());
    const std::vector<T> x = Random<T>(shape.input.ElementCount(), 1);
    const std::vector<T> w = Random<T>(shape.filter.ElementCount(), 2);
    DeviceMemory<T> dx = Upload(x, 3), dw = Upload(w, 1);
    DeviceMemory<T> dy =
        Upload(std::vector<T>(shape.output.ElementCount(), std::numeric_limits<T>::quiet_NaN()), 2);
    stream_->ThenConvolve(ConvolutionArgs{shape, dx, dw, dy});
    ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
    EXPECT_TRUE(Matches("y", Download(dy), testing::Forward(shape, x, w)));
  }
};

TEST_F(CDnnTest, ForwardEveryCase) {
  for (const ConvCase& c : ConvCases()) {
    SCOPED_TRACE(c.name);
    ConvolutionShape shape{c.input, c.filter, c.conv, {}};
    shape.output = Must(ConvolutionOutput(shape.input, shape.filter, shape.conv));
    CheckForward<float>(shape);
    CheckForward<double>(shape);
    if (HasFatalFailure()) return;
  }
}

// The positional float form, through the same plugin.
TEST_F(CDnnTest, PositionalThenConvolve) {
  const ConvCase c = ConvCases()[2];
  const TensorDescriptor y_desc = Must(ConvolutionOutput(c.input, c.filter, c.conv));
  const std::vector<float> x = Random<float>(c.input.ElementCount(), 4),
                           w = Random<float>(c.filter.ElementCount(), 5);
  DeviceMemory<float> dx = Upload(x), dw = Upload(w),
                      dy = Upload(std::vector<float>(y_desc.ElementCount(), std::nanf("")));
  stream_->ThenConvolve(c.input, dx, c.filter, dw, c.conv, y_desc, &dy);
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_TRUE(Matches("y", Download(dy),
                      testing::Forward(ConvolutionShape{c.input, c.filter, c.conv, y_desc}, x, w)));
}

// c_dnn alone does forward convolution only: backward data is Unimplemented.
TEST_F(CDnnTest, AloneLacksBackwardData) {
  const ConvCase c = ConvCases()[0];
  const ConvolutionShape shape{c.input, c.filter, c.conv,
                               Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  DeviceMemory<float> dx = Upload(std::vector<float>(shape.input.ElementCount())),
                      dw = Upload(std::vector<float>(shape.filter.ElementCount())),
                      ddy = Upload(std::vector<float>(shape.output.ElementCount()));
  stream_->ThenConvolveBackwardData(ConvolutionArgs{shape, dx, dw, ddy});
  EXPECT_TRUE(HasError(stream_->BlockHostUntilDone(), absl::StatusCode::kUnimplemented));
}

// "c_dnn,onednn": forward stays on c_dnn, backward data goes to onednn.
TEST_F(CDnnTest, ChainHandsBackwardToOneDnn) {
  if (!PluginRegistry::Default()
           .CheckRegistered(exec_->platform()->id(), PluginKind::kDnn, "onednn")
           .ok()) {
    GTEST_SKIP() << "the onednn plugin is not linked into this binary";
  }
  ASSERT_TRUE(IsOk(exec_->SetPlugin(PluginKind::kDnn, "c_dnn,onednn")));
  DnnSupport* c_dnn = exec_->AsDnn();
  ASSERT_EQ(c_dnn->Name(), "c_dnn");
  DnnSupport* onednn = Plugin<DnnSupport>("onednn");
  const ConvCase c = ConvCases()[2];
  const ConvolutionShape shape{c.input, c.filter, c.conv,
                               Must(ConvolutionOutput(c.input, c.filter, c.conv))};
  const std::vector<float> x = Random<float>(shape.input.ElementCount(), 6),
                           w = Random<float>(shape.filter.ElementCount(), 7),
                           dy = Random<float>(shape.output.ElementCount(), 8);
  DeviceMemory<float> dx_in = Upload(x), dw = Upload(w), ddy = Upload(dy),
                      y = Upload(std::vector<float>(shape.output.ElementCount(), std::nanf(""))),
                      dx = Upload(std::vector<float>(shape.input.ElementCount(), std::nanf("")));
  const uint64_t handed_on = c_dnn->calls_handed_on(), taken_over = onednn->calls_taken_over();
  stream_->ThenConvolve(ConvolutionArgs{shape, dx_in, dw, y});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(c_dnn->calls_handed_on(), handed_on);
  stream_->ThenConvolveBackwardData(ConvolutionArgs{shape, dx, dw, ddy});
  ASSERT_TRUE(IsOk(stream_->BlockHostUntilDone()));
  EXPECT_EQ(c_dnn->calls_handed_on(), handed_on + 1);
  EXPECT_EQ(onednn->calls_taken_over(), taken_over + 1);
  EXPECT_TRUE(Matches("y", Download(y), testing::Forward(shape, x, w)));
  EXPECT_TRUE(Matches("dx", Download(dx), testing::BackwardData(shape, dy, w)));
}

}  // namespace
}  // namespace rill
