#ifndef RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_
#define RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_

// rill:internal -- the "nccl" plugin's communicator (nccl_collectives.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rill/plugins/collectives/collectives.h"

namespace rill::nccl_collectives {

// One NCCL communicator (a nonblocking ncclComm_t) of one CUDA device per
// process, made over the ranks of a host bootstrap communicator (MPI).
//
// Order: collectives are enqueued on their streams in sequence order,
// however their Issue calls arrive: an Issue whose number is not the next
// one waits in a map, and the caller that completes the prefix enqueues
// every collective of it (one caller at a time; none waits for another's
// number). NCCL then runs them in that order on every rank.
//
// Completion: after each collective the communicator records an event and
// launches a host function on the same stream; `done` is called on the
// communicator's monitor thread once the device has finished it.
//
// Time: the monitor thread polls ncclCommGetAsyncError and the events. A
// collective running on the device longer than `stall_warning` logs a
// warning, longer than `timeout` fails with DeadlineExceeded: the
// communicator is aborted (ncclCommAbort, which ends the stuck kernels) and
// failed for good (health()), and every collective in flight or waiting
// fails with that error. So does a collective waiting past `timeout` for a
// lower number that this process never issued. NCCL cannot say which peer
// is missing, so the messages do not name one.
//
// Arguments are checked when issued; a refused collective (bad arguments,
// a stream of another device) fails the communicator, as the other ranks
// will run it. There is no order check across ranks (check_order is
// ignored): ranks that issue different collectives hang until `timeout`.
class NcclCommunicator final : public Communicator {
 public:
  // Collective over the ranks of `options.bootstrap` (a host-memory
  // communicator, e.g. "mpi"; required): one rank per process, on CUDA
  // device `ordinal`. Rank 0 makes the NCCL unique id, which goes to every
  // rank as a broadcast on the bootstrap ("nccl unique id"); then every rank
  // joins with ncclCommInitRankConfig, bounded by `timeout`.
  static absl::StatusOr<std::shared_ptr<NcclCommunicator>> Create(
      int ordinal, const CommunicatorOptions& options);
  // Waits for the collectives in flight (aborting past `timeout`), fails
  // those never issued, then ncclCommFinalize + ncclCommDestroy (every rank
  // should destroy its communicator), or ncclCommAbort when it has failed.
  ~NcclCommunicator() override;

  std::string Name() const override { return "nccl"; }
  std::string Version() const override;
  std::vector<std::string> Devices() const override;
  std::string Algorithm() const override;
  bool HostMemory() const override { return false; }
  absl::Status health() const override;
  // wait_seconds: from Issue until enqueued (waiting for lower numbers);
  // transfer_seconds: on the device (events around the NCCL call), which
  // includes waiting there for the peers.
  CommunicatorStats stats() const override;
  uint64_t NextSequence() override { return next_seq_.fetch_add(1, std::memory_order_relaxed); }
  // `stream` must be a stream of this communicator's CUDA device. It may be
  // enqueued on from this thread or, when an earlier number is issued later,
  // from the thread that issues that one: work the caller enqueues on
  // `stream` after Issue is ordered after the collective only if `done` has
  // run (or the collective had the next number). Stream::Then* calls go
  // through Run, which keeps stream order always.
  void Issue(uint64_t seq, CollectiveArgs args, Stream* stream, CollectiveDone done) override;

  // Stream::Then*: numbers the collective and enqueues it on `stream`, so
  // that later work on `stream` runs after it, and its error fails the
  // stream (a host callback on `stream` returns it). When a lower number is
  // still unissued, the collective runs on a stream of the communicator
  // once its turn comes (after `stream`'s work so far), and `stream` waits
  // for it in a host callback. Errors in `args` or `stream` are returned
  // with no number taken.
  absl::Status Run(Stream* stream, const CollectiveArgs& args);

  int ordinal() const { return ordinal_; }
  const CommunicatorOptions& options() const { return options_; }

  struct Impl;

 private:
  NcclCommunicator(int rank, int size, int ordinal, std::unique_ptr<Impl> impl);

  std::atomic<uint64_t> next_seq_{0};
  const int ordinal_;
  CommunicatorOptions options_;
  std::unique_ptr<Impl> impl_;
};

// The unique-id exchange of Create, on its own (for tests): rank 0 of
// `bootstrap` fills `id` with `root_id` (when `root_status` is OK) and
// broadcasts it with a flag saying whether it is valid, as one broadcast of
// float x33 named "nccl unique id" through bootstrap->Issue; every rank
// waits for it at most `timeout`. Non-root ranks get FailedPrecondition when
// rank 0 had no id; rank 0 returns `root_status`.
absl::Status ExchangeUniqueId(Communicator* bootstrap, const absl::Status& root_status,
                              std::chrono::milliseconds timeout, void* id, size_t id_bytes);

}  // namespace rill::nccl_collectives

#endif  // RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_
