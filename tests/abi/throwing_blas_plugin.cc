// A BLAS library plugin written in C++ with rill/abi/rill_plugin_cpp.h
// (tests/abi, plugin_loading_test): "throwing_blas" serves host memory;
// its gemm throws std::runtime_error and its gemv std::bad_alloc, which
// rill::plugin::Guard turns into errors, so that nothing C++ crosses into
// Rill. Links no Rill library.

#include <new>
#include <stdexcept>

#include "rill/abi/rill_plugin.h"
#include "rill/abi/rill_plugin_cpp.h"

namespace {

RillError* Gemm(RillStream*, const RillBlasGemmArgs* args) {
  return rill::plugin::Guard("throwing_blas gemm", [&] {
    throw std::runtime_error("thrown on purpose for m=" + std::to_string(args->m));
  });
}

RillError* Gemv(RillStream*, const RillBlasGemvArgs*) {
  return rill::plugin::Guard("throwing_blas gemv", []() -> RillError* { throw std::bad_alloc(); });
}

RillBlasFns MakeBlas() {
  RillBlasFns fns{};
  fns.struct_size = sizeof(fns);
  fns.name = "throwing_blas";
  fns.version = "test 1";
  fns.target = RILL_LIBRARY_HOST_MEMORY;
  fns.gemm = &Gemm;
  fns.gemv = &Gemv;
  return fns;
}

const RillBlasFns kBlas = MakeBlas();

RillPlugin MakePlugin() {
  RillPlugin plugin{};
  plugin.struct_size = sizeof(plugin);
  plugin.abi_major = RILL_PLUGIN_ABI_MAJOR;
  plugin.abi_minor = RILL_PLUGIN_ABI_MINOR;
  plugin.name = "throwing_blas";
  plugin.version = "test 1";
  plugin.blas = &kBlas;
  return plugin;
}

const RillPlugin kPlugin = MakePlugin();

}  // namespace

extern "C" RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args) {
  return rill::plugin::Accept(args) ? &kPlugin : nullptr;
}
