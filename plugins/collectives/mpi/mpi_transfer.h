#ifndef RILL_PLUGINS_COLLECTIVES_MPI_MPI_TRANSFER_H_
#define RILL_PLUGINS_COLLECTIVES_MPI_MPI_TRANSFER_H_

// rill:internal -- the data movement of the "mpi" plugin's collectives: the
// MPI calls a communicator's thread makes once every rank has joined
// (mpi_communicator.h).

#include <mpi.h>

#include <string>

#include "absl/status/status.h"
#include "rill/plugins/collectives/collectives.h"

namespace rill::mpi_collectives {

// Runs `a` (checked by CheckCollectiveArgs; host memory) on `comm`, this
// process being `rank` of `size`: MPI's blocking calls, all-reduces and
// broadcasts in pieces of at most 16 MB, averages scaled after the sum.
absl::Status Transfer(const CollectiveArgs& a, MPI_Comm comm, int rank, int size);

// An Internal error naming `call` and MPI's text for `code`.
absl::Status MpiError(const std::string& call, int code);

}  // namespace rill::mpi_collectives

#endif  // RILL_PLUGINS_COLLECTIVES_MPI_MPI_TRANSFER_H_
