#include "rill/plugins/dnn/onednn/onednn_common.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/stream/stream_listener.h"

namespace rill::onednn {

using dnnl::memory;

namespace {

const char* DnnlStatusName(dnnl_status_t status) {
  switch (status) {
    case dnnl_success:
      return "success";
    case dnnl_out_of_memory:
      return "out_of_memory";
    case dnnl_invalid_arguments:
      return "invalid_arguments";
    case dnnl_unimplemented:
      return "unimplemented";
    case dnnl_iterator_ends:
      return "iterator_ends";
    case dnnl_runtime_error:
      return "runtime_error";
    case dnnl_not_required:
      return "not_required";
  }
  return "unknown";
}

}  // namespace

absl::Status FromDnnl(const dnnl::error& error, const std::string& context) {
  const std::string message =
      absl::StrCat(context, ": oneDNN ", DnnlStatusName(error.status), ": ", error.what());
  switch (error.status) {
    case dnnl_unimplemented:
      return absl::UnimplementedError(message);
    case dnnl_invalid_arguments:
      return absl::InvalidArgumentError(message);
    case dnnl_out_of_memory:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status Guard(const char* context, const std::function<void()>& f) {
  try {
    f();
    return absl::OkStatus();
  } catch (const dnnl::error& e) {
    return FromDnnl(e, context);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(context, ": ", e.what()));
  }
}

absl::Status RequireFloat(const char* op, DataType type) {
  if (type == DataType::kFloat) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat("onednn ", op, ": ", DataTypeName(type),
                                               " tensors are not supported (oneDNN 2.x has no f64 "
                                               "primitives on CPU; use float)"));
}

absl::StatusOr<dnnl::engine*> Engine() {
  static absl::StatusOr<dnnl::engine*>* engine = [] {
    try {
      return new absl::StatusOr<dnnl::engine*>(new dnnl::engine(dnnl::engine::kind::cpu, 0));
    } catch (const dnnl::error& e) {
      return new absl::StatusOr<dnnl::engine*>(
          absl::UnavailableError(FromDnnl(e, "onednn: creating the CPU engine").message()));
    }
  }();  // Never destroyed: primitives may outlive static destruction order.
  return *engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(**Engine());  // Engine() succeeded when the plugin was created.
  return stream;
}

memory::desc TensorMd(const TensorDescriptor& t) {
  const memory::dims dims = {t.n, t.c, t.h, t.w};
  const memory::dims strides = t.layout == DataLayout::kNCHW
                                   ? memory::dims{t.c * t.h * t.w, t.h * t.w, t.w, 1}
                                   : memory::dims{t.h * t.w * t.c, 1, t.w * t.c, t.c};
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::desc VectorMd(int64_t c) {
  return memory::desc({c}, memory::data_type::f32, memory::dims{1});
}

memory::desc FilterMd(const FilterDescriptor& f, int64_t groups) {
  const int64_t o = f.output_channels / groups, i = f.input_channels, h = f.height, w = f.width;
  // Strides of (o, i, h, w) within one group.
  const memory::dims ohw = f.layout == FilterLayout::kOIHW ? memory::dims{i * h * w, h * w, w, 1}
                                                           : memory::dims{h * w * i, 1, w * i, i};
  if (groups == 1) return memory::desc({o, i, h, w}, memory::data_type::f32, ohw);
  return memory::desc({groups, o, i, h, w}, memory::data_type::f32,
                      memory::dims{o * i * h * w, ohw[0], ohw[1], ohw[2], ohw[3]});
}

memory Wrap(const memory::desc& md, const void* ptr) {
  return memory(md, **Engine(), const_cast<void*>(ptr));
}

memory Wrap(const memory::desc& md, const DeviceMemoryBase& m) { return Wrap(md, HostPointer(m)); }

void* ThreadScratch(int slot, uint64_t bytes) {
  struct Buffer {
    void* data = nullptr;
    uint64_t size = 0;
    ~Buffer() { std::free(data); }
  };
  constexpr int kSlots = 4;
  thread_local Buffer buffers[kSlots];
  Buffer& b = buffers[slot % kSlots];
  if (bytes > b.size) {
    std::free(b.data);
    b.size = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, b.size);
    if (b.data == nullptr) {
      b.size = 0;
      throw dnnl::error(dnnl_out_of_memory, "onednn: scratch allocation failed");
    }
  }
  return b.data;
}

namespace {

// OpenMP's thread-count calls, looked up in the process (libdnnl loads
// libgomp): the plugin then needs no OpenMP flags or link dependency of its
// own. Null where oneDNN does not run on OpenMP.
struct OmpApi {
  void (*set_num_threads)(int) = nullptr;
  int (*get_max_threads)() = nullptr;
};

const OmpApi& Omp() {
  static const OmpApi api = [] {
    OmpApi a;
    if (dnnl::version()->cpu_runtime != DNNL_RUNTIME_OMP) return a;
    a.set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    a.get_max_threads = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    if (a.set_num_threads == nullptr || a.get_max_threads == nullptr) a = OmpApi();
    return a;
  }();
  return api;
}

// RILL_DNN_THREADS, 0 for auto; a value the table of settings refuses
// (base/env_settings.cc) is logged once and counts as auto.
int EnvThreads() {
  static const int threads = [] {
    const absl::StatusOr<std::optional<int64_t>> n = EnvInt("RILL_DNN_THREADS");
    if (!n.ok()) {
      RILL_LOG(WARNING) << "onednn: " << n.status().message() << "; using auto";
      return 0;
    }
    return n->has_value() ? static_cast<int>(**n) : 0;
  }();
  return threads;
}

}  // namespace

bool ThreadsAdjustable() { return Omp().set_num_threads != nullptr; }

bool ThreadsFixed() {
  static const bool fixed = EnvThreads() > 0;
  return fixed;
}

int PluginThreads() {
  static const int threads = [] {
    if (int n = EnvThreads()) return n;
    return ThreadsAdjustable() ? Omp().get_max_threads() : 1;
  }();
  return threads;
}

ScopedThreads::ScopedThreads(int threads) {
  if (!ThreadsAdjustable()) return;
  previous_ = Omp().get_max_threads();
  if (threads != previous_) Omp().set_num_threads(threads);
}

ScopedThreads::~ScopedThreads() {
  if (ThreadsAdjustable() && Omp().get_max_threads() != previous_) Omp().set_num_threads(previous_);
}

double ThreadChoice::EstimateLocked(int variant) const {
  const int64_t n = std::min<int64_t>(runs_[variant] - 1, kWindow);
  double best = recent_[variant][0];
  for (int64_t i = 1; i < n; ++i) best = std::min(best, recent_[variant][i]);
  return best;
}

int ThreadChoice::Pick() {
  MutexLock lock(&mu_);
  // Each variant twice, alternating: its first run is cold.
  if (runs_[0] < kWarmSamples && runs_[0] <= runs_[1]) return 0;
  if (runs_[1] < kWarmSamples) return 1;
  const int faster = FasterLocked();
  if (++since_retry_ < interval_) return faster;
  since_retry_ = 0;
  retrying_ = 1 - faster;
  return retrying_;
}

void ThreadChoice::Record(int variant, double seconds) {
  MutexLock lock(&mu_);
  if (runs_[variant]++ == 0) return;  // The first run of a variant pays for first touches: dropped.
  if (variant == retrying_) {
    // A retry whose time alone would win hints at changed conditions: retry
    // often again until the estimates tell. Otherwise half as often.
    const double other = EstimateLocked(1 - variant);
    const bool promising = variant == 1 ? seconds < kMargin * other : kMargin * seconds <= other;
    interval_ = promising ? kExplore : std::min(2 * interval_, kMaxExplore);
    retrying_ = -1;
  }
  recent_[variant][(runs_[variant] - 2) % kWindow] = seconds;
}

void Execute(const dnnl::primitive& primitive, std::unordered_map<int, memory> args,
             const memory::desc& scratchpad_md, void* scratch) {
  if (scratchpad_md.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, Wrap(scratchpad_md, scratch));
  dnnl::stream& stream = ThreadStream();
  primitive.execute(stream, args);
  stream.wait();
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

absl::StatusOr<std::shared_ptr<const CachedPrimitive>> PrimitiveCache::GetOrCreate(
    const Key& key, const char* context, const Factory& create) {
  // Listeners learn which implementation serves the call being enqueued.
  auto noted = [](const std::shared_ptr<const CachedPrimitive>& p) {
    if (StreamListenersActive()) NoteAlgorithm(p->implementation);
    return p;
  };
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return noted(it->second);
  }
  // Created outside the lock: a slow primitive-descriptor creation does not
  // stall other shapes. Two threads racing on one key both create; one wins.
  std::shared_ptr<const CachedPrimitive> made;
  absl::Status status =
      Guard(context, [&] { made = std::make_shared<const CachedPrimitive>(create()); });
  if (!status.ok()) return status;
  MutexLock lock(&mu_);
  return noted(entries_.try_emplace(key, std::move(made)).first->second);
}

size_t PrimitiveCache::size() {
  MutexLock lock(&mu_);
  return entries_.size();
}

void AppendKey(std::vector<int64_t>& key, const TensorDescriptor& t) {
  key.insert(key.end(),
             {t.n, t.c, t.h, t.w, static_cast<int64_t>(t.layout), static_cast<int64_t>(t.type)});
}

void AppendKey(std::vector<int64_t>& key, const FilterDescriptor& f) {
  key.insert(key.end(), {f.output_channels, f.input_channels, f.height, f.width,
                         static_cast<int64_t>(f.layout), static_cast<int64_t>(f.type)});
}

Eltwise ToEltwise(const ActivationDescriptor& a) {
  const float coef = static_cast<float>(a.coefficient);
  switch (a.mode) {
    case ActivationMode::kRelu:
      return {dnnl::algorithm::eltwise_relu, 0, 0};
    case ActivationMode::kSigmoid:
      return {dnnl::algorithm::eltwise_logistic, 0, 0};
    case ActivationMode::kTanh:
      return {dnnl::algorithm::eltwise_tanh, 0, 0};
    case ActivationMode::kElu:
      return {dnnl::algorithm::eltwise_elu, coef, 0};
    case ActivationMode::kClippedRelu:
      return {dnnl::algorithm::eltwise_clip_v2, 0, coef};
  }
  return {dnnl::algorithm::eltwise_relu, 0, 0};
}

namespace {
std::atomic<uint64_t>& KeptBytes() {
  static std::atomic<uint64_t> bytes{0};
  return bytes;
}
}  // namespace

ConstFilters::~ConstFilters() {
  for (auto& [id, entry] : by_id_) {
    std::free(entry.first);
    KeptBytes().fetch_sub(entry.second, std::memory_order_relaxed);
  }
}

const void* ConstFilters::Find(uint64_t id) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.first;
}

const void* ConstFilters::Insert(uint64_t id, void* data, uint64_t bytes) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    std::free(data);
    return it->second.first;
  }
  if (KeptBytes().fetch_add(bytes, std::memory_order_relaxed) + bytes > kBudgetBytes) {
    KeptBytes().fetch_sub(bytes, std::memory_order_relaxed);
    std::free(data);
    return nullptr;
  }
  by_id_.emplace(id, std::make_pair(data, bytes));
  return data;
}

uint64_t ConstFilters::BytesKept() { return KeptBytes().load(std::memory_order_relaxed); }

}  // namespace rill::onednn
