"""mimic.compile(): graphs, zoo models and nn modules to executables."""
import numpy as np

from . import _mimic
from .errors import InvalidArgument

_KNOWN = {"precision", "strict", "timing_only", "compile_only", "overrides", "batch", "example_inputs", "name"}


def _graph_of(model, example_inputs, device):
    """The graph to compile and its batch (0 when the graph's batch is fixed)."""
    from .zoo import ZooModel
    # example_inputs, when given, set the batch of a graph or zoo model (their first dimension)
    first = example_inputs[0] if isinstance(example_inputs, (list, tuple)) and example_inputs else example_inputs
    shape = np.shape(first) if first is not None else ()
    example_batch = shape[0] if len(shape) > 0 else 0
    if isinstance(model, _mimic.Graph):
        return model, example_batch, model.name
    if isinstance(model, ZooModel):
        return model.graph, example_batch or model.batch, model.name
    if not callable(model):
        raise TypeError(f"compile() takes a mimic.Graph, a zoo model or an nn module, not {type(model).__name__}")
    if example_inputs is None:
        raise InvalidArgument(f"compiling a {type(model).__name__} needs example_inputs (arrays with the input shapes)")
    if not isinstance(example_inputs, (list, tuple)):
        example_inputs = [example_inputs]
    if len(example_inputs) != 1:
        raise InvalidArgument(f"modules take one input, got {len(example_inputs)} example inputs")
    x = np.asarray(example_inputs[0])
    holder = _mimic.placeholder("input", list(x.shape), x.dtype, str(model.device) if hasattr(model, "device") else device)
    return _mimic.trace([model(holder)], type(model).__name__), 0, type(model).__name__


def _device_of(model, device):
    """`device`, else the module's (model.to(...)), else cpu; a module moved to another device than
    the one given is an error, as torch_xla's device mismatch is."""
    own = str(getattr(model, "device", "cpu"))
    if device is None:
        return own
    if own != "cpu" and own != str(device):
        raise InvalidArgument(f"the model is on {own} (model.to), but device={str(device)!r} was given")
    return str(device)


def _byte_limit(max_tensor_bytes):
    if max_tensor_bytes is None:
        return 0
    if not isinstance(max_tensor_bytes, int) or isinstance(max_tensor_bytes, bool) or max_tensor_bytes <= 0:
        raise InvalidArgument(f"max_tensor_bytes must be a positive int, got {max_tensor_bytes!r}")
    return max_tensor_bytes


def compile(model, device=None, *, batch=None, example_inputs=None, precision="default", strict=False,
            timing_only=False, compile_only=False, overrides=None, max_tensor_bytes=None, **options):
    """Compiles a mimic.Graph, a zoo model or an nn module for `device`.

    Keyword options other than the named ones are device options (e.g. num_ipus=2,
    memory_proportion=0.6 for ipu-emu); `overrides` changes preset fields (e.g. {"mxu.rows": 64}).
    `max_tensor_bytes` bounds the largest tensor the model may need (default: half the physical
    memory); a model over it raises mimic.ShapeError before anything is allocated.
    Returns an Executable: call it with numpy arrays; `.report` describes the last run.
    """
    if device is not None and not isinstance(device, (str, _mimic.Device)):
        raise TypeError(f"device must be a str or mimic.Device, not {type(device).__name__}")
    device = _device_of(model, None if device is None else str(device))
    if batch is not None and (not isinstance(batch, int) or batch <= 0):
        raise InvalidArgument(f"batch must be a positive int, got {batch!r}")
    graph, default_batch, name = _graph_of(model, example_inputs, str(device))
    return _mimic._compile(graph, str(device), batch or default_batch, str(precision), bool(strict),
                           bool(timing_only), bool(compile_only), dict(options), dict(overrides or {}), name,
                           _byte_limit(max_tensor_bytes))
