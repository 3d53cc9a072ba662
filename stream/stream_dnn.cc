// Stream::Then* DNN calls: one-line forwards to the executor's DnnSupport.

#include "plugins/dnn/dnn.h"
#include "stream/stream_plugin.h"

namespace rill {}  // namespace rill
