"""mimic.trace(path): a context manager that records every run inside it to an SQLite trace."""
from . import _mimic


class trace:
    """with mimic.trace("run.db") as t: ... ; t.run_ids lists the runs recorded."""

    def __init__(self, path):
        if not isinstance(path, str):
            raise TypeError(f"path must be a str, not {type(path).__name__}")
        self.path = path
        self._scope = None
        self.run_ids = []

    def __enter__(self):
        self._scope = _mimic._TraceScope(self.path)
        return self

    def __exit__(self, *exc):
        self.run_ids = self._scope.run_ids()
        self._scope.close()
        self._scope = None
        return False
