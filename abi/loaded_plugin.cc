#include "rill/abi/loaded_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/logging.h"
#include "rill/base/mutex.h"
#include "rill/stream/stream_status.h"

// The error object of rill_plugin.h. Made and destroyed by the host table
// only, whichever side returns it.
struct RillError {
  RillCode code;
  std::string message;
};

namespace rill::abi {
namespace {

// What error_new returns when there is no memory for the error itself (the
// ABI promises an error, never NULL); never destroyed.
RillError* OutOfMemoryError() {
  static RillError* error =
      new RillError{RILL_CODE_RESOURCE_EXHAUSTED, "out of memory (making a plugin's error)"};
  return error;
}

RillError* ErrorNew(RillCode code, const char* message) {
  try {
    return new RillError{code, message ? message : ""};
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError();
  }
}
void ErrorDestroy(RillError* error) {
  if (error != OutOfMemoryError()) delete error;
}
RillCode ErrorCode(const RillError* error) { return error ? error->code : RILL_CODE_OK; }
const char* ErrorMessage(const RillError* error) { return error ? error->message.c_str() : ""; }

void Log(RillLogLevel level, const char* message) {
  const char* text = message ? message : "";
  switch (level) {
    case RILL_LOG_ERROR:
      RILL_LOG(ERROR) << "plugin: " << text;
      break;
    case RILL_LOG_WARNING:
      RILL_LOG(WARNING) << "plugin: " << text;
      break;
    default:
      RILL_LOG(INFO) << "plugin: " << text;
  }
}

void* HostAlloc(size_t size, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (alignment > 4096 || (alignment & (alignment - 1)) != 0) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? 1 : size) != 0) return nullptr;
  return p;
}
void HostFree(void* ptr) { std::free(ptr); }

const StreamStatus* FromC(const RillStreamStatus* status) {
  return reinterpret_cast<const StreamStatus*>(status);
}
bool StreamOk(const RillStreamStatus* status) { return status && FromC(status)->queue_ok(); }
void StreamFail(RillStreamStatus* status, RillError* error) {
  absl::Status s = TakeError(error);
  if (status == nullptr) return;
  if (s.ok()) s = absl::UnknownError("plugin reported a stream failure without an error");
  reinterpret_cast<StreamStatus*>(status)->Update(s);
}
RillError* StreamError(const RillStreamStatus* status) {
  if (status == nullptr) return nullptr;
  return NewError(FromC(status)->QueueGet());
}

constexpr RillHostApi kHostApi = {
    sizeof(RillHostApi),
    nullptr,
    RILL_PLUGIN_ABI_MAJOR,
    RILL_PLUGIN_ABI_MINOR,
    &ErrorNew,
    &ErrorDestroy,
    &ErrorCode,
    &ErrorMessage,
    &Log,
    &HostAlloc,
    &HostFree,
    &StreamOk,
    &StreamFail,
    &StreamError,
};

// Copies a plugin's table of type T into `out` (zero-filled, this Rill's
// size), reading no more than the plugin declared. `min_size` is what the
// oldest accepted minor had up to its last mandatory field.
template <typename T>
void CopyTable(const T* in, const char* type, size_t min_size, T* out,
               std::vector<std::string>* problems) {
  std::memset(out, 0, sizeof(T));
  if (in->struct_size < min_size) {
    problems->push_back(
        absl::StrCat(type, " is ", in->struct_size, " bytes, at least ", min_size,
                     " expected (its struct_size is wrong, or it predates ABI 1.0)"));
    return;
  }
  std::memcpy(static_cast<void*>(out), in, std::min(in->struct_size, sizeof(T)));
  out->struct_size = in->struct_size;
}

std::string Str(const char* s) { return s ? s : ""; }

// Whether `minor` predates what this Rill loads (never, while the minimum
// is 0: the comparison is written so that it compiles without a warning).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
bool MinorTooOld(uint32_t minor) { return minor < RILL_PLUGIN_ABI_MIN_MINOR; }
#pragma GCC diagnostic pop

}  // namespace

const RillHostApi* HostApi() { return &kHostApi; }

absl::Status TakeError(RillError* error) {
  if (error == nullptr) return absl::OkStatus();
  int code = error->code;
  std::string message = error->message;
  ErrorDestroy(error);
  if (code <= 0 || code > 16) {
    return absl::UnknownError(absl::StrCat(message, " (plugin error code ", code, ")"));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

RillError* NewError(const absl::Status& status) {
  if (status.ok()) return nullptr;
  return ErrorNew(static_cast<RillCode>(status.code()), std::string(status.message()).c_str());
}

PlatformId PluginPlatformId(const std::string& name) {
  static Mutex* mu = new Mutex;
  static auto* ids = new std::map<std::string, std::unique_ptr<PlatformIdInfo>>;
  MutexLock lock(mu);
  auto& slot = (*ids)[name];
  if (slot == nullptr) {
    // The name's storage is the map key's, stable for the process's life.
    auto it = ids->find(name);
    slot = std::make_unique<PlatformIdInfo>(PlatformIdInfo{it->first.c_str()});
  }
  return slot.get();
}

namespace {
// The plugins open in this process, by dlopen handle: a shared object is
// initialized once, whichever path or manager asks for it again.
Mutex& OpenMutex() {
  static Mutex* mu = new Mutex;
  return *mu;
}
std::map<void*, std::weak_ptr<LoadedPlugin>>& OpenPlugins()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(OpenMutex()) {
  static auto* open = new std::map<void*, std::weak_ptr<LoadedPlugin>>;
  return *open;
}
}  // namespace

absl::StatusOr<std::shared_ptr<LoadedPlugin>> LoadedPlugin::Open(const std::string& path) {
  std::error_code ec;
  // Absolute, so that dlopen opens this file and does not search the
  // library path for a name without a slash.
  const std::string file = std::filesystem::absolute(path, ec).string();
  if (ec || !std::filesystem::is_regular_file(file, ec)) {
    return absl::NotFoundError(absl::StrCat("plugin ", path, ": no such file"));
  }
  MutexLock lock(&OpenMutex());
  if (void* open = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    dlclose(open);  // The count RTLD_NOLOAD took.
    auto it = OpenPlugins().find(open);
    if (it != OpenPlugins().end()) {
      if (std::shared_ptr<LoadedPlugin> live = it->second.lock()) return live;
    }
  }
  dlerror();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin ", path, ": cannot load it as a shared object: ", why ? why : "dlopen failed"));
  }
  std::shared_ptr<LoadedPlugin> plugin(new LoadedPlugin);
  plugin->path_ = path;
  plugin->handle_ = handle;  // Closed by the destructor from here on.
  dlerror();
  void* entry = dlsym(handle, RILL_PLUGIN_ENTRY_NAME);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "plugin ", path, ": no entry symbol ", RILL_PLUGIN_ENTRY_NAME,
        ": not a Rill plugin (a plugin exports it; nm -D ", path, " lists what the file exports)"));
  }
  RillPluginInitArgs args{};
  args.struct_size = sizeof(args);
  args.host_abi_major = RILL_PLUGIN_ABI_MAJOR;
  args.host_abi_minor = RILL_PLUGIN_ABI_MINOR;
  args.host = &kHostApi;
  args.path = path.c_str();
  const RillPlugin* table = reinterpret_cast<RillPluginInitFn>(entry)(&args);
  if (table == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("plugin ", path, ": ", RILL_PLUGIN_ENTRY_NAME,
                     " returned NULL: the plugin refused to start with this Rill (plugin ABI ",
                     RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MINOR,
                     "); its log lines (RILL_LOG_LEVEL=0) may say why"));
  }
  absl::Status valid = plugin->Validate(*table);
  if (!valid.ok()) {
    // Initialized: let it clean up before the file is closed (when its
    // table is laid out as this Rill's).
    if (plugin->abi_major_ == RILL_PLUGIN_ABI_MAJOR &&
        table->struct_size >= RILL_STRUCT_SIZE(RillPlugin, shutdown)) {
      plugin->shutdown_ = table->shutdown;
    }
    return valid;
  }
  OpenPlugins()[handle] = plugin;
  return plugin;
}

absl::Status LoadedPlugin::Validate(const RillPlugin& table) {
  const std::string who = absl::StrCat("plugin ", path_);
  if (table.struct_size < RILL_STRUCT_SIZE(RillPlugin, dnn)) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, ": its RillPlugin is ", table.struct_size, " bytes, at least ",
                     RILL_STRUCT_SIZE(RillPlugin, dnn), " expected: rebuild it against ",
                     "rill/abi/rill_plugin.h and set struct_size with RILL_STRUCT_SIZE"));
  }
  abi_major_ = table.abi_major;
  abi_minor_ = table.abi_minor;
  if (abi_major_ != RILL_PLUGIN_ABI_MAJOR || MinorTooOld(abi_minor_)) {
    // Only the sizes and versions are laid out alike across majors.
    return absl::FailedPreconditionError(absl::StrCat(
        who, " was built for Rill plugin ABI ", abi_major_, ".", abi_minor_,
        "; this Rill speaks ABI ", RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MINOR, " and loads ",
        RILL_PLUGIN_ABI_MAJOR, ".", RILL_PLUGIN_ABI_MIN_MINOR,
        " and later minors of it: rebuild the plugin against this ",
        "Rill's rill/abi/rill_plugin.h, or run it with a Rill of ABI major ", abi_major_));
  }
  name_ = Str(table.name);
  version_ = Str(table.version);
  shutdown_ =
      table.struct_size >= RILL_STRUCT_SIZE(RillPlugin, shutdown) ? table.shutdown : nullptr;
  std::vector<std::string> problems;
  std::vector<std::string> missing;
  auto need = [&missing](const void* field, const char* name) {
    if (field == nullptr) missing.push_back(name);
  };
  // A mandatory entry of a copied table: NEED(stream_, RillStreamFns, memset32).
#define NEED(table, type, field) need(reinterpret_cast<const void*>(table.field), #type "." #field)
  const bool any_backend_table = table.platform || table.executor || table.stream || table.event;
  if (any_backend_table) {
    need(table.platform, "RillPlugin.platform");
    need(table.executor, "RillPlugin.executor");
    need(table.stream, "RillPlugin.stream");
    need(table.event, "RillPlugin.event");
  }
  if (table.platform && table.executor && table.stream && table.event) {
    has_platform_ = true;
    CopyTable(table.platform, "RillPlatformFns",
              RILL_STRUCT_SIZE(RillPlatformFns, executor_destroy), &platform_, &problems);
    CopyTable(table.executor, "RillExecutorFns", RILL_STRUCT_SIZE(RillExecutorFns, event_destroy),
              &executor_, &problems);
    CopyTable(table.stream, "RillStreamFns", RILL_STRUCT_SIZE(RillStreamFns, block_until_done),
              &stream_, &problems);
    CopyTable(table.event, "RillEventFns", RILL_STRUCT_SIZE(RillEventFns, synchronize), &event_,
              &problems);
    if (problems.empty()) {
      platform_name_ = Str(platform_.name);
      if (platform_name_.empty()) missing.push_back("RillPlatformFns.name");
      NEED(platform_, RillPlatformFns, device_count);
      NEED(platform_, RillPlatformFns, describe);
      NEED(platform_, RillPlatformFns, executor_create);
      NEED(platform_, RillPlatformFns, executor_destroy);
      NEED(executor_, RillExecutorFns, allocate);
      NEED(executor_, RillExecutorFns, deallocate);
      NEED(executor_, RillExecutorFns, memcpy_host_to_device);
      NEED(executor_, RillExecutorFns, memcpy_device_to_host);
      NEED(executor_, RillExecutorFns, synchronize_all);
      NEED(executor_, RillExecutorFns, stream_create);
      NEED(executor_, RillExecutorFns, stream_destroy);
      NEED(executor_, RillExecutorFns, event_create);
      NEED(executor_, RillExecutorFns, event_destroy);
      if ((executor_.kernel_load == nullptr) != (executor_.kernel_destroy == nullptr)) {
        missing.push_back("RillExecutorFns.kernel_load and kernel_destroy (both or neither)");
      }
      if ((executor_.host_memory_allocate == nullptr) !=
          (executor_.host_memory_deallocate == nullptr)) {
        missing.push_back(
            "RillExecutorFns.host_memory_allocate and host_memory_deallocate (both or neither)");
      }
      NEED(stream_, RillStreamFns, memcpy_host_to_device);
      NEED(stream_, RillStreamFns, memcpy_device_to_host);
      NEED(stream_, RillStreamFns, memset32);
      NEED(stream_, RillStreamFns, record_event);
      NEED(stream_, RillStreamFns, wait_event);
      NEED(stream_, RillStreamFns, host_callback);
      NEED(stream_, RillStreamFns, block_until_done);
      NEED(event_, RillEventFns, poll);
      NEED(event_, RillEventFns, synchronize);
    }
  }
  if (table.blas) {
    has_blas_ = true;
    CopyTable(table.blas, "RillBlasFns", RILL_STRUCT_SIZE(RillBlasFns, gemm), &blas_, &problems);
    blas_name_ = Str(blas_.name);
    if (problems.empty()) {
      if (blas_name_.empty()) missing.push_back("RillBlasFns.name");
      NEED(blas_, RillBlasFns, gemm);
    }
  }
  if (table.dnn) {
    has_dnn_ = true;
    CopyTable(table.dnn, "RillDnnFns", RILL_STRUCT_SIZE(RillDnnFns, conv_forward), &dnn_,
              &problems);
    dnn_name_ = Str(dnn_.name);
    if (problems.empty()) {
      if (dnn_name_.empty()) missing.push_back("RillDnnFns.name");
      NEED(dnn_, RillDnnFns, conv_forward);
    }
  }
  for (const auto* lib : {has_blas_ ? &blas_.target : nullptr, has_dnn_ ? &dnn_.target : nullptr}) {
    if (lib && *lib == RILL_LIBRARY_OWN_PLATFORM && !has_platform_) {
      problems.push_back(
          "a library targets RILL_LIBRARY_OWN_PLATFORM but the plugin has no platform");
    }
    if (lib && *lib != RILL_LIBRARY_OWN_PLATFORM && *lib != RILL_LIBRARY_HOST_MEMORY) {
      problems.push_back(absl::StrCat("a library has the unknown target ", static_cast<int>(*lib)));
    }
  }
#undef NEED
  if (!missing.empty()) {
    problems.insert(problems.begin(),
                    absl::StrCat("missing mandatory entries: ", absl::StrJoin(missing, ", ")));
  }
  if (!has_platform_ && !has_blas_ && !has_dnn_ && problems.empty()) {
    problems.push_back("it provides nothing (no platform, BLAS or DNN table)");
  }
  if (!problems.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        who, " (", name_.empty() ? "unnamed" : name_, ", ABI ", abi_major_, ".", abi_minor_,
        "): ", absl::StrJoin(problems, "; "), ". Fix the plugin (see rill/abi/rill_plugin.h)"));
  }
  return absl::OkStatus();
}

LoadedPlugin::~LoadedPlugin() {
  if (shutdown_) shutdown_();
  if (handle_ && std::getenv("RILL_PLUGIN_NO_DLCLOSE") == nullptr) dlclose(handle_);
}

std::vector<std::string> LoadedPlugin::Provides() const {
  std::vector<std::string> out;
  if (has_platform_) out.push_back("platform " + platform_name_);
  if (has_blas_) out.push_back("blas " + blas_name_);
  if (has_dnn_) out.push_back("dnn " + dnn_name_);
  return out;
}

}  // namespace rill::abi
