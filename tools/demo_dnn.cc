#include "tools/demo_dnn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/stream/stream.h"
#include "rill/stream/timer.h"

namespace rill::demo {
namespace {

// The same forward pass in naive loops (in the descriptors' layouts).
std::vector<float> Reference(const TensorDescriptor& x_desc, const std::vector<float>& x,
                             const FilterDescriptor& w_desc, const std::vector<float>& w,
                             const std::vector<float>& bias, const TensorDescriptor& y_desc,
                             const TensorDescriptor& p_desc) {
  std::vector<float> y(y_desc.ElementCount());
  for (int64_t n = 0; n < y_desc.n; ++n)
    for (int64_t k = 0; k < y_desc.c; ++k)
      for (int64_t oh = 0; oh < y_desc.h; ++oh)
        for (int64_t ow = 0; ow < y_desc.w; ++ow) {
          double sum = bias[k];
          for (int64_t c = 0; c < x_desc.c; ++c)
            for (int64_t r = 0; r < w_desc.height; ++r)
              for (int64_t s = 0; s < w_desc.width; ++s) {
                const int64_t ih = oh + r - 1, iw = ow + s - 1;  // pad 1
                if (ih < 0 || iw < 0 || ih >= x_desc.h || iw >= x_desc.w) continue;
                sum += double{x[x_desc.Offset(n, c, ih, iw)]} * w[w_desc.Offset(k, c, r, s)];
              }
          y[y_desc.Offset(n, k, oh, ow)] = static_cast<float>(std::max(sum, 0.0));  // relu
        }
  std::vector<float> out(p_desc.ElementCount());
  for (int64_t n = 0; n < p_desc.n; ++n)
    for (int64_t ph = 0; ph < p_desc.h; ++ph)
      for (int64_t pw = 0; pw < p_desc.w; ++pw) {
        std::vector<double> pooled(p_desc.c);
        for (int64_t k = 0; k < p_desc.c; ++k) {
          float m = -INFINITY;
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx)
              m = std::max(m, y[y_desc.Offset(n, k, 2 * ph + dy, 2 * pw + dx)]);
          pooled[k] = m;
        }
        const double top = *std::max_element(pooled.begin(), pooled.end());
        double total = 0;
        for (double v : pooled) total += std::exp(v - top);
        for (int64_t k = 0; k < p_desc.c; ++k) {
          out[p_desc.Offset(n, k, ph, pw)] = static_cast<float>(std::exp(pooled[k] - top) / total);
        }
      }
  return out;
}

}  // namespace

absl::StatusOr<DnnDemoResult> RunDnnForward(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(PluginInterface * plugin, executor->GetPlugin(PluginKind::kDnn));
  auto* dnn = static_cast<DnnSupport*>(plugin);
  DnnDemoResult result;
  RILL_ASSIGN_OR_RETURN(std::vector<std::string> chain, executor->PluginChain(PluginKind::kDnn));
  result.plugin = absl::StrJoin(chain, ",");

  // NCHW, unless the first plugin of the chain computes only NHWC (XNNPACK).
  TensorDescriptor x_desc{.n = 2, .c = 3, .h = 16, .w = 16};
  FilterDescriptor w_desc{.output_channels = 8, .input_channels = 3, .height = 3, .width = 3};
  const ConvolutionDescriptor conv{.pad_h = 1, .pad_w = 1};
  RILL_ASSIGN_OR_RETURN(TensorDescriptor y_desc, ConvolutionOutput(x_desc, w_desc, conv));
  if (!dnn->Supports(DnnOperation::Of({x_desc, w_desc, conv, y_desc}, ConvolutionKind::kForward))
           .ok()) {
    x_desc.layout = y_desc.layout = DataLayout::kNHWC;
    w_desc.layout = FilterLayout::kOHWI;
  }
  result.layout = DataLayoutName(x_desc.layout);
  std::vector<uint64_t> taken_before;
  for (PluginInterface* p = plugin; p != nullptr; p = p->fallback())
    taken_before.push_back(p->calls_taken_over());
  const PoolingDescriptor pool{.window_h = 2, .window_w = 2, .stride_h = 2, .stride_w = 2};
  RILL_ASSIGN_OR_RETURN(const TensorDescriptor p_desc, PoolingOutput(y_desc, pool));

  // Deterministic inputs with both signs, so relu and the max matter.
  std::vector<float> x(x_desc.ElementCount()), w(w_desc.ElementCount()), bias(y_desc.c);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 % 101) / 50.0 - 1.0);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 53 % 89) / 89.0 - 0.5);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 0.3f;

  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dx,
                        executor->AllocateOwnedArray<float>(x.size()));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dw,
                        executor->AllocateOwnedArray<float>(w.size()));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> db,
                        executor->AllocateOwnedArray<float>(bias.size()));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dy,
                        executor->AllocateOwnedArray<float>(y_desc.ElementCount()));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> dp,
                        executor->AllocateOwnedArray<float>(p_desc.ElementCount()));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> ds,
                        executor->AllocateOwnedArray<float>(p_desc.ElementCount()));
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, executor->CreateStream());
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Timer> timer, Timer::Create(executor));

  std::vector<float> out(p_desc.ElementCount());
  stream->ThenMemcpy(dx.ptr(), x.data(), x.size() * sizeof(float))
      .ThenMemcpy(dw.ptr(), w.data(), w.size() * sizeof(float))
      .ThenMemcpy(db.ptr(), bias.data(), bias.size() * sizeof(float))
      .ThenStartTimer(timer.get())
      .ThenConvolve(x_desc, *dx, w_desc, *dw, conv, y_desc, dy.ptr())
      .ThenBiasAdd(y_desc, *dy, *db, dy.ptr())
      .ThenActivate(ActivationDescriptor{.mode = ActivationMode::kRelu}, y_desc, *dy, dy.ptr())
      .ThenPoolForward(pool, y_desc, *dy, p_desc, dp.ptr())
      .ThenSoftmax(p_desc, *dp, ds.ptr())
      .ThenStopTimer(timer.get())
      .ThenMemcpy(out.data(), *ds, out.size() * sizeof(float));
  RILL_RETURN_IF_ERROR(stream->BlockHostUntilDone());
  RILL_ASSIGN_OR_RETURN(result.device_time, timer->Elapsed());
  size_t i = 0;
  for (PluginInterface* p = plugin; p != nullptr; p = p->fallback(), ++i) {
    if (const uint64_t taken = p->calls_taken_over() - taken_before[i]; taken > 0) {
      absl::StrAppend(&result.fallbacks, result.fallbacks.empty() ? "" : ", ", taken, " to ",
                      p->Name());
    }
  }

  const std::vector<float> want = Reference(x_desc, x, w_desc, w, bias, y_desc, p_desc);
  for (size_t i = 0; i < want.size(); ++i) {
    result.max_abs_error = std::max(result.max_abs_error, std::fabs(double{out[i]} - want[i]));
  }
  // Softmax outputs lie in [0, 1]; 1e-4 allows float accumulation orders.
  if (!(result.max_abs_error <= 1e-4)) {
    return absl::InternalError(absl::StrCat("the DNN forward pass on ", executor->DebugName(),
                                            " differs from the reference by ",
                                            result.max_abs_error));
  }
  return result;
}

}  // namespace rill::demo
