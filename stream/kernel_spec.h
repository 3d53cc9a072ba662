#ifndef RILL_STREAM_KERNEL_SPEC_H_
#define RILL_STREAM_KERNEL_SPEC_H_

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rill/executor/device_memory.h"
#include "rill/platform/platform_id.h"
#include "rill/stream/launch_dim.h"

namespace rill {

// The argument type a kernel body sees for a launch parameter of type P:
// device memory becomes a raw pointer into the device's address space,
// anything else is passed by value.
template <typename P>
struct KernelNative {
  using type = P;
};
template <typename T>
struct KernelNative<DeviceMemory<T>> {
  using type = T*;
};
template <>
struct KernelNative<DeviceMemoryBase> {
  using type = void*;
};
template <typename P>
using KernelNativeT = typename KernelNative<std::decay_t<P>>::type;

// Where one invocation of a host kernel body sits in the launch grid, with
// CUDA's names.
struct HostThread {
  Dim3 thread_idx;  // Index of the thread within its block.
  Dim3 block_idx;   // Index of the block within the grid.
  Dim3 block_dim;   // Threads per block (the launch's ThreadDim).
  Dim3 grid_dim;    // Blocks in the grid (the launch's BlockDim).
  // blockIdx.x * blockDim.x + threadIdx.x, the usual element index.
  int64_t global_x() const { return block_idx.x * block_dim.x + thread_idx.x; }
};

// The type-erased body of a host kernel: runs every thread of one block.
// `args[i]` points at the native value of argument i (KernelNativeT).
using HostBlockFn = std::function<void(const HostThread& block, const void* const* args)>;

// One declared launch parameter: device memory, or a plain value of `size`
// bytes. Stream::ThenLaunch checks packed arguments against these.
struct KernelParam {
  bool is_memory = false;
  size_t size = 0;  // sizeof the value; 0 for device memory.
};
template <typename P>
constexpr KernelParam KernelParamOf() {
  if constexpr (std::is_base_of_v<DeviceMemoryBase, std::decay_t<P>>) {
    return KernelParam{true, 0};
  } else {
    return KernelParam{false, sizeof(std::decay_t<P>)};
  }
}

// Identifies a parameter list, so that a kernel loaded as
// TypedKernel<Params...> is checked against the variant's parameters.
template <typename... Params>
struct KernelSignature {};

// A kernel in a backend's own format, for one platform: a name for the
// format ("spirv", "mine-bytecode", ...), which the backend checks, and its
// bytes (a binary, or source text).
struct KernelVariant {
  std::string format;
  std::vector<uint8_t> data;
};

// Describes one kernel in every form Rill can load it: a host C++ function,
// CUDA PTX or fatbin bytes, OpenCL C source -- and, for any other backend,
// a KernelVariant keyed by its platform id (AddVariant). The formats with
// their own setters are the in-tree backends'; an outside backend reads
// variant(kMinePlatformId) in its LoadKernel. StreamExecutor::LoadKernel
// picks the variant of the executor's platform; a spec without it fails to
// load with Unimplemented. A value type; thread-compatible.
//
//   void SaxpyHost(const HostThread& t, float a, const float* x, float* y, uint64_t n) {
//     if (uint64_t i = t.global_x(); i < n) y[i] += a * x[i];
//   }
//   KernelSpec spec("saxpy");
//   spec.AddHostFunction<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(SaxpyHost)
//       .AddCudaPtx(kSaxpyPtx);
class KernelSpec {
 public:
  // `name` is the entry point in PTX, fatbin or OpenCL source.
  explicit KernelSpec(std::string name) : name_(std::move(name)) {}

  // Adds the host variant. `fn` is called once per thread of the grid as
  // fn(const HostThread&, KernelNativeT<Params>...), e.g. DeviceMemory<float>
  // arrives as float*. Threads of a block run one after another on one host
  // thread; blocks may run in parallel. There is no shared memory and no
  // barrier between threads.
  template <typename... Params, typename Fn>
  KernelSpec& AddHostFunction(Fn fn) {
    static_assert(
        std::is_invocable_v<Fn, const HostThread&, KernelNativeT<Params>...>,
        "host kernel must be callable as fn(const HostThread&, KernelNativeT<Params>...)");
    DeclareParams<Params...>();
    host_fn_ = [fn](const HostThread& block, const void* const* args) {
      RunBlock<Params...>(fn, block, args, std::index_sequence_for<Params...>{});
    };
    return *this;
  }
  // Declares the parameter list of every variant (AddHostFunction does it
  // for its Params): launches then check each packed argument's kind and
  // byte size, and LoadKernel<Params...> checks the list. Without it a
  // device-only spec is checked by argument count alone, where the backend
  // can count.
  template <typename... Params>
  KernelSpec& DeclareParams() {
    host_signature_ = &typeid(KernelSignature<std::decay_t<Params>...>);
    arity_ = sizeof...(Params);
    params_ = {KernelParamOf<Params>()...};
    return *this;
  }
  KernelSpec& AddCudaPtx(std::string ptx) {
    cuda_ptx_ = std::move(ptx);
    return *this;
  }
  KernelSpec& AddCudaFatbin(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    cuda_fatbin_.assign(p, p + size);
    return *this;
  }
  KernelSpec& AddOpenClSource(std::string source) {
    opencl_source_ = std::move(source);
    return *this;
  }
  // Adds (or replaces) the variant of platform `platform`.
  //   spec.AddVariant(kMinePlatformId, {"mine-bytecode", LoadBytes("saxpy.mbc")});
  KernelSpec& AddVariant(PlatformId platform, KernelVariant variant) {
    for (auto& [id, existing] : variants_) {
      if (id == platform) {
        existing = std::move(variant);
        return *this;
      }
    }
    variants_.emplace_back(platform, std::move(variant));
    return *this;
  }

  const std::string& name() const { return name_; }
  // Number of parameters of the host variant; -1 when it has none.
  int host_arity() const { return arity_; }
  const HostBlockFn& host_function() const { return host_fn_; }
  const std::type_info* host_signature() const { return host_signature_; }
  // The declared parameters (DeclareParams); empty when undeclared.
  const std::vector<KernelParam>& params() const { return params_; }
  bool has_host_function() const { return static_cast<bool>(host_fn_); }
  const std::string& cuda_ptx() const { return cuda_ptx_; }
  const std::vector<uint8_t>& cuda_fatbin() const { return cuda_fatbin_; }
  const std::string& opencl_source() const { return opencl_source_; }
  // The variant added for `platform`; nullptr when there is none.
  const KernelVariant* variant(PlatformId platform) const {
    for (const auto& [id, v] : variants_) {
      if (id == platform) return &v;
    }
    return nullptr;
  }

 private:
  template <typename... Params, typename Fn, size_t... I>
  static void RunBlock(const Fn& fn, const HostThread& block, const void* const* args,
                       std::index_sequence<I...>) {
    // Unpack once per block, then loop over the block's threads.
    std::tuple<KernelNativeT<Params>...> native{
        *static_cast<const KernelNativeT<Params>*>(args[I])...};
    HostThread t = block;
    for (t.thread_idx.z = 0; t.thread_idx.z < block.block_dim.z; ++t.thread_idx.z)
      for (t.thread_idx.y = 0; t.thread_idx.y < block.block_dim.y; ++t.thread_idx.y)
        for (t.thread_idx.x = 0; t.thread_idx.x < block.block_dim.x; ++t.thread_idx.x)
          fn(static_cast<const HostThread&>(t), std::get<I>(native)...);
  }

  std::string name_;
  int arity_ = -1;
  HostBlockFn host_fn_;
  const std::type_info* host_signature_ = nullptr;
  std::vector<KernelParam> params_;
  std::string cuda_ptx_;
  std::vector<uint8_t> cuda_fatbin_;
  std::string opencl_source_;
  std::vector<std::pair<PlatformId, KernelVariant>> variants_;
};

}  // namespace rill

#endif  // RILL_STREAM_KERNEL_SPEC_H_
