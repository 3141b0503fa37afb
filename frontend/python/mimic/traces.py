"""Reading mimic traces (SQLite files written by `mimic.trace(...)`, `mimic run --trace`, sweeps).

    rows = mimic.traces.read("run.db")                     # runs
    ops = mimic.traces.read("run.db", "ops", run="3")      # per-op rows of run 3 ("" = latest)
    df = mimic.traces.read("run.db", "ops", as_frame=True) # a pandas DataFrame when pandas is installed
    mimic.traces.read("run.db", "SELECT * FROM op_type_summary")   # any SQL: dicts by column
"""
from . import _mimic


def read(path, what="runs", run="", as_frame=False):
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    query = what if what in ("runs", "ops", "units") else "sql:" + what
    rows = _mimic._trace_read(path, query, str(run))
    if not as_frame:
        return rows
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)
