#ifndef RILL_PLUGINS_DNN_DNN_H_
#define RILL_PLUGINS_DNN_DNN_H_

#include "plugins/plugin.h"

namespace rill {

// Deep-learning primitives (convolution, pooling, activation, ...).
// Skeleton: the interface lands with the oneDNN plugin.
class DnnSupport : public PluginInterface {
 public:
  static constexpr PluginKind kKind = PluginKind::kDnn;
};

}  // namespace rill

#endif  // RILL_PLUGINS_DNN_DNN_H_
