#ifndef RILL_DIST_COLLECTIVE_OPS_H_
#define RILL_DIST_COLLECTIVE_OPS_H_

// Collectives on tensors, through the engine: each call pushes one
// asynchronous engine function that reads its input tensor's var and writes
// its output's, so a collective overlaps every function that touches
// neither and waits for those that do -- MXNet's push/pull, with the
// engine's priorities. The communicator numbers the collective when it is
// pushed (program order, the same on every rank) and runs it in that order
// however the ranks' engines schedule it (plugins/collectives/collectives.h).
//
//   RILL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> world, dist::World());
//   RILL_RETURN_IF_ERROR(dist::Broadcast(*world, w, {.root = 0, .name = "w"}));
//   RILL_RETURN_IF_ERROR(dist::AllReduce(*world, grad, grad, {.op = ReduceOp::kAverage}));
//   RILL_ASSIGN_OR_RETURN(std::vector<float> g, grad.ToHost<float>());
//
// `comm` must outlive the work pushed on it. If an earlier error poisons an
// input, the engine skips the collective; this rank then issues its number
// refused, so the peers fail naming it instead of waiting.
//
// Tensors are float32 or float64. A host-memory communicator (MPI) takes
// tensors on any host-addressable device and stages the others through
// host memory (copies ordered by the engine); a device communicator (NCCL)
// takes tensors on its device. Argument errors are returned at once, with
// nothing pushed; a failure while it runs (a peer missing past the timeout,
// a mismatch across ranks) poisons the output, and reading it returns the
// error. Verbose mode (RILL_VERBOSE=1) prints a line per collective; the
// engine's trace shows each as a span named with its kind, size and
// communicator.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/plugins/collectives/collectives.h"
#include "rill/tensor/tensor.h"

namespace rill::dist {

// Whether this process was started by an MPI launcher (mpirun, mpiexec,
// srun): its environment names a rank.
bool LaunchedByMpi();

// The process's communicator over every rank of its launch, made on first
// call by the host's collectives plugin ("mpi") with `options` (later calls
// return it and ignore theirs). Unimplemented when Rill was built without
// MPI. Every rank must make this call (it is collective).
absl::StatusOr<std::shared_ptr<Communicator>> World(const CommunicatorOptions& options = {});

struct CollectiveOptions {
  ReduceOp op = ReduceOp::kSum;  // AllReduce, ReduceScatter.
  int root = 0;                  // Broadcast.
  int priority = 0;              // The engine priority (higher runs first).
  std::string name = "";         // For messages, the trace and the order check.
};

// `out` = reduction over the ranks of `in` (same shape and dtype; `out` may
// be `in`).
absl::Status AllReduce(Communicator& comm, const Tensor& in, const Tensor& out,
                       const CollectiveOptions& options = {});
// Every rank's `tensor` becomes the root's.
absl::Status Broadcast(Communicator& comm, const Tensor& tensor,
                       const CollectiveOptions& options = {});
// `out` (size() times `in`'s elements) = every rank's `in`, in rank order.
absl::Status AllGather(Communicator& comm, const Tensor& in, const Tensor& out,
                       const CollectiveOptions& options = {});
// `out` = this rank's block of the reduction of `in` (size() times `out`'s
// elements).
absl::Status ReduceScatter(Communicator& comm, const Tensor& in, const Tensor& out,
                           const CollectiveOptions& options = {});
// Written `token` (any tensor, a var to order around) after every rank has
// reached its barrier.
absl::Status Barrier(Communicator& comm, const Tensor& token,
                     const CollectiveOptions& options = {});

}  // namespace rill::dist

#endif  // RILL_DIST_COLLECTIVE_OPS_H_
