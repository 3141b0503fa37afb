"""mimic.trace(path): a context manager that records every run inside it to an SQLite trace."""
import os

from . import _mimic
from .errors import InvalidArgument


def trace_path(path, what="path"):
    """A trace file name from a str or os.PathLike; a NUL byte (which would cut the name) is refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{what} must name a file as text, not {type(path).__name__}")
    if "\0" in path:
        raise InvalidArgument(f"{what} {path!r} contains a NUL byte")
    return path


class trace:
    """with mimic.trace("run.db") as t: ... ; t.run_ids lists the runs recorded. Every run of the
    process (any thread) while the block is open is recorded; leaving the block waits for runs in
    progress to end."""

    def __init__(self, path):
        self.path = trace_path(path)
        self._scope = None
        self.run_ids = []

    def __enter__(self):
        if self._scope is not None:
            raise InvalidArgument(f"trace '{self.path}' is already open: one `with` block at a time")
        self._scope = _mimic._TraceScope(self.path)
        return self

    def __exit__(self, *exc):
        if self._scope is None:
            return False
        scope, self._scope = self._scope, None
        scope.close()
        self.run_ids = scope.run_ids()
        return False
