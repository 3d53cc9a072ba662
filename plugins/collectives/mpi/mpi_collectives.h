#ifndef RILL_PLUGINS_COLLECTIVES_MPI_MPI_COLLECTIVES_H_
#define RILL_PLUGINS_COLLECTIVES_MPI_MPI_COLLECTIVES_H_

#include <memory>
#include <string>

#include "rill/plugins/collectives/collectives.h"

namespace rill {

// The "mpi" collectives plugin, on every platform whose memory is host
// memory (plugins/host_library.h): communicators over the processes of an
// MPI launch (`mpirun -np N prog`), whose collectives run Open MPI's (or
// any MPI 3's) blocking calls on a thread of the communicator, after an
// order check across ranks (mpi_communicator.h). A program that was not
// launched by MPI gets a communicator of one rank.
//
// Environment: RILL_COLLECTIVE_TIMEOUT and RILL_COLLECTIVE_STALL (seconds),
// and MPI's own (docs/collectives.md: running over several machines).
class MpiCollectives final : public CollectivesSupport {
 public:
  static constexpr char kName[] = "mpi";
  static absl::StatusOr<std::unique_ptr<MpiCollectives>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override;
  // A new communicator over MPI_COMM_WORLD (MPI_Comm_dup: every rank must
  // make the same calls in the same order).
  absl::StatusOr<std::shared_ptr<Communicator>> NewCommunicator(
      const CommunicatorOptions& options) override;
  // Host memory only; `comm` must be an "mpi" communicator. The stream's
  // host thread waits for the collective (as a device stream would).
  absl::Status Run(Stream* stream, Communicator* comm, const CollectiveArgs& args) override;

 private:
  using CollectivesSupport::CollectivesSupport;
};

}  // namespace rill

#endif  // RILL_PLUGINS_COLLECTIVES_MPI_MPI_COLLECTIVES_H_
