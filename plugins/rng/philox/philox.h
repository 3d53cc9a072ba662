#ifndef RILL_PLUGINS_RNG_PHILOX_PHILOX_H_
#define RILL_PLUGINS_RNG_PHILOX_PHILOX_H_

// Header-only core of the Philox4x32-10 generator (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC'11), laid out exactly as cuRAND's
// CURAND_RNG_PSEUDO_PHILOX4_32_10 generator with CURAND_ORDERING_PSEUDO_DEFAULT
// orders its output, so that one seed gives the same numbers on the host and
// on a GPU. Plain C++ with no library dependency, so that CUDA and OpenCL
// variants can include (or transcribe) it.
//
// What was established by experiment against cuRAND 10.4's host generator
// (curandCreateGeneratorHost, CUDA 13.0), see philox_curand_test.cc:
//
// * Key: the 64-bit seed, low word first: key = {seed, seed >> 32}.
// * cuRAND spreads the stream over kLanes = 65536 lanes (its GPU threads).
//   Lane l is Philox subsequence l: counter = {it, it >> 32, l, l >> 32}.
// * 32-bit values (curandGenerate, curandGenerateUniform, curandGenerateNormal)
//   sit at absolute positions p = offset + i. Position p is word p % 4 of
//   block b = p / 4, and block b is lane b % kLanes at counter b / kLanes.
//   The offset (curandSetGeneratorOffset) counts values, and each call
//   advances it by the count, whatever the count (10 then 6 == 16).
// * Uniform float: x * 2^-32 + 2^-33 in float arithmetic (CURAND_2POW32_INV
//   is 2.3283064e-10f), so results lie in (0, 1].
// * Normal float: Box-Muller on the word pair (p & ~1, p | 1): u from the
//   even word, angle from the odd word; the even position gets sin, the odd
//   one cos; then z * stddev + mean in float. sinf/cosf/logf/sqrtf are the
//   C library's (the host generator calls them too; glibc's match).
// * Doubles (curandGenerateUniformDouble / NormalDouble) take 64 bits, and
//   their layout differs: a double at position p = offset + i is slot
//   q = p % 4 of block b = p / 4 (lane b % kLanes); a block holds four
//   doubles made from two consecutive counters, c and c + 1, slots 0 and 1
//   from c (words xy, zw), slots 2 and 3 from c + 1. Counter c =
//   b / kLanes + (b - offset / 4) / kLanes: each round of the lanes within
//   one call uses two counters. Uniform: z = x ^ (y << 21) (53 bits),
//   z * 2^-53 + 2^-54. Normal: u from (x, y), v from (z, w) of the slot's
//   counter, sin(v * pi) for even positions, cos for odd.
//   The offset then advances by n + 4 * kLanes * ((offset % 4 + n) / (4 * kLanes)).
// * Known difference: cuRAND's host generator also keeps per-lane state
//   across calls. A lane that served a double call runs one counter ahead
//   of this layout when it serves again in a later round (a later call that
//   reaches 4 * kLanes values past the double call, or the same call wrapping
//   around). Philox here is stateless: positions depend only on (seed,
//   offset). Both agree whenever no double call was made since the last seed
//   or offset was set, and after a double call as long as later values stay
//   within 4 * kLanes positions of where it started.
//
// Thread-compatible: everything here is a pure function.

#include <cmath>
#include <cstdint>

namespace rill::philox {

struct Block {
  uint32_t v[4];
};

inline constexpr uint32_t kW0 = 0x9E3779B9u;  // Weyl key increments.
inline constexpr uint32_t kW1 = 0xBB67AE85u;
inline constexpr uint32_t kM0 = 0xD2511F53u;  // Round multipliers.
inline constexpr uint32_t kM1 = 0xCD9E8D57u;

// cuRAND's lane (subsequence) count for the host API's default ordering.
inline constexpr uint64_t kLanes = 65536;

// One Philox4x32 round.
inline Block Round(const Block& c, uint32_t k0, uint32_t k1) {
  const uint64_t p0 = uint64_t{kM0} * c.v[0];
  const uint64_t p1 = uint64_t{kM1} * c.v[2];
  return Block{{static_cast<uint32_t>(p1 >> 32) ^ c.v[1] ^ k0, static_cast<uint32_t>(p1),
                static_cast<uint32_t>(p0 >> 32) ^ c.v[3] ^ k1, static_cast<uint32_t>(p0)}};
}

// Philox4x32-10 of `counter` under key {k0, k1}.
inline Block Philox4x32_10(Block c, uint32_t k0, uint32_t k1) {
  for (int i = 0; i < 10; ++i) {
    c = Round(c, k0, k1);
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

// The counter of (lane, it): subsequence `lane`, position `it` within it.
inline Block CounterOf(uint64_t lane, uint64_t it) {
  return Block{{static_cast<uint32_t>(it), static_cast<uint32_t>(it >> 32),
                static_cast<uint32_t>(lane), static_cast<uint32_t>(lane >> 32)}};
}

// Block b of the 32-bit value layout, under `seed`.
inline Block WordBlock(uint64_t seed, uint64_t b) {
  return Philox4x32_10(CounterOf(b % kLanes, b / kLanes), static_cast<uint32_t>(seed),
                       static_cast<uint32_t>(seed >> 32));
}

// The counter holding double position p of a call that started at `offset`.
inline Block DoubleCounter(uint64_t offset, uint64_t p) {
  const uint64_t b = p / 4;
  return CounterOf(b % kLanes, b / kLanes + (b - offset / 4) / kLanes + (p % 4) / 2);
}

// The offset after a call of n values starting at `offset`.
inline uint64_t AdvanceWords(uint64_t offset, uint64_t n) { return offset + n; }
inline uint64_t AdvanceDoubles(uint64_t offset, uint64_t n) {
  return offset + n + 4 * kLanes * ((offset % 4 + n) / (4 * kLanes));
}

// --- Conversions, as cuRAND's _curand_uniform, _curand_uniform_double_hq,
// _curand_box_muller and _curand_box_muller_double (host branches).
inline constexpr float k2Pow32Inv = 2.3283064e-10f;
inline constexpr float k2Pow32Inv2Pi = 2.3283064e-10f * 6.2831855f;
inline constexpr double k2Pow53Inv = 1.1102230246251565e-16;
inline constexpr double kPi = 3.1415926535897932;

inline float UniformFloat(uint32_t x) {
  // Two statements so no compiler contracts them into an fma.
  const float scaled = static_cast<float>(x) * k2Pow32Inv;
  return scaled + k2Pow32Inv / 2.0f;
}

inline double UniformDouble(uint32_t x, uint32_t y) {
  const uint64_t z = uint64_t{x} ^ (uint64_t{y} << (53 - 32));
  return static_cast<double>(z) * k2Pow53Inv + k2Pow53Inv / 2.0;
}

// Box-Muller on (x, y): the pair {sin, cos} times the radius.
inline void NormalFloatPair(uint32_t x, uint32_t y, float* sin_out, float* cos_out) {
  const float u = UniformFloat(x);
  const float scaled = static_cast<float>(y) * k2Pow32Inv2Pi;
  const float v = scaled + k2Pow32Inv2Pi / 2.0f;
  const float s = std::sqrt(-2.0f * std::log(u));
  *sin_out = std::sin(v) * s;
  *cos_out = std::cos(v) * s;
}

inline void NormalDoublePair(const Block& c, double* sin_out, double* cos_out) {
  const uint64_t zx = uint64_t{c.v[0]} ^ (uint64_t{c.v[1]} << (53 - 32));
  const double u = static_cast<double>(zx) * k2Pow53Inv + k2Pow53Inv / 2.0;
  const uint64_t zy = uint64_t{c.v[2]} ^ (uint64_t{c.v[3]} << (53 - 32));
  const double v = static_cast<double>(zy) * (k2Pow53Inv * 2.0) + k2Pow53Inv;
  const double s = std::sqrt(-2.0 * std::log(u));
  *sin_out = std::sin(v * kPi) * s;
  *cos_out = std::cos(v * kPi) * s;
}

// --- Filling output elements [begin, end) of one call that starts at
// `offset`. Any split of [0, n) into ranges gives the same bytes, so ranges
// can run on any number of threads.

// Calls emit(i, block, word) for each 32-bit position of [begin, end),
// computing each block once.
template <typename Emit>
inline void ForEachWord(uint64_t seed, uint64_t offset, uint64_t begin, uint64_t end, Emit emit) {
  uint64_t i = begin;
  while (i < end) {
    const uint64_t p = offset + i;
    const Block r = WordBlock(seed, p / 4);
    const uint64_t stop = end < i + (4 - p % 4) ? end : i + (4 - p % 4);
    for (; i < stop; ++i) emit(i, r, (offset + i) % 4);
  }
}

// As ForEachWord, for out[i] = convert(word): whole blocks go through a
// batched loop (eight counters at a time, laid out for the vectorizer).
template <typename T, typename Convert>
inline void FillWords(uint64_t seed, uint64_t offset, T* out, uint64_t begin, uint64_t end,
                      Convert convert) {
  static_assert(kLanes == (uint64_t{1} << 16), "the batched loop splits blocks by shifts");
  // The partial block at each end goes the plain way.
  const uint64_t first_full = begin + (4 - (offset + begin) % 4) % 4;
  if (first_full >= end) {
    ForEachWord(seed, offset, begin, end,
                [&](uint64_t i, const Block& r, uint64_t w) { out[i] = convert(r.v[w]); });
    return;
  }
  ForEachWord(seed, offset, begin, first_full,
              [&](uint64_t i, const Block& r, uint64_t w) { out[i] = convert(r.v[w]); });
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const uint64_t b0 = (offset + first_full) / 4;
  const uint64_t blocks = (end - first_full) / 4;
  T* dst = out + first_full;
  constexpr int kBatch = 8;
  uint64_t j = 0;
  for (; j + kBatch <= blocks; j += kBatch) {
    uint32_t c0[kBatch], c1[kBatch], c2[kBatch], c3[kBatch];
    for (int l = 0; l < kBatch; ++l) {
      const uint64_t b = b0 + j + l;
      c0[l] = static_cast<uint32_t>(b >> 16);  // Counter b / kLanes ...
      c1[l] = static_cast<uint32_t>(b >> 48);
      c2[l] = static_cast<uint32_t>(b & 0xffff);  // ... of lane b % kLanes.
      c3[l] = 0;
    }
    uint32_t ka = k0, kb = k1;
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < kBatch; ++l) {
        const uint64_t p0 = uint64_t{kM0} * c0[l];
        const uint64_t p1 = uint64_t{kM1} * c2[l];
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ ka;
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ kb;
        c1[l] = static_cast<uint32_t>(p1);
        c3[l] = static_cast<uint32_t>(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
      ka += kW0;
      kb += kW1;
    }
    for (int l = 0; l < kBatch; ++l) {
      T* o = dst + 4 * (j + l);
      o[0] = convert(c0[l]);
      o[1] = convert(c1[l]);
      o[2] = convert(c2[l]);
      o[3] = convert(c3[l]);
    }
  }
  ForEachWord(seed, offset, first_full + 4 * j, end,
              [&](uint64_t i, const Block& r, uint64_t w) { out[i] = convert(r.v[w]); });
}

inline void FillBits(uint64_t seed, uint64_t offset, uint32_t* out, uint64_t begin, uint64_t end) {
  FillWords(seed, offset, out, begin, end, [](uint32_t x) { return x; });
}

inline void FillUniformFloat(uint64_t seed, uint64_t offset, float* out, uint64_t begin,
                             uint64_t end) {
  FillWords(seed, offset, out, begin, end, [](uint32_t x) { return UniformFloat(x); });
}

inline void FillNormalFloat(uint64_t seed, uint64_t offset, float mean, float stddev, float* out,
                            uint64_t begin, uint64_t end) {
  ForEachWord(seed, offset, begin, end, [&](uint64_t i, const Block& r, uint64_t w) {
    float s, c;
    NormalFloatPair(r.v[w & 2], r.v[w | 1], &s, &c);
    const float z = (w % 2 == 0) ? s : c;
    const float scaled = z * stddev;
    out[i] = scaled + mean;
  });
}

inline void FillUniformDouble(uint64_t seed, uint64_t offset, double* out, uint64_t begin,
                              uint64_t end) {
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  Block r{};
  for (uint64_t i = begin; i < end; ++i) {
    const uint64_t p = offset + i;
    // Positions 2k and 2k + 1 share a counter.
    if (i == begin || p % 2 == 0) r = Philox4x32_10(DoubleCounter(offset, p), k0, k1);
    out[i] = (p % 2 == 0) ? UniformDouble(r.v[0], r.v[1]) : UniformDouble(r.v[2], r.v[3]);
  }
}

inline void FillNormalDouble(uint64_t seed, uint64_t offset, double mean, double stddev,
                             double* out, uint64_t begin, uint64_t end) {
  const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  Block r{};
  for (uint64_t i = begin; i < end; ++i) {
    const uint64_t p = offset + i;
    if (i == begin || p % 2 == 0) r = Philox4x32_10(DoubleCounter(offset, p), k0, k1);
    double s, c;
    NormalDoublePair(r, &s, &c);
    const double scaled = ((p % 2 == 0) ? s : c) * stddev;
    out[i] = scaled + mean;
  }
}

}  // namespace rill::philox

#endif  // RILL_PLUGINS_RNG_PHILOX_PHILOX_H_
