"""Models whose shapes imply more memory than allowed are refused before anything is allocated."""
import os

import pytest

import mimic
import mimic.onnx

REGRESSIONS = os.path.join(os.path.dirname(__file__), "..", "fuzz", "regressions", "onnx_import")


def model(name):
    return os.path.join(REGRESSIONS, name + ".onnx")


def test_initializer_over_the_limit_is_refused_with_the_numbers():
    with pytest.raises(mimic.IoError, match=r"f32\[10\] needs 40 bytes, over the tensor memory limit of 8 bytes"):
        mimic.onnx.load(model("instance_norm_rank1"), max_tensor_bytes=8)


def test_inferred_shape_over_the_limit_is_a_shape_error():
    g = mimic.onnx.load(model("expand_to_4tb"))
    with pytest.raises(mimic.ShapeError, match=r"needs 4.4 TB .* over the tensor memory limit"):
        mimic.compile(g, "cpu")
    with pytest.raises(mimic.ShapeError, match=r"over the tensor memory limit of 1.0 MB \(1000000 bytes\)"):
        mimic.compile(g, "cpu", max_tensor_bytes=1_000_000)


def test_limit_must_be_a_positive_int():
    g = mimic.onnx.load(model("expand_to_4tb"))
    with pytest.raises(mimic.InvalidArgument):
        mimic.compile(g, "cpu", max_tensor_bytes=0)


def test_reported_instance_norm_model_is_a_shape_error():
    with pytest.raises(mimic.ShapeError, match=r"node 'norm' \(InstanceNormalization\): input 0 has rank 1"):
        mimic.compile(mimic.onnx.load(model("instance_norm_rank1")), "cpu")
