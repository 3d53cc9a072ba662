#ifndef RILL_STREAM_STREAM_H_
#define RILL_STREAM_STREAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/collectives/collectives.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/fft/fft.h"
#include "rill/plugins/plugin.h"
#include "rill/stream/kernel.h"
#include "rill/stream/launch_dim.h"
#include "rill/stream/stream_listener.h"
#include "rill/stream/stream_status.h"

namespace rill {

class DeviceSpan;
class Event;
class StreamExecutor;
class StreamInterface;
class AttachedStreams;
class Timer;
struct StreamOptions;
namespace internal {
struct StreamTraceState;
struct TracedOp;
}  // namespace internal

// An in-order queue of work on one device. Created by
// StreamExecutor::CreateStream and bound to that executor for life.
//
// Every Then* call enqueues and returns *this, so calls chain. The first
// failure -- found when a call is enqueued (bad arguments) or when the work
// runs (a failing host callback, a device error) -- puts the stream in the
// error state: ok() turns false, status() returns the first error known
// with its context (the call, its sizes, the backend's code and text), and
// later Then* calls are skipped. An error takes effect at its place in the
// stream: work queued before a bad call still runs (on backends with host
// callbacks, which carry the error to its place; elsewhere queued work is
// skipped at once), and events and notifications report the first error
// before them in stream order -- which, if work queued before a bad call
// fails too, is that work's error, not status(). A call that fails after
// queueing part of its work lets that part run. BlockHostUntilDone() waits
// for the work and returns status(). Zero-byte copies and fills are no-ops.
//
//   RILL_ASSIGN_OR_RETURN(auto stream, executor->CreateStream());
//   stream->ThenMemcpy(&dev, host.data(), bytes)
//          .ThenLaunch(ThreadDim(256), BlockDim(blocks), kernel, dev, n)
//          .ThenMemcpy(host.data(), dev, bytes);
//   RILL_RETURN_IF_ERROR(stream->BlockHostUntilDone());
//
// Destroying a stream waits for its work, so neither a stream nor its
// executor may be destroyed from one of that stream's host callbacks: that
// precondition is checked, and breaking it aborts with a message saying so
// (the work queued behind the callback can be neither drained nor dropped
// safely). A stream may outlive its executor
// only in the detached state the executor's destructor leaves it in: every
// later call fails with FailedPrecondition. Thread-compatible: one thread
// enqueues at a time; ok(), status() and BlockHostUntilDone() are
// thread-safe.
class Stream {
 public:
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // --- Memory. Sizes are in bytes and must fit the views they touch.
  Stream& ThenMemcpy(DeviceMemoryBase* device_dst, const void* host_src, uint64_t size);
  Stream& ThenMemcpy(void* host_dst, const DeviceMemoryBase& device_src, uint64_t size);
  Stream& ThenMemcpy(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src,
                     uint64_t size);
  // Typed host spans; the sizes must match exactly.
  template <typename T>
  Stream& ThenMemcpyH2D(absl::Span<const T> host_src, DeviceMemory<T>* device_dst);
  template <typename T>
  Stream& ThenMemcpyD2H(const DeviceMemory<T>& device_src, absl::Span<T> host_dst);
  // Fills `size` bytes (a multiple of 4) with a 32-bit pattern.
  Stream& ThenMemset32(DeviceMemoryBase* device_dst, uint32_t pattern, uint64_t size);
  Stream& ThenMemZero(DeviceMemoryBase* device_dst, uint64_t size);

  // --- Synchronization.
  Stream& ThenRecordEvent(Event* event);
  // Later work waits until `event`'s latest record completes. The event
  // must have been recorded (FailedPrecondition otherwise). An event of
  // another platform is waited for through the host: a host callback on
  // this stream blocks until it completes (keep the event alive until then).
  // If the recording stream failed, this stream fails too.
  Stream& ThenWaitFor(Event* event);
  // Later work waits for everything enqueued on `other` so far. `other` may
  // belong to another device or platform (through the host, as above). This
  // enqueues an event record on `other` too, so no other thread may be
  // enqueueing on `other` meanwhile.
  Stream& ThenWaitFor(Stream* other);
  // Runs `callback` on a host thread after all earlier work.
  Stream& ThenDoHostCallback(absl::AnyInvocable<void() &&> callback);
  // As above; an error status (or an exception) puts the stream in error.
  Stream& ThenDoHostCallbackWithStatus(absl::AnyInvocable<absl::Status() &&> callback);
  // Runs `callback(outcome)` on a host thread after all earlier work, even
  // when the stream is in the error state (it is not skipped): for
  // schedulers that must learn when work finished, whatever the outcome.
  // `outcome` is the first error before it in stream order (OK if none), so
  // a bad call made after ThenNotify does not reach it. If it cannot be
  // enqueued (a detached stream, a backend refusal), it is called at once
  // with status(). An exception it throws puts the stream in
  // error (Internal) instead of reaching the backend's thread.
  Stream& ThenNotify(absl::AnyInvocable<void(absl::Status) &&> callback);
  Stream& ThenStartTimer(Timer* timer);
  Stream& ThenStopTimer(Timer* timer);

  // --- Kernels. The arguments are checked against Params when compiled.
  template <typename... Params, typename... Args>
  Stream& ThenLaunch(const ThreadDim& threads, const BlockDim& blocks,
                     const TypedKernel<Params...>& kernel, const Args&... args);
  // Untyped form: the argument count is checked when the kernel declares it.
  Stream& ThenLaunch(const ThreadDim& threads, const BlockDim& blocks, const Kernel& kernel,
                     KernelArgs args);

  // --- BLAS (plugins/blas/blas.h: column-major, sizes and strides in
  // elements). Each forwards to the executor's BlasSupport; without one the
  // stream fails with Unimplemented.
  Stream& ThenBlasGemm(const GemmArgs& args);  // Strided-batched when batch_count > 1.
  Stream& ThenBlasGemmBatched(const GemmBatchedArgs& args);
  Stream& ThenBlasGemv(const GemvArgs& args);
  Stream& ThenBlasAxpy(const VectorArgs& args);
  Stream& ThenBlasScal(const VectorArgs& args);
  Stream& ThenBlasCopy(const VectorArgs& args);
  Stream& ThenBlasDot(const VectorArgs& args);
  Stream& ThenBlasNrm2(const VectorArgs& args);
  Stream& ThenBlasAsum(const VectorArgs& args);
  // Typed forms, for T = float or double.
  template <typename T>
  Stream& ThenBlasGemm(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n, int64_t k,
                       T alpha, const DeviceMemory<T>& a, int64_t lda, const DeviceMemory<T>& b,
                       int64_t ldb, T beta, DeviceMemory<T>* c, int64_t ldc) {
    return ThenBlasGemmStridedBatched(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta,
                                      c, ldc, 0, 1);
  }
  template <typename T>
  Stream& ThenBlasGemmStridedBatched(Transpose trans_a, Transpose trans_b, int64_t m, int64_t n,
                                     int64_t k, T alpha, const DeviceMemory<T>& a, int64_t lda,
                                     int64_t stride_a, const DeviceMemory<T>& b, int64_t ldb,
                                     int64_t stride_b, T beta, DeviceMemory<T>* c, int64_t ldc,
                                     int64_t stride_c, int64_t batch_count) {
    return ThenBlasGemm(GemmArgs{DataTypeOf<T>(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                                 beta, c ? *c : DeviceMemoryBase(), ldc, batch_count, stride_a,
                                 stride_b, stride_c});
  }
  template <typename T>
  Stream& ThenBlasGemv(Transpose trans, int64_t m, int64_t n, T alpha, const DeviceMemory<T>& a,
                       int64_t lda, const DeviceMemory<T>& x, int64_t incx, T beta,
                       DeviceMemory<T>* y, int64_t incy) {
    return ThenBlasGemv(GemvArgs{DataTypeOf<T>(), trans, m, n, alpha, a, lda, x, incx, beta,
                                 y ? *y : DeviceMemoryBase(), incy});
  }
  template <typename T>
  Stream& ThenBlasAxpy(int64_t n, T alpha, const DeviceMemory<T>& x, int64_t incx,
                       DeviceMemory<T>* y, int64_t incy) {
    return ThenBlasAxpy(
        VectorArgs{DataTypeOf<T>(), n, alpha, x, incx, y ? *y : DeviceMemoryBase(), incy, {}});
  }
  template <typename T>
  Stream& ThenBlasScal(int64_t n, T alpha, DeviceMemory<T>* x, int64_t incx) {
    return ThenBlasScal(
        VectorArgs{DataTypeOf<T>(), n, alpha, x ? *x : DeviceMemoryBase(), incx, {}, 1, {}});
  }
  template <typename T>
  Stream& ThenBlasCopy(int64_t n, const DeviceMemory<T>& x, int64_t incx, DeviceMemory<T>* y,
                       int64_t incy) {
    return ThenBlasCopy(
        VectorArgs{DataTypeOf<T>(), n, 1, x, incx, y ? *y : DeviceMemoryBase(), incy, {}});
  }
  template <typename T>
  Stream& ThenBlasDot(int64_t n, const DeviceMemory<T>& x, int64_t incx, const DeviceMemory<T>& y,
                      int64_t incy, DeviceMemory<T>* result) {
    return ThenBlasDot(
        VectorArgs{DataTypeOf<T>(), n, 1, x, incx, y, incy, result ? *result : DeviceMemoryBase()});
  }
  template <typename T>
  Stream& ThenBlasNrm2(int64_t n, const DeviceMemory<T>& x, int64_t incx, DeviceMemory<T>* result) {
    return ThenBlasNrm2(
        VectorArgs{DataTypeOf<T>(), n, 1, x, incx, {}, 1, result ? *result : DeviceMemoryBase()});
  }
  template <typename T>
  Stream& ThenBlasAsum(int64_t n, const DeviceMemory<T>& x, int64_t incx, DeviceMemory<T>* result) {
    return ThenBlasAsum(
        VectorArgs{DataTypeOf<T>(), n, 1, x, incx, {}, 1, result ? *result : DeviceMemoryBase()});
  }

  // --- Random numbers (plugins/rng/rng.h), from the executor's RngSupport.
  Stream& ThenPopulateRandUniform(DeviceMemory<float>* out);
  Stream& ThenPopulateRandUniform(DeviceMemory<double>* out);
  Stream& ThenPopulateRandGaussian(float mean, float stddev, DeviceMemory<float>* out);
  Stream& ThenPopulateRandGaussian(double mean, double stddev, DeviceMemory<double>* out);
  Stream& ThenPopulateRandBits(DeviceMemory<uint32_t>* out);

  // --- DNN (plugins/dnn/dnn.h), from the executor's DnnSupport.
  // Each forwards to DnnSupport::Do<same name> (argument rules there);
  // without a DNN plugin the stream fails with Unimplemented.
  Stream& ThenConvolve(const ConvolutionArgs& args);
  Stream& ThenConvolveBackwardData(const ConvolutionArgs& args);
  Stream& ThenConvolveBackwardFilter(const ConvolutionArgs& args);
  Stream& ThenBiasAdd(const BiasAddArgs& args);
  Stream& ThenActivate(const ActivationArgs& args);
  Stream& ThenActivateBackward(const ActivationBackwardArgs& args);
  Stream& ThenPoolForward(const PoolArgs& args);
  Stream& ThenPoolBackward(const PoolBackwardArgs& args);
  Stream& ThenSoftmax(const SoftmaxArgs& args);
  Stream& ThenSoftmaxBackward(const SoftmaxBackwardArgs& args);
  Stream& ThenBatchNormForwardInference(const BatchNormInferenceArgs& args);
  Stream& ThenBatchNormForwardTraining(const BatchNormTrainingArgs& args);
  Stream& ThenBatchNormBackward(const BatchNormBackwardArgs& args);
  Stream& ThenLrn(const LrnArgs& args);
  // Positional float forms of the common forward calls (StreamExecutor's).
  Stream& ThenConvolve(const TensorDescriptor& input_desc, const DeviceMemory<float>& input,
                       const FilterDescriptor& filter_desc, const DeviceMemory<float>& filter,
                       const ConvolutionDescriptor& conv, const TensorDescriptor& output_desc,
                       DeviceMemory<float>* output, int64_t algorithm = kDefaultAlgorithm,
                       DeviceMemoryBase workspace = {});
  Stream& ThenBiasAdd(const TensorDescriptor& desc, const DeviceMemory<float>& input,
                      const DeviceMemory<float>& bias, DeviceMemory<float>* output);
  Stream& ThenActivate(const ActivationDescriptor& activation, const TensorDescriptor& desc,
                       const DeviceMemory<float>& x, DeviceMemory<float>* y);
  Stream& ThenPoolForward(const PoolingDescriptor& pool, const TensorDescriptor& x_desc,
                          const DeviceMemory<float>& x, const TensorDescriptor& y_desc,
                          DeviceMemory<float>* y);
  Stream& ThenSoftmax(const TensorDescriptor& desc, const DeviceMemory<float>& x,
                      DeviceMemory<float>* y, bool log = false);

  // --- FFT (plugins/fft/fft.h), from the executor's FftSupport.
  // Runs `plan` (made by this executor's AsFft()) from `in` into `*out`:
  // c2c, r2c or c2r by the element types, which must be the plan's. For an
  // in-place plan, `in` and `*out` view the same memory. Unnormalized.
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<std::complex<float>>& in,
                  DeviceMemory<std::complex<float>>* out);
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<std::complex<double>>& in,
                  DeviceMemory<std::complex<double>>* out);
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<float>& in,
                  DeviceMemory<std::complex<float>>* out);
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<double>& in,
                  DeviceMemory<std::complex<double>>* out);
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<std::complex<float>>& in,
                  DeviceMemory<float>* out);
  Stream& ThenFft(FftPlan* plan, const DeviceMemory<std::complex<double>>& in,
                  DeviceMemory<double>* out);

  // --- Collectives (plugins/collectives/collectives.h), from the executor's
  // CollectivesSupport, among the ranks of `comm`: each call is `comm`'s
  // next collective (every rank must make the same calls in the same
  // order). Later work on this stream runs after it; a failure (a peer
  // missing past the timeout, a mismatch across ranks) fails the stream.
  Stream& ThenCollective(Communicator* comm, const CollectiveArgs& args);
  template <typename T>
  Stream& ThenAllReduce(Communicator* comm, const DeviceMemory<T>& send, DeviceMemory<T>* recv,
                        int64_t count, ReduceOp op = ReduceOp::kSum) {
    return ThenCollective(comm, {CollectiveKind::kAllReduce, DataTypeOf<T>(), op, send,
                                 recv ? *recv : DeviceMemoryBase(), count, 0, ""});
  }
  // The root's `buf` into every rank's `buf`.
  template <typename T>
  Stream& ThenBroadcast(Communicator* comm, DeviceMemory<T>* buf, int64_t count, int root) {
    DeviceMemoryBase b = buf ? *buf : DeviceMemoryBase();
    return ThenCollective(
        comm, {CollectiveKind::kBroadcast, DataTypeOf<T>(), ReduceOp::kSum, b, b, count, root, ""});
  }
  // `recv` holds count * comm->size() elements, rank r's `send` at r * count.
  template <typename T>
  Stream& ThenAllGather(Communicator* comm, const DeviceMemory<T>& send, DeviceMemory<T>* recv,
                        int64_t count) {
    return ThenCollective(comm, {CollectiveKind::kAllGather, DataTypeOf<T>(), ReduceOp::kSum, send,
                                 recv ? *recv : DeviceMemoryBase(), count, 0, ""});
  }
  // `send` holds count * comm->size() elements; `recv` gets this rank's
  // block of their reduction.
  template <typename T>
  Stream& ThenReduceScatter(Communicator* comm, const DeviceMemory<T>& send, DeviceMemory<T>* recv,
                            int64_t count, ReduceOp op = ReduceOp::kSum) {
    return ThenCollective(comm, {CollectiveKind::kReduceScatter, DataTypeOf<T>(), op, send,
                                 recv ? *recv : DeviceMemoryBase(), count, 0, ""});
  }
  Stream& ThenBarrier(Communicator* comm) {
    return ThenCollective(
        comm, {CollectiveKind::kBarrier, DataType::kFloat, ReduceOp::kSum, {}, {}, 0, 0, ""});
  }

  // --- State.
  // Waits until all enqueued work has run; returns status(). Called from a
  // host callback of this same stream (which the wait would include) it
  // fails the stream with FailedPrecondition instead of deadlocking.
  absl::Status BlockHostUntilDone();
  bool ok() const { return status_.ok(); }
  // The first error, with its context; OK while none.
  absl::Status status() const { return status_.Get(); }
  // The executor, or nullptr once detached (the executor was destroyed).
  StreamExecutor* parent() const;
  // The backend's handle (cudaStream_t, cl_command_queue); nullptr on host.
  void* native_handle() const;
  StreamInterface* implementation() const { return impl_.get(); }
  // Puts the stream in the error state with `status`, at the place of the
  // work running now: work still queued is skipped (for plugins that find an
  // error while their work runs). OK is ignored.
  void SetError(const absl::Status& status) { status_.Update(status); }

 private:
  friend class StreamExecutor;
  Stream(StreamExecutor* parent, std::shared_ptr<AttachedStreams> attached_streams);
  absl::Status Init(const StreamOptions& options);
  // Called by the executor's destructor: waits for the work, then makes
  // every later call fail.
  void Detach();

  // Whether a call may proceed: the stream is attached and not in error.
  bool Usable();
  // Records `status`, prefixed with `call`, as the stream's error if it is one.
  Stream& Check(const absl::Status& status, const std::string& call);
  Stream& Check(const absl::Status& status, absl::FunctionRef<std::string()> call);
  // Stream listeners (stream_listener.h): a traced call begins with
  // TraceBegin() -- true when listeners are active and no outer call on this
  // stream is traced already -- and ends with Done(traced, ...), which
  // reports it and then does what Check does.
  bool TraceBegin() { return StreamListenersActive() && op_ == nullptr && StartTracedOp(); }
  bool StartTracedOp();
  Stream& Done(bool traced, const absl::Status& status, absl::FunctionRef<std::string()> call);
  // Records `error`, found in the call being made, at that call's place:
  // later calls are skipped at once, work already queued still runs (a
  // marker queued now fails the backend's queue when it is reached).
  void FailHere(const absl::Status& error);
  // Enqueues a wait on `event` of another platform: a host callback that
  // blocks until it completes. `owned` is destroyed after the wait.
  absl::Status WaitThroughHost(Event* event, std::unique_ptr<Event> owned);
  // Runs `call` on the executor's plugin `T` (BlasSupport, ...) if the
  // stream is usable, recording any error with the context `what()` (built
  // only on error).
  template <typename T, typename What, typename Call>
  Stream& ThenPlugin(What what, Call call);
  // Enqueues an exception-guarded host callback (`empty`: the user's was null).
  Stream& EnqueueHostCallback(bool empty, absl::AnyInvocable<absl::Status() &&> guarded);

  friend class DeviceSpan;
  friend void SetStreamLabel(Stream* stream, std::string label);
  friend std::string StreamLane(const Stream* stream);

  std::atomic<StreamExecutor*> parent_;
  const std::shared_ptr<AttachedStreams> attached_streams_;  // The executor's; outlives it.
  StreamStatus status_;
  std::unique_ptr<StreamInterface> impl_;
  // The lane name and device-time anchor, for listeners and DeviceSpan.
  std::shared_ptr<internal::StreamTraceState> trace_;
  std::unique_ptr<internal::TracedOp> op_;  // The traced call being enqueued.
};

// ---------------------------------------------------------------------------
// Implementation of the templates.

template <typename T>
Stream& Stream::ThenMemcpyH2D(absl::Span<const T> host_src, DeviceMemory<T>* device_dst) {
  if (device_dst != nullptr && host_src.size() * sizeof(T) != device_dst->size()) {
    return Check(
        absl::InvalidArgumentError("host span of " + std::to_string(host_src.size() * sizeof(T)) +
                                   " bytes does not match " + device_dst->ToString()),
        "ThenMemcpyH2D");
  }
  return ThenMemcpy(device_dst, host_src.data(), host_src.size() * sizeof(T));
}

template <typename T>
Stream& Stream::ThenMemcpyD2H(const DeviceMemory<T>& device_src, absl::Span<T> host_dst) {
  if (host_dst.size() * sizeof(T) != device_src.size()) {
    return Check(
        absl::InvalidArgumentError("host span of " + std::to_string(host_dst.size() * sizeof(T)) +
                                   " bytes does not match " + device_src.ToString()),
        "ThenMemcpyD2H");
  }
  return ThenMemcpy(host_dst.data(), device_src, host_dst.size() * sizeof(T));
}

template <typename... Params, typename... Args>
Stream& Stream::ThenLaunch(const ThreadDim& threads, const BlockDim& blocks,
                           const TypedKernel<Params...>& kernel, const Args&... args) {
  if (!kernel.is_loaded()) {
    return Check(absl::InvalidArgumentError("kernel is not loaded"), "ThenLaunch");
  }
  return ThenLaunch(threads, blocks, kernel.kernel(), TypedKernel<Params...>::Pack(args...));
}

}  // namespace rill

#endif  // RILL_STREAM_STREAM_H_
