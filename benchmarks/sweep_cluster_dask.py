"""The Dask half of benchmarks/sweep_cluster.sh: POINTS points through mimic.sweep, locally (jobs=2)
and on a Dask LocalCluster of 2 worker processes; prints `name|seconds|note` rows."""
import sys
import time

import distributed

import mimic


def timed(name, note, f):
    start = time.monotonic()
    out = f()
    print(f"{name}|{time.monotonic() - start:.2f}|{note}", flush=True)
    return out


def main(n):
    grid = dict(model="mlp", model_args={"layers": 2, "hidden": 64, "in_features": 64}, device="tpu-emu:v4",
                batch=",".join(str(b) for b in range(1, n + 1)), timing_only=True)
    timed("python mimic.sweep, jobs=2", "the local executor from Python", lambda: mimic.sweep(**grid, jobs=2))
    cluster = timed("dask LocalCluster start", "2 worker processes, 1 thread each",
                    lambda: distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                                     silence_logs=40))
    with distributed.Client(cluster) as client:
        timed("dask, client.get_executor()", "mimic.sweep(executor=...), 2 workers",
              lambda: mimic.sweep(**grid, executor=client.get_executor()))
    cluster.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
