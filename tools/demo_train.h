#ifndef RILL_TOOLS_DEMO_TRAIN_H_
#define RILL_TOOLS_DEMO_TRAIN_H_

namespace rill::demo {

// `rill-demo train [flags]`: trains the Fashion-MNIST convnet (train/) and
// reports. argv[0] is "train". Returns the process exit code.
int RunTrain(int argc, char** argv);

}  // namespace rill::demo

#endif  // RILL_TOOLS_DEMO_TRAIN_H_
