// CUDA build of the elementwise kernels: elementwise.cl, the same source
// the OpenCL backend compiles, once per element type (entries binary_f32,
// unary_f64, ...). elementwise_device.cc launches them.
#include "../device_code_cuda.h"
#include "elementwise_codes.h"

#define RILL_ENUM_BIN(k, NAME) BIN_##NAME,
#define RILL_ENUM_UN(k, NAME) UN_##NAME,
enum { RILL_BINARY_CODES(RILL_ENUM_BIN) };
enum { RILL_UNARY_CODES(RILL_ENUM_UN) };

#define T float
#define UT float
#define IS_FLOAT 1
#define RILL_KERNEL_SUFFIX f32
#include "elementwise.cl"
#undef T
#undef UT
#undef IS_FLOAT
#undef RILL_KERNEL_SUFFIX

#define T double
#define UT double
#define IS_FLOAT 1
#define RILL_KERNEL_SUFFIX f64
#include "elementwise.cl"
#undef T
#undef UT
#undef IS_FLOAT
#undef RILL_KERNEL_SUFFIX

#define T int32_t
#define UT uint32_t
#define IS_FLOAT 0
#define RILL_KERNEL_SUFFIX i32
#include "elementwise.cl"
#undef T
#undef UT
#undef IS_FLOAT
#undef RILL_KERNEL_SUFFIX

#define T int64_t
#define UT uint64_t
#define IS_FLOAT 0
#define RILL_KERNEL_SUFFIX i64
#include "elementwise.cl"
#undef T
#undef UT
#undef IS_FLOAT
#undef RILL_KERNEL_SUFFIX

#define T uint8_t
#define UT uint8_t
#define IS_FLOAT 0
#define RILL_KERNEL_SUFFIX u8
#include "elementwise.cl"
#undef T
#undef UT
#undef IS_FLOAT
#undef RILL_KERNEL_SUFFIX
