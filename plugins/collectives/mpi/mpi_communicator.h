#ifndef RILL_PLUGINS_COLLECTIVES_MPI_MPI_COMMUNICATOR_H_
#define RILL_PLUGINS_COLLECTIVES_MPI_MPI_COMMUNICATOR_H_

// rill:internal -- the "mpi" plugin's communicator (mpi_collectives.h).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rill/plugins/collectives/collectives.h"

namespace rill::mpi_collectives {

// One communicator over MPI_COMM_WORLD (two duplicates of it: one for the
// data, one for the order check), driven by one thread that runs the
// collectives in sequence order with Open MPI's blocking calls (its
// nonblocking ones measured 2-5x slower here, docs/collectives.md):
//
//   1. the order check: every rank sends its descriptor of collective k
//      (kind, type, count, root, name) to every other and receives theirs,
//      polling with a deadline -- so a rank that never joins is named after
//      `stall_warning` (a warning) and `timeout` (DeadlineExceeded), and a
//      rank that issued something else is named before any data moves;
//   2. the transfer: MPI_Allreduce etc. on the data communicator. Every rank
//      has joined, so it ends unless a peer dies during it; a monitor thread
//      fails the collective past `timeout` then and leaves the stuck thread.
//
// After an error the communicator is failed for good (health()).
class MpiCommunicator final : public Communicator {
 public:
  // Initializes MPI if no one has (MPI_THREAD_MULTIPLE requested; at least
  // MPI_THREAD_SERIALIZED needed: only this communicator's thread calls MPI
  // after start-up) and duplicates MPI_COMM_WORLD. Every rank must call it
  // in the same order (MPI_Comm_dup is collective).
  static absl::StatusOr<std::shared_ptr<MpiCommunicator>> Create(CommunicatorOptions options);
  ~MpiCommunicator() override;

  std::string Name() const override { return "mpi"; }
  std::string Version() const override;
  std::vector<std::string> Devices() const override { return {"host"}; }
  std::string Algorithm() const override;
  bool HostMemory() const override { return true; }
  absl::Status health() const override;
  CommunicatorStats stats() const override;
  uint64_t NextSequence() override { return next_seq_.fetch_add(1, std::memory_order_relaxed); }
  void Issue(uint64_t seq, CollectiveArgs args, Stream* stream, CollectiveDone done) override;

  const CommunicatorOptions& options() const { return options_; }

  struct Impl;

 private:
  MpiCommunicator(int rank, int size, std::unique_ptr<Impl> impl);

  std::atomic<uint64_t> next_seq_{0};
  CommunicatorOptions options_;
  std::unique_ptr<Impl> impl_;
};

// The MPI library's name and version ("Open MPI v4.1.4"); works before
// MPI_Init.
std::string LibraryVersion();

}  // namespace rill::mpi_collectives

#endif  // RILL_PLUGINS_COLLECTIVES_MPI_MPI_COMMUNICATOR_H_
