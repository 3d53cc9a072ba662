#ifndef RILL_STREAM_LAUNCH_DIM_H_
#define RILL_STREAM_LAUNCH_DIM_H_

#include <cstdint>
#include <string>

namespace rill {

// A 3-D extent or index.
struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t product() const { return x * y * z; }
  std::string ToString() const;
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// Launch geometry, named as in StreamExecutor: ThreadDim is the number of
// threads in one block, BlockDim the number of blocks in the grid.
//   stream.ThenLaunch(ThreadDim(256), BlockDim((n + 255) / 256), kernel, ...);
struct ThreadDim : Dim3 {
  explicit ThreadDim(int64_t x = 1, int64_t y = 1, int64_t z = 1) : Dim3{x, y, z} {}
};
struct BlockDim : Dim3 {
  explicit BlockDim(int64_t x = 1, int64_t y = 1, int64_t z = 1) : Dim3{x, y, z} {}
};

}  // namespace rill

#endif  // RILL_STREAM_LAUNCH_DIM_H_
