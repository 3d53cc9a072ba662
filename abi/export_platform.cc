// ExportLinkedPlatform: the C tables of rill_plugin.h over a platform
// linked into a module, through Rill's public C++ API in the module.

#include "rill/abi/export_platform.h"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/mutex.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/stream/event.h"
#include "rill/stream/kernel.h"
#include "rill/stream/kernel_spec.h"
#include "rill/stream/stream.h"

// The handles of rill_plugin.h, as this module makes them.
struct RillExecutor {
  rill::StreamExecutor* executor;
};
struct RillStream {
  std::unique_ptr<rill::Stream> stream;
  RillStreamStatus* status;            // Rill's error state of the stream.
  std::atomic<bool> forwarded{false};  // The module's first error went to Rill.
};
// The error of an event's latest record: shared with the notifications
// queued for it, which may run after the event is destroyed.
struct RillEventError {
  rill::Mutex mu;
  absl::Status error ABSL_GUARDED_BY(mu);
};
struct RillEvent {
  std::unique_ptr<rill::Event> event;
  std::shared_ptr<RillEventError> state = std::make_shared<RillEventError>();
};
struct RillKernel {
  std::unique_ptr<rill::Kernel> kernel;
};

namespace rill::abi {
namespace {

// One export per module: the host table, the platform, the strings handed
// out (valid until the module is unloaded).
struct Export {
  const RillHostApi* host = nullptr;
  Platform* platform = nullptr;
  std::string name, plugin_name, version, hint, fallback, formats, blas_name, dnn_name;
  RillPlatformFns platform_fns{};
  RillExecutorFns executor_fns{};
  RillStreamFns stream_fns{};
  RillEventFns event_fns{};
  RillBlasFns blas_fns{};
  RillDnnFns dnn_fns{};
  RillPlugin plugin{};
};
Export& X() {
  static Export* x = new Export;  // Lives as long as the module.
  return *x;
}

RillError* Err(const absl::Status& s) {
  if (s.ok()) return nullptr;
  return X().host->error_new(static_cast<RillCode>(s.code()), std::string(s.message()).c_str());
}

absl::Status FromHost(RillError* e) {
  if (e == nullptr) return absl::OkStatus();
  absl::Status s(static_cast<absl::StatusCode>(X().host->error_code(e)),
                 X().host->error_message(e));
  X().host->error_destroy(e);
  return s;
}

DeviceMemoryBase Mem(const RillBuffer& b) { return DeviceMemoryBase(b.opaque, b.size, b.offset); }

// Hands the module stream's first error to Rill's stream, once.
void Forward(RillStream* s, const absl::Status& outcome) {
  if (!outcome.ok() && !s->forwarded.exchange(true)) {
    X().host->stream_fail(s->status, Err(outcome));
  }
}

// Thrown from a notification to put the module's stream in error once
// Rill's has failed (a host callback of Rill's returned an error): the
// module then skips the work queued after it, as Rill's own backends do.
struct RillStreamFailed {};

// In a notification: the module's stream follows Rill's into failure.
void FollowFailure(RillStream* s, const absl::Status& outcome) {
  if (outcome.ok() && !X().host->stream_ok(s->status)) throw RillStreamFailed{};
}

// --- Platform

int32_t DeviceCount() { return X().platform->VisibleDeviceCount(); }

RillError* Availability() { return Err(X().platform->Availability()); }

RillError* Describe(int32_t ordinal, RillDeviceDescription* out) {
  absl::StatusOr<DeviceDescription> d = X().platform->DescriptionForDevice(ordinal);
  if (!d.ok()) return Err(d.status());
  absl::StatusOr<StreamExecutor*> e = X().platform->ExecutorForDevice(ordinal);
  if (!e.ok()) return Err(e.status());
  // Strings must outlive the call: one copy per device, kept (a later
  // description of the device replaces only what changed: the first stays).
  static Mutex mu;
  static auto* kept = new std::map<int32_t, std::unique_ptr<DeviceDescription>>;
  MutexLock lock(&mu);
  std::unique_ptr<DeviceDescription>& slot = (*kept)[ordinal];
  if (slot == nullptr) slot = std::make_unique<DeviceDescription>(*std::move(d));
  const DeviceDescription& k = *slot;
  out->name = k.name.c_str();
  out->vendor = k.vendor.c_str();
  out->platform_version = k.platform_version.c_str();
  out->driver_version = k.driver_version.c_str();
  out->memory_bytes = k.memory_bytes;
  out->compute_units = k.compute_units;
  out->clock_khz = k.clock_khz;
  out->max_threads_per_block = k.max_threads_per_block;
  out->max_block_dims = {k.max_block_dims.x, k.max_block_dims.y, k.max_block_dims.z};
  out->max_grid_dims = {k.max_grid_dims.x, k.max_grid_dims.y, k.max_grid_dims.z};
  uint32_t features = 0;
  const std::pair<Feature, uint32_t> bits[] = {
      {Feature::kHostCallbacks, RILL_FEATURE_HOST_CALLBACKS},
      {Feature::kKernelLaunch, RILL_FEATURE_KERNEL_LAUNCH},
      {Feature::kPinnedHostMemory, RILL_FEATURE_PINNED_HOST_MEMORY},
      {Feature::kDeviceToDeviceCopy, RILL_FEATURE_DEVICE_TO_DEVICE_COPY},
      {Feature::kHostAddressableMemory, RILL_FEATURE_HOST_ADDRESSABLE_MEMORY}};
  for (const auto& [feature, bit] : bits) {
    if ((*e)->Supports(feature).ok()) features |= bit;
  }
  out->features = features;  // No timers: events cross without them.
  return nullptr;
}

RillError* ExecutorCreate(int32_t ordinal, RillExecutor** out) {
  absl::StatusOr<StreamExecutor*> e = X().platform->ExecutorForDevice(ordinal);
  if (!e.ok()) return Err(e.status());
  *out = new RillExecutor{*e};
  return nullptr;
}
void ExecutorDestroy(RillExecutor* e) { delete e; }  // The platform keeps the executor.

// --- Executor

RillError* Allocate(RillExecutor* e, uint64_t size, RillBuffer* out) {
  absl::StatusOr<DeviceMemoryBase> m = e->executor->Allocate(size);
  if (!m.ok()) return Err(m.status());
  *out = RillBuffer{m->opaque(), 0, m->size()};
  return nullptr;
}
void Deallocate(RillExecutor* e, RillBuffer b) {
  DeviceMemoryBase m(b.opaque, b.size);
  (void)e->executor->Deallocate(&m);  // Rill checked the buffer.
}
RillError* SyncH2D(RillExecutor* e, RillBuffer dst, const void* src, uint64_t size) {
  DeviceMemoryBase m = Mem(dst);
  return Err(e->executor->SynchronousMemcpy(&m, src, size));
}
RillError* SyncD2H(RillExecutor* e, void* dst, RillBuffer src, uint64_t size) {
  return Err(e->executor->SynchronousMemcpy(dst, Mem(src), size));
}
RillError* SynchronizeAll(RillExecutor* e) { return Err(e->executor->SynchronizeAllActivity()); }

RillError* StreamCreate(RillExecutor* e, int32_t priority, RillStreamStatus* status,
                        RillStream** out) {
  StreamOptions options;
  options.priority = priority;
  absl::StatusOr<std::unique_ptr<Stream>> s = e->executor->CreateStream(options);
  if (!s.ok()) return Err(s.status());
  auto* stream = new RillStream;
  stream->stream = *std::move(s);
  stream->status = status;
  *out = stream;
  return nullptr;
}
void StreamDestroy(RillStream* s) { delete s; }  // Stream's destructor waits for its work.

RillError* EventCreate(RillExecutor* e, RillEvent** out) {
  absl::StatusOr<std::unique_ptr<Event>> ev = e->executor->CreateEvent();
  if (!ev.ok()) return Err(ev.status());
  auto* event = new RillEvent;
  event->event = *std::move(ev);
  *out = event;
  return nullptr;
}
void EventDestroy(RillEvent* e) { delete e; }

RillError* KernelLoad(RillExecutor* e, const char* format, const uint8_t* data, size_t size,
                      const char* name, RillKernel** out) {
  KernelSpec spec(name ? name : "");
  const std::string f = format ? format : "";
  if (f == "cuda.fatbin") {
    spec.AddCudaFatbin(data, size);
  } else if (f == "cuda.ptx") {
    spec.AddCudaPtx(std::string(reinterpret_cast<const char*>(data), size));
  } else if (f == "opencl.c") {
    spec.AddOpenClSource(std::string(reinterpret_cast<const char*>(data), size));
  } else {
    spec.AddVariant(X().platform->id(), {f, std::vector<uint8_t>(data, data + size)});
  }
  absl::StatusOr<std::unique_ptr<Kernel>> k = e->executor->LoadKernel(spec);
  if (!k.ok()) return Err(k.status());
  *out = new RillKernel{*std::move(k)};
  return nullptr;
}
void KernelDestroy(RillKernel* k) { delete k; }

RillError* HostAlloc(RillExecutor* e, uint64_t size, void** out) {
  absl::StatusOr<void*> p = e->executor->HostMemoryAllocate(size);
  if (!p.ok()) return Err(p.status());
  *out = *p;
  return nullptr;
}
void HostFree(RillExecutor* e, void* p) { (void)e->executor->HostMemoryDeallocate(p); }
int64_t MemoryLimit(RillExecutor* e) { return e->executor->GetMemoryStats().bytes_limit; }

// --- Stream: Rill checked every argument; errors of the module's work
// reach Rill's stream through Forward.

RillError* H2D(RillStream* s, RillBuffer dst, const void* src, uint64_t size) {
  DeviceMemoryBase m = Mem(dst);
  s->stream->ThenMemcpy(&m, src, size);
  return nullptr;
}
RillError* D2H(RillStream* s, void* dst, RillBuffer src, uint64_t size) {
  s->stream->ThenMemcpy(dst, Mem(src), size);
  return nullptr;
}
RillError* D2D(RillStream* s, RillBuffer dst, RillBuffer src, uint64_t size) {
  DeviceMemoryBase m = Mem(dst);
  s->stream->ThenMemcpy(&m, Mem(src), size);
  return nullptr;
}
RillError* Memset32(RillStream* s, RillBuffer dst, uint32_t pattern, uint64_t size) {
  DeviceMemoryBase m = Mem(dst);
  s->stream->ThenMemset32(&m, pattern, size);
  return nullptr;
}
RillError* RecordEvent(RillStream* s, RillEvent* e) {
  // The record carries the first error before it, the module's or Rill's.
  s->stream->ThenNotify([s, state = e->state](absl::Status outcome) {
    Forward(s, outcome);  // Rill's first error is then the first of either side.
    absl::Status error = FromHost(X().host->stream_error(s->status));
    {
      MutexLock lock(&state->mu);
      state->error = error;
    }
    FollowFailure(s, outcome);
  });
  s->stream->ThenRecordEvent(e->event.get());
  return nullptr;
}
RillError* WaitEvent(RillStream* s, RillEvent* e) {
  s->stream->ThenWaitFor(e->event.get());
  s->stream->ThenNotify([s, state = e->state](absl::Status outcome) {
    absl::Status error;
    {
      MutexLock lock(&state->mu);
      error = state->error;
    }
    // The record's error first: the module's own says less.
    if (!error.ok()) X().host->stream_fail(s->status, Err(error));
    Forward(s, outcome);
    FollowFailure(s, outcome);
  });
  return nullptr;
}
RillError* HostCallback(RillStream* s, RillHostFn fn, void* user_data) {
  s->stream->ThenNotify([s, fn, user_data](absl::Status outcome) {
    Forward(s, outcome);
    fn(user_data);
    FollowFailure(s, outcome);
  });
  return nullptr;
}
RillError* BlockUntilDone(RillStream* s) {
  Forward(s, s->stream->BlockHostUntilDone());
  return nullptr;
}
RillError* Launch(RillStream* s, const RillDim3* t, const RillDim3* b, const RillKernel* k,
                  const RillKernelArg* args, size_t n) {
  KernelArgs packed(n);
  for (size_t i = 0; i < n; ++i) {
    packed[i].is_memory = args[i].is_memory;
    if (args[i].is_memory) {
      packed[i].memory = Mem(args[i].memory);
    } else {
      const auto* v = static_cast<const uint8_t*>(args[i].value);
      packed[i].bytes.assign(v, v + args[i].size);
    }
  }
  s->stream->ThenLaunch(ThreadDim(t->x, t->y, t->z), BlockDim(b->x, b->y, b->z), *k->kernel,
                        std::move(packed));
  return nullptr;
}
void* NativeHandle(RillStream* s) { return s->stream->implementation()->native_handle(); }

// --- Event

RillEventState Poll(RillEvent* e) {
  switch (e->event->PollForStatus()) {
    case Event::Status::kPending:
      return RILL_EVENT_PENDING;
    case Event::Status::kError:
      return RILL_EVENT_ERROR;
    default: {
      MutexLock lock(&e->state->mu);
      return e->state->error.ok() ? RILL_EVENT_COMPLETE : RILL_EVENT_ERROR;
    }
  }
}
RillError* Synchronize(RillEvent* e) {
  absl::Status s = e->event->Synchronize();
  MutexLock lock(&e->state->mu);
  return Err(e->state->error.ok() ? s : e->state->error);  // Rill's view first.
}

// --- Libraries: the module executor's own BLAS and DNN chains.

RillError* Gemm(RillStream* s, const RillBlasGemmArgs* a) {
  GemmArgs g;
  g.type = a->type == RILL_FLOAT64 ? DataType::kDouble : DataType::kFloat;
  g.trans_a = a->trans_a ? Transpose::kTranspose : Transpose::kNoTranspose;
  g.trans_b = a->trans_b ? Transpose::kTranspose : Transpose::kNoTranspose;
  g.m = a->m;
  g.n = a->n;
  g.k = a->k;
  g.alpha = a->alpha;
  g.a = Mem(a->a);
  g.lda = a->lda;
  g.b = Mem(a->b);
  g.ldb = a->ldb;
  g.beta = a->beta;
  g.c = Mem(a->c);
  g.ldc = a->ldc;
  g.batch_count = a->batch_count;
  g.stride_a = a->stride_a;
  g.stride_b = a->stride_b;
  g.stride_c = a->stride_c;
  s->stream->ThenBlasGemm(g);
  return nullptr;
}
RillError* Gemv(RillStream* s, const RillBlasGemvArgs* a) {
  GemvArgs g;
  g.type = a->type == RILL_FLOAT64 ? DataType::kDouble : DataType::kFloat;
  g.trans = a->trans ? Transpose::kTranspose : Transpose::kNoTranspose;
  g.m = a->m;
  g.n = a->n;
  g.alpha = a->alpha;
  g.a = Mem(a->a);
  g.lda = a->lda;
  g.x = Mem(a->x);
  g.incx = a->incx;
  g.beta = a->beta;
  g.y = Mem(a->y);
  g.incy = a->incy;
  s->stream->ThenBlasGemv(g);
  return nullptr;
}
RillError* ConvSupports(const RillConvArgs* a) {
  if (a->pad_top != a->pad_bottom || a->pad_left != a->pad_right || a->alpha != 1 || a->beta != 0) {
    return Err(absl::UnimplementedError(
        "exported DNN: symmetric padding, alpha 1 and beta 0 only (as Rill's DnnSupport)"));
  }
  return nullptr;
}
RillError* ConvForward(RillStream* s, const RillConvArgs* a) {
  if (RillError* e = ConvSupports(a)) return e;
  const DataType type = a->type == RILL_FLOAT64 ? DataType::kDouble : DataType::kFloat;
  ConvolutionArgs c;
  c.shape.input = {a->batch, a->in_channels, a->in_height, a->in_width, DataLayout::kNCHW, type};
  c.shape.filter = {a->out_channels, a->in_channels / a->groups, a->kernel_height,
                    a->kernel_width, FilterLayout::kOIHW,        type};
  c.shape.conv.pad_h = a->pad_top;
  c.shape.conv.pad_w = a->pad_left;
  c.shape.conv.stride_h = a->stride_h;
  c.shape.conv.stride_w = a->stride_w;
  c.shape.conv.dilation_h = a->dilation_h;
  c.shape.conv.dilation_w = a->dilation_w;
  c.shape.conv.group_count = a->groups;
  c.shape.output = {a->batch,     a->out_channels,   a->out_height,
                    a->out_width, DataLayout::kNCHW, type};
  c.input = Mem(a->x);
  c.filter = Mem(a->w);
  c.output = Mem(a->y);
  s->stream->ThenConvolve(c);
  return nullptr;
}

void Shutdown() {}

}  // namespace

const RillPlugin* ExportLinkedPlatform(const RillPluginInitArgs* args,
                                       const ExportOptions& options) {
  if (args == nullptr || args->host == nullptr) return nullptr;
  const RillHostApi* host = args->host;
  if (args->host_abi_major != RILL_PLUGIN_ABI_MAJOR ||
      host->struct_size < RILL_STRUCT_SIZE(RillHostApi, stream_error)) {
    if (host->struct_size >= RILL_STRUCT_SIZE(RillHostApi, log)) {
      host->log(RILL_LOG_ERROR,
                absl::StrCat(options.plugin_name, ": built for plugin ABI ", RILL_PLUGIN_ABI_MAJOR,
                             ", the host speaks ", args->host_abi_major)
                    .c_str());
    }
    return nullptr;
  }
  internal::SetPluginDiscovery(false);  // This module's Rill loads nothing.
  Export& x = X();
  x.host = host;
  absl::StatusOr<Platform*> platform =
      PlatformManager::Default().PlatformWithName(options.platform);
  if (!platform.ok()) {
    host->log(RILL_LOG_ERROR,
              absl::StrCat(options.plugin_name, ": ", platform.status().message()).c_str());
    return nullptr;
  }
  x.platform = *platform;
  x.name = options.export_name.empty() ? x.platform->Name() : options.export_name;
  x.plugin_name = options.plugin_name;
  x.version = options.version;
  x.hint = x.platform->MoreDevicesHint();
  x.fallback = x.platform->OpFallback();

  // The standard kernel formats device 0 loads, and its library names.
  std::vector<std::string> formats;
  x.blas_name = x.name + "_module";
  x.dnn_name = x.name + "_module";
  if (x.platform->VisibleDeviceCount() > 0) {
    if (absl::StatusOr<StreamExecutor*> e = x.platform->ExecutorForDevice(0); e.ok()) {
      const uint8_t probe[1] = {0};
      KernelSpec fatbin("probe"), ptx("probe"), opencl("probe");
      fatbin.AddCudaFatbin(probe, 1);
      ptx.AddCudaPtx("probe");
      opencl.AddOpenClSource("probe");
      if ((*e)->CanLoad(fatbin)) formats.push_back("cuda.fatbin");
      if ((*e)->CanLoad(ptx)) formats.push_back("cuda.ptx");
      if ((*e)->CanLoad(opencl)) formats.push_back("opencl.c");
      if (BlasSupport* blas = (*e)->AsBlas()) x.blas_name = blas->Name();
      if (DnnSupport* dnn = (*e)->AsDnn()) x.dnn_name = dnn->Name();
    }
  }
  x.formats = absl::StrJoin(formats, ",");

  RillPlatformFns& p = x.platform_fns;
  p.struct_size = sizeof(p);
  p.name = x.name.c_str();
  p.device_count = &DeviceCount;
  p.availability = &Availability;
  p.describe = &Describe;
  p.executor_create = &ExecutorCreate;
  p.executor_destroy = &ExecutorDestroy;
  p.more_devices_hint = x.hint.c_str();
  p.op_fallback = x.fallback.c_str();

  RillExecutorFns& e = x.executor_fns;
  e.struct_size = sizeof(e);
  e.allocate = &Allocate;
  e.deallocate = &Deallocate;
  e.memcpy_host_to_device = &SyncH2D;
  e.memcpy_device_to_host = &SyncD2H;
  e.synchronize_all = &SynchronizeAll;
  e.stream_create = &StreamCreate;
  e.stream_destroy = &StreamDestroy;
  e.event_create = &EventCreate;
  e.event_destroy = &EventDestroy;
  e.kernel_load = &KernelLoad;
  e.kernel_destroy = &KernelDestroy;
  e.host_memory_allocate = &HostAlloc;
  e.host_memory_deallocate = &HostFree;
  e.memory_limit = &MemoryLimit;
  e.kernel_formats = x.formats.c_str();

  RillStreamFns& s = x.stream_fns;
  s.struct_size = sizeof(s);
  s.memcpy_host_to_device = &H2D;
  s.memcpy_device_to_host = &D2H;
  s.memcpy_device_to_device = &D2D;
  s.memset32 = &Memset32;
  s.record_event = &RecordEvent;
  s.wait_event = &WaitEvent;
  s.host_callback = &HostCallback;
  s.block_until_done = &BlockUntilDone;
  s.launch = &Launch;
  s.native_handle = &NativeHandle;

  RillEventFns& ev = x.event_fns;
  ev.struct_size = sizeof(ev);
  ev.poll = &Poll;
  ev.synchronize = &Synchronize;

  RillBlasFns& b = x.blas_fns;
  b.struct_size = sizeof(b);
  b.name = x.blas_name.c_str();
  b.version = x.plugin_name.c_str();
  b.target = RILL_LIBRARY_OWN_PLATFORM;
  b.make_default = true;
  b.gemm = &Gemm;
  b.gemv = &Gemv;

  RillDnnFns& d = x.dnn_fns;
  d.struct_size = sizeof(d);
  d.name = x.dnn_name.c_str();
  d.version = x.plugin_name.c_str();
  d.target = RILL_LIBRARY_OWN_PLATFORM;
  d.make_default = true;
  d.conv_forward = &ConvForward;
  d.conv_forward_supports = &ConvSupports;

  RillPlugin& plugin = x.plugin;
  plugin.struct_size = sizeof(plugin);
  plugin.abi_major = RILL_PLUGIN_ABI_MAJOR;
  plugin.abi_minor = RILL_PLUGIN_ABI_MINOR;
  plugin.name = x.plugin_name.c_str();
  plugin.version = x.version.c_str();
  plugin.platform = &x.platform_fns;
  plugin.executor = &x.executor_fns;
  plugin.stream = &x.stream_fns;
  plugin.event = &x.event_fns;
  // A device of host memory gets Rill's host libraries on Rill's side;
  // other devices bring the module's.
  bool host_memory = false;
  if (x.platform->VisibleDeviceCount() > 0) {
    if (absl::StatusOr<StreamExecutor*> e0 = x.platform->ExecutorForDevice(0); e0.ok()) {
      host_memory = (*e0)->Supports(Feature::kHostAddressableMemory).ok();
    }
  }
  plugin.blas = host_memory ? nullptr : &x.blas_fns;
  plugin.dnn = host_memory ? nullptr : &x.dnn_fns;
  plugin.shutdown = &Shutdown;
  return &plugin;
}

}  // namespace rill::abi
