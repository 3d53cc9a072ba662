#ifndef RILL_OPS_OP_REGISTRY_H_
#define RILL_OPS_OP_REGISTRY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "rill/base/mutex.h"
#include "rill/ops/op.h"
#include "rill/plugins/plugin.h"
#include "rill/stream/kernel_spec.h"

namespace rill::ops {

// What a kernel needs of the device it runs on. The registry gives an
// executor every kernel whose need it meets, so a new backend gets the ops
// its capabilities allow without any registration of its own:
//
//   kPlatform    one platform, by name: an override (a tuned kernel beats a
//                generic one); the only way to name a platform.
//   kHostMemory  host C++ on the tensors' host addresses: any device with
//                Feature::kHostAddressableMemory (the host backend, the CPU
//                context, examples/toy_backend).
//   kDeviceCode  a Rill kernel launched through a KernelSpec: any device
//                whose executor loads one of the forms `code` carries
//                (StreamExecutor::CanLoad: OpenCL C, a CUDA fatbin, or the
//                platform's own variant).
//   kLibraries   only library calls (ThenBlasGemm, ThenConvolve, ...): any
//                device with a plugin of every kind in `plugins`.
//
// A kernel of another kind that also makes library calls (host code that
// fills a buffer through the RNG plugin first) adds them with And().
//
// When several kernels of an op fit a device they are tried in that order
// (a kernel that lacks the inputs' dtype passes to the next).
struct KernelNeeds {
  enum class Kind : uint8_t { kPlatform, kHostMemory, kDeviceCode, kLibraries };

  static KernelNeeds Platform(std::string_view name);
  static KernelNeeds HostMemory();
  // `code`: a spec carrying the forms the family's device kernels come in
  // (only asked with CanLoad, never loaded). Shared by a family's kernels.
  static KernelNeeds DeviceCode(std::shared_ptr<const KernelSpec> code);
  static KernelNeeds Libraries(std::initializer_list<PluginKind> kinds);
  // This need, and a plugin of every kind in `kinds` besides.
  KernelNeeds And(std::initializer_list<PluginKind> kinds) &&;

  Kind kind = Kind::kHostMemory;
  std::string platform;                    // kPlatform.
  std::shared_ptr<const KernelSpec> code;  // kDeviceCode.
  uint32_t plugins = 0;                    // Bit (1 << kind) per PluginKind needed.

  // "host memory", "platform 'opencl'", "device code (OpenCL C, CUDA fatbin)",
  // "libraries blas+dnn".
  std::string ToString() const;

 private:
  std::string KindString() const;
};

// The kernels of one op that fit one executor, best first.
using KernelChoice = absl::InlinedVector<KernelDef, 2>;

// Op declarations and their kernels, each registered once with what it
// needs (KernelNeeds). Thread-safe.
//
//   OpRegistry& r = OpRegistry::Global();
//   RILL_RETURN_IF_ERROR(r.RegisterKernel("relu", KernelNeeds::HostMemory(), {MyReluKernel}));
//   RILL_RETURN_IF_ERROR(r.RegisterKernel("relu", "mydevice", {MyTunedRelu}));  // An override.
//
// Global() holds every built-in op with its kernels. The choice of kernels
// for an (op, executor) pair is made on first use and kept in a table on
// the op indexed by StreamExecutor::serial(): later calls read it without a
// lock. Registering a kernel later makes every executor choose again.
class OpRegistry {
 public:
  OpRegistry();
  ~OpRegistry();
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // The process registry with the built-in ops (ops/builtin_ops.cc).
  static OpRegistry& Global();

  // AlreadyExists when an op of that name is registered.
  absl::Status Register(OpDef def);
  // Adds `kernel` to `op` with what it needs. A kernel of the same need
  // (same kind and platform, plugins or code) is replaced. NotFound for an
  // unknown op, InvalidArgument for a null function or an empty need.
  absl::Status RegisterKernel(std::string_view op, KernelNeeds needs, KernelDef kernel);
  // Shorthand for an exact-platform override.
  absl::Status RegisterKernel(std::string_view op, std::string_view platform, KernelDef kernel) {
    return RegisterKernel(op, KernelNeeds::Platform(platform), kernel);
  }

  // NotFound listing the closest registered names.
  absl::StatusOr<const OpDef*> Find(std::string_view name) const;
  // The kernels of `op` that fit `executor`, best first, from the registry
  // that holds `op`; Unimplemented saying what each of the op's kernels
  // needs and why the executor does not meet it (FailedPrecondition for an
  // op no registry holds). Lock-free after the first call per pair.
  static absl::StatusOr<const KernelChoice*> Choose(const OpDef& op, StreamExecutor* executor);
  // The first kernel of Choose() that takes every type in `dtypes`;
  // Unimplemented naming the type otherwise.
  static absl::StatusOr<KernelDef> FindKernel(const OpDef& op, StreamExecutor* executor,
                                              absl::Span<const DType> dtypes = {});
  // What each kernel of `op` needs, in registration order.
  static std::vector<KernelNeeds> KernelNeedsOf(const OpDef& op);
  std::vector<std::string> OpNames() const;
  // Registration failures of the built-in ops (RegisterBuiltinOps): empty
  // when every call succeeded.
  const std::vector<absl::Status>& registration_errors() const { return errors_; }
  // Records a failed registration call (OK is ignored); for family tables.
  void Check(absl::Status status);

 private:
  struct Entry;
  struct Resolved;
  static absl::StatusOr<const Resolved*> Resolve(Entry& e, StreamExecutor* executor);

  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> ops_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> generation_{1};
  std::vector<absl::Status> errors_;
};

// Registers the built-in ops and kernels into `registry` (Global() does);
// failures are kept in registry.registration_errors().
void RegisterBuiltinOps(OpRegistry& registry);

}  // namespace rill::ops

#endif  // RILL_OPS_OP_REGISTRY_H_
