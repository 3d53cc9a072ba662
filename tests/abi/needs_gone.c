/* A plugin that needs a library which is gone at run time (tests/abi):
 * as the CUDA module on a machine without the CUDA libraries. */
#include "rill/abi/rill_plugin.h"

int rill_abi_test_gone(void);

RILL_PLUGIN_EXPORT const RillPlugin* RillPluginInit(const RillPluginInitArgs* args) {
  (void)args;
  return rill_abi_test_gone() ? NULL : NULL;
}
