#ifndef RILL_OPS_OP_H_
#define RILL_OPS_OP_H_

// What an operator is: its declaration (OpDef: arity, typed parameters,
// shape and type inference, in-place options, resources, gradient) and the
// context its kernels run in (OpContext). Kernels are registered with what
// they need of a device in ops/op_registry.h; ops/invoke.h runs them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rill/engine/engine.h"
#include "rill/executor/device_memory.h"
#include "rill/ops/params.h"
#include "rill/tensor/dtype.h"
#include "rill/tensor/shape.h"
#include "rill/tensor/tensor.h"

namespace rill {
class RngSupport;
class Stream;
class StreamExecutor;
}  // namespace rill

namespace rill::ops {

// How an op writes an output (MXNet's OpReqType). The framework honours
// every request whatever the kernel supports (KernelDef::reqs): it skips
// kNullOp outputs, and computes into temp space then adds (kAddTo) or
// copies (kWriteInplace) for a kernel that cannot do it itself. A kernel
// sees kWriteInplace only for an output that covers exactly the bytes of an
// input of a declared in-place pair (OpDef::set_inplace).
enum class OpReqType { kNullOp, kWriteTo, kWriteInplace, kAddTo };
const char* OpReqName(OpReqType req);  // "null", "write", "inplace", "add"
constexpr uint32_t ReqBit(OpReqType r) { return 1u << static_cast<int>(r); }
inline constexpr uint32_t kWriteReqs =
    ReqBit(OpReqType::kWriteTo) | ReqBit(OpReqType::kWriteInplace);
inline constexpr uint32_t kAllReqs =
    kWriteReqs | ReqBit(OpReqType::kAddTo) | ReqBit(OpReqType::kNullOp);

// Resources an op asks the framework for.
enum class ResourceKind {
  kTempSpace,  // Scratch device memory: OpContext::Temp, any number of buffers.
  kRandom,     // The device's random generator (ops/resource.h), seeded per device.
};

// One tensor as a kernel sees it: the storage block (a whole allocation,
// offset 0), the view's byte offset into it, shape and type, and the host
// address of the block where the device's memory is host-addressable.
// OpenCL buffers cannot be offset by pointer arithmetic, so device kernels
// take the block and an element offset (elem_offset()).
struct TensorArg {
  DeviceMemoryBase block;
  void* host_base = nullptr;
  uint64_t offset = 0;  // Bytes; a multiple of the element size.
  Shape shape;
  DType dtype = DType::kF32;

  int64_t size() const { return shape.NumElements(); }
  uint64_t bytes() const { return static_cast<uint64_t>(size()) * DTypeSize(dtype); }
  uint64_t elem_offset() const { return offset / DTypeSize(dtype); }
  // The view as device memory (a sub-range of the block), for plugin calls.
  DeviceMemoryBase view() const {
    return DeviceMemoryBase(block.opaque(), bytes(), block.offset() + offset);
  }
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(host_base) + offset);
  }
  std::string ToString() const;  // "float32[2, 3]"
};

class OpDef;

// What a kernel gets: its op, parameters, inputs, outputs with their write
// requests, the run context and the framework's services (stream, temp
// space, the random generator). Valid during the kernel call only; device
// work the kernel enqueues may run later, and everything it references
// (TensorArgs, temp buffers) stays valid for that work. Thread-compatible.
class OpContext {
 public:
  const OpDef& op() const { return *op_; }
  template <typename P>
  const P& params() const {
    return *static_cast<const P*>(params_);
  }
  const void* raw_params() const { return params_; }
  absl::Span<const TensorArg> in() const { return in_; }
  absl::Span<const TensorArg> out() const { return out_; }
  const TensorArg& in(int i) const { return in_[i]; }
  const TensorArg& out(int i) const { return out_[i]; }
  OpReqType req(int i) const { return req_[i]; }
  const engine::RunContext& run() const { return run_; }
  StreamExecutor* executor() const { return executor_; }
  bool is_train() const { return is_train_; }
  // Whether the kernel runs inline on an engine CPU worker (Context::Host()).
  bool is_inline() const { return run_.stream == nullptr; }

  // The stream to enqueue on: the engine's for a device context; for the
  // CPU context, a stream of the host device that the framework waits for
  // after the kernel returns (library calls need a stream).
  absl::StatusOr<Stream*> stream();
  // Runs `fn` on the host: at once when inline, else as a host callback on
  // stream() (so after the work enqueued before it). `fn` must capture by
  // value: it may run after the kernel returns.
  template <typename Fn>
  absl::Status RunOnHost(Fn&& fn) {
    if (run_.stream == nullptr) return std::forward<Fn>(fn)();  // Inline: no closure on the heap.
    return EnqueueOnHost(absl::AnyInvocable<absl::Status() &&>(std::forward<Fn>(fn)));
  }
  // Scratch memory of `bytes` on this device (kTempSpace), released in
  // stream order after the kernel's work. Any number per call.
  absl::StatusOr<TensorArg> Temp(const Shape& shape, DType dtype);
  // The device's random generator, seeded (kRandom).
  absl::StatusOr<RngSupport*> rng();

 private:
  friend class OpRunner;
  OpContext() = default;
  absl::Status EnqueueOnHost(absl::AnyInvocable<absl::Status() &&> fn);
  const OpDef* op_ = nullptr;
  const void* params_ = nullptr;
  absl::Span<const TensorArg> in_;
  absl::Span<const TensorArg> out_;
  absl::Span<const OpReqType> req_;
  engine::RunContext run_;
  StreamExecutor* executor_ = nullptr;
  bool is_train_ = true;
  Stream* inline_stream_ = nullptr;  // The CPU context's stream, once used.
  std::vector<StorageBlock>* temps_ = nullptr;
};

// A kernel: enqueues (or, inline, runs) the op on one device.
using KernelFn = absl::Status (*)(OpContext& ctx);

// A kernel and what it handles.
struct KernelDef {
  KernelFn fn = nullptr;
  uint32_t reqs = kWriteReqs;  // Write requests it honours itself.
  uint32_t dtypes = 0;         // Input types it handles; 0: every type the op accepts.
};

// What shape and type inference see.
struct InferContext {
  const void* params = nullptr;
  absl::Span<const Shape> in_shapes;
  absl::Span<const DType> in_types;
  template <typename P>
  const P& p() const {
    return *static_cast<const P*>(params);
  }
};
using InferShapeFn = absl::Status (*)(const InferContext& ctx, std::vector<Shape>* out);
using InferTypeFn = absl::Status (*)(const InferContext& ctx, std::vector<DType>* out);

// The forward call a gradient sees, and the gradients of its outputs.
struct GradientContext {
  const void* params = nullptr;
  absl::Span<const Tensor> inputs;
  absl::Span<const Tensor> outputs;
  absl::Span<const Tensor> out_grads;
  template <typename P>
  const P& p() const {
    return *static_cast<const P*>(params);
  }
};
// Returns one gradient per input (undefined where none flows), computed
// with ops (typically the op's backward ops).
using GradientFn = absl::StatusOr<std::vector<Tensor>> (*)(const GradientContext& ctx);

// The gradient of a piecewise-constant op (argmax, comparisons): none flows
// to any input, so such an op may sit on a differentiated path (an accuracy
// output beside the loss) without stopping autodiff.
absl::StatusOr<std::vector<Tensor>> NoGradient(const GradientContext& ctx);

// An op's declaration, made once; kernels come separately, each with what
// it needs of a device (ops/op_registry.h).
//
//   OpDef def("relu");
//   def.set_inputs({"x"}).set_infer_shape(SameShape).set_inplace({{0, 0}})
//      .set_gradient(ReluGradient);
class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  // -1 inputs: variadic (at least one).
  int num_inputs() const { return num_inputs_; }
  int num_outputs() const { return num_outputs_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const ParamSchema& params() const { return params_; }
  InferShapeFn infer_shape() const { return infer_shape_; }
  InferTypeFn infer_type() const { return infer_type_; }
  uint32_t dtypes() const { return dtypes_; }
  const std::vector<std::pair<int, int>>& inplace() const { return inplace_; }
  const std::vector<ResourceKind>& resources() const { return resources_; }
  GradientFn gradient() const { return gradient_; }
  bool NeedsResource(ResourceKind kind) const;

  OpDef& set_inputs(std::vector<std::string> names) {
    num_inputs_ = static_cast<int>(names.size());
    input_names_ = std::move(names);
    return *this;
  }
  OpDef& set_variadic_inputs() {
    num_inputs_ = -1;
    return *this;
  }
  // No inputs (fill, arange, random): Invoke takes the context from options.
  OpDef& set_no_inputs() {
    num_inputs_ = 0;
    input_names_.clear();
    return *this;
  }
  OpDef& set_num_outputs(int n) {
    num_outputs_ = n;
    return *this;
  }
  OpDef& set_params(ParamSchema schema) {
    params_ = std::move(schema);
    return *this;
  }
  OpDef& set_infer_shape(InferShapeFn fn) {
    infer_shape_ = fn;
    return *this;
  }
  // Default: every input has the same type, and every output has it.
  OpDef& set_infer_type(InferTypeFn fn) {
    infer_type_ = fn;
    return *this;
  }
  // Input types the op accepts (DTypeBit mask); default f32 and f64.
  OpDef& set_dtypes(uint32_t mask) {
    dtypes_ = mask;
    return *this;
  }
  // (input, output) pairs that may share storage (MXNet's FInplaceOption):
  // every kernel of the op reads element k of the input only before it
  // writes element k of the output and no other, so the output may be
  // written over the input. Invoke runs a pair in place only when the
  // output covers exactly the input's bytes; an undeclared pair, or any
  // partial overlap, goes through temp space (ops/invoke.h). Default: none.
  OpDef& set_inplace(std::vector<std::pair<int, int>> pairs) {
    inplace_ = std::move(pairs);
    return *this;
  }
  OpDef& set_resources(std::vector<ResourceKind> r) {
    resources_ = std::move(r);
    return *this;
  }
  OpDef& set_gradient(GradientFn fn) {
    gradient_ = fn;
    return *this;
  }

 private:
  std::string name_;
  int num_inputs_ = 1;
  int num_outputs_ = 1;
  std::vector<std::string> input_names_{"x"};
  ParamSchema params_;
  InferShapeFn infer_shape_ = nullptr;
  InferTypeFn infer_type_ = nullptr;
  uint32_t dtypes_ = kFloatTypes;
  std::vector<std::pair<int, int>> inplace_;
  std::vector<ResourceKind> resources_;
  GradientFn gradient_ = nullptr;
  friend class OpRegistry;
  void* registry_entry_ = nullptr;  // Set by OpRegistry::Register: its kernels.
};

// Common inference functions.
absl::Status SameShapeAsInput0(const InferContext& ctx, std::vector<Shape>* out);
absl::Status SameTypeAsInputs(const InferContext& ctx, std::vector<DType>* out);

}  // namespace rill::ops

#endif  // RILL_OPS_OP_H_
