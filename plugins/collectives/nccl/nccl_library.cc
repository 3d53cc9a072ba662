#include "rill/plugins/collectives/nccl/nccl_library.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rill::nccl_collectives {

namespace {

struct Loaded {
  NcclApi api;
  absl::Status status;
};

template <typename F>
bool Symbol(void* handle, const char* name, F* out, std::vector<std::string>* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) missing->push_back(name);
  return *out != nullptr;
}

Loaded* Load() {
  auto* loaded = new Loaded();
  std::vector<std::string> names = {"libnccl.so.2"};
#ifdef RILL_NCCL_LIBRARY_PATH
  names.push_back(RILL_NCCL_LIBRARY_PATH);
#endif
  void* handle = nullptr;
  std::vector<std::string> errors;
  for (const std::string& name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* e = dlerror();
    errors.push_back(e != nullptr ? e : name + ": dlopen failed");
  }
  if (handle == nullptr) {
    loaded->status = absl::UnavailableError(
        absl::StrCat("NCCL: cannot load libnccl (", absl::StrJoin(errors, "; "),
                     "); install NCCL (libnccl2) or put it on LD_LIBRARY_PATH"));
    return loaded;
  }
  NcclApi& a = loaded->api;
  std::vector<std::string> missing;
  Symbol(handle, "ncclGetVersion", &a.GetVersion, &missing);
  Symbol(handle, "ncclGetUniqueId", &a.GetUniqueId, &missing);
  Symbol(handle, "ncclCommInitRankConfig", &a.CommInitRankConfig, &missing);
  Symbol(handle, "ncclCommFinalize", &a.CommFinalize, &missing);
  Symbol(handle, "ncclCommDestroy", &a.CommDestroy, &missing);
  Symbol(handle, "ncclCommAbort", &a.CommAbort, &missing);
  Symbol(handle, "ncclCommGetAsyncError", &a.CommGetAsyncError, &missing);
  Symbol(handle, "ncclGetErrorString", &a.GetErrorString, &missing);
  Symbol(handle, "ncclGetLastError", &a.GetLastError, &missing);
  Symbol(handle, "ncclAllReduce", &a.AllReduce, &missing);
  Symbol(handle, "ncclBroadcast", &a.Broadcast, &missing);
  Symbol(handle, "ncclAllGather", &a.AllGather, &missing);
  Symbol(handle, "ncclReduceScatter", &a.ReduceScatter, &missing);
  if (!missing.empty()) {
    loaded->status = absl::UnavailableError(absl::StrCat("NCCL: the loaded libnccl lacks ",
                                                         absl::StrJoin(missing, ", "),
                                                         " (NCCL 2.14 or later is needed)"));
    return loaded;  // The handle stays open: harmless, and dlclose may not unload anyway.
  }
  if (a.GetVersion(&a.version_code) != ncclSuccess) a.version_code = 0;
  return loaded;
}

const Loaded& Get() {
  static const Loaded* loaded = Load();  // Never unloaded: used until exit.
  return *loaded;
}

}  // namespace

absl::StatusOr<const NcclApi*> LoadNccl() {
  const Loaded& l = Get();
  if (!l.status.ok()) return l.status;
  return &l.api;
}

std::string LibraryVersion() {
  absl::StatusOr<const NcclApi*> api = LoadNccl();
  if (!api.ok()) return absl::StrCat("NCCL (not loadable: ", api.status().message(), ")");
  const int v = (*api)->version_code;
  return absl::StrCat("NCCL ", v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

absl::Status NcclStatus(const NcclApi& api, ncclResult_t result, absl::string_view call,
                        ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  std::string text = api.GetErrorString != nullptr ? api.GetErrorString(result) : "";
  const char* last = api.GetLastError != nullptr ? api.GetLastError(comm) : nullptr;
  std::string detail = last != nullptr ? last : "";
  // "unhandled cuda error (run with NCCL_DEBUG=INFO for details)": the
  // advice adds nothing when the detail is there.
  const size_t advice = text.find(" (run with NCCL_DEBUG");
  if (!detail.empty() && advice != std::string::npos) text.erase(advice);
  if (text.empty()) text = absl::StrCat("ncclResult_t ", static_cast<int>(result));
  std::string message = absl::StrCat("NCCL: ", call, " failed: ", text);
  if (!detail.empty()) absl::StrAppend(&message, ": ", detail);
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(message);
    case ncclRemoteError:
    case ncclSystemError:
      return absl::UnavailableError(message);
    case ncclUnhandledCudaError:
      if (absl::StrContains(detail, "out of memory")) return absl::ResourceExhaustedError(message);
      if (absl::StrContains(detail, "driver") || absl::StrContains(detail, "no CUDA-capable"))
        return absl::UnavailableError(message);
      return absl::InternalError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace rill::nccl_collectives
