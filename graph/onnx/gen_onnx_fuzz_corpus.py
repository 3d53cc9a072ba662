# Writes the seed corpus of tests/fuzz/onnx_fuzz.cc: small valid models of
# the shapes the importer handles (convolution and pooling, an MLP, shape
# ops, typed and raw initializers) as seed_*.onnx, and the inputs that once
# crashed the importer as regress_*.onnx (tests/fuzz/README.md): refused
# with a status, except regress_ok_*, which import.
# Needs onnx (1.12) and numpy only:
#   /usr/bin/python3 gen_onnx_fuzz_corpus.py -o tests/fuzz/corpus_onnx
import argparse
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def value(name, dims, elem=F):
    return helper.make_tensor_value_info(name, elem, dims)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, ins, outs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", ins, outs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="rill-fuzz-seed")
    m.ir_version = 7
    return m


def rand(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def seeds():
    yield "seed_conv_pool_relu", model(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [value("x", [1, 3, 8, 8])], [value("y", [1, 4, 2, 2])],
        [init("w", rand(4, 3, 3, 3)), init("b", rand(4))])
    yield "seed_conv_same_pool", model(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], auto_pad="SAME_UPPER",
                          strides=[2, 2], dilations=[1, 1], group=1),
         helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], auto_pad="SAME_LOWER"),
         helper.make_node("GlobalAveragePool", ["p"], ["g"]),
         helper.make_node("Flatten", ["g"], ["y"])],
        [value("x", [1, 2, 7, 7])], [value("y", [1, 2])], [init("w", rand(2, 2, 3, 3))])
    yield "seed_conv_transpose", model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [value("x", [1, 2, 3, 3])], [value("y", [1, 1, 6, 6])], [init("w", rand(2, 1, 2, 2))])
    yield "seed_mlp", model(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["m"]),
         helper.make_node("Add", ["m", "b2"], ["a"]),
         helper.make_node("Softmax", ["a"], ["y"], axis=-1)],
        [value("x", [2, 8])], [value("y", [2, 4])],
        [init("w1", rand(16, 8)), init("b1", rand(16)), init("w2", rand(16, 4)),
         init("b2", rand(4))])
    yield "seed_squeeze_unsqueeze_reshape", model(
        [helper.make_node("Squeeze", ["x", "sq"], ["s"]),
         helper.make_node("Unsqueeze", ["s", "uq"], ["u"]),
         helper.make_node("Reshape", ["u", "shape"], ["r"]),
         helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])],
        [value("x", [1, 3, 1, 4])], [value("y", [4, 3])],
        [init("sq", np.array([0, 2], np.int64)), init("uq", np.array([1], np.int64)),
         init("shape", np.array([3, 4], np.int64))])
    yield "seed_squeeze_unsqueeze_opset11", model(
        [helper.make_node("Squeeze", ["x"], ["s"], axes=[0]),
         helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, 3])],
        [value("x", [1, 2, 3])], [value("y", [1, 2, 3, 1])], opset=11)
    typed = helper.make_tensor("t", TensorProto.INT64, [2, 2], [1, 2, 3, 4])
    yield "seed_typed_initializer_shape_ops", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "i"], ["g"], axis=0),
         helper.make_node("Concat", ["g", "g"], ["c"], axis=0),
         helper.make_node("Reshape", ["t", "c"], ["r"]),
         helper.make_node("Cast", ["r"], ["f"], to=F),
         helper.make_node("Add", ["f", "x"], ["y"])],
        [value("x", [2, 2])], [value("y", [2, 2])],
        [typed, init("i", np.array([0], np.int64))])
    yield "seed_depth_space", model(
        [helper.make_node("SpaceToDepth", ["x"], ["d"], blocksize=2),
         helper.make_node("DepthToSpace", ["d"], ["y"], blocksize=2, mode="CRD")],
        [value("x", [1, 2, 4, 4])], [value("y", [1, 2, 4, 4])])


def regressions():
    def conv(strides, op="Conv", **kw):
        ins = ["x", "w"] if op == "Conv" else ["x"]
        return model([helper.make_node(op, ins, ["y"], kernel_shape=[3, 3], strides=strides, **kw)],
                     [value("x", [1, 2, 8, 8])], [value("y", [1, 2, 3, 3])],
                     [init("w", rand(2, 2, 3, 3))] if op == "Conv" else [])
    yield "regress_conv_stride0", conv([0, 1])
    yield "regress_conv_stride0_same_upper", conv([0, 0], auto_pad="SAME_UPPER")
    yield "regress_maxpool_stride0", conv([1, 0], op="MaxPool")
    yield "regress_averagepool_stride0_valid", conv([0, 0], op="AveragePool", auto_pad="VALID")
    yield "regress_depth_to_space_huge_blocksize", model(
        [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=1 << 40)],
        [value("x", [1, 4, 2, 2])], [value("y", [1, 1, 4, 4])])
    yield "regress_unsqueeze_dup_axes", model(
        [helper.make_node("Unsqueeze", ["x", "axes"], ["y"])],
        [value("x", [2, 3])], [value("y", [1, 2, 3, 1])],
        [init("axes", np.array([0, 0, 3], np.int64))])
    yield "regress_squeeze_dup_axes", model(
        [helper.make_node("Squeeze", ["x", "axes"], ["y"])],
        [value("x", [1, 3, 1])], [value("y", [3, 1])],
        [init("axes", np.array([0, 0], np.int64))])
    huge = TensorProto(name="w", data_type=F, dims=[1 << 31, 1 << 31], raw_data=b"\0" * 16)
    yield "regress_huge_initializer_claim", model(
        [helper.make_node("Add", ["x", "w"], ["y"])], [value("x", [1])], [value("y", [1])], [huge])
    huge_typed = TensorProto(name="w", data_type=F, dims=[1 << 40, 2], float_data=[1.0, 2.0])
    yield "regress_huge_typed_initializer_claim", model(
        [helper.make_node("Add", ["x", "w"], ["y"])], [value("x", [1])], [value("y", [1])],
        [huge_typed])
    # Found by onnx_fuzz (UBSan: signed overflow in the converters).
    yield "regress_split_sizes_overflow", model(
        [helper.make_node("Split", ["x", "split"], ["a", "b"], axis=0)],
        [value("x", [4, 4])], [value("a", [2, 4]), value("b", [2, 4])],
        [init("split", np.array([1 << 62, 1 << 62], np.int64))])
    yield "regress_pad_crop_overflow", model(
        [helper.make_node("Pad", ["x", "pads"], ["y"])], [value("x", [2, 3])], [value("y", [2, 3])],
        [init("pads", np.array([-(1 << 62)] * 4, np.int64))])
    yield "regress_cumsum_double_axis_5e233", model(
        [helper.make_node("CumSum", ["x", "axis"], ["y"])], [value("x", [2, 3])],
        [value("y", [2, 3])], [init("axis", np.array(5.3246e233, np.float64))])
    # libonnx's RNN-1 and ConvTranspose inference read dims the input lacks.
    yield "regress_rnn1_scalar_input", model(
        [helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=2)],
        [value("x", []), value("w", [2, 3]), value("r", [2, 3])], [value("y", [None, None])],
        opset=1)
    yield "regress_gemm6_scalar_inputs", model(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"])],
        [value("a", []), value("b", []), value("c", [])], [value("y", [None, None])], opset=6)
    yield "regress_conv_transpose_rank1_weight", model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"])],
        [value("x", [1, 4, 8, 8]), value("w", [2])], [value("y", [None] * 4)])
    yield "regress_resize_scale_8e18", model(
        [helper.make_node("Resize", ["x", "roi", "scales"], ["y"])], [value("x", [1, 1, 2, 2])],
        [value("y", [None] * 4)],
        [init("roi", np.zeros(0, np.float32)), init("scales", np.array([1, 1, 8.5e18, 1], np.float32))])
    yield "regress_ok_eyelike_k_int64_max", model(
        [helper.make_node("EyeLike", ["x"], ["y"], k=(1 << 63) - 1)], [value("x", [2, 3])],
        [value("y", [2, 3])])
    yield "regress_negative_input_dim", model(
        [helper.make_node("Relu", ["x"], ["y"])], [value("x", [2, -5])], [value("y", [2, -5])])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-o", "--out", required=True)
    out = p.parse_args().out
    os.makedirs(out, exist_ok=True)
    for name, m in list(seeds()) + list(regressions()):
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
