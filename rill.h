#ifndef RILL_RILL_H_
#define RILL_RILL_H_

// Everything a program needs to drive Rill's platform layer: platforms,
// executors, streams, kernels and the BLAS, DNN, FFT and RNG plugin
// interfaces (all in rill::core). The engine and the layers above have
// their own headers ("engine/engine.h", "tensor/tensor.h", ...).
#include "rill/base/status_macros.h"
#include "rill/executor/device_memory.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"
#include "rill/platform/platform_manager.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/fft/fft.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/plugins/rng/rng.h"
#include "rill/stream/device_span.h"
#include "rill/stream/event.h"
#include "rill/stream/kernel.h"
#include "rill/stream/kernel_spec.h"
#include "rill/stream/stream.h"
#include "rill/stream/stream_listener.h"
#include "rill/stream/timer.h"
#include "rill/stream/trace_recorder.h"
#include "rill/stream/verbose.h"

#endif  // RILL_RILL_H_
