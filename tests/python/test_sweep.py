"""mimic.sweep: the same points whichever concurrent.futures executor runs them, failures recorded."""
import concurrent.futures
import sqlite3

import pytest

import mimic

GRID = dict(model="mlp", model_args={"layers": 2, "hidden": 64, "in_features": 64}, device="tpu-emu:v1,tpu-emu:v4",
            batch=[1, 4], layout=["nchw", "nhwc"], timing_only=True)


def comparable(records):
    """Points by key, without the host time each took to emulate."""
    return {r["key"]: {k: v for k, v in r.items() if k != "host_seconds"} for r in records}


def test_executor_gives_the_local_sweeps_points(tmp_path):
    local = mimic.sweep(**GRID, jobs=2)
    assert len(local) == 8 and all(r["status"] == "ok" for r in local)
    with concurrent.futures.ProcessPoolExecutor(2) as ex:
        pooled = mimic.sweep(**GRID, executor=ex, trace=tmp_path / "sweep.db")
    assert comparable(pooled) == comparable(local)
    with sqlite3.connect(tmp_path / "sweep.db") as db:
        assert db.execute("SELECT COUNT(*) FROM sweep_point WHERE status = 'ok'").fetchone()[0] == 8


class LosingExecutor(concurrent.futures.ThreadPoolExecutor):
    """Loses every batch-4 point, as a cluster losing a worker would."""

    def submit(self, fn, executable, args):
        if args[args.index("--batch") + 1] == "4":
            f = concurrent.futures.Future()
            f.set_exception(ConnectionError("worker lost"))
            return f
        return super().submit(fn, executable, args)


def test_lost_points_are_failed_with_why_and_resume_runs_them(tmp_path):
    trace = tmp_path / "sweep.db"
    with LosingExecutor(2) as ex:
        records = mimic.sweep(**GRID, executor=ex, trace=trace)
    failed = [r for r in records if r["status"] == "failed"]
    assert len(failed) == 4 and all(r["batch"] == 4 for r in failed)
    assert "executor: ConnectionError: worker lost" in failed[0]["reason"]
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        resumed = mimic.sweep(**GRID, executor=ex, trace=trace, resume=True)
    assert len(resumed) == 8 and all(r["status"] == "ok" for r in resumed)


def test_as_frame_and_errors():
    pandas = pytest.importorskip("pandas")
    df = mimic.sweep(**GRID, as_frame=True)
    assert isinstance(df, pandas.DataFrame) and len(df) == 8
    with pytest.raises(mimic.DeviceUnavailableError, match="unknown preset 'nope'"):
        mimic.sweep(model="mlp", device="tpu-emu:nope")
    with pytest.raises(mimic.InvalidArgument, match="--batch"):
        mimic.sweep(model="mlp", batch="0")


def test_train_sweep_on_an_executor_gives_the_local_points():
    grid = dict(model="mlp", model_args={"layers": 2, "hidden": 64, "in_features": 64}, device="tpu-emu:v4",
                batch=[4, 8], timing_only=True, train=True, recompute=["none", "full"], optimizer="adam")
    local = mimic.sweep(**grid, jobs=2)
    assert len(local) == 4 and all(r["status"] == "ok" for r in local)
    assert {r["recompute"] for r in local} == {"none", "full"}
    assert all(r["phases"]["update"] > 0 and r["latency_s"] > 0 for r in local)
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        pooled = mimic.sweep(**grid, executor=ex)
    assert comparable(pooled) == comparable(local)
