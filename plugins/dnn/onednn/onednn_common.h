#ifndef RILL_PLUGINS_DNN_ONEDNN_ONEDNN_COMMON_H_
#define RILL_PLUGINS_DNN_ONEDNN_ONEDNN_COMMON_H_

// rill:internal -- not installed: the oneDNN plugin's implementation.

// Private to the oneDNN plugin: the one place where oneDNN errors become
// statuses, the Rill-descriptor -> oneDNN memory-descriptor mapping, the
// process-wide engine, per-thread oneDNN streams and scratch, and the
// primitive cache.

#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/dnn/dnn_descriptors.h"
#include "rill/plugins/host_library.h"

namespace rill::onednn {

// --- Errors.

// `error` as a status: dnnl_unimplemented -> Unimplemented,
// dnnl_invalid_arguments -> InvalidArgument, dnnl_out_of_memory ->
// ResourceExhausted, others Internal; the message is "<context>: oneDNN
// <status name>: <what()>".
absl::Status FromDnnl(const dnnl::error& error, const std::string& context);

// Runs `f` and turns a dnnl::error (or std::exception) it throws into a status.
absl::Status Guard(const char* context, const std::function<void()>& f);

// Unimplemented unless `type` is float: oneDNN 2.x has no f64 for these
// primitives on CPU.
absl::Status RequireFloat(const char* op, DataType type);

// --- Engine, streams, memory.

// The process-wide CPU engine (created on first use; Unavailable if oneDNN
// cannot make one).
absl::StatusOr<dnnl::engine*> Engine();

// The calling thread's in-order oneDNN CPU stream on Engine(). A Rill host
// stream runs its tasks on one worker thread, so each gets its own (as does
// each thread that runs another backend's host callbacks).
dnnl::stream& ThreadStream();

// Memory descriptors with explicit strides for the Rill layouts.
dnnl::memory::desc TensorMd(const TensorDescriptor& t);
// c elements (per-channel vectors).
dnnl::memory::desc VectorMd(int64_t c);
// 4-D (groups == 1) or 5-D goihw dims with OIHW/OHWI strides.
dnnl::memory::desc FilterMd(const FilterDescriptor& f, int64_t groups);

// A oneDNN memory object over host memory `ptr` (not owned).
dnnl::memory Wrap(const dnnl::memory::desc& md, const void* ptr);
dnnl::memory Wrap(const dnnl::memory::desc& md, const DeviceMemoryBase& memory);

// Per-thread scratch buffers (64-byte aligned), grown on demand and kept:
// slot 0 is the primitives' scratchpad; the others hold temporaries.
void* ThreadScratch(int slot, uint64_t bytes);

// The eltwise algorithm and its alpha, beta for an activation (clipped
// relu is clip_v2 to [0, coefficient]; elu's alpha is the coefficient), for
// eltwise primitives and convolution post-ops.
struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha, beta;
};
Eltwise ToEltwise(const ActivationDescriptor& a);

// --- Threads.

// Whether oneDNN runs on OpenMP (Debian's build does): only then can the
// plugin choose thread counts.
bool ThreadsAdjustable();
// The plugin's thread count: RILL_DNN_THREADS when set, else OpenMP's
// default (OMP_NUM_THREADS or the cores); read once.
int PluginThreads();
// Whether RILL_DNN_THREADS fixes the count (no per-call choice).
bool ThreadsFixed();

// Sets the calling thread's OpenMP thread count (nthreads-var) for its
// scope and restores it. oneDNN fixes a primitive's team size when the
// primitive is created (its work split depends on it); simpler primitives
// (reorders) read the count when they run: both happen in such a scope.
class ScopedThreads {
 public:
  explicit ScopedThreads(int threads);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads&) = delete;
  ScopedThreads& operator=(const ScopedThreads&) = delete;

 private:
  int previous_ = 0;
};

// Chooses, for one convolution, between its primitive on all the plugin's
// threads (variant 0) and on one thread (variant 1) by their measured times.
// Each variant runs twice first (0, 1, 0, 1); a first run is cold and
// dropped. A variant's estimate is the fastest of its last kWindow times:
// noise only ever adds time, so one disturbed run cannot flip the choice
// (with a moving average it could, and the one-thread variant then ran for
// hundreds of calls at half speed, bench/dnn_bench), while contention that
// lasts kWindow calls does. One thread is chosen only when below kMargin of
// all threads' estimate. The other variant is retried after kExplore calls,
// and after twice as many each time a retry confirms the choice (up to
// kMaxExplore), back to kExplore when the retry's time alone would win: a
// clear winner pays for retries on under 0.5% of its calls. Two OpenMP
// threads win on an idle 2-core machine; when another process or a
// spinning BLAS thread holds a core, the two-thread team waits at its
// barriers and one thread was 2-4x faster (docs/host_cnn_speed.md).
// Thread-safe.
class ThreadChoice {
 public:
  static constexpr int64_t kExplore = 32, kMaxExplore = 1024;
  static constexpr int kWarmSamples = 2;  // Runs per variant before choosing; the first is dropped.
  static constexpr int kWindow = 4;       // Recent times per variant; the fastest counts.
  static constexpr double kMargin = 0.8;
  int Pick();
  void Record(int variant, double seconds);

 private:
  double EstimateLocked(int variant) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int FasterLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return EstimateLocked(1) < kMargin * EstimateLocked(0) ? 1 : 0;
  }

  Mutex mu_;
  int64_t interval_ ABSL_GUARDED_BY(mu_) =
      kExplore;  // Calls between retries of the slower variant.
  int64_t since_retry_ ABSL_GUARDED_BY(mu_) = 0;
  int retrying_ ABSL_GUARDED_BY(mu_) = -1;               // The variant being retried, or -1.
  double recent_[2][kWindow] ABSL_GUARDED_BY(mu_) = {};  // Seconds, a ring per variant.
  int64_t runs_[2] ABSL_GUARDED_BY(mu_) = {
      0, 0};  // Recorded runs per variant, the dropped first included.
};

// --- Running.

// Executes `primitive` on the calling thread's dnnl::stream with `args`,
// adding the scratchpad (`scratch`, scratchpad_md's size) when it has one,
// and waits.
void Execute(const dnnl::primitive& primitive, std::unordered_map<int, dnnl::memory> args,
             const dnnl::memory::desc& scratchpad_md, void* scratch);

// Enqueues `work` (a void() callable that may throw dnnl::error) on
// `stream`, which must belong to `owner`; an error it throws lands in the
// stream's status, prefixed with `op`.
template <typename Work>
absl::Status EnqueueDnn(StreamExecutor* owner, Stream* stream, const char* op, Work work) {
  return EnqueueHostWork(owner, stream, "onednn", "AsDnn()",
                         [op, work = std::move(work)]() mutable -> absl::Status {
                           return Guard(op, [&] { work(); });
                         });
}

// --- Primitive cache.

// A created primitive and what running it needs.
struct CachedPrimitive {
  dnnl::primitive primitive;
  dnnl::memory::desc scratchpad_md;  // User-mode scratchpad (attr scratchpad_mode::user).
  uint64_t scratchpad_bytes = 0;
  std::string implementation;  // impl_info_str().
  // The memory descriptors of the op's tensors, in an order each op defines
  // (convolution: input, filter, output).
  std::vector<dnnl::memory::desc> mds;
  // Pooling backward: the forward-training primitive that makes the max
  // workspace, its workspace and its scratchpad.
  dnnl::primitive forward;
  dnnl::memory::desc workspace_md, forward_scratchpad_md;
  // Convolution: per tensor of `mds`, the layout the primitive reads or
  // writes when oneDNN chose its own (blocked, e.g. nChw8c) one, with the
  // reorder from (inputs) or to (outputs) the caller's layout and the offset
  // of the converted copy in the call's workspace. `reorder` is empty when
  // the primitive uses the caller's layout. Empty for other ops.
  struct Staged {
    dnnl::memory::desc md;
    dnnl::primitive reorder;
    dnnl::memory::desc reorder_scratchpad_md;
    uint64_t offset = 0;
  };
  std::vector<Staged> staged;
  // Forward convolution with a side input and a staged output: the reorder
  // of the side input from the caller's layout into the staged output,
  // which the primitive's sum post-op reads.
  Staged side_input;
  // Forward convolution with a staged filter: the filters already converted
  // to the staged layout, by ConvolutionArgs::filter_id.
  std::shared_ptr<class ConstFilters> filters;
  // Convolution: the choice between this primitive (all threads) and its
  // one-thread twin; null when the thread count is fixed.
  std::shared_ptr<ThreadChoice> choice;
  // The call's workspace: the largest scratchpad of the primitive and its
  // reorders (they run one after another from the workspace's start), then
  // the staged copies, each 64-byte aligned.
  uint64_t workspace_bytes = 0;
};

// Filters converted once to a primitive's layout, by the caller's filter
// id (ConvolutionArgs::filter_id: the same id promises the same bytes).
// The process keeps at most kBudgetBytes of them, over all primitives;
// beyond that a filter is converted per call, as without an id. Entries live
// as long as their primitive (the plugin's cache). Thread-safe.
class ConstFilters {
 public:
  static constexpr uint64_t kBudgetBytes = uint64_t{1} << 30;
  ~ConstFilters();
  // The converted filter of `id`, or null.
  const void* Find(uint64_t id);
  // Keeps `bytes` bytes at `data` (from std::aligned_alloc; taken over) for
  // `id`; returns the kept copy (an earlier one for `id` wins), or null when
  // over the budget (then `data` is freed).
  const void* Insert(uint64_t id, void* data, uint64_t bytes);
  // Bytes kept now, all primitives.
  static uint64_t BytesKept();

 private:
  Mutex mu_;
  absl::flat_hash_map<uint64_t, std::pair<void*, uint64_t>> by_id_ ABSL_GUARDED_BY(mu_);
};

// The attributes every primitive is created with: user-managed scratchpad,
// so primitives may run concurrently on several threads.
dnnl::primitive_attr UserScratchpad();

// Created primitives by key (an op tag and every shape parameter), so each
// shape pays for primitive-descriptor creation once. Thread-safe.
class PrimitiveCache {
 public:
  using Key = std::vector<int64_t>;
  using Factory = std::function<CachedPrimitive()>;

  // The cached primitive for `key`, created by `create` (which may throw
  // dnnl::error: the status names `context`) on a miss.
  absl::StatusOr<std::shared_ptr<const CachedPrimitive>> GetOrCreate(const Key& key,
                                                                     const char* context,
                                                                     const Factory& create);
  size_t size();

 private:
  Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const CachedPrimitive>> entries_ ABSL_GUARDED_BY(mu_);
};

// Key fields of the descriptors, appended to `key`.
void AppendKey(std::vector<int64_t>& key, const TensorDescriptor& t);
void AppendKey(std::vector<int64_t>& key, const FilterDescriptor& f);

}  // namespace rill::onednn

#endif  // RILL_PLUGINS_DNN_ONEDNN_ONEDNN_COMMON_H_
