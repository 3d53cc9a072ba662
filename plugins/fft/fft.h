#ifndef RILL_PLUGINS_FFT_FFT_H_
#define RILL_PLUGINS_FFT_FFT_H_

#include "plugins/plugin.h"

namespace rill {

// Fast Fourier transforms through plans.
// Skeleton: the interface lands with the FFTW plugin.
class FftSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kFft;
};

}  // namespace rill

#endif  // RILL_PLUGINS_FFT_FFT_H_
