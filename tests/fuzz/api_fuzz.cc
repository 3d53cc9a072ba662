// A libFuzzer target that drives random sequences of public calls --
// allocations, views with arbitrary offsets and sizes, synchronous and
// stream copies, fills, untyped kernel launches with arbitrary packed
// arguments, BLAS and DNN calls with arbitrary shapes, events, plugin
// lookups, engine pushes with arbitrary var lists -- against a host device
// and, where one exists, an OpenCL device. Every call may fail; none may
// crash, hang or touch memory it does not own (AddressSanitizer and
// UndefinedBehaviorSanitizer watch). Built by -DRILL_FUZZ=ON with clang
// (tests/fuzz/README.md).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "rill/base/logging.h"
#include "rill/engine/engine.h"
#include "rill/platform/host/host_platform.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/rill.h"

namespace rill {
namespace {

// Reads the input as a stream of small decisions; zeros once it is spent.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | Byte();
    return v;
  }
  // A number from interesting families: small, near a power of two, huge.
  int64_t Size() {
    switch (Byte() % 6) {
      case 0:
        return Byte() % 17;
      case 1:
        return Byte() + 1;
      case 2:
        return (int64_t{1} << (Byte() % 63)) + static_cast<int8_t>(Byte());
      case 3:
        return static_cast<int64_t>(U64());
      case 4:
        return -static_cast<int64_t>(Byte());
      default:
        return INT64_MAX - Byte();
    }
  }
  size_t Index(size_t n) { return n == 0 ? 0 : Byte() % n; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

volatile uint64_t g_sink = 0;

// Reads its value argument whole: a narrower packed value would be an
// over-read of the argument buffer, which ASan reports.
void Touch(const HostThread&, uint8_t*, uint64_t value) { g_sink = g_sink + value; }

// Lives for the whole fuzzing process.
struct World {
  std::unique_ptr<PlatformManager> manager;  // A host platform with a 16 MiB budget per device.
  std::vector<StreamExecutor*> executors;    // host:0, host:1, then opencl:0 when present.
  std::unique_ptr<Kernel> touch;             // Loaded on host:0.
  std::unique_ptr<engine::Engine> engine;

  World() {
    manager = std::make_unique<PlatformManager>();
    HostPlatformOptions options;  // The host's id, so the host plugins serve it.
    options.device_count = 2;
    options.memory_limit_bytes = 16 << 20;
    RILL_CHECK_OK(manager->RegisterPlatform(std::make_unique<HostPlatform>(options)));
    Platform* host = manager->PlatformWithName("host").value();
    executors = {host->ExecutorForDevice(0).value(), host->ExecutorForDevice(1).value()};
    absl::StatusOr<Platform*> opencl = PlatformManager::Default().PlatformWithName("opencl");
    if (opencl.ok() && (*opencl)->VisibleDeviceCount() > 0) {
      executors.push_back((*opencl)->ExecutorForDevice(0).value());
    }
    KernelSpec spec("touch");
    spec.AddHostFunction<DeviceMemory<uint8_t>, uint64_t>(Touch);
    touch = executors[0]->LoadKernel(spec).value();
    engine::EngineOptions engine_options;
    engine_options.cpu_workers = 2;
    engine_options.platforms = manager.get();
    engine = engine::Engine::Create(engine_options).value();
  }
};

World& TheWorld() {
  static World* world = new World();  // Never destroyed: libFuzzer exits without unwinding.
  return *world;
}

// What one input made; all of it is released before the input ends.
struct Session {
  struct Buffer {
    StreamExecutor* owner;
    DeviceMemoryBase memory;
  };
  std::vector<Buffer> buffers;
  std::vector<DeviceMemoryBase> views;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<engine::VarHandle> vars;
  std::vector<uint8_t> host = std::vector<uint8_t>(1 << 16, 0x5a);
};

StreamExecutor* PickExecutor(World& w, Input& in) {
  return w.executors[in.Index(w.executors.size())];
}

DeviceMemoryBase PickView(Session& s, Input& in) {
  if (s.views.empty() || in.Byte() % 16 == 0) return DeviceMemoryBase();  // Sometimes null.
  return s.views[in.Index(s.views.size())];
}

Stream* PickStream(World& w, Session& s, Input& in) {
  if (s.streams.empty() || in.Byte() % 8 == 0) {
    absl::StatusOr<std::unique_ptr<Stream>> stream = PickExecutor(w, in)->CreateStream();
    if (!stream.ok()) return nullptr;
    s.streams.push_back(std::move(*stream));
  }
  return s.streams[in.Index(s.streams.size())].get();
}

// Copy sizes never exceed the fuzzer's own host buffer: overrunning it
// would be this program's bug, not Rill's.
uint64_t HostSize(Session& s, Input& in) {
  return static_cast<uint64_t>(in.Size()) % (s.host.size() + 1);
}

void Step(World& w, Session& s, Input& in) {
  switch (in.Byte() % 16) {
    case 0: {  // Allocate, small on OpenCL (real device memory), any size on the host budget.
      StreamExecutor* e = PickExecutor(w, in);
      uint64_t bytes = static_cast<uint64_t>(in.Size());
      if (e->platform()->Name() == "opencl") bytes %= 1 << 16;
      absl::StatusOr<DeviceMemoryBase> m = e->Allocate(bytes);
      if (m.ok()) {
        s.buffers.push_back({e, *m});
        s.views.push_back(*m);
      }
      break;
    }
    case 1: {  // Free one (its views stay behind, stale).
      if (s.buffers.empty()) break;
      const size_t i = in.Index(s.buffers.size());
      (void)s.buffers[i].owner->Deallocate(&s.buffers[i].memory);
      s.buffers.erase(s.buffers.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
    case 2: {  // A view: a checked slice, or one made up from any offset and size.
      DeviceMemoryBase base = PickView(s, in);
      if (in.Byte() % 2 == 0) {
        absl::StatusOr<DeviceMemoryBase> slice = base.GetByteSlice(in.U64(), in.U64());
        if (slice.ok()) s.views.push_back(*slice);
      } else {
        s.views.push_back(DeviceMemoryBase(base.opaque(), in.U64(), in.U64()));
      }
      break;
    }
    case 3: {  // Synchronous copies.
      DeviceMemoryBase v = PickView(s, in);
      StreamExecutor* e = PickExecutor(w, in);
      const uint64_t size = HostSize(s, in);
      (void)(in.Byte() % 2 ? e->SynchronousMemcpy(&v, s.host.data(), size)
                           : e->SynchronousMemcpy(s.host.data(), v, size));
      break;
    }
    case 4: {  // Stream copies and fills.
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      DeviceMemoryBase a = PickView(s, in), b = PickView(s, in);
      const uint64_t size = HostSize(s, in);
      switch (in.Byte() % 5) {
        case 0:
          stream->ThenMemcpy(&a, s.host.data(), size);
          break;
        case 1:
          stream->ThenMemcpy(s.host.data(), a, size);
          break;
        case 2:
          stream->ThenMemcpy(&a, b, static_cast<uint64_t>(in.Size()));
          break;
        case 3:
          stream->ThenMemset32(&a, 0x01020304u, static_cast<uint64_t>(in.Size()));
          break;
        default:
          stream->ThenMemZero(&a, static_cast<uint64_t>(in.Size()));
          break;
      }
      break;
    }
    case 5: {  // Untyped launches with arbitrary packed arguments.
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      KernelArgs args;
      const int count = in.Byte() % 4;
      for (int i = 0; i < count; ++i) {
        KernelArg arg;
        if (in.Byte() % 2) {
          arg.is_memory = true;
          arg.memory = PickView(s, in);
        } else {
          arg.bytes.resize(in.Byte() % 17, 0xab);
        }
        args.push_back(std::move(arg));
      }
      stream->ThenLaunch(ThreadDim(static_cast<uint64_t>(in.Byte() % 4)),
                         BlockDim(static_cast<uint64_t>(in.Byte() % 3)), *w.touch, std::move(args));
      break;
    }
    case 6: {  // BLAS vector calls with arbitrary n and increments.
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      VectorArgs v{in.Byte() % 2 ? DataType::kFloat : DataType::kDouble,
                   in.Size(),
                   1.0,
                   PickView(s, in),
                   in.Size(),
                   PickView(s, in),
                   in.Size(),
                   PickView(s, in)};
      switch (in.Byte() % 4) {
        case 0:
          stream->ThenBlasAsum(v);
          break;
        case 1:
          stream->ThenBlasAxpy(v);
          break;
        case 2:
          stream->ThenBlasDot(v);
          break;
        default:
          stream->ThenBlasScal(v);
          break;
      }
      break;
    }
    case 7: {  // GEMM, strided-batched, with arbitrary shapes.
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      GemmArgs g;
      g.type = in.Byte() % 2 ? DataType::kFloat : DataType::kDouble;
      g.m = in.Size(), g.n = in.Size(), g.k = in.Size();
      g.a = PickView(s, in), g.b = PickView(s, in), g.c = PickView(s, in);
      g.lda = in.Size(), g.ldb = in.Size(), g.ldc = in.Size();
      g.batch_count = in.Byte() % 3 ? 1 : in.Size();
      g.stride_a = in.Size(), g.stride_b = in.Size(), g.stride_c = in.Size();
      stream->ThenBlasGemm(g);
      break;
    }
    case 8: {  // DNN pooling and softmax with arbitrary descriptors.
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      TensorDescriptor x;
      x.n = in.Size(), x.c = in.Size(), x.h = in.Size(), x.w = in.Size();
      if (in.Byte() % 2) {
        stream->ThenSoftmax(SoftmaxArgs{x, in.Byte() % 2 == 0, PickView(s, in), PickView(s, in)});
      } else {
        PoolArgs p;
        p.pool.window_h = in.Size(), p.pool.window_w = in.Size();
        p.pool.pad_h = in.Size(), p.pool.pad_w = in.Size();
        p.pool.stride_h = in.Size(), p.pool.stride_w = in.Size();
        p.x_desc = x;
        absl::StatusOr<TensorDescriptor> y = PoolingOutput(x, p.pool);
        p.y_desc = y.ok() ? *y : x;
        p.x = PickView(s, in), p.y = PickView(s, in);
        stream->ThenPoolForward(p);
      }
      break;
    }
    case 9: {  // Events: create, record, wait, drop.
      if (s.events.empty() || in.Byte() % 4 == 0) {
        absl::StatusOr<std::unique_ptr<Event>> e = PickExecutor(w, in)->CreateEvent();
        if (e.ok()) s.events.push_back(std::move(*e));
        break;
      }
      Stream* stream = PickStream(w, s, in);
      if (stream == nullptr) break;
      Event* event = s.events[in.Index(s.events.size())].get();
      switch (in.Byte() % 3) {
        case 0:
          stream->ThenRecordEvent(event);
          break;
        case 1:
          stream->ThenWaitFor(event);
          break;
        default:
          s.events.erase(s.events.begin() + static_cast<ptrdiff_t>(in.Index(s.events.size())));
      }
      break;
    }
    case 10: {  // Plugin lookups by any kind.
      StreamExecutor* e = PickExecutor(w, in);
      const auto kind = static_cast<PluginKind>(static_cast<int8_t>(in.Byte()));
      (void)e->GetPlugin(kind);
      (void)e->PluginName(kind);
      break;
    }
    case 11: {  // Engine: new vars (and handles made from bits).
      if (in.Byte() % 4 == 0) {
        s.vars.push_back(engine::VarHandle::FromBits(in.U64()));
      } else {
        s.vars.push_back(w.engine->NewVariable());
      }
      break;
    }
    case 12:
    case 13: {  // Engine: pushes with arbitrary var lists, contexts and priorities.
      std::vector<engine::VarHandle> reads, writes;
      for (int i = in.Byte() % 4; i > 0 && !s.vars.empty(); --i)
        reads.push_back(s.vars[in.Index(s.vars.size())]);
      for (int i = in.Byte() % 3; i > 0 && !s.vars.empty(); --i)
        writes.push_back(s.vars[in.Index(s.vars.size())]);
      engine::Context ctx = engine::Context::Host();
      if (in.Byte() % 4 == 0)
        ctx = engine::Context::Device(kHostPlatformId, static_cast<int8_t>(in.Byte()));
      const bool fail = in.Byte() % 5 == 0;
      const auto prop = static_cast<engine::FnProperty>(in.Byte() % 7 == 5 ? 0 : in.Byte() % 7);
      const int priority = static_cast<int>(static_cast<int32_t>(in.U64()));
      (void)w.engine->PushSync(
          [fail](engine::RunContext) {
            return fail ? absl::InternalError("fuzz failure") : absl::OkStatus();
          },
          ctx, reads, writes, prop, priority, "fuzz");
      break;
    }
    case 14: {  // Engine: delete a var (perhaps twice, perhaps one never made).
      if (s.vars.empty()) break;
      (void)w.engine->DeleteVariable(nullptr, engine::Context::Host(),
                                     s.vars[in.Index(s.vars.size())]);
      break;
    }
    default: {  // Waits.
      if (!s.vars.empty() && in.Byte() % 2) {
        (void)w.engine->WaitForVar(s.vars[in.Index(s.vars.size())]);
      } else if (Stream* stream = PickStream(w, s, in); stream != nullptr) {
        (void)stream->BlockHostUntilDone();
      }
      break;
    }
  }
}

void Finish(World& w, Session& s) {
  for (auto& stream : s.streams) (void)stream->BlockHostUntilDone();
  (void)w.engine->WaitForAll();
  for (engine::VarHandle var : s.vars)
    (void)w.engine->DeleteVariable(nullptr, engine::Context::Host(), var);
  (void)w.engine->WaitForAll();
  s.streams.clear();
  s.events.clear();
  for (auto& b : s.buffers) (void)b.owner->Deallocate(&b.memory);
}

}  // namespace
}  // namespace rill

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill::World& world = rill::TheWorld();
  rill::Session session;
  rill::Input in(data, size);
  for (int steps = 0; !in.done() && steps < 64; ++steps) rill::Step(world, session, in);
  rill::Finish(world, session);
  return 0;
}
