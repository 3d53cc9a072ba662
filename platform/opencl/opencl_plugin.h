#ifndef RILL_PLATFORM_OPENCL_OPENCL_PLUGIN_H_
#define RILL_PLATFORM_OPENCL_OPENCL_PLUGIN_H_

// Interop with the OpenCL backend, for library plugins (CLBlast, Philox on
// OpenCL, clFFT) and for programs that call OpenCL directly:
//   cl_context  OpenClContext(executor)       the executor's context
//   cl_command_queue  stream->native_handle() (an OpenClStream's queue)
//   cl_mem      ClMem(memory) + memory.offset()
// and the one way a plugin puts device work on a stream in order.

#include <CL/cl.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rill/platform/opencl/opencl_executor.h"
#include "rill/platform/opencl/opencl_stream.h"

namespace rill {

class Stream;
class StreamExecutor;

// The OpenCL backend of `executor`; InvalidArgument when it is not an
// OpenCL executor.
absl::StatusOr<OpenClExecutor*> AsOpenClExecutor(StreamExecutor* executor);

// The cl_context of an OpenCL executor (valid for the executor's life).
absl::StatusOr<cl_context> OpenClContext(StreamExecutor* executor);

// `stream`'s OpenClStream, if `stream` belongs to `owner` (the executor the
// plugin instance serves); else InvalidArgument naming both executors and
// `accessor` ("use that executor's AsBlas()"), or FailedPrecondition for a
// detached stream.
absl::StatusOr<OpenClStream*> OpenClPluginStream(StreamExecutor* owner, Stream* stream,
                                                 absl::string_view plugin,
                                                 absl::string_view accessor);

// Enqueues `work` (see OpenClStream::DeviceWork) on `stream` in stream
// order, after checking it as OpenClPluginStream does.
absl::Status EnqueueOpenClWork(StreamExecutor* owner, Stream* stream, absl::string_view plugin,
                               absl::string_view accessor, OpenClStream::DeviceWork work);

}  // namespace rill

#endif  // RILL_PLATFORM_OPENCL_OPENCL_PLUGIN_H_
