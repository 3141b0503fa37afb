"""Loss scaling from Python: GradScaler's skip-and-back-off on a batch whose gradients overflow,
the scaler's state in checkpoints, and one-line errors for bad settings."""
import numpy as np
import pytest

import mimic


def problem():
    rng = np.random.default_rng(1)
    return rng.normal(size=(16, 8)).astype(np.float32), rng.normal(size=(16, 2)).astype(np.float32)


def test_overflow_skips_the_step_and_halves_the_scale():
    x, y = problem()
    model = mimic.nn.Linear(8, 2, seed=3)
    opt = mimic.optim.Adam(model.parameters(), lr=1e-2)
    step = mimic.compile_train(model, "mse", opt, example_inputs=x,
                               loss_scale={"init_scale": 1024.0, "growth_interval": 2})
    before = step.state_dict()
    bad = x.copy()
    bad[3, 4] = 1e30  # its gradients overflow f32
    step(bad, y)
    assert (step.skipped_steps, step.steps, step.loss_scale) == (1, 0, 512.0)
    after = step.state_dict()
    for name in ("weight", "bias", "weight.exp_avg", "weight.exp_avg_sq"):
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    step(x, y)
    step(x, y)  # two good steps in a row: the scale grows back
    assert (step.skipped_steps, step.steps, step.loss_scale) == (1, 2, 1024.0)
    assert float(after["loss_scale.scale"]) == 512.0
    fresh = mimic.compile_train(mimic.nn.Linear(8, 2, seed=3), "mse", opt, example_inputs=x, loss_scale="dynamic")
    fresh.load_state_dict(step.state_dict())
    assert fresh.loss_scale == 1024.0


def test_fixed_scale_matches_unscaled_training():
    x, y = problem()
    a = mimic.compile_train(mimic.nn.Linear(8, 2, seed=3), "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x)
    b = mimic.compile_train(mimic.nn.Linear(8, 2, seed=3), "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x,
                            loss_scale=256)
    for _ in range(3):
        assert a(x, y) == pytest.approx(b(x, y), rel=1e-6)
    np.testing.assert_allclose(a.parameters()["weight"], b.parameters()["weight"], rtol=1e-6)


def test_bad_loss_scale_is_a_one_line_error():
    x, _ = problem()
    with pytest.raises(mimic.InvalidArgument, match="not 'none', 'dynamic' or a number"):
        mimic.compile_train(mimic.nn.Linear(8, 2), "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x,
                            loss_scale="auto")
    with pytest.raises(mimic.InvalidArgument, match="backoff_factor = 2"):
        mimic.compile_train(mimic.nn.Linear(8, 2), "mse", mimic.optim.SGD([], lr=0.1), example_inputs=x,
                            loss_scale={"backoff_factor": 2})
