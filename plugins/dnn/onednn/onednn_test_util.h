#ifndef RILL_PLUGINS_DNN_ONEDNN_ONEDNN_TEST_UTIL_H_
#define RILL_PLUGINS_DNN_ONEDNN_ONEDNN_TEST_UTIL_H_

// Shared by the oneDNN plugin's tests: the host DNN fixture
// (plugins/dnn/host_dnn_test_util.h) on the "onednn" plugin.

#include "rill/plugins/dnn/host_dnn_test_util.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"

namespace rill::testing {

// One host device (the parameter), its "onednn" plugin alone and a stream.
class OneDnnTest : public HostDnnTest {
 protected:
  OneDnnTest() : HostDnnTest(OneDnn::kName) {}
};

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_ONEDNN_ONEDNN_TEST_UTIL_H_
