#ifndef RILL_OPS_ELEMENTWISE_ELEMENTWISE_CODES_H_
#define RILL_OPS_ELEMENTWISE_ELEMENTWISE_CODES_H_

// The elementwise op codes, listed once. C++ makes its enums from them
// (elementwise.h); the device kernels (elementwise.cl, compiled as OpenCL C
// and, through elementwise.cu, as CUDA) switch on the names BIN_<NAME> and
// UN_<NAME>, defined from the same lists: the OpenCL program gets them as
// #defines (elementwise_device.cc), CUDA as an enum (elementwise.cu). No
// includes: nvcc reads this file too.
//
// X(enumerator, NAME), in code order from 0.
// clang-format off
#define RILL_BINARY_CODES(X) \
  X(kAdd, ADD)               \
  X(kSub, SUB)               \
  X(kMul, MUL)               \
  X(kDiv, DIV)               \
  X(kPow, POW)               \
  X(kMax, MAX)               \
  X(kMin, MIN)               \
  X(kEqual, EQUAL)           \
  X(kGreater, GREATER)       \
  X(kRsub, RSUB)             \
  X(kRdiv, RDIV)             \
  X(kRpow, RPOW)             \
  X(kMod, MOD)               \
  X(kFmod, FMOD)
#define RILL_UNARY_CODES(X) \
  X(kNeg, NEG)              \
  X(kAbs, ABS)              \
  X(kExp, EXP)              \
  X(kLog, LOG)              \
  X(kSqrt, SQRT)            \
  X(kRelu, RELU)            \
  X(kSigmoid, SIGMOID)      \
  X(kTanh, TANH)            \
  X(kGelu, GELU)            \
  X(kSquare, SQUARE)        \
  X(kErf, ERF)              \
  X(kFloor, FLOOR)          \
  X(kCeil, CEIL)            \
  X(kRound, ROUND)          \
  X(kSin, SIN)              \
  X(kCos, COS)              \
  X(kTan, TAN)              \
  X(kAsin, ASIN)            \
  X(kAcos, ACOS)            \
  X(kAtan, ATAN)            \
  X(kSinh, SINH)            \
  X(kCosh, COSH)            \
  X(kAsinh, ASINH)          \
  X(kAcosh, ACOSH)          \
  X(kAtanh, ATANH)          \
  X(kCopy, COPY)
// clang-format on

#endif  // RILL_OPS_ELEMENTWISE_ELEMENTWISE_CODES_H_
