#ifndef RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_KERNELS_H_
#define RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_KERNELS_H_

// rill:internal -- not installed: the OpenCL Philox plugin's implementation.

#include <string>

namespace rill::philox_cl {

// OpenCL C source of the Philox4x32-10 kernels, a transcription of
// plugins/rng/philox/philox.h whose float constants are spliced in as hex
// literals from that header, so both sides use the same bits:
//   philox_words(ulong seed, ulong offset, ulong n, __global uint* base, ulong first,
//                float mean, float stddev, int kind)   kind 0 bits, 1 uniform, 2 normal
//     writing base[first + i] for i < n; one work-item per 4-word Philox block touched by the call;
//   philox_doubles(ulong seed, ulong offset, ulong n, __global double* base,
//                  ulong first, double mean, double stddev, int normal)
//     one work-item per element (only in DoublesSource(), which needs fp64).
std::string WordsSource();
std::string DoublesSource();

}  // namespace rill::philox_cl

#endif  // RILL_PLUGINS_RNG_PHILOX_CL_PHILOX_CL_KERNELS_H_
