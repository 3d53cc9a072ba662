#include "rill/ops/invoke.h"

#include <atomic>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/base/mutex.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/ops/op_names.h"
#include "rill/ops/op_registry.h"
#include "rill/ops/op_runner.h"
#include "rill/ops/prepared.h"
#include "rill/platform/platform.h"
#include "rill/plugins/rng/rng.h"

namespace rill::ops {
namespace {

// The vars that order the random ops of one engine, one per device (by
// executor serial, never reused), kept on the engine (destroyed with it).
struct RandomVars {
  Mutex mu;
  absl::flat_hash_map<uint32_t, engine::VarHandle> vars ABSL_GUARDED_BY(mu);

  static engine::VarHandle Get(engine::Engine* engine, StreamExecutor* exec) {
    RandomVars& r =
        engine->attachments().Get<RandomVars>([] { return std::make_unique<RandomVars>(); });
    MutexLock lock(&r.mu);
    engine::VarHandle& v = r.vars[exec->serial()];
    if (v.is_null()) v = engine->NewVariable();
    return v;
  }
};

// RILL_OPS_HOST_FALLBACK=1; a value the table of settings refuses
// (base/env_settings.cc) is logged and counts as unset.
bool FallbackFromEnv() {
  static const bool on = [] {
    const absl::StatusOr<std::optional<bool>> v = EnvBool("RILL_OPS_HOST_FALLBACK");
    if (!v.ok()) {
      RILL_LOG(WARNING) << v.status().message() << "; no host fallback";
      return false;
    }
    return v->value_or(false);
  }();
  return on;
}

std::atomic<uint64_t> fallback_count{0};

// A CPU-context call writing at most this much runs on the pushing thread
// when its vars are free: below it, handing the function to a worker costs
// more than running it (bench/ops_bench: a 64-float add is ~0.1 us of work
// against ~1 us of hand-off); above it, the pusher keeps pushing while
// workers compute. RILL_OPS_RUN_HERE_BYTES overrides it (0: never).
// A value the table of settings refuses is logged and the default kept.
constexpr uint64_t kDefaultRunHereBytes = uint64_t{64} << 10;

uint64_t RunHereBytes() {
  static const uint64_t bytes = [] {
    const absl::StatusOr<std::optional<int64_t>> v = EnvInt("RILL_OPS_RUN_HERE_BYTES");
    if (!v.ok()) {
      RILL_LOG(WARNING) << v.status().message() << "; using " << kDefaultRunHereBytes;
      return kDefaultRunHereBytes;
    }
    return v->has_value() ? static_cast<uint64_t>(**v) : kDefaultRunHereBytes;
  }();
  return bytes;
}

absl::StatusOr<TensorArg> ArgOf(const Tensor& t) {
  RILL_ASSIGN_OR_RETURN(StorageBlock b, t.Storage());
  TensorArg a;
  a.block = b.memory;
  a.host_base = b.host;
  a.offset = t.byte_offset();
  a.shape = t.shape();
  a.dtype = t.dtype();
  return a;
}

std::string InputList(absl::Span<const Tensor> inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    absl::StrAppend(&s, i ? ", " : "", inputs[i].ToString());
  return s;
}

// The op on `to` with copies of the inputs, results copied back.
absl::StatusOr<std::vector<Tensor>> InvokeOnFallback(const OpDef& op,
                                                     absl::Span<const Tensor> inputs,
                                                     std::shared_ptr<const void> params,
                                                     absl::Span<const Tensor> outputs,
                                                     const InvokeOptions& options,
                                                     engine::Context from, engine::Context to) {
  NoteFallback(op, from, to);
  std::vector<Tensor> moved_in;
  for (const Tensor& t : inputs) {
    RILL_ASSIGN_OR_RETURN(Tensor h, t.CopyTo(to));
    moved_in.push_back(std::move(h));
  }
  std::vector<Tensor> moved_out;
  for (const Tensor& t : outputs) {  // kAddTo needs the current contents.
    RILL_ASSIGN_OR_RETURN(Tensor h, t.CopyTo(to));
    moved_out.push_back(std::move(h));
  }
  InvokeOptions o = options;
  o.host_fallback = false;
  if (inputs.empty() && outputs.empty()) o.context = to;
  RILL_ASSIGN_OR_RETURN(std::vector<Tensor> res, Invoke(op, moved_in, params, moved_out, o));
  if (!outputs.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) RILL_RETURN_IF_ERROR(outputs[i].CopyFrom(res[i]));
    return std::vector<Tensor>(outputs.begin(), outputs.end());
  }
  std::vector<Tensor> back;
  for (const Tensor& t : res) {
    RILL_ASSIGN_OR_RETURN(Tensor b, t.CopyTo(from));
    back.push_back(std::move(b));
  }
  return back;
}

// Whether `op` declares that output `out` may be written over input `in`
// (OpDef::set_inplace, MXNet's FInplaceOption).
bool DeclaredInplace(const OpDef& op, int in, int out) {
  for (const auto& [i, o] : op.inplace()) {
    if (i == in && o == out) return true;
  }
  return false;
}

// The aliasing of output `oi` of `op` (write request `*req`, not kNullOp)
// with the inputs and the earlier outputs (their requests `earlier`):
//   - none: `*req` as asked (kWriteInplace becomes kWriteTo);
//   - exactly an input's bytes, element for element, for a declared
//     in-place pair and a write request: kWriteInplace, the kernel writes
//     over the input;
//   - any other overlap with an input: `*through_temp`, the kernel writes
//     temp space that is copied (or added, kAddTo) into the output after it
//     (ops/op_runner.cc);
//   - any overlap with an earlier output: InvalidArgument naming both.
// Different storage is one pointer comparison per pair: nothing allocates.
absl::Status CheckAliasing(const OpDef& op, absl::Span<const Tensor> inputs,
                           absl::Span<const Tensor> outputs, absl::Span<const OpReqType> earlier,
                           int oi, OpReqType* req, bool* through_temp) {
  const Tensor& o = outputs[oi];
  for (int j = 0; j < oi; ++j) {
    if (earlier[j] == OpReqType::kNullOp) continue;
    if (outputs[j].OverlapWith(o) != StorageOverlap::kDisjoint) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op.name(), "': outputs ", j, " (", outputs[j].ViewString(), ") and ", oi, " (",
          o.ViewString(), ") overlap in storage; give each output its own bytes"));
    }
  }
  bool inplace = false;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const StorageOverlap overlap = inputs[j].OverlapWith(o);
    if (overlap == StorageOverlap::kDisjoint) continue;
    if (overlap == StorageOverlap::kSame && *req != OpReqType::kAddTo &&
        DTypeSize(inputs[j].dtype()) == DTypeSize(o.dtype()) &&
        DeclaredInplace(op, static_cast<int>(j), oi)) {
      inplace = true;
    } else {
      *through_temp = true;
    }
  }
  if (*req == OpReqType::kAddTo) return absl::OkStatus();
  *req = inplace && !*through_temp ? OpReqType::kWriteInplace : OpReqType::kWriteTo;
  return absl::OkStatus();
}

}  // namespace

// Everything Invoke and PreparedOp::Prepare share: checks, inference, the
// kernel, outputs (made into `result` when the caller gives none), and the
// resolved call in `prep`. Under an OpTrace, records the call and stops
// after making the outputs. `*no_kernel` is set when the platform has no
// kernel for the op (for the host fallback).
absl::Status PreparedOp::Resolve(const OpDef& op, absl::Span<const Tensor> inputs,
                                 std::shared_ptr<const void> params,
                                 absl::Span<const Tensor> outputs, const InvokeOptions& options,
                                 std::vector<Tensor>* result, PreparedOp* prep, bool* no_kernel,
                                 OpTrace* trace) {
  // --- Inputs: count, usable, one engine and context.
  if (op.num_inputs() >= 0 ? static_cast<int>(inputs.size()) != op.num_inputs() : inputs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.name(), "' takes ",
                     op.num_inputs() >= 0 ? absl::StrCat(op.num_inputs()) : "one or more",
                     " input(s), got ", inputs.size()));
  }
  for (size_t i = 0; i < options.reqs.size(); ++i) {
    const int r = static_cast<int>(options.reqs[i]);
    if (r < static_cast<int>(OpReqType::kNullOp) || r > static_cast<int>(OpReqType::kAddTo)) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.name(), "': write request ", r, " for output ", i,
                       " is not an OpReqType (0 null, 1 write, 2 inplace, 3 add)"));
    }
  }
  if (!op.params().empty() && params == nullptr) {
    RILL_ASSIGN_OR_RETURN(params, op.params().Parse(op.name(), {}));
  }
  absl::InlinedVector<Shape, 4> in_shapes;
  absl::InlinedVector<DType, 4> in_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    absl::Status usable = t.CheckUsable();
    if (!usable.ok()) return Annotate(usable, absl::StrCat("op '", op.name(), "' input ", i));
    if (i > 0 && (t.context() != inputs[0].context() || t.engine() != inputs[0].engine())) {
      const bool cpu_and_host =
          t.context() != inputs[0].context() && t.executor() == inputs[0].executor();
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op.name(), "': input 0 is ", inputs[0].ToString(), " but input ", i, " is ",
          t.ToString(), t.engine() != inputs[0].engine() ? " of another engine" : "",
          cpu_and_host ? " (cpu and host:0 share memory but are different contexts: cpu runs "
                         "on the engine's workers, host:0 on its streams)"
                       : "",
          "; copy it first (Tensor::CopyTo)"));
    }
    if ((op.dtypes() & DTypeBit(t.dtype())) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' does not take ",
                                                     DTypeName(t.dtype()), " (input ", i, ": ",
                                                     t.ToString(), ")"));
    }
    in_shapes.push_back(t.shape());
    in_types.push_back(t.dtype());
  }
  engine::Context ctx;
  engine::Engine* eng = nullptr;
  StreamExecutor* exec = nullptr;
  if (!inputs.empty() || !outputs.empty()) {
    const Tensor& first = inputs.empty() ? outputs[0] : inputs[0];
    RILL_RETURN_IF_ERROR(first.CheckUsable());
    ctx = first.context();
    eng = first.engine();
    exec = first.executor();
  } else {
    if (!options.context.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.name(), "' has no inputs: give InvokeOptions::context"));
    }
    ctx = *options.context;
    eng = options.engine != nullptr ? options.engine : &engine::Engine::Default();
    RILL_ASSIGN_OR_RETURN(exec, ExecutorFor(ctx, eng));
  }

  // --- Inference.
  InferContext ictx{params.get(), in_shapes, in_types};
  // Scratch reused by this thread's calls (inference functions fill
  // vectors; nothing in between re-enters Resolve).
  thread_local std::vector<DType> out_types;
  thread_local std::vector<Shape> out_shapes;
  out_types.assign(op.num_outputs(), DType::kF32);
  absl::Status s =
      op.infer_type() ? op.infer_type()(ictx, &out_types) : SameTypeAsInputs(ictx, &out_types);
  if (!s.ok()) return Annotate(s, absl::StrCat("op '", op.name(), "' (", InputList(inputs), ")"));
  out_shapes.assign(op.num_outputs(), Shape());
  s = op.infer_shape() ? op.infer_shape()(ictx, &out_shapes) : SameShapeAsInput0(ictx, &out_shapes);
  if (!s.ok()) return Annotate(s, absl::StrCat("op '", op.name(), "' (", InputList(inputs), ")"));

  if (trace != nullptr) {
    if (!outputs.empty()) {
      return absl::UnimplementedError(
          absl::StrCat("op '", op.name(), "': caller outputs cannot be traced (OpTrace)"));
    }
    OpTrace::Call call;
    call.op = &op;
    call.params = params;
    call.inputs.assign(inputs.begin(), inputs.end());
    for (int i = 0; i < op.num_outputs(); ++i) {
      RILL_ASSIGN_OR_RETURN(Tensor t,
                            TensorAccess::Empty(out_shapes[i], out_types[i], ctx, eng, exec));
      result->push_back(t);
      call.outputs.push_back(std::move(t));
    }
    trace->Record(std::move(call));
    return absl::OkStatus();
  }

  // --- Kernel.
  absl::StatusOr<KernelDef> kernel = OpRegistry::FindKernel(op, exec, in_types);
  if (!kernel.ok()) {
    *no_kernel = op.name() != "_accumulate";
    return kernel.status();
  }

  // --- Outputs: new tensors, or the caller's with their write requests.
  auto call = std::make_shared<OpCall>();
  call->op = &op;
  call->kernel = *kernel;
  call->params = std::move(params);
  call->executor = exec;
  call->is_train = options.is_train;
  if (outputs.empty()) {
    for (int i = 0; i < op.num_outputs(); ++i) {
      RILL_ASSIGN_OR_RETURN(Tensor t,
                            TensorAccess::Empty(out_shapes[i], out_types[i], ctx, eng, exec));
      result->push_back(std::move(t));
    }
    call->req.assign(op.num_outputs(), OpReqType::kWriteTo);
  } else {
    if (static_cast<int>(outputs.size()) != op.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' has ", op.num_outputs(),
                                                     " output(s), got ", outputs.size()));
    }
    if (!options.reqs.empty() && options.reqs.size() != outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "': ", options.reqs.size(),
                                                     " write requests for ", outputs.size(),
                                                     " outputs"));
    }
    for (int i = 0; i < op.num_outputs(); ++i) {
      const Tensor& o = outputs[i];
      if (absl::Status usable = o.CheckUsable(); !usable.ok()) {  // The text only on error.
        return Annotate(usable, absl::StrCat("op '", op.name(), "' output ", i));
      }
      if (o.context() != ctx || o.engine() != eng) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "': output ", i, " is ",
                                                       o.ToString(), " but the inputs are on ",
                                                       ctx.ToString()));
      }
      if (o.shape() != out_shapes[i] || o.dtype() != out_types[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("op '", op.name(), "': output ", i, " is ", o.ToString(),
                         " but the op makes ", DTypeName(out_types[i]), out_shapes[i].ToString()));
      }
      OpReqType r = options.reqs.empty() ? OpReqType::kWriteTo : options.reqs[i];
      bool through_temp = false;
      if (r != OpReqType::kNullOp) {
        RILL_RETURN_IF_ERROR(CheckAliasing(op, inputs, outputs, call->req, i, &r, &through_temp));
      }
      if (through_temp) {
        if (call->through_temp.empty()) call->through_temp.assign(op.num_outputs(), false);
        call->through_temp[i] = true;
      }
      call->req.push_back(r);
      if (result != nullptr) result->push_back(o);
    }
  }
  bool any_write = false;
  for (OpReqType r : call->req) any_write |= r != OpReqType::kNullOp;
  prep->ctx_ = ctx;
  prep->engine_ = eng;
  prep->noop_ = !any_write;
  if (!any_write) return absl::OkStatus();  // Every output is kNullOp: nothing to run.
  for (size_t i = 0; i < call->req.size(); ++i) {
    const OpReqType r = call->req[i];
    const bool via_temp = !call->through_temp.empty() && call->through_temp[i];
    if (r == OpReqType::kAddTo && ((kernel->reqs & ReqBit(r)) == 0 || via_temp)) {
      static const OpDef* acc = *OpRegistry::Global().Find(op_names::kAccumulate);
      absl::StatusOr<KernelDef> k = OpRegistry::FindKernel(*acc, exec, {out_types[0]});
      if (k.ok()) call->accumulate = k->fn;
      break;
    }
  }

  // --- Vars.
  call->in.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    RILL_ASSIGN_OR_RETURN(TensorArg a, ArgOf(t));
    call->in.push_back(std::move(a));
    prep->reads_.push_back(t.var());
  }
  const absl::Span<const Tensor> outs = outputs.empty() ? absl::MakeConstSpan(*result) : outputs;
  call->out.reserve(outs.size());
  for (const Tensor& t : outs) {
    RILL_ASSIGN_OR_RETURN(TensorArg a, ArgOf(t));
    call->out.push_back(std::move(a));
    prep->writes_.push_back(t.var());
  }
  if (op.NeedsResource(ResourceKind::kRandom)) {
    prep->writes_.push_back(RandomVars::Get(eng, exec));
  }
  if (ctx.is_host()) {
    uint64_t bytes = 0;
    for (const TensorArg& a : call->out) bytes += a.bytes();
    prep->run_here_ = bytes <= RunHereBytes();
  }
  prep->call_ = std::move(call);
  return absl::OkStatus();
}

namespace {
thread_local OpTrace* current_trace = nullptr;
}  // namespace

OpTrace::OpTrace() : previous_(current_trace) { current_trace = this; }
OpTrace::~OpTrace() { current_trace = previous_; }
OpTrace* OpTrace::Current() { return current_trace; }

const OpDef& PreparedOp::op() const { return *call_->op; }

absl::Status PreparedOp::Run(const engine::RunContext& rc) const {
  if (noop_) return absl::OkStatus();
  return OpRunner::Run(*call_, rc);
}

absl::Status PreparedOp::Push(int priority, std::string_view name) const {
  if (noop_) return absl::OkStatus();
  auto fn = [call = call_](engine::RunContext rc) { return OpRunner::Run(*call, rc); };
  const std::string_view fn_name = name.empty() ? std::string_view(call_->op->name()) : name;
  absl::Status s = run_here_
                       ? engine_->PushSyncInline(std::move(fn), ctx_, reads_, writes_,
                                                 engine::FnProperty::kNormal, priority, fn_name)
                       : engine_->PushSync(std::move(fn), ctx_, reads_, writes_,
                                           engine::FnProperty::kNormal, priority, fn_name);
  if (!s.ok()) return Annotate(s, absl::StrCat("op '", call_->op->name(), "'"));
  return absl::OkStatus();
}

absl::StatusOr<PreparedOp> PreparedOp::Prepare(const OpDef& op, absl::Span<const Tensor> inputs,
                                               std::shared_ptr<const void> params,
                                               absl::Span<const Tensor> outputs,
                                               const InvokeOptions& options) {
  if (static_cast<int>(outputs.size()) != op.num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' has ", op.num_outputs(),
                                                   " output(s); PreparedOp takes all of them, got ",
                                                   outputs.size()));
  }
  PreparedOp prep;
  std::vector<Tensor> result;
  bool no_kernel = false;
  RILL_RETURN_IF_ERROR(PreparedOp::Resolve(op, inputs, std::move(params), outputs, options, &result,
                                           &prep, &no_kernel,
                                           /*trace=*/nullptr));
  return prep;
}

absl::StatusOr<std::vector<Tensor>> Invoke(const OpDef& op, absl::Span<const Tensor> inputs,
                                           std::shared_ptr<const void> params,
                                           absl::Span<const Tensor> outputs,
                                           const InvokeOptions& options) {
  PreparedOp prep;
  std::vector<Tensor> result;
  bool no_kernel = false;
  absl::Status s = PreparedOp::Resolve(op, inputs, params, outputs, options, &result, &prep,
                                       &no_kernel, current_trace);
  if (!s.ok()) {
    if (!no_kernel) return s;
    engine::Context from = !inputs.empty()    ? inputs[0].context()
                           : !outputs.empty() ? outputs[0].context()
                                              : options.context.value_or(engine::Context::Host());
    RILL_ASSIGN_OR_RETURN(std::optional<engine::Context> to,
                          FallbackFor(from, options.host_fallback,
                                      !inputs.empty()    ? inputs[0].engine()
                                      : !outputs.empty() ? outputs[0].engine()
                                                         : options.engine));
    if (!to.has_value() || *to == from) return s;
    return InvokeOnFallback(op, inputs, std::move(params), outputs, options, from, *to);
  }
  if (current_trace != nullptr || prep.noop()) return result;
  RILL_RETURN_IF_ERROR(prep.Push(options.priority, op.name()));
  return result;
}

absl::Status InvokeInto(const OpDef& op, absl::Span<const Tensor> inputs,
                        std::shared_ptr<const void> params, absl::Span<const Tensor> outputs,
                        const InvokeOptions& options) {
  if (outputs.empty() || current_trace != nullptr) {
    return Invoke(op, inputs, std::move(params), outputs, options).status();
  }
  PreparedOp prep;
  bool no_kernel = false;
  absl::Status s = PreparedOp::Resolve(op, inputs, params, outputs, options, /*result=*/nullptr,
                                       &prep, &no_kernel, /*trace=*/nullptr);
  if (!s.ok()) {
    if (!no_kernel) return s;
    return Invoke(op, inputs, std::move(params), outputs, options).status();  // The fallback.
  }
  if (prep.noop()) return absl::OkStatus();
  return prep.Push(options.priority, op.name());
}

absl::StatusOr<std::vector<Tensor>> Invoke(std::string_view op_name,
                                           absl::Span<const Tensor> inputs, const Attrs& attrs,
                                           absl::Span<const Tensor> outputs,
                                           const InvokeOptions& options) {
  RILL_ASSIGN_OR_RETURN(const OpDef* op, OpRegistry::Global().Find(op_name));
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<const void> params, op->params().Parse(op->name(), attrs));
  return Invoke(*op, inputs, std::move(params), outputs, options);
}

absl::Status Seed(engine::Context ctx, uint64_t seed, engine::Engine* engine) {
  if (engine == nullptr) engine = &engine::Engine::Default();
  RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, ExecutorFor(ctx, engine));
  absl::StatusOr<PluginInterface*> plugin = exec->GetPlugin(PluginKind::kRng);
  if (!plugin.ok()) {
    // The random ops of a device without a generator run on its fallback:
    // seed that one.
    RILL_ASSIGN_OR_RETURN(std::optional<engine::Context> to, FallbackFor(ctx, false, engine));
    if (to.has_value() && *to != ctx) return Seed(*to, seed, engine);
    return plugin.status();
  }
  auto* rng = static_cast<RngSupport*>(*plugin);
  engine::VarHandle var = RandomVars::Get(engine, exec);
  return engine->PushSync([rng, seed](engine::RunContext) { return rng->SetSeed(seed); },
                          engine::Context::Host(), {}, {var}, engine::FnProperty::kNormal, 0,
                          "Seed");
}

absl::StatusOr<std::optional<engine::Context>> FallbackFor(engine::Context ctx, bool host_fallback,
                                                           engine::Engine* engine) {
  RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, ExecutorFor(ctx, engine));
  const std::string declared = exec->platform()->OpFallback();
  if (!declared.empty()) {
    absl::StatusOr<engine::Context> to = engine::Context::Parse(declared);
    if (!to.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("platform '", exec->platform()->Name(),
                                                     "' declares op fallback '", declared,
                                                     "': ", to.status().message()));
    }
    return std::optional<engine::Context>(*to);
  }
  if (host_fallback || FallbackFromEnv()) {
    return std::optional<engine::Context>(engine::Context::Host());
  }
  return std::optional<engine::Context>();
}

uint64_t FallbackCount() { return fallback_count.load(std::memory_order_relaxed); }

void NoteFallback(const OpDef& op, const engine::Context& from, const engine::Context& to,
                  uint64_t n, bool log) {
  fallback_count.fetch_add(n, std::memory_order_relaxed);
  if (!log) return;
  static Mutex* mu = new Mutex;
  static auto* seen = new absl::flat_hash_set<std::string>;
  const std::string key = absl::StrCat(op.name(), "@", from.ToString());
  MutexLock lock(mu);
  if (seen->insert(key).second) {
    RILL_LOG(WARNING) << "op '" << op.name() << "' has no kernel on " << from.ToString()
                      << ": running it on " << to.ToString() << " with copies (fallback)";
  }
}

const OpDef& BuiltinOp(std::string_view name) {
  absl::StatusOr<const OpDef*> op = OpRegistry::Global().Find(name);
  if (!op.ok()) {
    RILL_LOG(FATAL) << "built-in op missing: " << op.status();
  }
  return **op;
}

}  // namespace rill::ops
