#ifndef RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COLLECTIVES_H_
#define RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COLLECTIVES_H_

#include <memory>
#include <string>

#include "rill/plugins/collectives/collectives.h"

namespace rill {

// The "nccl" collectives plugin, the default on the CUDA platform:
// communicators of one CUDA device per process (this executor's), whose
// collectives NCCL runs on the executor's streams on device memory
// (nccl_communicator.h: order, completion, watchdog).
//
//   // Every process, one GPU each, launched by mpirun:
//   RILL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> world,
//                         host->AsCollectives()->NewCommunicator({}));  // "mpi"
//   CommunicatorOptions o;
//   o.bootstrap = world.get();  // Exchanges the NCCL unique id.
//   RILL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> nccl,
//                         gpu->AsCollectives()->NewCommunicator(o));
//   stream->ThenAllReduce(nccl.get(), grad, &grad, n, ReduceOp::kAverage);
//
// libnccl is loaded at run time (libnccl.so.2); without it the plugin
// cannot be created and says why. Environment: RILL_COLLECTIVE_TIMEOUT and
// RILL_COLLECTIVE_STALL (seconds), and NCCL's own (NCCL_DEBUG=WARN prints
// NCCL's diagnostics, on stdout).
class NcclCollectives final : public CollectivesSupport {
 public:
  static constexpr char kName[] = "nccl";
  // InvalidArgument unless `executor` is a CUDA executor; Unavailable when
  // libnccl cannot be loaded.
  static absl::StatusOr<std::unique_ptr<NcclCollectives>> Create(StreamExecutor* executor);

  std::string Name() const override { return kName; }
  std::string Version() const override;  // "NCCL 2.28.9"
  // Collective over the ranks of `options.bootstrap`, which is required
  // (InvalidArgument without one): a host-memory communicator such as the
  // host executor's "mpi" one. Every rank must make the same calls in the
  // same order.
  absl::StatusOr<std::shared_ptr<Communicator>> NewCommunicator(
      const CommunicatorOptions& options) override;
  // `comm` must be an "nccl" communicator of this executor's device.
  absl::Status Run(Stream* stream, Communicator* comm, const CollectiveArgs& args) override;

 private:
  NcclCollectives(StreamExecutor* executor, int ordinal)
      : CollectivesSupport(executor), ordinal_(ordinal) {}

  const int ordinal_;
};

}  // namespace rill

#endif  // RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_COLLECTIVES_H_
