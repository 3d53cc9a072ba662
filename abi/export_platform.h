#ifndef RILL_ABI_EXPORT_PLATFORM_H_
#define RILL_ABI_EXPORT_PLATFORM_H_

// A backend written against Rill's C++ contract, shipped as a run-time
// plugin: the module links its backend (and the library plugins for it)
// with a private, static copy of Rill (rill::abi_export), exports only
// RillPluginInit (rill/abi/rill_plugin.map), and its entry calls
// ExportLinkedPlatform. Rill then loads it like any C plugin, so a program
// need not link the backend -- nor the vendor libraries the backend links
// (the CUDA backend ships this way: platform/cuda/module).
//
//   extern "C" RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(
//       const RillPluginInitArgs* args) {
//     return rill::abi::ExportLinkedPlatform(args, {.platform = "mine", .plugin_name = "mine"});
//   }
//
// What crosses: the platform, its executors, streams, events and kernels
// (kernels of the module's own formats, and CUDA fatbin / PTX and OpenCL C
// when the platform loads them), and its BLAS (gemm, gemv) and DNN
// (forward convolution) through the library tables. Other library calls do
// not cross: ops that need them take the platform's op fallback.
//
// Stream errors: errors of the module's work reach Rill's stream at the
// next host callback, event record or drain in stream order; work that
// Rill queued after an error Rill found itself still runs in the module
// (its results are not read: the stream has failed).

#include <string>

#include "rill/abi/rill_plugin.h"

namespace rill::abi {

struct ExportOptions {
  std::string platform;     // The linked platform to export ("cuda").
  std::string export_name;  // The name Rill sees; empty: the platform's own.
  std::string plugin_name;  // RillPlugin.name ("rill_cuda").
  std::string version;      // RillPlugin.version.
};

// The plugin table for the platform named `options.platform` in the
// module's own PlatformManager::Default(), or NULL (logged through the
// host) when the host's ABI major differs or the platform is not linked.
// Turns off the module's own plugin discovery. Call once per load.
const RillPlugin* ExportLinkedPlatform(const RillPluginInitArgs* args,
                                       const ExportOptions& options);

}  // namespace rill::abi

#endif  // RILL_ABI_EXPORT_PLATFORM_H_
