#!/usr/bin/python3
"""Writes the ONNX models of user-reported findings into tests/fuzz/regressions/onnx_import/.

Each model is a few hundred bytes; `mimic run --onnx` on any of them must answer with a one-line
error (tests/cli: CliReliability). Run with Debian's python (numpy + onnx):
    /usr/bin/python3 tests/fuzz/make_onnx_regressions.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions", "onnx_import")


def save(name, nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


def vec(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def instance_norm_rank1():
    # A rank-1 X: the cpu kernel read shape[1] past the end while folding the constant node.
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], name="norm")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    save("instance_norm_rank1", [node], [], [y],
         [vec("x", np.arange(10)), vec("scale", [1.0]), vec("bias", [0.0])])


def instance_norm_int8_scale():
    # Rank-2 X with an integer scale: a hang on cpu, SIGFPE on tpu-emu:v4.
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], name="norm")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    save("instance_norm_rank2_int8_scale", [node], [x], [y],
         [vec("scale", [1, 2, 3], np.int8), vec("bias", [0, 0, 0])])


def huge_initializer():
    # f32[520043518, 3] (6.2 GB) declared over 144 bytes of raw data: refused before allocating.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[520043518, 3], raw_data=b"\0" * 144)
    node = helper.make_node("Relu", ["w"], ["y"], name="relu")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    save("initializer_declares_6gb_over_144_bytes", [node], [], [y], [w])


def huge_expand():
    # Shapes that imply a 4 TB output: refused by the memory limit, not by the allocator.
    shape = vec("shape", [1 << 20, 1 << 20], np.int64)
    node = helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    save("expand_to_4tb", [node], [x], [y], [shape])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    instance_norm_rank1()
    instance_norm_int8_scale()
    huge_initializer()
    huge_expand()
