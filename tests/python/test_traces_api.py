"""mimic.trace and mimic.traces.read as a program uses them: threads, reused and misused context
managers, path forms, and what read() accepts."""
import pathlib
import threading

import numpy as np
import pytest

import mimic


def mlp_exe(device):
    return mimic.compile(mimic.zoo.mlp(batch=1), device=device)


@pytest.mark.parametrize("device", ["cpu", "tpu-emu:v4"])
def test_closing_a_trace_while_another_thread_runs(tmp_path, device):
    """The other thread's runs neither fail nor crash the process; the ones recorded are whole."""
    exe, x = mlp_exe(device), np.random.rand(1, 784).astype(np.float32)
    errors, stop = [], threading.Event()

    def runner():
        while not stop.is_set():
            try:
                exe(x)
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                errors.append(e)

    thread = threading.Thread(target=runner)
    thread.start()
    path = tmp_path / "t.db"
    for _ in range(20):
        with mimic.trace(path):
            pass
    stop.set()
    thread.join()
    assert errors == []
    if path.exists():
        assert {r["status"] for r in mimic.traces.read(path)} <= {"done"}


def test_trace_objects_and_paths(tmp_path):
    exe, x = mlp_exe("cpu"), np.random.rand(1, 784).astype(np.float32)
    t = mimic.trace(tmp_path / "a.db")
    assert t.__exit__(None, None, None) is False  # leaving a block never entered does nothing
    with t:
        exe(x)
        with pytest.raises(mimic.InvalidArgument, match="already open"):
            t.__enter__()
    with t:
        exe(x)
    assert t.run_ids == [2]
    with pytest.raises(mimic.InvalidArgument, match="NUL byte"):
        mimic.trace(str(tmp_path / "b\0.db"))
    with pytest.raises(TypeError, match="os.PathLike"):
        mimic.trace(3)
    assert [r["id"] for r in mimic.traces.read(pathlib.Path(tmp_path / "a.db"))] == [1, 2]


def test_read_names_what_it_accepts(tmp_path):
    path = str(tmp_path / "a.db")
    with mimic.trace(path):
        mlp_exe("cpu")(np.random.rand(1, 784).astype(np.float32))
    for what in ("", "opz"):
        with pytest.raises(mimic.InvalidArgument, match="'runs', 'ops', 'units' or an SQL query"):
            mimic.traces.read(path, what)
    with pytest.raises(mimic.InvalidArgument, match="run= selects the run"):
        mimic.traces.read(path, "runs", run=1)
    assert len(mimic.traces.read(path, "ops", run=None)) > 0
    rows = mimic.traces.read(path, "SELECT x'00ff' AS b, 'text' AS t")
    assert rows == [{"b": b"\x00\xff", "t": "text"}]
