#ifndef RILL_PLUGINS_COLLECTIVES_COLLECTIVES_H_
#define RILL_PLUGINS_COLLECTIVES_COLLECTIVES_H_

// The collectives plugin kind: all-reduce, broadcast, all-gather,
// reduce-scatter and barrier among the ranks of a Communicator, as
// Stream::Then* calls (stream/stream.h) and, through the engine, on tensors
// (dist/collective_ops.h).
//
// A CollectivesSupport is the per-executor plugin ("mpi" on every
// host-addressable device, "nccl" on CUDA); it makes Communicators and runs
// collectives on its executor's streams. A Communicator is a group of
// `size()` ranks, one per process (MPI) or per device (NCCL), of which this
// one is `rank()`.
//
//   CollectivesSupport* c = executor->AsCollectives();  // "mpi" on host:0
//   RILL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> world,
//                         c->NewCommunicator(CommunicatorOptions{}));
//   stream->ThenAllReduce(world.get(), buf, &buf, n, ReduceOp::kSum);
//
// The rules every implementation keeps:
//   * Order. Every rank issues the same collectives in the same order. A
//     communicator numbers its collectives when they are issued
//     (NextSequence, or the Then* call) and runs them in that order, however
//     they become ready; before the data moves, the ranks compare what each
//     issued as number k (kind, element type, count, root, name), and a
//     difference is an error naming both sides, not a hang or corrupt data.
//   * Time. A collective whose peers have not all joined after
//     `stall_warning` logs a warning naming the ranks missing; after
//     `timeout` it fails with DeadlineExceeded naming them. A failed
//     communicator (timeout, mismatch, a library error) fails every later
//     collective at once with the first error: the ranks are out of step and
//     only a restart recovers.
//   * Memory. The plugin's executor's memory: host memory for "mpi", the
//     CUDA device's for "nccl". The dist layer stages other devices' tensors
//     through the host.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/plugin.h"

namespace rill {

class Stream;
class StreamExecutor;

enum class CollectiveKind { kAllReduce, kBroadcast, kAllGather, kReduceScatter, kBarrier };
// "allreduce", "broadcast", "allgather", "reducescatter", "barrier".
const char* CollectiveKindName(CollectiveKind kind);

// kAverage is the sum divided by the number of ranks.
enum class ReduceOp { kSum, kAverage, kMax, kMin };
const char* ReduceOpName(ReduceOp op);  // "sum", "average", "max", "min"

// One collective. Counts are in elements of `type`:
//   allreduce       send and recv hold `count` (recv may be send: in place)
//   broadcast       recv holds `count`; the root's send is copied (send may
//                   be recv or empty: then recv is the root's data)
//   allgather       send holds `count`, recv `count * size` (rank r's part
//                   at r * count)
//   reducescatter   send holds `count * size`, recv `count` (this rank's
//                   block of the reduction)
//   barrier         no memory, count 0
struct CollectiveArgs {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType type = DataType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  DeviceMemoryBase send, recv;
  int64_t count = 0;
  int root = 0;
  std::string name;  // For messages, the trace and mismatch reports ("bucket 3").
  // Whatever owns `send` and `recv` (tensors), held until the collective is
  // done -- for ever when a failure leaves it inside the library, which may
  // still write to them.
  std::shared_ptr<const void> keep_alive = nullptr;

  // "allreduce(sum) float x1024 'bucket 3'".
  std::string ToString() const;
  uint64_t bytes() const;  // What this rank contributes: count * element size.
};

// Checks `args` against a communicator of `size` ranks: the root in range,
// a non-negative count, buffers large enough for the kind's layout (and
// none for a barrier), sizes without overflow. InvalidArgument naming the
// value.
absl::Status CheckCollectiveArgs(const CollectiveArgs& args, int size);

struct CommunicatorOptions {
  // How long a collective may wait for its peers, and when a warning names
  // the ones missing. Zero: RILL_COLLECTIVE_TIMEOUT / RILL_COLLECTIVE_STALL
  // (seconds), else 120 s and 30 s.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds stall_warning{0};
  // Compare what each rank issued before each collective (see above).
  // Turning it off saves one small message exchange per collective and
  // leaves a mismatch undetected.
  bool check_order = true;
  // NCCL: the host communicator whose ranks exchange the NCCL unique id
  // (one rank per process); null for MPI, which starts from the launch.
  class Communicator* bootstrap = nullptr;
};

// Counters since the communicator was made.
struct CommunicatorStats {
  int64_t collectives = 0;
  uint64_t bytes = 0;           // Contributed by this rank.
  double wait_seconds = 0;      // Waiting for the peers to join (order check).
  double transfer_seconds = 0;  // Moving and reducing the data.
};

// What a collective reports when it has run: its status and where the time
// went. Called exactly once, on the communicator's thread or the stream's.
using CollectiveDone = absl::AnyInvocable<void(absl::Status) &&>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "mpi", "nccl".
  virtual std::string Name() const = 0;
  // The library and its version ("Open MPI v4.1.4", "NCCL 2.28.9").
  virtual std::string Version() const = 0;
  // The device each of this process's ranks runs on ("host:0", "cuda:1").
  virtual std::vector<std::string> Devices() const = 0;
  // How the communicator moves data, for the trace and verbose lines
  // ("mpi ob1/vader, coll tuned").
  virtual std::string Algorithm() const = 0;
  // Whether its collectives take host memory (MPI) rather than the memory
  // of Devices() (NCCL). The dist layer stages other tensors through the
  // host for a host-memory communicator.
  virtual bool HostMemory() const = 0;
  // The first error that failed the communicator; OK while it works.
  virtual absl::Status health() const = 0;
  virtual CommunicatorStats stats() const = 0;

  // Numbers the next collective. Each number must be used exactly once, by
  // Issue or by a Then* call (which takes its own).
  virtual uint64_t NextSequence() = 0;
  // Runs `args` as collective number `seq` once every lower number has
  // run, without blocking the caller, and then calls `done`. For a
  // host-memory communicator `stream` may be null; a device communicator
  // enqueues on it. Arguments are checked first (the error goes to `done`).
  virtual void Issue(uint64_t seq, CollectiveArgs args, Stream* stream, CollectiveDone done) = 0;

 protected:
  Communicator(int rank, int size) : rank_(rank), size_(size) {}

 private:
  const int rank_, size_;
};

// Resolves zeros in `options` from the environment and the defaults;
// InvalidArgument naming a variable that is not a positive number.
absl::StatusOr<CommunicatorOptions> ResolveCommunicatorOptions(CommunicatorOptions options);

// The plugin interface. Stream::ThenAllReduce etc. forward to Run.
class CollectivesSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kCollectives;

  StreamExecutor* executor() const { return executor_; }

  // A new communicator over every rank of the launch (MPI: the processes of
  // `mpirun`; one rank when the program was not launched by MPI). Making
  // one is itself collective: every rank makes the same calls in order.
  virtual absl::StatusOr<std::shared_ptr<Communicator>> NewCommunicator(
      const CommunicatorOptions& options) = 0;

  // Enqueues `args` on `stream` (of this executor) as the next collective
  // of `comm`, which must have been made by a plugin of this name: later
  // work on the stream runs after it; an error fails the stream.
  virtual absl::Status Run(Stream* stream, Communicator* comm, const CollectiveArgs& args) = 0;

 protected:
  explicit CollectivesSupport(StreamExecutor* executor) : executor_(executor) {}

 private:
  StreamExecutor* const executor_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_COLLECTIVES_COLLECTIVES_H_
