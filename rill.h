#ifndef RILL_RILL_H_
#define RILL_RILL_H_

// Everything a program needs to drive Rill's platform layer: platforms,
// executors, streams, kernels and the BLAS, DNN, FFT and RNG plugin
// interfaces (all in rill::core). The engine and the layers above have
// their own headers ("engine/engine.h", "tensor/tensor.h", ...).
#include "base/status_macros.h"
#include "executor/device_memory.h"
#include "executor/stream_executor.h"
#include "platform/platform.h"
#include "platform/platform_manager.h"
#include "plugins/blas/blas.h"
#include "plugins/dnn/dnn.h"
#include "plugins/fft/fft.h"
#include "plugins/plugin_registry.h"
#include "plugins/rng/rng.h"
#include "stream/event.h"
#include "stream/kernel.h"
#include "stream/kernel_spec.h"
#include "stream/device_span.h"
#include "stream/stream.h"
#include "stream/stream_listener.h"
#include "stream/timer.h"
#include "stream/trace_recorder.h"
#include "stream/verbose.h"

#endif  // RILL_RILL_H_
