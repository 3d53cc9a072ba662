#ifndef RILL_STREAM_KERNEL_H_
#define RILL_STREAM_KERNEL_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "rill/executor/device_memory.h"
#include "rill/stream/kernel_spec.h"

namespace rill {

class KernelInterface;
class StreamExecutor;

// One packed launch argument: device memory (resolved by the backend into
// its native form) or the bytes of a plain value.
struct KernelArg {
  bool is_memory = false;
  DeviceMemoryBase memory;                 // When is_memory.
  absl::InlinedVector<uint8_t, 16> bytes;  // Otherwise.
};
using KernelArgs = std::vector<KernelArg>;

template <typename P>
KernelArg PackKernelArg(const P& value) {
  KernelArg arg;
  if constexpr (std::is_base_of_v<DeviceMemoryBase, P>) {
    arg.is_memory = true;
    arg.memory = value;
  } else {
    static_assert(std::is_trivially_copyable_v<P>, "kernel arguments must be trivially copyable");
    arg.bytes.resize(sizeof(P));
    std::memcpy(arg.bytes.data(), &value, sizeof(P));
  }
  return arg;
}

// A kernel loaded on one executor (StreamExecutor::LoadKernel). Owns the
// backend's loaded form; must not outlive its executor. Thread-safe to launch
// from several streams of that executor.
class Kernel {
 public:
  Kernel(StreamExecutor* parent, std::string name, int arity, const std::type_info* signature,
         std::vector<KernelParam> params, std::unique_ptr<KernelInterface> impl);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  const std::string& name() const { return name_; }
  // Parameter count, or -1 when the loaded variant does not declare it.
  int arity() const { return arity_; }
  // The KernelSignature type id of the parameter list, when declared.
  const std::type_info* signature() const { return signature_; }
  // The declared parameters (KernelSpec::DeclareParams); empty when undeclared.
  const std::vector<KernelParam>& params() const { return params_; }
  StreamExecutor* parent() const { return parent_; }
  KernelInterface* implementation() const { return impl_.get(); }

 private:
  StreamExecutor* parent_;
  std::string name_;
  int arity_;
  const std::type_info* signature_;
  std::vector<KernelParam> params_;
  std::unique_ptr<KernelInterface> impl_;
};

// A Kernel whose parameter types are known at compile time, so that
// Stream::ThenLaunch rejects mismatched arguments when it is compiled.
// Created by StreamExecutor::LoadKernel<Params...>(spec), which checks the
// spec's declared parameters at load. Move-only; thread-safe to launch.
//
//   RILL_ASSIGN_OR_RETURN(auto saxpy,
//       executor->LoadKernel<float, DeviceMemory<float>, DeviceMemory<float>, uint64_t>(spec));
//   stream.ThenLaunch(ThreadDim(256), BlockDim(blocks), saxpy, 2.0f, x, y, n);
template <typename... Params>
class TypedKernel {
 public:
  TypedKernel() = default;
  explicit TypedKernel(std::unique_ptr<Kernel> kernel) : kernel_(std::move(kernel)) {}

  const Kernel& kernel() const { return *kernel_; }
  bool is_loaded() const { return kernel_ != nullptr; }

  template <typename... Args>
  static KernelArgs Pack(const Args&... args) {
    static_assert(sizeof...(Args) == sizeof...(Params), "wrong number of kernel arguments");
    static_assert((std::is_convertible_v<const Args&, Params> && ...),
                  "kernel argument types do not match the kernel's parameters");
    return KernelArgs{PackKernelArg<Params>(static_cast<Params>(args))...};
  }

 private:
  std::unique_ptr<Kernel> kernel_;
};

}  // namespace rill

#endif  // RILL_STREAM_KERNEL_H_
