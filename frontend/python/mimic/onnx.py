"""ONNX models: mimic.onnx.load(path) returns a mimic.Graph (opsets 6-17; a symbolic first input
dimension becomes the batch, bound by compile(..., batch=N))."""
from . import _mimic


def load(path):
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    return _mimic._onnx_load(path)
