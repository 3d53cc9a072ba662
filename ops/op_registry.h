#ifndef RILL_OPS_OP_REGISTRY_H_
#define RILL_OPS_OP_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/ops/op.h"

namespace rill::ops {

// Op declarations and their kernels, per platform name ("host", "opencl",
// "cuda", or a new backend's). A backend adds kernels for existing ops with
// RegisterKernel, without touching their definitions. The CPU context
// (engine::Context::Host()) runs the "host" kernels inline.
//
//   OpRegistry& r = OpRegistry::Global();
//   RILL_RETURN_IF_ERROR(r.RegisterKernel("relu", "mydevice", {MyReluKernel}));
//
// Global() holds every built-in op with its host, OpenCL and CUDA kernels.
// Thread-safe.
class OpRegistry {
 public:
  OpRegistry() = default;
  // The process registry with the built-in ops (ops/builtin_ops.cc).
  static OpRegistry& Global();

  // AlreadyExists when an op of that name is registered.
  absl::Status Register(OpDef def);
  // Adds or replaces `op`'s kernel for `platform`. NotFound for an unknown op.
  absl::Status RegisterKernel(std::string_view op, std::string_view platform, KernelDef kernel);

  // NotFound listing the closest registered names.
  absl::StatusOr<const OpDef*> Find(std::string_view name) const;
  // Unimplemented listing the platforms that have a kernel for `op`.
  absl::StatusOr<KernelDef> FindKernel(const OpDef& op, std::string_view platform) const;
  // Platforms with a kernel for `op`.
  std::vector<std::string> KernelPlatforms(const OpDef& op) const;
  std::vector<std::string> OpNames() const;

 private:
  struct Entry {
    std::unique_ptr<OpDef> def;
    std::vector<std::pair<std::string, KernelDef>> kernels;
  };
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> ops_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const OpDef*, Entry*> by_def_ ABSL_GUARDED_BY(mu_);
};

// Registers the built-in ops and kernels into `registry` (Global() does).
void RegisterBuiltinOps(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_OP_REGISTRY_H_
