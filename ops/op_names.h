#ifndef RILL_OPS_OP_NAMES_H_
#define RILL_OPS_OP_NAMES_H_

// The name of every built-in op, written once: the registrations, the typed
// API (ops.h), the gradients, the graph passes and the ONNX mappings use
// these constants rather than repeating string literals, so a misspelt
// name does not compile. ops_op_registry_test checks that the list and the
// registry agree.

namespace rill::op_names {

inline constexpr char kAccumulate[] = "_accumulate";
inline constexpr char kBackwardAbs[] = "_backward_abs";
inline constexpr char kBackwardAcos[] = "_backward_acos";
inline constexpr char kBackwardAcosh[] = "_backward_acosh";
inline constexpr char kBackwardActivation[] = "_backward_activation";
inline constexpr char kBackwardAsin[] = "_backward_asin";
inline constexpr char kBackwardAsinh[] = "_backward_asinh";
inline constexpr char kBackwardAtan[] = "_backward_atan";
inline constexpr char kBackwardAtanh[] = "_backward_atanh";
inline constexpr char kBackwardBatchNorm[] = "_backward_batch_norm";
inline constexpr char kBackwardConv2dData[] = "_backward_conv2d_data";
inline constexpr char kBackwardConv2dFilter[] = "_backward_conv2d_filter";
inline constexpr char kBackwardCopy[] = "_backward_copy";
inline constexpr char kBackwardCos[] = "_backward_cos";
inline constexpr char kBackwardCosh[] = "_backward_cosh";
inline constexpr char kBackwardDropout[] = "_backward_dropout";
inline constexpr char kBackwardErf[] = "_backward_erf";
inline constexpr char kBackwardExp[] = "_backward_exp";
inline constexpr char kBackwardGather[] = "_backward_gather";
inline constexpr char kBackwardGatherElements[] = "_backward_gather_elements";
inline constexpr char kBackwardGelu[] = "_backward_gelu";
inline constexpr char kBackwardLog[] = "_backward_log";
inline constexpr char kBackwardLogSoftmax[] = "_backward_log_softmax";
inline constexpr char kBackwardNeg[] = "_backward_neg";
inline constexpr char kBackwardPooling[] = "_backward_pooling";
inline constexpr char kBackwardRelu[] = "_backward_relu";
inline constexpr char kBackwardSigmoid[] = "_backward_sigmoid";
inline constexpr char kBackwardSin[] = "_backward_sin";
inline constexpr char kBackwardSinh[] = "_backward_sinh";
inline constexpr char kBackwardSlice[] = "_backward_slice";
inline constexpr char kBackwardSoftmax[] = "_backward_softmax";
inline constexpr char kBackwardSoftmaxCrossEntropy[] = "_backward_softmax_cross_entropy";
inline constexpr char kBackwardSqrt[] = "_backward_sqrt";
inline constexpr char kBackwardSquare[] = "_backward_square";
inline constexpr char kBackwardTan[] = "_backward_tan";
inline constexpr char kBackwardTanh[] = "_backward_tanh";
inline constexpr char kAbs[] = "abs";
inline constexpr char kAcos[] = "acos";
inline constexpr char kAcosh[] = "acosh";
inline constexpr char kActivation[] = "activation";
inline constexpr char kAdamUpdate[] = "adam_update";
inline constexpr char kAdd[] = "add";
inline constexpr char kAddScalar[] = "add_scalar";
inline constexpr char kArange[] = "arange";
inline constexpr char kArgmax[] = "argmax";
inline constexpr char kAsin[] = "asin";
inline constexpr char kAsinh[] = "asinh";
inline constexpr char kAtan[] = "atan";
inline constexpr char kAtanh[] = "atanh";
inline constexpr char kBatchNorm[] = "batch_norm";
inline constexpr char kCast[] = "cast";
inline constexpr char kCeil[] = "ceil";
inline constexpr char kConcat[] = "concat";
inline constexpr char kConv2d[] = "conv2d";
inline constexpr char kCos[] = "cos";
inline constexpr char kCosh[] = "cosh";
inline constexpr char kCumsum[] = "cumsum";
inline constexpr char kDiv[] = "div";
inline constexpr char kDivScalar[] = "div_scalar";
inline constexpr char kDropout[] = "dropout";
inline constexpr char kEqual[] = "equal";
inline constexpr char kEqualScalar[] = "equal_scalar";
inline constexpr char kErf[] = "erf";
inline constexpr char kExp[] = "exp";
inline constexpr char kFill[] = "fill";
inline constexpr char kFlatten[] = "flatten";
inline constexpr char kFloor[] = "floor";
inline constexpr char kFullyConnected[] = "fully_connected";
inline constexpr char kFusedConv2d[] = "fused_conv2d";
inline constexpr char kGather[] = "gather";
inline constexpr char kGatherElements[] = "gather_elements";
inline constexpr char kGelu[] = "gelu";
inline constexpr char kLayerNorm[] = "layer_norm";
inline constexpr char kGreater[] = "greater";
inline constexpr char kGreaterScalar[] = "greater_scalar";
inline constexpr char kIdentity[] = "identity";
inline constexpr char kIsInf[] = "is_inf";
inline constexpr char kIsNan[] = "is_nan";
inline constexpr char kLog[] = "log";
inline constexpr char kLogSoftmax[] = "log_softmax";
inline constexpr char kMatmul[] = "matmul";
inline constexpr char kMax[] = "max";
inline constexpr char kMaximum[] = "maximum";
inline constexpr char kMaximumScalar[] = "maximum_scalar";
inline constexpr char kMean[] = "mean";
inline constexpr char kMinimum[] = "minimum";
inline constexpr char kMinimumScalar[] = "minimum_scalar";
inline constexpr char kMod[] = "mod";
inline constexpr char kMul[] = "mul";
inline constexpr char kMulScalar[] = "mul_scalar";
inline constexpr char kNeg[] = "neg";
inline constexpr char kOnes[] = "ones";
inline constexpr char kPooling[] = "pooling";
inline constexpr char kPow[] = "pow";
inline constexpr char kPowScalar[] = "pow_scalar";
inline constexpr char kProd[] = "prod";
inline constexpr char kRandomNormal[] = "random_normal";
inline constexpr char kRandomUniform[] = "random_uniform";
inline constexpr char kRdivScalar[] = "rdiv_scalar";
inline constexpr char kRelu[] = "relu";
inline constexpr char kReshape[] = "reshape";
inline constexpr char kRound[] = "round";
inline constexpr char kRpowScalar[] = "rpow_scalar";
inline constexpr char kRsubScalar[] = "rsub_scalar";
inline constexpr char kSgdMomUpdate[] = "sgd_mom_update";
inline constexpr char kSgdUpdate[] = "sgd_update";
inline constexpr char kSigmoid[] = "sigmoid";
inline constexpr char kSin[] = "sin";
inline constexpr char kSinh[] = "sinh";
inline constexpr char kSlice[] = "slice";
inline constexpr char kSoftmax[] = "softmax";
inline constexpr char kSoftmaxCrossEntropy[] = "softmax_cross_entropy";
inline constexpr char kSqrt[] = "sqrt";
inline constexpr char kSquare[] = "square";
inline constexpr char kSub[] = "sub";
inline constexpr char kSubScalar[] = "sub_scalar";
inline constexpr char kSum[] = "sum";
inline constexpr char kSumTo[] = "sum_to";
inline constexpr char kTan[] = "tan";
inline constexpr char kTanh[] = "tanh";
inline constexpr char kTranspose[] = "transpose";
inline constexpr char kWhere[] = "where";
inline constexpr char kZeros[] = "zeros";

// Every name above, for tests and tools.
inline constexpr const char* kAll[] = {
    kAccumulate,
    kBackwardAbs,
    kBackwardAcos,
    kBackwardAcosh,
    kBackwardActivation,
    kBackwardAsin,
    kBackwardAsinh,
    kBackwardAtan,
    kBackwardAtanh,
    kBackwardBatchNorm,
    kBackwardConv2dData,
    kBackwardConv2dFilter,
    kBackwardCopy,
    kBackwardCos,
    kBackwardCosh,
    kBackwardDropout,
    kBackwardErf,
    kBackwardExp,
    kBackwardGather,
    kBackwardGatherElements,
    kBackwardGelu,
    kBackwardLog,
    kBackwardLogSoftmax,
    kBackwardNeg,
    kBackwardPooling,
    kBackwardRelu,
    kBackwardSigmoid,
    kBackwardSin,
    kBackwardSinh,
    kBackwardSlice,
    kBackwardSoftmax,
    kBackwardSoftmaxCrossEntropy,
    kBackwardSqrt,
    kBackwardSquare,
    kBackwardTan,
    kBackwardTanh,
    kAbs,
    kAcos,
    kAcosh,
    kActivation,
    kAdamUpdate,
    kAdd,
    kAddScalar,
    kArange,
    kArgmax,
    kAsin,
    kAsinh,
    kAtan,
    kAtanh,
    kBatchNorm,
    kCast,
    kCeil,
    kConcat,
    kConv2d,
    kCos,
    kCosh,
    kCumsum,
    kDiv,
    kDivScalar,
    kDropout,
    kEqual,
    kEqualScalar,
    kErf,
    kExp,
    kFill,
    kFlatten,
    kFloor,
    kFullyConnected,
    kFusedConv2d,
    kGather,
    kGatherElements,
    kGelu,
    kLayerNorm,
    kGreater,
    kGreaterScalar,
    kIdentity,
    kIsInf,
    kIsNan,
    kLog,
    kLogSoftmax,
    kMatmul,
    kMax,
    kMaximum,
    kMaximumScalar,
    kMean,
    kMinimum,
    kMinimumScalar,
    kMod,
    kMul,
    kMulScalar,
    kNeg,
    kOnes,
    kPooling,
    kPow,
    kPowScalar,
    kProd,
    kRandomNormal,
    kRandomUniform,
    kRdivScalar,
    kRelu,
    kReshape,
    kRound,
    kRpowScalar,
    kRsubScalar,
    kSgdMomUpdate,
    kSgdUpdate,
    kSigmoid,
    kSin,
    kSinh,
    kSlice,
    kSoftmax,
    kSoftmaxCrossEntropy,
    kSqrt,
    kSquare,
    kSub,
    kSubScalar,
    kSum,
    kSumTo,
    kTan,
    kTanh,
    kTranspose,
    kWhere,
    kZeros,
};

}  // namespace rill::op_names

#endif  // RILL_OPS_OP_NAMES_H_
