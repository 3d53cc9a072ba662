// The reduce ops (see ops/README.md). Registration is filled in by this
// family's author.
#include "ops/op_registry.h"

namespace rill::ops {

void RegisterReduceOps(OpRegistry& registry) {}

}  // namespace rill::ops
