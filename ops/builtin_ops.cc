// The built-in op families (ops/<family>/), registered into the process
// registry in one place: a plain function call per family, so that nothing
// depends on static initializers surviving the linker.

#include "rill/ops/op_registry.h"

namespace rill::ops {

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterReduceOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterInitOps(OpRegistry& registry);
void RegisterOptimizerOps(OpRegistry& registry);
void RegisterNormOps(OpRegistry& registry);

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
  RegisterReduceOps(registry);
  RegisterNnOps(registry);
  RegisterShapeOps(registry);
  RegisterInitOps(registry);
  RegisterOptimizerOps(registry);
  RegisterNormOps(registry);
}

}  // namespace rill::ops
