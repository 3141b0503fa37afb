"""Reading mimic traces (SQLite files written by `mimic.trace(...)`, `mimic run --trace`, sweeps).

    rows = mimic.traces.read("run.db")                     # runs
    ops = mimic.traces.read("run.db", "ops", run="3")      # per-op rows of run 3 ("" = latest)
    df = mimic.traces.read("run.db", "ops", as_frame=True) # a pandas DataFrame when pandas is installed
    mimic.traces.read("run.db", "SELECT * FROM op_type_summary")   # any SQL: dicts by column
"""
from . import _mimic
from ._trace import trace_path
from .errors import InvalidArgument

_PER_RUN = ("ops", "units")


def read(path, what="runs", run="", as_frame=False):
    path = trace_path(path)
    if not isinstance(what, str) or not what.strip():
        raise InvalidArgument(f"traces.read: 'what' must be 'runs', 'ops', 'units' or an SQL query, got {what!r}")
    is_sql = what not in ("runs",) + _PER_RUN
    if is_sql and " " not in what.strip():
        raise InvalidArgument(f"traces.read: 'what' must be 'runs', 'ops', 'units' or an SQL query, got {what!r}")
    run = "" if run is None else str(run)
    if run and what not in _PER_RUN:
        raise InvalidArgument(f"traces.read: run= selects the run of 'ops' or 'units'; filter {what!r} by run_id instead")
    rows = _mimic._trace_read(path, "sql:" + what if is_sql else what, run)
    if not as_frame:
        return rows
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)
