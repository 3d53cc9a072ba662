// C++ helpers for writing a run-time plugin in C++ against rill_plugin.h.
// Header-only; they use nothing of Rill but the C header, so a plugin
// built with them still links no Rill library, and C++ never crosses the
// boundary: every entry the plugin exports through its tables returns a
// RillError*, and an exception becomes one there (Guard).
//
//   RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args) {
//     if (!rill::plugin::Accept(args)) return nullptr;  // another major: refused, logged
//     return &kPlugin;
//   }
//   RillError* Gemm(RillStream*, const RillBlasGemmArgs* args) {
//     return rill::plugin::Guard("gemm", [&] { Compute(*args); });  // throws -> error
//   }
#ifndef RILL_ABI_RILL_PLUGIN_CPP_H_
#define RILL_ABI_RILL_PLUGIN_CPP_H_

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "rill/abi/rill_plugin.h"

namespace rill::plugin {

// The host table of the current load (set by Accept; the plugin's own copy,
// as each plugin module has its own).
inline const RillHostApi*& Host() {
  static const RillHostApi* host = nullptr;
  return host;
}

// Keeps the host table and answers whether this plugin runs with that host:
// the same ABI major and a table large enough for the host entries Rill's
// ABI 1.0 has. Logs why not (through the host's log when it has one).
inline bool Accept(const RillPluginInitArgs* args) {
  if (args == nullptr || args->host == nullptr) return false;
  if (args->host_abi_major != RILL_PLUGIN_ABI_MAJOR ||
      args->host->struct_size < RILL_STRUCT_SIZE(RillHostApi, stream_error)) {
    if (args->host->struct_size >= RILL_STRUCT_SIZE(RillHostApi, log) && args->host->log) {
      const std::string why = "refusing host ABI " + std::to_string(args->host_abi_major) + "." +
                              std::to_string(args->host_abi_minor) + ": built for ABI " +
                              std::to_string(RILL_PLUGIN_ABI_MAJOR) + "." +
                              std::to_string(RILL_PLUGIN_ABI_MINOR);
      args->host->log(RILL_LOG_ERROR, why.c_str());
    }
    return false;
  }
  Host() = args->host;
  return true;
}

// A new error through the host (NULL before Accept).
inline RillError* Error(RillCode code, const std::string& message) {
  const RillHostApi* host = Host();
  return host ? host->error_new(code, message.c_str()) : nullptr;
}

// Runs fn() -- returning RillError* or void -- and turns an exception into
// an error naming `where`: std::bad_alloc is RESOURCE_EXHAUSTED,
// std::invalid_argument INVALID_ARGUMENT, std::out_of_range OUT_OF_RANGE,
// another std::exception INTERNAL with its what(), anything else UNKNOWN.
template <typename Fn>
RillError* Guard(const char* where, Fn&& fn) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
      fn();
      return nullptr;
    } else {
      return fn();
    }
  } catch (const std::bad_alloc&) {
    return Error(RILL_CODE_RESOURCE_EXHAUSTED, std::string(where) + ": out of memory");
  } catch (const std::invalid_argument& e) {
    return Error(RILL_CODE_INVALID_ARGUMENT, std::string(where) + ": " + e.what());
  } catch (const std::out_of_range& e) {
    return Error(RILL_CODE_OUT_OF_RANGE, std::string(where) + ": " + e.what());
  } catch (const std::exception& e) {
    return Error(RILL_CODE_INTERNAL, std::string(where) + ": " + e.what());
  } catch (...) {
    return Error(RILL_CODE_UNKNOWN, std::string(where) + ": an unknown exception");
  }
}

}  // namespace rill::plugin

#endif  // RILL_ABI_RILL_PLUGIN_CPP_H_
