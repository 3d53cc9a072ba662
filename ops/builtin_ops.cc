// The built-in op families (ops/<family>/), registered into the process
// registry in one place: a plain function call per family, so that nothing
// depends on static initializers surviving the linker.

#include "ops/op_registry.h"

namespace rill::ops {

void RegisterElementwiseOps(OpRegistry& registry);

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
}

}  // namespace rill::ops
