"""mimic's exceptions. Every error carries the one-line message of the C++ core, which names the op,
node, shapes, preset or bytes involved."""


class Error(Exception):
    """Base class of every mimic error."""


class InvalidArgument(Error, ValueError):
    """Bad input: device string, option, tensor, model name."""


class ShapeError(InvalidArgument):
    """A graph's shapes or dtypes do not fit an op."""


class UnsupportedOpError(Error):
    """An op (or op variant) the device or importer cannot handle. `op_types` lists them."""
    op_types = []


class CompileError(Error):
    """A device cannot compile the graph."""


class OutOfMemoryError(CompileError):
    """The program does not fit device memory. `tile` (-1 when memory is not per tile),
    `bytes_used`, `bytes_available` and `op` say where."""
    tile = -1
    bytes_used = 0
    bytes_available = 0
    op = ""


class DeviceUnavailableError(Error):
    """The device exists but cannot be used here (no GPU, not built)."""


class IoError(Error, OSError):
    """A file is missing, unreadable or malformed."""


class ExecutionError(Error, RuntimeError):
    """A compiled program failed while running."""
