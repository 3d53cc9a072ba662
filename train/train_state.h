#ifndef RILL_TRAIN_TRAIN_STATE_H_
#define RILL_TRAIN_TRAIN_STATE_H_

// The training-state file that lets a run resume exactly (`rill-demo train
// --resume`): the parameters, Adam's moments and where the run stood. ONNX
// checkpoints (checkpoint.h) hold only the weights, for inference; this file
// holds everything the optimizer needs and nothing else reads it.
//
// Format, all little-endian:
//   "RILLTRN1"                     8-byte magic
//   u32 version                    kTrainStateVersion
//   u64 seed, i64 step, i32 epoch, i64 next_batch, i32 world_size
//   u32 length, bytes              model (length <= kMaxTrainStateModelBytes)
//   u32 tensor count               <= kMaxTrainStateTensors
//   per tensor:
//     u32 length, bytes            name (1..kMaxTrainStateNameBytes), unique
//     u32 ndim                     <= kMaxTrainStateRank
//     i64 dims[ndim]               each >= 0
//     u64 byte count               4 * product(dims)
//     f32 data[product(dims)]
//   u64 checksum                   FNV-1a 64 of every byte before it
//
// Example:
//   TrainState s;
//   s.step = 1200; s.epoch = 2; s.next_batch = 40; s.model = opts.ToString();
//   s.tensors.push_back({"conv1.weight", {8, 1, 3, 3}, weights});
//   RILL_RETURN_IF_ERROR(WriteTrainState("run/state.rilltrn", s));
//   RILL_ASSIGN_OR_RETURN(TrainState back, ReadTrainState("run/state.rilltrn"));

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill::train {

inline constexpr uint32_t kTrainStateVersion = 1;
inline constexpr uint32_t kMaxTrainStateModelBytes = 4096;
inline constexpr uint32_t kMaxTrainStateTensors = 100000;
inline constexpr uint32_t kMaxTrainStateNameBytes = 1024;
inline constexpr uint32_t kMaxTrainStateRank = 8;

// One named float32 tensor; `data` holds product(shape) elements, row-major.
struct StateTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Everything a run needs to continue where it stopped.
struct TrainState {
  uint64_t seed = 0;
  int64_t step = 0;        // Optimizer steps taken (Adam's t).
  int epoch = 0;           // The epoch to continue (0-based).
  int64_t next_batch = 0;  // First batch of `epoch` not yet trained.
  int world_size = 1;      // Ranks that trained it (informational).
  // A description of the model (ConvNetOptions::ToString()); the caller
  // compares it with the model it resumes.
  std::string model;
  // Parameters ("conv1.weight", ...), Adam means ("adam.mean/<name>") and
  // variances ("adam.var/<name>"), in the order they were written.
  std::vector<StateTensor> tensors;
};

// Writes `state` to `path` through `path`.tmp and a rename (no fsync), so a
// reader sees the old file or the new one, never half of one. Errors:
// InvalidArgument naming the field when `state` breaks a limit of the format
// above (negative step/epoch/next_batch, world_size < 1, a duplicate or
// empty name, a shape whose element count is not data.size(), ...), before
// anything is written; otherwise the errno-derived error naming `path` and
// the system's reason. A failed write leaves no temporary file behind.
[[nodiscard]] absl::Status WriteTrainState(const std::string& path, const TrainState& state);

// Reads a file written by WriteTrainState. Every error names `path`:
// NotFound (and other errno-derived codes) when it cannot be opened;
// InvalidArgument "not a Rill training state file" for a wrong magic;
// Unimplemented naming the version for a format this build does not read;
// DataLoss when it is truncated or its checksum does not match; and
// InvalidArgument naming the field for a header that breaks the format
// (sizes larger than the file, duplicate tensor names, ...). The file is
// untrusted (base/untrusted_file.h): InvalidArgument before it is opened
// when it is not a regular file (a directory, a device, a FIFO); it
// allocates no more than the file's size, whatever its header claims, and
// no more than the cap one file may make Rill allocate (ResourceExhausted
// naming it and RILL_MAX_FILE_BYTES).
[[nodiscard]] absl::StatusOr<TrainState> ReadTrainState(const std::string& path);

}  // namespace rill::train

#endif  // RILL_TRAIN_TRAIN_STATE_H_
