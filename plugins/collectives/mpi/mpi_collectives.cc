#include "rill/plugins/collectives/mpi/mpi_collectives.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rill/plugins/collectives/mpi/mpi_communicator.h"
#include "rill/plugins/host_library.h"

namespace rill {

absl::StatusOr<std::unique_ptr<MpiCollectives>> MpiCollectives::Create(StreamExecutor* executor) {
  absl::Status s = CheckHostLibraryPlatform(executor, kName);
  if (!s.ok()) return s;
  return std::unique_ptr<MpiCollectives>(new MpiCollectives(executor));
}

std::string MpiCollectives::Version() const { return mpi_collectives::LibraryVersion(); }

absl::StatusOr<std::shared_ptr<Communicator>> MpiCollectives::NewCommunicator(
    const CommunicatorOptions& options) {
  if (options.bootstrap != nullptr) {
    return absl::InvalidArgumentError(
        "collectives (mpi): an MPI communicator starts from the MPI launch; it takes no "
        "bootstrap communicator");
  }
  absl::StatusOr<std::shared_ptr<mpi_collectives::MpiCommunicator>> c =
      mpi_collectives::MpiCommunicator::Create(options);
  if (!c.ok()) return c.status();
  return std::shared_ptr<Communicator>(*std::move(c));
}

absl::Status MpiCollectives::Run(Stream* stream, Communicator* comm, const CollectiveArgs& args) {
  auto* mpi = dynamic_cast<mpi_collectives::MpiCommunicator*>(comm);
  if (mpi == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collectives (mpi): the communicator is a '", comm->Name(),
        "' communicator; run it on an executor whose collectives plugin is '", comm->Name(), "'"));
  }
  absl::Status s = CheckCollectiveArgs(args, comm->size());
  if (!s.ok()) return s;
  const uint64_t seq = mpi->NextSequence();
  return EnqueueHostWork(
      executor(), stream, kName, "AsCollectives()", [mpi, seq, args]() mutable -> absl::Status {
        std::promise<absl::Status> result;
        std::future<absl::Status> f = result.get_future();
        mpi->Issue(seq, std::move(args), nullptr,
                   [&result](absl::Status s) { result.set_value(std::move(s)); });
        return f.get();
      });
}

namespace {

absl::StatusOr<std::unique_ptr<PluginInterface>> CreateMpi(StreamExecutor* executor) {
  absl::StatusOr<std::unique_ptr<MpiCollectives>> c = MpiCollectives::Create(executor);
  if (!c.ok()) return c.status();
  return std::unique_ptr<PluginInterface>(std::move(*c));
}

}  // namespace

RILL_REGISTER_HOST_LIBRARY_PLUGIN(mpi, PluginKind::kCollectives, MpiCollectives::kName, CreateMpi,
                                  /*make_default=*/true);

}  // namespace rill
