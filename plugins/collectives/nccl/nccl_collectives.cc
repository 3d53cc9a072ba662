#include "rill/plugins/collectives/nccl/nccl_collectives.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_platform.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/collectives/nccl/nccl_communicator.h"
#include "rill/plugins/collectives/nccl/nccl_library.h"
#include "rill/plugins/plugin_registry.h"

namespace rill {

absl::StatusOr<std::unique_ptr<NcclCollectives>> NcclCollectives::Create(StreamExecutor* executor) {
  if (executor == nullptr) return absl::InvalidArgumentError("nccl: executor is null");
  RILL_ASSIGN_OR_RETURN(int ordinal, CudaDeviceOrdinal(executor));  // Off the cuda platform.
  RILL_RETURN_IF_ERROR(nccl_collectives::LoadNccl().status());
  return std::unique_ptr<NcclCollectives>(new NcclCollectives(executor, ordinal));
}

std::string NcclCollectives::Version() const { return nccl_collectives::LibraryVersion(); }

absl::StatusOr<std::shared_ptr<Communicator>> NcclCollectives::NewCommunicator(
    const CommunicatorOptions& options) {
  absl::StatusOr<std::shared_ptr<nccl_collectives::NcclCommunicator>> c =
      nccl_collectives::NcclCommunicator::Create(ordinal_, options);
  if (!c.ok()) return c.status();
  return std::shared_ptr<Communicator>(*std::move(c));
}

absl::Status NcclCollectives::Run(Stream* stream, Communicator* comm, const CollectiveArgs& args) {
  if (comm == nullptr) return absl::InvalidArgumentError("collectives (nccl): null communicator");
  auto* nccl = dynamic_cast<nccl_collectives::NcclCommunicator*>(comm);
  if (nccl == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collectives (nccl): the communicator is a '", comm->Name(),
        "' communicator; run it on an executor whose collectives plugin is '", comm->Name(), "'"));
  }
  if (nccl->ordinal() != ordinal_) {
    return absl::InvalidArgumentError(
        absl::StrCat("collectives (nccl): the communicator is on cuda:", nccl->ordinal(),
                     ", this executor is cuda:", ordinal_, ": use that executor's streams"));
  }
  return nccl->Run(stream, args);
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateNccl(StreamExecutor* executor) {
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<NcclCollectives> c, NcclCollectives::Create(executor));
  return std::unique_ptr<PluginInterface>(std::move(c));
}

}  // namespace

RILL_REGISTER_PLUGIN(nccl, kCudaPlatformId, PluginKind::kCollectives, NcclCollectives::kName,
                     CreateNccl, /*make_default=*/true);

}  // namespace rill
