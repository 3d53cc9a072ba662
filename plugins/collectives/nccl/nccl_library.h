#ifndef RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_LIBRARY_H_
#define RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_LIBRARY_H_

// rill:internal -- libnccl, loaded at run time (dlopen) by the "nccl"
// collectives plugin (nccl_collectives.h).
//
// NCCL is loaded rather than linked so that the plugin archive links no
// library of its own: the installed package needs no NCCL to link, and a
// program built with the plugin runs (its CUDA executors then have no
// collectives plugin, with the reason) where libnccl is missing. nccl.h
// gives the types only.

#include <nccl.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rill::nccl_collectives {

// The NCCL entry points the plugin calls.
struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  int version_code = 0;  // ncclGetVersion: major * 10000 + minor * 100 + patch.
};

// The process's NCCL, loaded on first call ("libnccl.so.2", then the
// library found when Rill was configured); Unavailable naming what was
// tried and dlerror() when it cannot be loaded or lacks an entry point.
absl::StatusOr<const NcclApi*> LoadNccl();

// "NCCL 2.28.9", or "NCCL (not loadable: ...)".
std::string LibraryVersion();

// OK for ncclSuccess. Otherwise "NCCL: <call> failed: <ncclGetErrorString>:
// <ncclGetLastError(comm)>", with the canonical code that fits:
// InvalidArgument for ncclInvalidArgument / ncclInvalidUsage; Unavailable
// for ncclRemoteError and ncclSystemError (a peer or the network) and for a
// CUDA error that says there is no usable device or driver;
// ResourceExhausted for a CUDA out-of-memory; Internal otherwise.
absl::Status NcclStatus(const NcclApi& api, ncclResult_t result, absl::string_view call,
                        ncclComm_t comm = nullptr);

}  // namespace rill::nccl_collectives

#endif  // RILL_PLUGINS_COLLECTIVES_NCCL_NCCL_LIBRARY_H_
