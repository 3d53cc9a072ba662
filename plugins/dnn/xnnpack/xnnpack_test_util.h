#ifndef RILL_PLUGINS_DNN_XNNPACK_XNNPACK_TEST_UTIL_H_
#define RILL_PLUGINS_DNN_XNNPACK_XNNPACK_TEST_UTIL_H_

// Shared by the XNNPACK plugin's tests: the host DNN fixture
// (plugins/dnn/host_dnn_test_util.h) on the "xnnpack" plugin.

#include "rill/plugins/dnn/host_dnn_test_util.h"
#include "rill/plugins/dnn/xnnpack/xnnpack_dnn.h"

namespace rill::testing {

// One host device (the parameter), its "xnnpack" plugin alone and a stream.
class XnnpackTest : public HostDnnTest {
 protected:
  XnnpackTest() : HostDnnTest(XnnpackDnn::kName) {}
  void SetUp() override {
    HostDnnTest::SetUp();
    xnnpack_ = static_cast<XnnpackDnn*>(dnn_);
  }

  XnnpackDnn* xnnpack_ = nullptr;
};

}  // namespace rill::testing

#endif  // RILL_PLUGINS_DNN_XNNPACK_XNNPACK_TEST_UTIL_H_
