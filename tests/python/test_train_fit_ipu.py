"""Keras-style fit() over arrays, and the IPU manager's training path (poptorch.trainingModel's
idiom) with gradient accumulation and replication mapped to ipu-emu's micro-batches and replicas."""
import numpy as np
import pytest

import mimic


def mlp():
    return mimic.nn.Sequential(mimic.nn.Linear(20, 32, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(32, 10, seed=2))


def dataset(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 20)).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)


def test_fit_matches_a_manual_loop_and_drops_the_partial_batch():
    x, y = dataset(70)
    a, b = mlp(), mlp()
    sa = mimic.compile_train(a, "cross_entropy", mimic.optim.SGD(a.parameters(), lr=0.1, momentum=0.9),
                             example_inputs=x[:16])
    sb = mimic.compile_train(b, "cross_entropy", mimic.optim.SGD(b.parameters(), lr=0.1, momentum=0.9),
                             example_inputs=x[:16])
    history = sa.fit(x, y, epochs=3, batch_size=16, seed=7)
    assert sa.steps == 3 * 4  # 70 samples: 4 full batches of 16 per epoch
    rng, manual = np.random.default_rng(7), []
    for _ in range(3):
        order = rng.permutation(70)
        manual.append(np.mean([sb(x[order[i * 16:(i + 1) * 16]], y[order[i * 16:(i + 1) * 16]]) for i in range(4)]))
    np.testing.assert_allclose(history["loss"], manual, rtol=1e-6)
    assert history["loss"][-1] < history["loss"][0]
    with pytest.raises(mimic.InvalidArgument, match="do not fill one batch"):
        mimic.fit(sa, x[:8], y[:8], batch_size=16)
    with pytest.raises(mimic.InvalidArgument, match="x has 70 samples, y has 69"):
        sa.fit(x, y[:69], batch_size=16)


def test_ipu_training_model_with_accumulation_and_replicas_follows_cpu():
    x, y = dataset(16)
    ref = mlp()
    cpu = mimic.compile_train(ref, "cross_entropy", mimic.optim.SGD(ref.parameters(), lr=0.1), example_inputs=x)
    want = [cpu(x, y) for _ in range(3)]
    cycles = {}
    for accumulation, replicas in ((4, 1), (4, 2)):
        model = mlp()
        with mimic.ipu.Manager(num_ipus=2) as ipu:
            step = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                                      example_inputs=x, gradient_accumulation=accumulation,
                                      replication_factor=replicas)
            got = [step(x, y) for _ in range(3)]
        np.testing.assert_allclose(got, want, rtol=1e-5)
        cycles[(accumulation, replicas)] = step.report["cycles"]
    assert cycles[(4, 1)] > 0 and cycles[(4, 2)] != cycles[(4, 1)]


def test_pipeline_schedules_through_the_manager():
    """Manager(pipeline_schedule=...) reaches ipu-emu: the same losses, the schedule's pipeline cycles
    (2 IPUs, 4 micro-batches: grouped 4 + 2x2 - 1, interleaved 2x4 + 2x2 - 2) and step time."""
    x, y = dataset(16)
    results = {}
    for schedule in ("grouped", "interleaved"):
        model = mlp()
        with mimic.ipu.Manager(num_ipus=2, pipeline_schedule=schedule) as ipu:
            step = ipu.training_model(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                                      example_inputs=x, gradient_accumulation=4)
            loss = step(x, y)
        results[schedule] = (loss, step.compile_report["metrics"]["pipeline_cycles"], step.report["cycles"])
    assert results["grouped"][0] == pytest.approx(results["interleaved"][0], rel=1e-6)
    assert (results["grouped"][1], results["interleaved"][1]) == (7, 10)
    assert results["grouped"][2] < results["interleaved"][2]


def test_ipu_training_model_errors_are_one_line():
    x, _ = dataset(16)
    model = mlp()
    opt = mimic.optim.SGD(model.parameters(), lr=0.1)
    with mimic.ipu.Manager(num_ipus=2) as ipu:
        with pytest.raises(mimic.InvalidArgument, match="auto_round_num_ipus are not modeled"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, auto_round_num_ipus=True)
        with pytest.raises(mimic.InvalidArgument, match="replication_factor=4 must divide num_ipus=2"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, replication_factor=4)
        with pytest.raises(mimic.InvalidArgument, match="recomputation='pipeline' recomputes per pipeline stage, "
                           "and num_ipus=2 / replication_factor=2 gives 1 stage"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, replication_factor=2,
                               recomputation="pipeline")
        with pytest.raises(mimic.InvalidArgument, match="recomputation='sometimes' is not one of"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, recomputation="sometimes")
        with pytest.raises(mimic.InvalidArgument, match="gradient_accumulation must be a positive int, got 0"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, gradient_accumulation=0)
        with pytest.raises(mimic.InvalidArgument, match=r"pipeline_schedule=grouped over 2 stages needs at least 3 "
                           r"micro-batches per step to fill the training pipeline \(2 x stages - 1"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x, gradient_accumulation=2)
    with mimic.ipu.Manager(num_ipus=512) as ipu:
        with pytest.raises(mimic.InvalidArgument, match=r"num_ipus=512 \(1 replica\(s\) x 512 stage\(s\)\) exceeds the 256 IPUs of preset gc200"):
            ipu.training_model(model, "cross_entropy", opt, example_inputs=x)
    with mimic.ipu.Manager(compile_only=True) as ipu:  # compiles (memory report), cannot run
        step = ipu.training_model(model, "cross_entropy", opt, example_inputs=x)
        assert step.compile_report["metrics"]["memory.peak_bytes"] > 0
        with pytest.raises(mimic.InvalidArgument, match="compile_only"):
            step(x, np.zeros(16, np.int64))


def test_training_state_stays_on_the_emulated_chips_and_moves_between_devices(tmp_path):
    """Parameters and optimizer state live in the emulated chip's memory between steps: a step
    sends the batch, not the weights; state_dict() reads them back and a checkpoint continues on
    another device."""
    x, y = dataset(16)
    path = str(tmp_path / "state.npz")
    ref = mlp()
    cpu = mimic.compile_train(ref, "cross_entropy", mimic.optim.AdamW(ref.parameters(), lr=1e-2), example_inputs=x)
    want = [cpu(x, y) for _ in range(4)]
    assert not cpu.state_on_device
    for device, precision in (("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")):
        model = mlp()
        step = mimic.compile_train(model, "cross_entropy", mimic.optim.AdamW(model.parameters(), lr=1e-2),
                                   device, example_inputs=x, precision=precision)
        assert step.state_on_device
        first = step(x, y)
        sent_with_weights = step.report["metrics"]["host.request_bytes"]
        second = step(x, y)
        assert step.report["metrics"]["host.request_bytes"] < sent_with_weights - 4 * (20 * 32 + 32 * 10)
        step.save(path)
        resumed = mimic.compile_train(mlp(), "cross_entropy", mimic.optim.AdamW(mlp().parameters(), lr=1e-2),
                                      example_inputs=x)
        resumed.load(path)
        got = [first, second] + [resumed(x, y) for _ in range(2)]
        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=device)
