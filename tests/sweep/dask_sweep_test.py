"""mimic.sweep on a Dask LocalCluster (worker processes, as on a cluster): the points equal the local
executor's, and the trace records them. Exit 77 (a CTest skip) with the reason when Dask's
distributed scheduler is not installed (scripts/setup.sh --test installs python3-distributed)."""
import os
import sqlite3
import sys
import tempfile

try:
    import distributed
except ImportError as e:
    print(f"SKIP: dask.distributed is not installed ({e}); scripts/setup.sh --test installs python3-distributed")
    sys.exit(77)

import mimic

GRID = dict(model="mlp", model_args={"layers": 2, "hidden": 64, "in_features": 64}, device="tpu-emu:v1,tpu-emu:v4",
            batch="1,...,32", layout="nchw,nhwc", timing_only=True)


def comparable(records):
    return {r["key"]: {k: v for k, v in r.items() if k != "host_seconds"} for r in records}


def main():
    local = mimic.sweep(**GRID, jobs=2)
    assert len(local) == 24 and all(r["status"] == "ok" for r in local), local
    with tempfile.TemporaryDirectory() as tmp, \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=40) as cluster, distributed.Client(cluster) as client:
        trace = os.path.join(tmp, "sweep.db")
        on_dask = mimic.sweep(**GRID, executor=client.get_executor(), trace=trace)
        with sqlite3.connect(trace) as db:
            stored = db.execute("SELECT COUNT(*) FROM sweep_point WHERE status = 'ok'").fetchone()[0]
    if comparable(on_dask) != comparable(local):
        sys.exit(f"FAIL: the Dask sweep's points differ from the local sweep's ({len(on_dask)} vs {len(local)})")
    if stored != 24:
        sys.exit(f"FAIL: the trace holds {stored} points, expected 24")
    print("PASS: 24 points on a Dask LocalCluster equal the local sweep's")


if __name__ == "__main__":
    main()
