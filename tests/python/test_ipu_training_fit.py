"""examples/ipu_training_fit.py on a small model and a small IPU: the largest micro-batch whose
training step fits, without and with recomputation, then the throughput with gradient
accumulation and replicas; and pipeline recomputation on a pipelined model."""
import importlib.util
import json
import os

import numpy as np
import pytest

import mimic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example():
    spec = importlib.util.spec_from_file_location("ipu_training_fit", os.path.join(ROOT, "examples", "ipu_training_fit.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def small_ipu(tmp_path):
    """A GC200 with 64 tiles: a small model runs out of tile memory at small batches."""
    path = tmp_path / "gc200_64.json"
    path.write_text(json.dumps({"base": "gc200", "tiles": 64}))
    return str(path)


def test_example_finds_the_largest_micro_batch_and_the_throughput(small_ipu, capsys):
    fits, rates = example().main(["mlp", "--hidden", "512", "--preset", small_ipu, "--micro-batches",
                                  "64,128,256,512,1024,2048", "--accumulation", "4", "--replicas", "2"])
    out = capsys.readouterr().out
    assert "does not fit: Out of memory on tile" in out
    assert fits["none"] is not None and fits["none"] < 2048
    assert fits["standard"] >= fits["none"]
    # Accumulation amortizes the update and the host transfers; replicas add samples per step at the
    # cost of the all-reduce, so the 2 replicas do more samples per second than one IPU.
    assert set(rates) == {(1, 1), (4, 1), (4, 2)}
    assert rates[(4, 1)] >= rates[(1, 1)] * 0.95
    assert rates[(4, 2)] > rates[(4, 1)]


def test_pipeline_recomputation_runs_on_a_pipelined_model():
    model = mimic.nn.Sequential(mimic.nn.Linear(20, 64, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(64, 64, seed=2),
                                mimic.nn.ReLU(), mimic.nn.Linear(64, 10, seed=3))
    x = np.random.default_rng(0).normal(size=(16, 20)).astype(np.float32)
    y = np.arange(16, dtype=np.int64) % 10
    with mimic.ipu.Manager(num_ipus=2) as ipu:
        step = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                                  example_inputs=x, gradient_accumulation=4, recomputation="pipeline")
        losses = [step(x, y) for _ in range(3)]
    assert losses[-1] < losses[0]
    m = step.report["metrics"]
    assert m["stages"] == 2 and m["phase.backward_cycles"] > 0 and m["phase.pipeline_exchange_cycles"] > 0


def test_named_recomputation_checkpoints_on_the_ipu_give_the_same_losses():
    """training_model(recomputation="recompute_all", recomputation_checkpoints=[...]) keeps the named
    layer's output and recomputes the rest: the losses of the step without recomputation."""
    x = np.random.default_rng(0).normal(size=(16, 20)).astype(np.float32)
    y = np.arange(16, dtype=np.int64) % 10
    losses = {}
    for names in [None, ["1"]]:
        model = mimic.nn.Sequential(mimic.nn.Linear(20, 64, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(64, 64, seed=2),
                                    mimic.nn.ReLU(), mimic.nn.Linear(64, 10, seed=3))
        with mimic.ipu.Manager(num_ipus=1) as ipu:
            kwargs = {"recomputation": "recompute_all", "recomputation_checkpoints": names} if names else {}
            step = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                                      example_inputs=x, **kwargs)
            losses[bool(names)] = [step(x, y) for _ in range(3)]
    assert losses[True] == losses[False]
    with pytest.raises(mimic.InvalidArgument, match="recompute checkpoint 'relu7' is not a node of the forward pass"):
        with mimic.ipu.Manager(num_ipus=1) as ipu:
            ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x,
                               recomputation="recompute_all", recomputation_checkpoints=["relu7"])
