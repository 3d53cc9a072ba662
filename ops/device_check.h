#ifndef RILL_OPS_DEVICE_CHECK_H_
#define RILL_OPS_DEVICE_CHECK_H_

// Input checks that run on the device, for device kernels whose host twin
// refuses bad input (an index out of range, a label that is not a class)
// with an error status. The device kernel cannot return a status, so a
// check kernel writes what it found into a small temp tensor, and the op
// reads it back in stream order and fails with the host kernel's error:
//
//   RILL_ASSIGN_OR_RETURN(TensorArg found, DeviceCheckSlot(ctx));
//   ... launch a check kernel that writes `found` ...
//   return FailIfDeviceFound(ctx, found, [=](int64_t at, int64_t bits) {
//     return HostError(...);
//   });
//
// The slot is two int64 words: word 0 is the position of the first bad
// element, or -1 when there is none; word 1 holds the bad value's bits (the
// kernel stores the value there in its own type, at the low address).
// Because the failure comes from a host callback on the op's stream, the
// op's outputs carry it, as they carry a host kernel's error. The op needs
// ResourceKind::kTempSpace.

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "rill/base/status_macros.h"
#include "rill/ops/op.h"
#include "rill/stream/stream.h"

namespace rill::ops {

// The two-word slot a check kernel writes (temp space of this op).
inline absl::StatusOr<TensorArg> DeviceCheckSlot(OpContext& ctx) {
  return ctx.Temp(Shape{2}, DType::kI64);
}

// Copies `found` (DeviceCheckSlot, written by a check kernel enqueued
// before) back to the host and enqueues `error(at, bits)`, run on the host
// when word 0 is not -1: `at` is word 0, `bits` word 1. `error` returns the
// status the op fails with and must capture by value.
template <typename ErrorFn>
absl::Status FailIfDeviceFound(OpContext& ctx, const TensorArg& found, ErrorFn error) {
  RILL_ASSIGN_OR_RETURN(Stream * stream, ctx.stream());
  auto words = std::make_shared<std::array<int64_t, 2>>();
  stream->ThenMemcpy(words->data(), found.view(), sizeof(*words));
  return ctx.RunOnHost([words, error = std::move(error)]() -> absl::Status {
    if ((*words)[0] < 0) return absl::OkStatus();
    return error((*words)[0], (*words)[1]);
  });
}

// The value of type T whose bits a check kernel stored in word 1.
template <typename T>
T DeviceFoundValue(int64_t bits) {
  static_assert(sizeof(T) <= sizeof(int64_t));
  T v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

}  // namespace rill::ops

#endif  // RILL_OPS_DEVICE_CHECK_H_
