// Stream::ThenFft: forwards to the executor's FftSupport.

#include "rill/plugins/fft/fft.h"
#include "rill/stream/stream_plugin.h"

namespace rill {
namespace {

std::string FftContext(const FftPlan* plan, const char* in_type, const char* out_type) {
  return absl::StrCat("ThenFft(", plan ? plan->spec().ToString() : "null plan", ", ", in_type,
                      " -> ", out_type, ")");
}

}  // namespace

#define RILL_STREAM_FFT(In, Out)                                                               \
  Stream& Stream::ThenFft(FftPlan* plan, const DeviceMemory<In>& in, DeviceMemory<Out>* out) { \
    return ThenPlugin<FftSupport>(                                                             \
        [&] { return FftContext(plan, #In, #Out); },                                           \
        [&](FftSupport* fft) { return fft->DoFft(this, plan, in, out); });                     \
  }
RILL_STREAM_FFT(std::complex<float>, std::complex<float>)
RILL_STREAM_FFT(std::complex<double>, std::complex<double>)
RILL_STREAM_FFT(float, std::complex<float>)
RILL_STREAM_FFT(double, std::complex<double>)
RILL_STREAM_FFT(std::complex<float>, float)
RILL_STREAM_FFT(std::complex<double>, double)
#undef RILL_STREAM_FFT

}  // namespace rill
