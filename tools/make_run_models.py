#!/usr/bin/python3
"""Small ONNX models and .pb test data for rill-run's end-to-end test.

make_run_models.py OUT_DIR writes, with the expected outputs computed by
NumPy (not by any ONNX runtime):
  conv_gemm/model.onnx              Conv(pad 1) + Relu + Flatten + Gemm, x[2,3,8,8] -> y[2,5]
  conv_gemm/test_data_set_0/        input_0.pb, output_0.pb (model-zoo layout)
  wrong/output_0.pb                 a reference that differs from y
  dyn_batch.onnx                    MatMul + Relu with input x['N', 4] -> y['N', 3]
  unsupported.onnx                  Relu, two Det, Add and NonZero nodes (op types Rill
                                    lacks: Det, and NonZero, whose output shape depends on data)
Exits 77 (ctest's skip) when onnx cannot be imported.
"""

import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"skipped: /usr/bin/python3 cannot import onnx/numpy ({e}); install python3-onnx")
    sys.exit(77)


def save_tensor(path, array, name=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def save_model(path, graph, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)


def conv2d_pad1(x, w, b):
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + h, j:j + wd]  # n, c, h, w
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def conv_gemm(out):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(4) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((5, 256)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(5) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "conv_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(a, n) for a, n in
         [(w, "w"), (b, "b"), (w2, "w2"), (b2, "b2")]])
    os.makedirs(os.path.join(out, "conv_gemm"), exist_ok=True)
    save_model(os.path.join(out, "conv_gemm", "model.onnx"), graph)
    r = np.maximum(conv2d_pad1(x.astype(np.float64), w, b), 0).reshape(2, -1)
    y = (r @ w2.T.astype(np.float64) + b2).astype(np.float32)
    data = os.path.join(out, "conv_gemm", "test_data_set_0")
    save_tensor(os.path.join(data, "input_0.pb"), x, "x")
    save_tensor(os.path.join(data, "output_0.pb"), y, "y")
    save_tensor(os.path.join(out, "wrong", "output_0.pb"), y * 1.5 + 0.25, "y")


def dyn_batch(out):
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
        "dyn_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(w, "w")])
    save_model(os.path.join(out, "dyn_batch.onnx"), graph)


def unsupported(out):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Det", ["r"], ["d1"]),
         helper.make_node("Det", ["x"], ["d2"]),
         helper.make_node("Add", ["d1", "d2"], ["y"]),
         helper.make_node("NonZero", ["r"], ["z"])],
        "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("z", TensorProto.INT64, [3, None])])
    save_model(os.path.join(out, "unsupported.onnx"), graph)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    conv_gemm(out)
    dyn_batch(out)
    unsupported(out)


if __name__ == "__main__":
    main()
