"""The Python module on the emulated devices: examples, IPU manager and out-of-memory errors, traces
written and read back, ONNX loading."""
import os
import runpy
import sys

import numpy as np
import pytest

import mimic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def run_example(name):
    sys.path.insert(0, EXAMPLES)
    try:
        return runpy.run_path(os.path.join(EXAMPLES, name), run_name="example")
    finally:
        sys.path.pop(0)


def test_example_mlp_on_emulated_tpu_matches_cpu():
    run_example("mlp_tpu.py")["main"]()


def test_example_bf16_precision_reproduces_jax_9973():
    run_example("precision_bf16.py")["main"]()


def test_example_ipu_batch_loop_stops_at_out_of_memory():
    largest = run_example("ipu_batch_loop.py")["main"]("resnet18", (16, 64, 256, 1024))
    assert largest in (16, 64, 256)


def test_ipu_out_of_memory_error_has_tile_bytes_and_op():
    with mimic.ipu.Manager(compile_only=True) as ipu:
        with pytest.raises(mimic.OutOfMemoryError) as info:
            ipu.compile_model(mimic.zoo.resnet50(batch=1024))
    e = info.value
    assert isinstance(e, mimic.CompileError)
    assert e.tile >= 0 and e.bytes_used > e.bytes_available > 0 and e.op
    assert str(e).startswith(f"Out of memory on tile {e.tile}: {e.bytes_used} bytes used but tiles only have")


def test_ipu_manager_runs_and_reports():
    model = mimic.nn.Sequential(mimic.nn.Linear(16, 32), mimic.nn.ReLU(), mimic.nn.Linear(32, 4))
    x = np.random.default_rng(3).normal(size=(8, 16)).astype(np.float32)
    with mimic.ipu.Manager(num_ipus=1, precision="float16", enable_half_partials=True) as ipu:
        compiled = ipu.compile_model(model, [x])
        y = ipu.execute_model(compiled, x)
        assert ipu.get_ipu_count() == 1
        assert ipu.get_ipu_info()["available"]
    ref = mimic.compile(model, example_inputs=[x])(x)
    np.testing.assert_allclose(y, ref, rtol=2e-2, atol=2e-2)
    assert compiled.report["cycles"] > 0 and compiled.report["device"].startswith("ipu-emu")
    with pytest.raises(mimic.InvalidArgument, match="precision"):
        mimic.ipu.Manager(precision="float64")


def test_trace_is_written_and_read_back(tmp_path):
    path = str(tmp_path / "run.db")
    model = mimic.zoo.mlp(batch=2, layers=2, hidden=16)
    exe = mimic.compile(model, device="tpu-emu:v4")
    with mimic.trace(path) as t:
        exe(*model.example_inputs())
        exe(*model.example_inputs())
    assert len(t.run_ids) == 2
    runs = mimic.traces.read(path)
    assert [r["status"] for r in runs] == ["done", "done"]
    assert runs[0]["device"] == "tpu-emu:v4" and runs[0]["events"] > 0
    ops = mimic.traces.read(path, "ops", run=str(t.run_ids[0]))
    assert any(op["op_type"].startswith("MatMul") for op in ops)
    rows = mimic.traces.read(path, "SELECT run_id, op_type, COUNT(*) AS n FROM op_summary GROUP BY run_id, op_type")
    assert rows and set(rows[0]) == {"run_id", "op_type", "n"} and isinstance(rows[0]["n"], int)
    assert mimic.traces.read(path, "SELECT COUNT(*) AS runs FROM run") == [{"runs": 2}]
    with pytest.raises(mimic.IoError):
        mimic.traces.read(str(tmp_path / "missing.db"))


def test_onnx_load_and_run():
    path = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx"
    if not os.path.exists(path):
        pytest.skip("libonnx-testdata is not installed")
    g = mimic.onnx.load(path)
    assert isinstance(g, mimic.Graph) and g.num_nodes >= 1
    name, dtype, shape = g.inputs[0]
    x = np.random.default_rng(0).normal(size=[d if d > 0 else 1 for d in shape]).astype(np.float32)
    batch = x.shape[0] if shape[0] == -1 else None
    cpu = mimic.compile(g, batch=batch)(x)
    tpu = mimic.compile(g, device="tpu-emu:v4", batch=batch, precision="highest")(x)
    np.testing.assert_allclose(tpu, cpu, rtol=1e-4, atol=1e-5)
    with pytest.raises(mimic.IoError):
        mimic.onnx.load("/nonexistent.onnx")


def test_ipu_pipelined_training_model_picks_the_micro_batch_count_as_the_cli():
    """Two IPUs, one replica: two pipeline stages. Left unset, gradient_accumulation is the device's
    pick (the largest count dividing the batch up to 2 x stages), as `mimic train --option
    num_ipus=2` does; a count too small for the pipeline is still refused with the reason."""
    model = mimic.nn.Sequential(mimic.nn.Linear(16, 32), mimic.nn.ReLU(), mimic.nn.Linear(32, 4))
    x = np.random.default_rng(3).normal(size=(8, 16)).astype(np.float32)
    y = np.zeros(8, np.int64)
    ipu = mimic.ipu.Manager(num_ipus=2)
    step = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x)
    assert np.isfinite(float(step(x, y)))
    with pytest.raises(mimic.InvalidArgument, match="needs at least 3 micro-batches"):
        ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x,
                           gradient_accumulation=2)
