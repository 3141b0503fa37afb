"""ONNX models: mimic.onnx.load(path) returns a mimic.Graph (opsets 6-17; a symbolic first input
dimension becomes the batch, bound by compile(..., batch=N))."""
from . import _mimic
from ._compile import _byte_limit


def load(path, *, max_tensor_bytes=None):
    """Imports an ONNX model. `max_tensor_bytes` bounds each initializer (default: half the
    physical memory); a bigger one raises mimic.IoError before it is allocated."""
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    return _mimic._onnx_load(path, _byte_limit(max_tensor_bytes))
