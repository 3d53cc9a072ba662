// A libFuzzer target for the checkpoint readers (train/checkpoint.h,
// train/train_state.h): the input's first byte picks the reader (even: the
// rest is an ONNX checkpoint loaded for a tiny fixed convnet; odd: a
// training-state file, which, when it reads, resumes a trainer of that
// convnet). Any file may be refused; none may crash, hang, allocate past
// the cap or read out of bounds (tests/fuzz/README.md).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "rill/base/untrusted_file.h"
#include "rill/engine/engine.h"
#include "rill/train/checkpoint.h"
#include "rill/train/train_state.h"
#include "rill/train/trainer.h"

namespace {

constexpr uint64_t kCap = uint64_t{64} << 20;

// The model every input is loaded for: 4x4 images, one filter per
// convolution, 2 hidden units, 2 classes (the corpus's seeds are of it).
rill::train::ConvNetOptions Tiny() {
  rill::train::ConvNetOptions m;
  m.conv1 = 1;
  m.conv2 = 1;
  m.hidden = 2;
  m.dropout = 0;
  m.rows = m.cols = 4;
  m.classes = 2;
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  rill::SetFileAllocationCap(kCap);
  const std::string path = "/tmp/rill_checkpoint_fuzz." + std::to_string(::getpid());
  if (std::FILE* f = std::fopen(path.c_str(), "wb"); f != nullptr) {
    if (size > 1) std::fwrite(data + 1, 1, size - 1, f);
    std::fclose(f);
  }
  if ((data[0] & 1) == 0) {
    rill::train::LoadCheckpoint(path, Tiny(), rill::engine::Context::Host()).status().IgnoreError();
  } else {
    absl::StatusOr<rill::train::TrainState> state = rill::train::ReadTrainState(path);
    if (state.ok()) {
      rill::train::TrainOptions o;
      o.model = Tiny();
      o.batch_size = 2;
      o.seed = state->seed;
      o.resume = *std::move(state);
      rill::train::Trainer::Create(std::move(o)).status().IgnoreError();
    }
  }
  std::remove(path.c_str());
  return 0;
}
