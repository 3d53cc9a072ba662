#include "rill/plugins/rng/philox_cl/philox_cl_kernels.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rill/plugins/rng/philox/philox.h"

namespace rill::philox_cl {
namespace {

// The Philox core and the constants, shared by both programs.
std::string Common() {
  return absl::StrCat("#pragma OPENCL FP_CONTRACT OFF\n",
                      absl::StrFormat("#define K_2POW32_INV %af\n", philox::k2Pow32Inv),
                      absl::StrFormat("#define K_2POW32_INV_2PI %af\n", philox::k2Pow32Inv2Pi),
                      absl::StrFormat("#define K_LANES %uUL\n", philox::kLanes), R"CL(
uint4 philox4x32_10(uint4 c, uint k0, uint k1) {
  for (int i = 0; i < 10; ++i) {
    const ulong p0 = (ulong)0xD2511F53u * c.x;
    const ulong p1 = (ulong)0xCD9E8D57u * c.z;
    c = (uint4)((uint)(p1 >> 32) ^ c.y ^ k0, (uint)p1, (uint)(p0 >> 32) ^ c.w ^ k1, (uint)p0);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

uint4 counter_of(ulong lane, ulong it) {
  return (uint4)((uint)it, (uint)(it >> 32), (uint)lane, (uint)(lane >> 32));
}

uint word_of(uint4 r, uint w) { return w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w; }
)CL");
}

}  // namespace

std::string WordsSource() {
  return absl::StrCat(Common(), R"CL(
float uniform_float(uint x) {
  const float scaled = (float)x * K_2POW32_INV;
  return scaled + K_2POW32_INV / 2.0f;
}

__kernel void philox_words(ulong seed, ulong offset, ulong n, __global uint* base, ulong first,
                           float mean, float stddev, int kind) {
  __global uint* out = base + first;
  const ulong b = offset / 4 + get_global_id(0);
  if (b > (offset + n - 1) / 4) return;
  const uint4 r = philox4x32_10(counter_of(b % K_LANES, b / K_LANES), (uint)seed, (uint)(seed >> 32));
  for (uint w = 0; w < 4; ++w) {
    const ulong p = b * 4 + w;
    if (p < offset || p >= offset + n) continue;
    const ulong i = p - offset;
    if (kind == 0) {
      out[i] = word_of(r, w);
    } else if (kind == 1) {
      out[i] = as_uint(uniform_float(word_of(r, w)));
    } else {
      const float u = uniform_float(word_of(r, w & 2));
      const float scaled_v = (float)word_of(r, w | 1) * K_2POW32_INV_2PI;
      const float v = scaled_v + K_2POW32_INV_2PI / 2.0f;
      const float s = sqrt(-2.0f * log(u));
      const float z = (w % 2 == 0) ? sin(v) * s : cos(v) * s;
      const float scaled = z * stddev;
      out[i] = as_uint(scaled + mean);
    }
  }
}
)CL");
}

std::string DoublesSource() {
  return absl::StrCat("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n", Common(),
                      absl::StrFormat("#define K_2POW53_INV %a\n#define K_PI %a\n",
                                      philox::k2Pow53Inv, philox::kPi),
                      R"CL(
double uniform_double(uint x, uint y) {
  const ulong z = (ulong)x ^ ((ulong)y << (53 - 32));
  return (double)z * K_2POW53_INV + K_2POW53_INV / 2.0;
}

__kernel void philox_doubles(ulong seed, ulong offset, ulong n, __global double* base, ulong first,
                             double mean, double stddev, int normal) {
  __global double* out = base + first;
  const ulong i = get_global_id(0);
  if (i >= n) return;
  const ulong p = offset + i;
  const ulong b = p / 4;
  const uint4 r = philox4x32_10(
      counter_of(b % K_LANES, b / K_LANES + (b - offset / 4) / K_LANES + (p % 4) / 2),
      (uint)seed, (uint)(seed >> 32));
  if (normal == 0) {
    out[i] = (p % 2 == 0) ? uniform_double(r.x, r.y) : uniform_double(r.z, r.w);
    return;
  }
  const double u = uniform_double(r.x, r.y);
  const ulong zy = (ulong)r.z ^ ((ulong)r.w << (53 - 32));
  const double v = (double)zy * (K_2POW53_INV * 2.0) + K_2POW53_INV;
  const double s = sqrt(-2.0 * log(u));
  const double z = (p % 2 == 0) ? sin(v * K_PI) * s : cos(v * K_PI) * s;
  const double scaled = z * stddev;
  out[i] = scaled + mean;
}
)CL");
}

}  // namespace rill::philox_cl
