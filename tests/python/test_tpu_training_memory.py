"""examples/tpu_training_memory.py on a tiny BERT: the HBM plan of a training step on tpu-emu:v4 by
category (weights and Adam moments checked against the parameter count), the batch that stops
fitting a smaller HBM, rematerialization making it fit, and the per-phase cycles of the steps
that fit."""
import os
import runpy

import pytest

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "tpu_training_memory.py")
CATEGORIES = ["weights", "gradients", "optimizer_state", "saved_activations", "activations", "inputs",
              "buffers", "workspace", "constants"]


@pytest.fixture(scope="module")
def example():
    return runpy.run_path(EXAMPLE, run_name="example")["main"]


def tiny_bert_parameter_bytes():
    """Tiny BERT's parameters as HBM holds them: f32, matrices whole ((8, 128)-tile multiples), each
    vector (bias, LayerNorm scale) padded to one (8, 128) tile row: 8 x its length."""
    hidden, ffn, layers, vocab, seq = 128, 512, 2, 512, 32
    matrices = seq * hidden + vocab * hidden + layers * (4 * hidden * hidden + 2 * hidden * ffn)
    vectors = 2 * hidden + layers * (4 * hidden + 2 * hidden + ffn + hidden + 2 * hidden)
    return 4 * (matrices + 8 * vectors)


def test_plan_and_recomputation(example, capsys):
    points = example(["--size", "tiny", "--batches", "8,64", "--recompute", "none,full"])
    by = {(p["batch"], p["recompute"]): p["memory"] for p in points}
    for (batch, mode), m in by.items():
        assert sum(m.get(c, 0) for c in CATEGORIES) == m["peak"], (batch, mode, m)
        assert m["weights"] == tiny_bert_parameter_bytes(), (batch, mode)
        assert m["weights"] + m["optimizer_state"] + m["gradients"] <= 4 * tiny_bert_parameter_bytes()
    # Without recomputation the peak falls in the backward pass: Adam's two moments are all live.
    assert by[(64, "none")]["optimizer_state"] == 2 * tiny_bert_parameter_bytes()
    assert by[(64, "full")]["peak"] < by[(64, "none")]["peak"]
    assert by[(64, "none")]["saved_activations"] > by[(8, "none")]["saved_activations"]
    # An HBM between the two peaks: batch 64 needs recomputation to fit.
    hbm = int((by[(64, "full")]["peak"] + by[(64, "none")]["peak"]) // 2)
    points = example(["--size", "tiny", "--batches", "8,64", "--recompute", "none,full",
                      "--hbm-bytes", str(hbm), "--time"])
    fits = {(p["batch"], p["recompute"]): p for p in points}
    assert not fits[(64, "none")]["fits"] and fits[(64, "full")]["fits"]
    assert "recompute=none: batch 64 is the first that does not fit" in capsys.readouterr().out
    none8, full8 = fits[(8, "none")], fits[(8, "full")]
    assert full8["phases"]["backward"] > none8["phases"]["backward"]
    # Same forward work; with nothing saved, loop fusion keeps more of it on chip.
    assert full8["phases"]["forward"] <= none8["phases"]["forward"]
    assert 0 < full8["samples_per_s"] < none8["samples_per_s"]
    assert "phases" not in fits[(64, "none")]
