#ifndef RILL_PLUGINS_PLUGIN_REGISTRY_H_
#define RILL_PLUGINS_PLUGIN_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/platform/platform_id.h"
#include "rill/plugins/plugin.h"

namespace rill {

class StreamExecutor;

// Maps (platform, plugin kind, plugin name) to a factory that builds the
// plugin for one executor. Each (platform, kind) has a default: the first
// registered, unless a registration asks to become the default, and unless
// the environment names another (RILL_BLAS=blis, RILL_DNN=..., RILL_RNG=...,
// RILL_FFT=...: a whole-program choice) or a fallback chain of several
// (RILL_DNN=xnnpack,onednn; plugins/plugin_chain.h). StreamExecutor::SetPlugin selects
// per executor. The process default (Default()) is created on first use and
// never destroyed.
//
// Registration is a plain call, usable at any time (an integrator may
// register after start-up); RILL_REGISTER_PLUGIN is sugar over it for load
// time. Registering a name that is already registered for that platform and
// kind is harmless: the first factory stays.
//
//   PluginRegistry::Default().Register(kHostPlatformId, PluginKind::kBlas, "naive",
//       [](StreamExecutor* e) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
//         return std::make_unique<NaiveBlas>();
//       });
//   RILL_RETURN_IF_ERROR(executor->SetPlugin(PluginKind::kBlas, "naive"));
//
// Thread-safe.
class PluginRegistry {
 public:
  using Factory =
      std::function<absl::StatusOr<std::unique_ptr<PluginInterface>>(StreamExecutor* executor)>;

  struct Entry {
    PlatformId platform;
    PluginKind kind;
    std::string name;
    bool is_default;  // The default for its (platform, kind), env included.
  };

  PluginRegistry() = default;
  static PluginRegistry& Default();

  // InvalidArgument for an empty name or a null factory.
  absl::Status Register(PlatformId platform, PluginKind kind, std::string name, Factory factory,
                        bool make_default = false);

  // The name a new executor of `platform` uses for `kind`: the environment's
  // choice if set, else the default; "" when nothing is registered. An
  // environment choice that is not registered is NotFound, naming the
  // variable and the registered names.
  absl::StatusOr<std::string> DefaultName(PlatformId platform, PluginKind kind) const;
  // The fallback chain a new executor of `platform` uses for `kind`: the
  // names of the environment's comma-separated list (RILL_DNN=xnnpack,
  // onednn) registered for `platform`, in order; the default alone when the
  // variable is unset or names none of them; empty when nothing is
  // registered. NotFound for a name no platform registered, InvalidArgument
  // for a name listed twice.
  absl::StatusOr<std::vector<std::string>> DefaultChain(PlatformId platform, PluginKind kind) const;
  // Splits and checks a comma-separated chain ("xnnpack,onednn") as above.
  absl::StatusOr<std::vector<std::string>> ParseChain(PlatformId platform, PluginKind kind,
                                                      std::string_view names) const;

  // Builds plugin `name` for `executor`. NotFound, listing the registered
  // names for that platform and kind, when there is no such plugin.
  absl::StatusOr<std::unique_ptr<PluginInterface>> Create(PluginKind kind, std::string_view name,
                                                          StreamExecutor* executor) const;

  // Whether `name` is registered for (platform, kind); NotFound listing the
  // registered names otherwise.
  absl::Status CheckRegistered(PlatformId platform, PluginKind kind, std::string_view name) const;

  // Every registration, in registration order.
  std::vector<Entry> List() const;

 private:
  struct Registration {
    PlatformId platform;
    PluginKind kind;
    std::string name;
    Factory factory;
  };
  const Registration* FindLocked(PlatformId platform, PluginKind kind, std::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UnknownLocked(PlatformId platform, PluginKind kind, std::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NamesLocked(PlatformId platform, PluginKind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> DefaultNameLocked(PlatformId platform, PluginKind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<std::string>> DefaultChainLocked(PlatformId platform,
                                                              PluginKind kind) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<std::string>> ParseChainLocked(PlatformId platform, PluginKind kind,
                                                            std::string_view names) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::vector<Registration> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::pair<PlatformId, PluginKind>, std::string>> defaults_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

// Registers a plugin with PluginRegistry::Default() when the program loads:
//   RILL_REGISTER_PLUGIN(cublas, kCudaPlatformId, PluginKind::kBlas, "cublas",
//                        CreateCuBlas, /*make_default=*/true);
// (Host library plugins use RILL_REGISTER_HOST_LIBRARY_PLUGIN,
// plugins/host_library.h, which serves every host-memory platform.)
// The library holding it must be linked whole-archive (rill_add_plugin does).
#define RILL_REGISTER_PLUGIN(tag, platform, kind, name, factory, make_default)                   \
  namespace {                                                                                    \
  const bool rill_plugin_registered_##tag =                                                      \
      ::rill::internal::RegisterPluginAtLoad(#tag, platform, kind, name, factory, make_default); \
  }

namespace rill::internal {
bool RegisterPluginAtLoad(const char* tag, PlatformId platform, PluginKind kind, const char* name,
                          PluginRegistry::Factory factory, bool make_default);
}  // namespace rill::internal

#endif  // RILL_PLUGINS_PLUGIN_REGISTRY_H_
