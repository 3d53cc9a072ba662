// Stream::ThenFft: forwards to the executor's FftSupport.

#include "plugins/fft/fft.h"
#include "stream/stream_plugin.h"

namespace rill {}  // namespace rill
