#include "rill/dist/collective_ops.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform_manager.h"
#include "rill/stream/verbose.h"

namespace rill::dist {

namespace {

std::string ContextName(const Tensor& t) { return t.context().ToString(); }

absl::Status CheckTensor(const Tensor& t, const char* role, const Tensor* like) {
  RILL_RETURN_IF_ERROR(t.CheckUsable());
  if (t.dtype() != DType::kF32 && t.dtype() != DType::kF64) {
    return absl::InvalidArgumentError(absl::StrCat("collective: the ", role, " tensor ",
                                                   t.ToString(), " is not float32 or float64"));
  }
  if (like != nullptr) {
    if (t.dtype() != like->dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("collective: ", t.ToString(), " and ",
                                                     like->ToString(), " differ in dtype"));
    }
    if (t.engine() != like->engine()) {
      return absl::InvalidArgumentError(absl::StrCat("collective: ", t.ToString(), " and ",
                                                     like->ToString(), " belong to other engines"));
    }
  }
  return absl::OkStatus();
}

// The memory of `t` as a collective reads or writes it (allocated now if it
// was not).
absl::StatusOr<DeviceMemoryBase> MemoryOf(const Tensor& t) {
  if (t.ByteSize() == 0) return DeviceMemoryBase();
  RILL_ASSIGN_OR_RETURN(StorageBlock b, t.Storage());
  return DeviceMemoryBase(b.memory.opaque(), t.ByteSize(), b.memory.offset() + t.byte_offset());
}

// Whether `comm` can take `t`'s memory as it is; InvalidArgument when it
// can take it neither so nor through host memory.
absl::StatusOr<bool> Direct(const Communicator& comm, const Tensor& t) {
  if (t.ByteSize() == 0) return true;
  if (comm.HostMemory()) {
    RILL_ASSIGN_OR_RETURN(StorageBlock b, t.Storage());
    return b.host != nullptr;
  }
  for (const std::string& d : comm.Devices()) {
    if (d == ContextName(t)) return true;
  }
  return absl::InvalidArgumentError(absl::StrCat("collective: ", t.ToString(), " is not on the '",
                                                 comm.Name(), "' communicator's device"));
}

void Verbose(const Communicator& comm, const CollectiveArgs& a, uint64_t seq,
             const std::string& device, const absl::Status& status) {
  StreamOp op;
  op.device = device;
  op.lane = "collectives";
  op.name = CollectiveKindName(a.kind);
  op.args = absl::StrCat(a.ToString(), "; ", a.bytes(), " B; #", seq, "; rank ", comm.rank(),
                         " of ", comm.size());
  op.plugin = comm.Name();
  op.algorithm = comm.Algorithm();
  op.status = status;
  EmitVerboseLine(FormatVerboseLine("exec", op));
}

// Pushes collective `kind` from `in` into `out` (host-memory or device
// tensors `comm` takes as they are).
absl::Status PushCollective(Communicator& comm, CollectiveKind kind, const Tensor& in,
                            const Tensor& out, const CollectiveOptions& o) {
  CollectiveArgs proto;
  proto.kind = kind;
  proto.type = out.dtype() == DType::kF64 ? DataType::kDouble : DataType::kFloat;
  proto.op = o.op;
  proto.root = o.root;
  proto.name = o.name;
  proto.count = kind == CollectiveKind::kBarrier     ? 0
                : kind == CollectiveKind::kAllGather ? in.NumElements()
                                                     : out.NumElements();
  const bool same = in.OverlapWith(out) == StorageOverlap::kSame;
  std::vector<engine::VarHandle> reads, writes = {out.var()};
  if (kind != CollectiveKind::kBarrier && in.var() != out.var()) reads.push_back(in.var());
  const std::string label = absl::StrCat(proto.ToString(), " [", comm.Name(), ", ", comm.size(),
                                         " ranks, ", proto.bytes(), " B]");
  proto.keep_alive = std::make_shared<std::pair<Tensor, Tensor>>(in, out);
  const uint64_t seq = comm.NextSequence();
  // Set when the function runs: the engine skips it after an error in its
  // inputs, and the number must still be issued (refused) on this rank, or
  // every later collective would wait for it.
  auto issued = std::make_shared<std::atomic<bool>>(false);
  auto fn = [&comm, proto, in, out, same, seq, issued](engine::RunContext rc,
                                                       engine::Completion done) mutable {
    issued->store(true, std::memory_order_release);
    CollectiveArgs a = std::move(proto);
    if (a.kind != CollectiveKind::kBarrier) {
      absl::StatusOr<DeviceMemoryBase> recv = MemoryOf(out);
      absl::StatusOr<DeviceMemoryBase> send = same ? recv : MemoryOf(in);
      if (!recv.ok() || !send.ok()) {
        const absl::Status error = !recv.ok() ? recv.status() : send.status();
        a.count = -1;  // Issued refused: the peers learn this rank failed.
        comm.Issue(seq, std::move(a), nullptr, [done, error](absl::Status) { done(error); });
        return;
      }
      a.send = *send;
      a.recv = *recv;
    }
    const bool verbose = VerboseLevel() >= 1;
    std::string device = verbose ? out.context().ToString() : std::string();
    CollectiveArgs copy = verbose ? a : CollectiveArgs();
    comm.Issue(seq, std::move(a), rc.stream,
               [done, verbose, &comm, copy = std::move(copy), seq,
                device = std::move(device)](absl::Status s) {
                 if (verbose) Verbose(comm, copy, seq, device, s);
                 done(std::move(s));
               });
  };
  absl::Status pushed = out.engine()->PushAsync(std::move(fn), out.context(), reads, writes,
                                                engine::FnProperty::kAsync, o.priority, label);
  CollectiveArgs refused = proto;
  refused.count = -1;  // The peers learn this rank could not take part.
  refused.keep_alive = nullptr;
  if (!pushed.ok()) {
    comm.Issue(seq, std::move(refused), nullptr, [](absl::Status) {});
    return pushed;
  }
  // After the function -- run or skipped -- a cleanup reader issues the
  // number refused if the function never ran.
  return out.engine()->PushSync(
      [&comm, issued, seq, refused = std::move(refused)](engine::RunContext) mutable {
        if (!issued->load(std::memory_order_acquire)) {
          comm.Issue(seq, std::move(refused), nullptr, [](absl::Status) {});
        }
        return absl::OkStatus();
      },
      engine::Context::Host(), {out.var()}, {}, engine::FnProperty::kNoSkip, o.priority,
      "collective issued?");
}

// Runs `kind` on `in`/`out`, staging through host memory when `comm` takes
// host memory and a tensor is elsewhere.
absl::Status Collective(Communicator& comm, CollectiveKind kind, const Tensor& in,
                        const Tensor& out, const CollectiveOptions& o) {
  const StorageOverlap overlap = in.OverlapWith(out);
  if (overlap == StorageOverlap::kPartial) {
    // MPI and NCCL take the same buffer for both (in place) or disjoint ones.
    return absl::InvalidArgumentError(absl::StrCat(
        CollectiveKindName(kind), ": input ", in.ViewString(), " and output ", out.ViewString(),
        " overlap in part; pass the same view (in place) or disjoint ones"));
  }
  RILL_ASSIGN_OR_RETURN(bool in_direct, Direct(comm, in));
  RILL_ASSIGN_OR_RETURN(bool out_direct, Direct(comm, out));
  if (in_direct && out_direct) return PushCollective(comm, kind, in, out, o);
  const bool same = overlap == StorageOverlap::kSame;
  Tensor hin = in, hout = out;
  if (!in_direct) {
    RILL_ASSIGN_OR_RETURN(hin, in.CopyTo(engine::Context::Host()));
  }
  if (same) {
    hout = hin;
  } else if (!out_direct) {
    RILL_ASSIGN_OR_RETURN(
        hout, Tensor::Empty(out.shape(), out.dtype(), engine::Context::Host(), out.engine()));
  }
  RILL_RETURN_IF_ERROR(PushCollective(comm, kind, hin, hout, o));
  if (!out_direct) RILL_RETURN_IF_ERROR(out.CopyFrom(hout));
  return absl::OkStatus();
}

absl::Status CheckCount(const Tensor& t, int64_t want, const char* what) {
  if (t.NumElements() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("collective: ", what, " ", t.ToString(), " must hold ", want, " elements"));
}

}  // namespace

bool LaunchedByMpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<Communicator>> World(const CommunicatorOptions& options) {
  static std::mutex mu;
  static std::shared_ptr<Communicator>* world = nullptr;  // Never destroyed.
  std::lock_guard<std::mutex> l(mu);
  if (world != nullptr) return *world;
  RILL_ASSIGN_OR_RETURN(Platform * host, PlatformManager::Default().PlatformWithName("host"));
  RILL_ASSIGN_OR_RETURN(StreamExecutor * exec, host->ExecutorForDevice(0));
  absl::StatusOr<PluginInterface*> plugin = exec->GetPlugin(PluginKind::kCollectives);
  if (!plugin.ok()) {
    return absl::UnimplementedError(absl::StrCat(
        "no collectives plugin on the host (", plugin.status().message(),
        "): Rill was built without MPI; install libopenmpi-dev openmpi-bin and rebuild"));
  }
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> c,
                        static_cast<CollectivesSupport*>(*plugin)->NewCommunicator(options));
  world = new std::shared_ptr<Communicator>(std::move(c));
  return *world;
}

absl::Status AllReduce(Communicator& comm, const Tensor& in, const Tensor& out,
                       const CollectiveOptions& o) {
  RILL_RETURN_IF_ERROR(CheckTensor(in, "input", nullptr));
  RILL_RETURN_IF_ERROR(CheckTensor(out, "output", &in));
  RILL_RETURN_IF_ERROR(CheckCount(out, in.NumElements(), "the output"));
  return Collective(comm, CollectiveKind::kAllReduce, in, out, o);
}

absl::Status Broadcast(Communicator& comm, const Tensor& tensor, const CollectiveOptions& o) {
  RILL_RETURN_IF_ERROR(CheckTensor(tensor, "broadcast", nullptr));
  if (o.root < 0 || o.root >= comm.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective: broadcast root ", o.root, " is not a rank of ", comm.size()));
  }
  return Collective(comm, CollectiveKind::kBroadcast, tensor, tensor, o);
}

absl::Status AllGather(Communicator& comm, const Tensor& in, const Tensor& out,
                       const CollectiveOptions& o) {
  RILL_RETURN_IF_ERROR(CheckTensor(in, "input", nullptr));
  RILL_RETURN_IF_ERROR(CheckTensor(out, "output", &in));
  RILL_RETURN_IF_ERROR(CheckCount(out, in.NumElements() * comm.size(), "the output"));
  return Collective(comm, CollectiveKind::kAllGather, in, out, o);
}

absl::Status ReduceScatter(Communicator& comm, const Tensor& in, const Tensor& out,
                           const CollectiveOptions& o) {
  RILL_RETURN_IF_ERROR(CheckTensor(in, "input", nullptr));
  RILL_RETURN_IF_ERROR(CheckTensor(out, "output", &in));
  RILL_RETURN_IF_ERROR(CheckCount(in, out.NumElements() * comm.size(), "the input"));
  return Collective(comm, CollectiveKind::kReduceScatter, in, out, o);
}

absl::Status Barrier(Communicator& comm, const Tensor& token, const CollectiveOptions& o) {
  RILL_RETURN_IF_ERROR(token.CheckUsable());
  return PushCollective(comm, CollectiveKind::kBarrier, token, token, o);
}

}  // namespace rill::dist
