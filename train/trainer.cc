#include "rill/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"
#include "rill/dist/collective_ops.h"
#include "rill/graph/executor.h"
#include "rill/graph/onnx/onnx_export.h"
#include "rill/io/data_iter.h"
#include "rill/ops/invoke.h"
#include "rill/ops/op_names.h"
#include "rill/ops/ops.h"
#include "rill/ops/optimizer/optimizer.h"

namespace rill::train {

namespace {

using Clock = std::chrono::steady_clock;
using TensorMap = absl::flat_hash_map<std::string, Tensor>;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The dropout seed of global device `device` at `step` (splitmix64 of the
// three): reseeding every step makes a resumed run draw what an
// uninterrupted one would.
uint64_t DropoutSeed(uint64_t seed, int64_t device, int64_t step) {
  uint64_t z = seed ^ (static_cast<uint64_t>(device) * 0x9E3779B97F4A7C15ULL) ^
               (static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double CommSeconds(const std::shared_ptr<Communicator>& c) {
  if (c == nullptr) return 0;
  const CommunicatorStats s = c->stats();
  return s.wait_seconds + s.transfer_seconds;
}

absl::StatusOr<Tensor> Zeros(const Shape& shape, DType dtype, engine::Context ctx,
                             engine::Engine* engine) {
  ops::InvokeOptions opt;
  opt.context = ctx;
  opt.engine = engine;
  RILL_ASSIGN_OR_RETURN(
      std::vector<Tensor> t,
      ops::Invoke(op_names::kZeros, {},
                  {{"shape", ops::FormatIntTuple(shape.span())}, {"dtype", DTypeName(dtype)}}, {},
                  opt));
  return t[0];
}

// One device's share of a step: its executor, inputs, parameters and
// gradients, and the epoch's running sums of loss and correct predictions.
struct Replica {
  engine::Context ctx;
  Tensor x, y;
  TensorMap params, grads;
  std::unique_ptr<graph::Executor> exec;
  Tensor loss_sum, correct_sum;
};

// An evaluation executor for one batch size, over the first device's
// parameters.
struct EvalExec {
  Tensor x, y;
  std::unique_ptr<graph::Executor> exec;
};

}  // namespace

std::string TrainOptions::ToString() const {
  std::vector<std::string> devs;
  for (const engine::Context& c : devices) devs.push_back(c.ToString());
  return absl::StrFormat("batch %d, Adam lr %g (beta1 %g, beta2 %g, eps %g), seed %d, devices %s",
                         batch_size, lr, beta1, beta2, epsilon, seed, absl::StrJoin(devs, ","));
}

struct Trainer::Impl {
  TrainOptions o;
  engine::Engine* engine = nullptr;
  std::vector<ParamSpec> specs;
  graph::Graph graph;
  std::vector<Replica> replicas;
  TensorMap mean, var;                   // Adam's state, one device
  std::unique_ptr<kvstore::KVStore> kv;  // several devices
  TensorMap kv_mean, kv_var;             // Adam's state on the reduce context
  int64_t step = 0;                      // Adam's t
  int rank = 0, world = 1;               // Of o.communicator.
  int resume_epoch = 0;                  // Where the next TrainEpoch starts.
  int64_t resume_batch = 0;
  absl::flat_hash_map<int64_t, EvalExec> eval;

  int64_t per_device() const {
    return o.batch_size / static_cast<int64_t>(o.devices.size()) / world;
  }
  absl::Status Adam(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v,
                    double rescale) const;
  absl::Status Step(const io::Batch& batch);
  absl::StatusOr<EvalExec*> EvalFor(int64_t n);
};

absl::Status Trainer::Impl::Adam(const Tensor& w, const Tensor& g, const Tensor& m, const Tensor& v,
                                 double rescale) const {
  auto p = std::make_shared<ops::AdamParams>();
  p->lr = o.lr;
  p->beta1 = o.beta1;
  p->beta2 = o.beta2;
  p->epsilon = o.epsilon;
  p->rescale_grad = rescale;
  p->t = step;
  static const ops::OpDef& adam = ops::BuiltinOp(op_names::kAdamUpdate);
  return ops::Invoke(adam, {w, g, m, v}, std::move(p), {w, m, v}).status();
}

absl::Status Trainer::Impl::Step(const io::Batch& batch) {
  const int64_t b = per_device();
  ++step;
  for (size_t k = 0; k < replicas.size(); ++k) {
    Replica& r = replicas[k];
    const int64_t device = static_cast<int64_t>(rank) * static_cast<int64_t>(replicas.size()) +
                           static_cast<int64_t>(k);
    RILL_RETURN_IF_ERROR(ops::Seed(r.ctx, DropoutSeed(o.seed, device, step), engine));
    if (replicas.size() == 1) {
      RILL_RETURN_IF_ERROR(r.x.CopyFrom(batch.data));
      RILL_RETURN_IF_ERROR(r.y.CopyFrom(batch.label));
    } else {
      const int64_t begin = static_cast<int64_t>(k) * b;
      RILL_ASSIGN_OR_RETURN(Tensor xs, batch.data.Slice(begin, begin + b));
      RILL_ASSIGN_OR_RETURN(Tensor ys, batch.label.Slice(begin, begin + b));
      RILL_RETURN_IF_ERROR(r.x.CopyFrom(xs));
      RILL_RETURN_IF_ERROR(r.y.CopyFrom(ys));
    }
    RILL_RETURN_IF_ERROR(r.exec->Forward(/*is_train=*/true));
    RILL_RETURN_IF_ERROR(ops::AddTo(r.loss_sum, r.exec->outputs()[0]));
    RILL_RETURN_IF_ERROR(ops::AddTo(r.correct_sum, r.exec->outputs()[1]));
    RILL_RETURN_IF_ERROR(r.exec->Backward());
  }
  if (kv == nullptr) {
    Replica& r = replicas[0];
    for (const ParamSpec& p : specs) {
      RILL_RETURN_IF_ERROR(Adam(r.params[p.name], r.grads[p.name], mean[p.name], var[p.name], 1.0));
    }
    return absl::OkStatus();
  }
  if (!o.overlap) {
    // Measuring: the whole backward pass first, then the communication.
    for (Replica& r : replicas)
      for (const ParamSpec& p : specs) RILL_RETURN_IF_ERROR(r.grads[p.name].WaitToRead());
  }
  // Every gradient pushed, in reverse order (the last layers' are ready
  // first), before any pull: a dist store's fusion buckets fill as the
  // pushes come and each is reduced once (a pull of a key whose bucket is
  // not full would reduce it early). Priority -i (MXNet's): the first
  // layers' pulls, which the next forward pass needs first, go first.
  for (int i = static_cast<int>(specs.size()) - 1; i >= 0; --i) {
    std::vector<Tensor> grads;
    for (Replica& r : replicas) grads.push_back(r.grads[specs[i].name]);
    RILL_RETURN_IF_ERROR(kv->Push(specs[i].name, grads, -i));
  }
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) {
    std::vector<Tensor> params;
    for (Replica& r : replicas) params.push_back(r.params[specs[i].name]);
    RILL_RETURN_IF_ERROR(kv->Pull(specs[i].name, params, -i));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalExec*> Trainer::Impl::EvalFor(int64_t n) {
  auto it = eval.find(n);
  if (it != eval.end()) return &it->second;
  const Replica& r0 = replicas[0];
  EvalExec e;
  RILL_ASSIGN_OR_RETURN(
      e.x, Tensor::Empty(Shape{n, 1, o.model.rows, o.model.cols}, DType::kF32, r0.ctx, engine));
  RILL_ASSIGN_OR_RETURN(e.y, Tensor::Empty(Shape{n}, DType::kI32, r0.ctx, engine));
  TensorMap args = r0.params;
  args["x"] = e.x;
  args["y"] = e.y;
  graph::BindOptions bo;
  bo.context = r0.ctx;
  bo.engine = engine;
  bo.bulk_size = o.bulk_size;
  RILL_ASSIGN_OR_RETURN(e.exec, graph::Executor::Bind(graph, args, {}, bo));
  return &eval.emplace(n, std::move(e)).first->second;
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(TrainOptions o) {
  if (o.devices.empty()) return absl::InvalidArgumentError("trainer: no devices");
  const int64_t world = o.communicator != nullptr ? o.communicator->size() : 1;
  const int64_t n = static_cast<int64_t>(o.devices.size()) * world;
  if (o.batch_size <= 0 || o.batch_size % n != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: batch size ", o.batch_size, " does not split evenly over ", n,
                     " device(s)", world > 1 ? absl::StrCat(" (", world, " ranks)") : ""));
  }
  if (o.curve_every < 0 || o.max_steps < 0 || o.state_every < 0) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: curve_every ", o.curve_every,
                                                   ", max_steps ", o.max_steps, ", state_every ",
                                                   o.state_every, " must not be negative"));
  }
  if (o.state_every > 0 && o.state_path.empty()) {
    return absl::InvalidArgumentError("trainer: state_every without a state_path");
  }
  if (!(o.lr > 0) || !(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1) ||
      !(o.epsilon > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: Adam needs lr > 0, beta1 and beta2 in [0, 1), eps > 0; got lr ",
                     o.lr, ", beta1 ", o.beta1, ", beta2 ", o.beta2, ", eps ", o.epsilon));
  }
  if (o.eval_batch <= 0)
    return absl::InvalidArgumentError(absl::StrCat("trainer: eval batch ", o.eval_batch));
  for (size_t i = 0; i < o.devices.size(); ++i) {  // This rank's devices (n counts every rank's).
    for (size_t j = 0; j < i; ++j) {
      if (o.devices[i] == o.devices[j]) {
        return absl::InvalidArgumentError(
            absl::StrCat("trainer: device ", o.devices[i].ToString(), " is listed twice"));
      }
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->engine = o.engine != nullptr ? o.engine : &engine::Engine::Default();
  RILL_ASSIGN_OR_RETURN(impl->specs, ConvNetParams(o.model));
  impl->graph = ConvNetTrainGraph(o.model);
  RILL_RETURN_IF_ERROR(impl->graph.status());
  impl->o = std::move(o);
  Impl& s = *impl;
  if (s.o.communicator != nullptr) {
    s.rank = s.o.communicator->rank();
    s.world = s.o.communicator->size();
  }
  const int64_t b = s.per_device();

  RILL_ASSIGN_OR_RETURN(TensorMap init,
                        InitConvNetParams(s.o.model, s.o.seed, s.o.devices[0], s.engine));
  // A resumed run: the state's parameters and Adam's, checked against the model.
  absl::flat_hash_map<std::string, const StateTensor*> saved;
  if (s.o.resume.has_value()) {
    const TrainState& st = *s.o.resume;
    if (st.model != s.o.model.ToString() || st.seed != s.o.seed) {
      return absl::InvalidArgumentError(
          absl::StrCat("trainer: the state to resume is of model '", st.model, "' seed ", st.seed,
                       ", not of model '", s.o.model.ToString(), "' seed ", s.o.seed));
    }
    for (const StateTensor& t : st.tensors) saved[t.name] = &t;
    auto take = [&](const std::string& name, const ParamSpec& p) -> absl::StatusOr<Tensor> {
      auto it = saved.find(name);
      if (it == saved.end() || Shape(it->second->shape) != p.shape) {
        return absl::InvalidArgumentError(absl::StrCat(
            "trainer: the state to resume has ",
            it == saved.end() ? "no "
                              : absl::StrCat("a ", Shape(it->second->shape).ToString(), " "),
            name, " (the model's is ", p.shape.ToString(), ")"));
      }
      return Tensor::FromHost<float>(absl::MakeConstSpan(it->second->data), p.shape, s.o.devices[0],
                                     s.engine);
    };
    for (const ParamSpec& p : s.specs) {
      RILL_ASSIGN_OR_RETURN(init[p.name], take(p.name, p));
      RILL_RETURN_IF_ERROR(take("adam.mean/" + p.name, p).status());
      RILL_RETURN_IF_ERROR(take("adam.var/" + p.name, p).status());
    }
    s.step = st.step;
    s.resume_epoch = st.epoch;
    s.resume_batch = st.next_batch;
  }
  // Adam's state of `p` on `ctx`: the resumed one, or zeros.
  auto adam_state = [&](const std::string& prefix, const ParamSpec& p,
                        engine::Context ctx) -> absl::StatusOr<Tensor> {
    auto it = saved.find(prefix + p.name);
    if (it == saved.end()) return Zeros(p.shape, DType::kF32, ctx, s.engine);
    return Tensor::FromHost<float>(absl::MakeConstSpan(it->second->data), p.shape, ctx, s.engine);
  };
  for (size_t k = 0; k < s.o.devices.size(); ++k) {
    Replica r;
    r.ctx = s.o.devices[k];
    RILL_ASSIGN_OR_RETURN(r.x, Tensor::Empty(Shape{b, 1, s.o.model.rows, s.o.model.cols},
                                             DType::kF32, r.ctx, s.engine));
    RILL_ASSIGN_OR_RETURN(r.y, Tensor::Empty(Shape{b}, DType::kI32, r.ctx, s.engine));
    for (const ParamSpec& p : s.specs) {
      if (k == 0) {
        r.params[p.name] = init[p.name];
      } else {
        RILL_ASSIGN_OR_RETURN(r.params[p.name], init[p.name].CopyTo(r.ctx));
      }
      RILL_ASSIGN_OR_RETURN(r.grads[p.name], Tensor::Empty(p.shape, DType::kF32, r.ctx, s.engine));
    }
    RILL_ASSIGN_OR_RETURN(r.loss_sum, Zeros(Shape{}, DType::kF32, r.ctx, s.engine));
    RILL_ASSIGN_OR_RETURN(r.correct_sum, Zeros(Shape{}, DType::kF32, r.ctx, s.engine));
    TensorMap args = r.params;
    args["x"] = r.x;
    args["y"] = r.y;
    graph::BindOptions bo;
    bo.context = r.ctx;
    bo.engine = s.engine;
    bo.bulk_size = s.o.bulk_size;
    absl::StatusOr<std::unique_ptr<graph::Executor>> exec =
        graph::Executor::Bind(s.graph, args, r.grads, bo);
    if (!exec.ok()) {
      return absl::Status(exec.status().code(),
                          absl::StrCat("trainer: binding the convnet on ", r.ctx.ToString(), ": ",
                                       exec.status().message()));
    }
    r.exec = *std::move(exec);
    s.replicas.push_back(std::move(r));
  }

  if (s.replicas.size() == 1 && s.o.communicator == nullptr) {
    for (const ParamSpec& p : s.specs) {
      RILL_ASSIGN_OR_RETURN(s.mean[p.name], adam_state("adam.mean/", p, s.o.devices[0]));
      RILL_ASSIGN_OR_RETURN(s.var[p.name], adam_state("adam.var/", p, s.o.devices[0]));
    }
  } else {
    kvstore::KVStoreOptions ko;
    ko.reduce_context = s.o.reduce_context.value_or(s.o.devices[0]);
    ko.engine = s.engine;
    ko.communicator = s.o.communicator;
    ko.first_bucket_bytes = s.o.first_bucket_bytes;
    ko.bucket_bytes = s.o.bucket_bytes;
    RILL_ASSIGN_OR_RETURN(
        s.kv, kvstore::KVStore::Create(s.o.communicator != nullptr ? "dist_sync" : "local", ko));
    for (const ParamSpec& p : s.specs) {
      RILL_RETURN_IF_ERROR(s.kv->Init(p.name, init[p.name]));
      RILL_ASSIGN_OR_RETURN(s.kv_mean[p.name], adam_state("adam.mean/", p, ko.reduce_context));
      RILL_ASSIGN_OR_RETURN(s.kv_var[p.name], adam_state("adam.var/", p, ko.reduce_context));
    }
    // Resumed over several ranks, rank 0's state wins: its Adam moments and
    // position (each rank read its own file; a stale one must not diverge).
    if (s.o.communicator != nullptr && s.o.resume.has_value()) {
      Communicator& comm = *s.o.communicator;
      for (const ParamSpec& p : s.specs) {
        RILL_RETURN_IF_ERROR(
            dist::Broadcast(comm, s.kv_mean[p.name], {.name = "adam.mean/" + p.name}));
        RILL_RETURN_IF_ERROR(
            dist::Broadcast(comm, s.kv_var[p.name], {.name = "adam.var/" + p.name}));
      }
      const double position[3] = {static_cast<double>(s.step), static_cast<double>(s.resume_epoch),
                                  static_cast<double>(s.resume_batch)};
      RILL_ASSIGN_OR_RETURN(Tensor t,
                            Tensor::FromHost<double>(absl::MakeConstSpan(position), Shape{3},
                                                     engine::Context::Host(), s.engine));
      RILL_RETURN_IF_ERROR(dist::Broadcast(comm, t, {.name = "resume position"}));
      RILL_ASSIGN_OR_RETURN(std::vector<double> p0, t.ToHost<double>());
      s.step = static_cast<int64_t>(p0[0]);
      s.resume_epoch = static_cast<int>(p0[1]);
      s.resume_batch = static_cast<int64_t>(p0[2]);
    }
    // A dist store starts every rank from rank 0's parameters: the devices'
    // copies are pulled from it.
    if (s.o.communicator != nullptr) {
      for (const ParamSpec& p : s.specs) {
        std::vector<Tensor> outs;
        for (Replica& r : s.replicas) outs.push_back(r.params[p.name]);
        RILL_RETURN_IF_ERROR(s.kv->Pull(p.name, outs));
      }
    }
    const double rescale = 1.0 / static_cast<double>(s.replicas.size() * s.world);
    Impl* self = &s;
    s.kv->SetUpdater(
        [self, rescale](const std::string& key, const Tensor& grad, const Tensor& stored) {
          return self->Adam(stored, grad, self->kv_mean[key], self->kv_var[key], rescale);
        });
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

absl::StatusOr<EpochResult> Trainer::TrainEpoch(const io::Dataset& data, int epoch,
                                                const ProgressFn& progress,
                                                const std::atomic<bool>* stop,
                                                double progress_seconds) {
  Impl& s = *impl_;
  // Everything is checked before anything is built or pushed.
  if (epoch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: epoch ", epoch, " is negative"));
  }
  if (data.rows != s.o.model.rows || data.cols != s.o.model.cols) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: the dataset's images are ", data.rows,
                                                   "x", data.cols, ", the model's ", s.o.model.rows,
                                                   "x", s.o.model.cols));
  }
  if (data.num_classes > s.o.model.classes) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: the dataset has ", data.num_classes,
                                                   " classes, the model ", s.o.model.classes));
  }
  if (!(progress_seconds >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: progress_seconds ", progress_seconds, " is not a duration"));
  }
  io::DataIterOptions io;
  io.batch_size = s.o.batch_size / s.world;  // This rank's share of each global batch.
  io.shard_count = s.world;
  io.shard_index = s.rank;
  io.shuffle = true;
  io.seed = s.o.seed;
  io.drop_last = true;
  io.prefetch = s.o.prefetch;
  io.context = s.replicas.size() == 1 ? s.replicas[0].ctx : engine::Context::Host();
  io.engine = s.engine;
  // The iterator lives for this call only (its destructor waits for the
  // fills it pushed), so `data` need not outlive the call.
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<io::DataIter> iter, io::DataIter::Create(&data, io));
  io::DataIter* it = iter.get();
  const int64_t first_batch = epoch == s.resume_epoch ? s.resume_batch : 0;
  RILL_RETURN_IF_ERROR(it->Reset(epoch, first_batch));
  s.resume_batch = 0;
  s.resume_epoch = epoch + 1;
  for (Replica& r : s.replicas) {
    RILL_ASSIGN_OR_RETURN(r.loss_sum, Zeros(Shape{}, DType::kF32, r.ctx, s.engine));
    RILL_ASSIGN_OR_RETURN(r.correct_sum, Zeros(Shape{}, DType::kF32, r.ctx, s.engine));
  }
  auto read_sums = [&](double* loss, double* correct) -> absl::Status {
    *loss = *correct = 0;
    for (const Replica& r : s.replicas) {
      RILL_ASSIGN_OR_RETURN(std::vector<float> l, r.loss_sum.ToHost<float>());
      RILL_ASSIGN_OR_RETURN(std::vector<float> c, r.correct_sum.ToHost<float>());
      *loss += l[0];
      *correct += c[0];
    }
    return absl::OkStatus();
  };

  EpochResult result;
  result.epoch = epoch;
  result.first_batch = first_batch;
  Progress p;
  p.epoch = epoch;
  p.batches = it->num_batches();
  p.world = s.world;
  const Clock::time_point start = Clock::now();
  const double comm_start = CommSeconds(s.o.communicator);
  double window = 0;  // Sum of the losses of the steps since the last curve point.
  int64_t in_window = 0;
  Clock::time_point last_report = start;
  // Step i-1's loss, copied aside: waiting for it keeps the host at most
  // about a step ahead of the devices.
  Tensor behind[2];
  for (Tensor& t : behind) {
    RILL_ASSIGN_OR_RETURN(t, Zeros(Shape{}, DType::kF32, s.replicas[0].ctx, s.engine));
  }
  while (true) {
    // A stop request is honoured by one process alone: with several ranks it
    // would leave the others waiting in a collective, so only max_steps
    // (the same on every rank) stops a distributed run early.
    if ((stop != nullptr && s.world == 1 && stop->load(std::memory_order_relaxed)) ||
        (s.o.max_steps > 0 && s.step >= s.o.max_steps)) {
      result.stopped = true;
      break;
    }
    RILL_ASSIGN_OR_RETURN(std::optional<io::Batch> batch, it->Next());
    if (!batch.has_value()) break;
    RILL_RETURN_IF_ERROR(s.Step(*batch));
    const int64_t i = result.batches++;
    RILL_RETURN_IF_ERROR(behind[i % 2].CopyFrom(s.replicas[0].exec->outputs()[0]));
    if (i > 0 && s.o.curve_every > 0) {
      // Step i-1's loss: waiting for it also keeps the host about one step ahead.
      RILL_ASSIGN_OR_RETURN(std::vector<float> l, behind[(i + 1) % 2].ToHost<float>());
      window += l[0];
      if (++in_window == s.o.curve_every) {
        result.steps.push_back({s.step - 1, epoch, window / static_cast<double>(in_window)});
        window = 0;
        in_window = 0;
      }
    } else if (i > 0) {
      RILL_RETURN_IF_ERROR(behind[(i + 1) % 2].WaitToRead());
    }
    if (s.o.state_every > 0 && s.step % s.o.state_every == 0) {
      const int64_t next = first_batch + result.batches;
      RILL_RETURN_IF_ERROR(next < it->num_batches() ? SaveState(s.o.state_path, epoch, next)
                                                    : SaveState(s.o.state_path, epoch + 1, 0));
    }
    if (progress && Since(last_report) >= progress_seconds) {
      double loss, correct;
      RILL_RETURN_IF_ERROR(read_sums(&loss, &correct));
      last_report = Clock::now();
      p.batch = result.batches;
      p.images = result.batches * s.o.batch_size;
      p.seconds = Since(start);
      p.loss = loss / static_cast<double>(result.batches * s.replicas.size());
      p.comm_seconds = CommSeconds(s.o.communicator) - comm_start;
      progress(p);
    }
  }
  if (s.o.communicator != nullptr) {
    // The epoch's sums over every rank (each rank stops after the same batch).
    for (Replica& r : s.replicas) {
      RILL_RETURN_IF_ERROR(
          dist::AllReduce(*s.o.communicator, r.loss_sum, r.loss_sum, {.name = "epoch loss"}));
      RILL_RETURN_IF_ERROR(dist::AllReduce(*s.o.communicator, r.correct_sum, r.correct_sum,
                                           {.name = "epoch correct"}));
    }
  }
  double loss = 0, correct = 0;
  RILL_RETURN_IF_ERROR(read_sums(&loss, &correct));
  for (const auto& [name, t] : s.replicas[0].params) RILL_RETURN_IF_ERROR(t.WaitToRead());
  result.seconds = Since(start);
  result.comm_seconds = CommSeconds(s.o.communicator) - comm_start;
  const int64_t images = result.batches * s.o.batch_size;
  result.train.examples = images;
  if (result.batches > 0) {
    result.train.loss = loss / static_cast<double>(result.batches * s.replicas.size() * s.world);
    result.train.accuracy = correct / static_cast<double>(images);
    result.images_per_second = static_cast<double>(images) / result.seconds;
  }
  // Stopped (max_steps) after the epoch's last batch: the epoch is complete.
  if (result.stopped && first_batch + result.batches >= it->num_batches()) {
    result.stopped = false;
  }
  if (result.stopped) {
    // Called again for this epoch, TrainEpoch goes on from here.
    s.resume_epoch = epoch;
    s.resume_batch = first_batch + result.batches;
  }
  if (progress) {
    p.batch = result.batches;
    p.images = images;
    p.seconds = result.seconds;
    p.loss = result.train.loss;
    p.comm_seconds = result.comm_seconds;
    p.done = true;
    progress(p);
  }
  return result;
}

absl::StatusOr<Metrics> Trainer::Evaluate(const io::Dataset& data) {
  Impl& s = *impl_;
  const engine::Context ctx = s.replicas[0].ctx;
  io::DataIterOptions io;
  io.batch_size = s.o.eval_batch;
  io.shuffle = false;
  io.prefetch = s.o.prefetch;
  io.context = ctx;
  io.engine = s.engine;
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<io::DataIter> it, io::DataIter::Create(&data, io));
  RILL_RETURN_IF_ERROR(it->Reset(0));
  RILL_ASSIGN_OR_RETURN(Tensor loss_sum, Zeros(Shape{}, DType::kF32, ctx, s.engine));
  RILL_ASSIGN_OR_RETURN(Tensor correct_sum, Zeros(Shape{}, DType::kF32, ctx, s.engine));
  Metrics m;
  while (true) {
    RILL_ASSIGN_OR_RETURN(std::optional<io::Batch> batch, it->Next());
    if (!batch.has_value()) break;
    RILL_ASSIGN_OR_RETURN(EvalExec * e, s.EvalFor(batch->size));
    RILL_RETURN_IF_ERROR(e->x.CopyFrom(batch->data));
    RILL_RETURN_IF_ERROR(e->y.CopyFrom(batch->label));
    RILL_RETURN_IF_ERROR(e->exec->Forward(/*is_train=*/false));
    RILL_ASSIGN_OR_RETURN(Tensor weighted,
                          ops::MulScalar(e->exec->outputs()[0], static_cast<double>(batch->size)));
    RILL_RETURN_IF_ERROR(ops::AddTo(loss_sum, weighted));
    RILL_RETURN_IF_ERROR(ops::AddTo(correct_sum, e->exec->outputs()[1]));
    m.examples += batch->size;
  }
  RILL_ASSIGN_OR_RETURN(std::vector<float> l, loss_sum.ToHost<float>());
  RILL_ASSIGN_OR_RETURN(std::vector<float> c, correct_sum.ToHost<float>());
  if (m.examples > 0) {
    m.loss = l[0] / static_cast<double>(m.examples);
    m.accuracy = c[0] / static_cast<double>(m.examples);
  }
  return m;
}

const absl::flat_hash_map<std::string, Tensor>& Trainer::params() const {
  return impl_->replicas[0].params;
}
const TrainOptions& Trainer::options() const { return impl_->o; }

int Trainer::resume_epoch() const { return impl_->resume_epoch; }
void Trainer::SetMaxSteps(int64_t max_steps) {
  impl_->o.max_steps = std::max<int64_t>(0, max_steps);
}
int64_t Trainer::steps() const { return impl_->step; }
int Trainer::rank() const { return impl_->rank; }
int Trainer::world_size() const { return impl_->world; }

absl::Status Trainer::SaveState(const std::string& path, int epoch, int64_t next_batch) const {
  const Impl& s = *impl_;
  if (s.rank != 0) return absl::OkStatus();
  TrainState st;
  st.seed = s.o.seed;
  st.step = s.step;
  st.epoch = epoch;
  st.next_batch = next_batch;
  st.world_size = s.world;
  st.model = s.o.model.ToString();
  auto add = [&](const std::string& name, const Tensor& t) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(std::vector<float> data, t.ToHost<float>());
    st.tensors.push_back({name,
                          std::vector<int64_t>(t.shape().span().begin(), t.shape().span().end()),
                          std::move(data)});
    return absl::OkStatus();
  };
  const TensorMap& mean = s.kv != nullptr ? s.kv_mean : s.mean;
  const TensorMap& var = s.kv != nullptr ? s.kv_var : s.var;
  for (const ParamSpec& p : s.specs) {
    RILL_RETURN_IF_ERROR(add(p.name, s.replicas[0].params.at(p.name)));
    RILL_RETURN_IF_ERROR(add("adam.mean/" + p.name, mean.at(p.name)));
    RILL_RETURN_IF_ERROR(add("adam.var/" + p.name, var.at(p.name)));
  }
  return WriteTrainState(path, st);
}

kvstore::KVStoreStats Trainer::kvstore_stats() const {
  return impl_->kv != nullptr ? impl_->kv->stats() : kvstore::KVStoreStats{};
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) const {
  graph::OnnxExportOptions eo;
  eo.graph_name = "fashion_mnist_convnet";
  eo.input_shapes = {{"x", Shape{1, 1, impl_->o.model.rows, impl_->o.model.cols}}};
  eo.dynamic_batch = true;  // any batch size
  return graph::ExportOnnxFile(ConvNetInferenceGraph(impl_->o.model), params(), path, eo);
}

}  // namespace rill::train
