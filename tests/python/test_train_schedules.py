"""Learning-rate schedules against torch.optim.lr_scheduler's lr sequences (skipped without torch),
a compiled step that follows a schedule, and LAMB against a NumPy transcription of NVIDIA apex's
FusedLAMB (there is no LAMB in torch)."""
import numpy as np
import pytest

import mimic
from mimic.optim import lr_scheduler as sched


def torch_lrs(make, steps, lr=0.1):
    torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=lr)
    s = make(torch.optim.lr_scheduler, opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        s.step()
    return out


SCHEDULES = {
    "step": lambda m, o: m.StepLR(o, step_size=4, gamma=0.3),
    "exponential": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "constant": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=3),
    "linear": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.8, total_iters=7),
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=12, eta_min=0.002),
    "warmup_cosine": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.01, total_iters=5), m.CosineAnnealingLR(o, T_max=15)], milestones=[5]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torch(name):
    want = torch_lrs(SCHEDULES[name], 20)
    opt = mimic.optim.SGD([], lr=0.1)
    s = SCHEDULES[name](sched, opt)
    got = []
    for _ in range(20):
        got.append(s.get_last_lr()[0])
        s.step()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def linear_problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 5)).astype(np.float32)
    y = rng.normal(size=(8, 3)).astype(np.float32)
    return x, y


def linear_grads(w, b, x, y):
    """mse loss of y ~ x @ w + b: its gradients for w and b."""
    d = 2.0 * (x.astype(np.float64) @ w + b - y) / y.size
    return x.T.astype(np.float64) @ d, d.sum(axis=0)


def test_compiled_step_follows_the_schedule():
    x, y = linear_problem()
    model = mimic.nn.Linear(5, 3, seed=4)
    opt = mimic.optim.SGD(model.parameters(), lr=0.5)
    s = sched.SequentialLR(opt, [sched.LinearLR(opt, start_factor=0.2, total_iters=2),
                                 sched.CosineAnnealingLR(opt, T_max=4)], milestones=[2])
    step = mimic.compile_train(model, "mse", opt, example_inputs=x, schedule=s)
    w, b = np.array(model.weight, np.float64), np.array(model.bias, np.float64)
    for k in range(6):
        assert step.lr == pytest.approx(s.lr_at(k), rel=1e-12)
        gw, gb = linear_grads(w, b, x, y)
        step(x, y)
        w, b = w - s.lr_at(k) * gw, b - s.lr_at(k) * gb
    got = step.parameters()
    np.testing.assert_allclose(got["weight"], w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got["bias"], b, rtol=1e-4, atol=1e-6)


def lamb_reference(params, grads, state, t, lr, b1, b2, eps, wd):
    """apex FusedLAMB (adam_w_mode=True, bias_correction=True, use_nvlamb=False), one step."""
    out = {}
    for name, p in params.items():
        g = grads[name]
        m, v = state.setdefault(name, (np.zeros_like(p), np.zeros_like(p)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[name] = (m, v)
        u = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p
        ratio = 1.0
        if wd != 0:
            pn, un = np.linalg.norm(p), np.linalg.norm(u)
            ratio = pn / un if pn > 0 and un > 0 else 1.0
        out[name] = p - lr * ratio * u
    return out


@pytest.mark.parametrize("wd", [0.0, 0.01, 0.3])
def test_lamb_matches_numpy_reference(wd):
    x, y = linear_problem()
    model = mimic.nn.Linear(5, 3, seed=4)
    opt = mimic.optim.LAMB(model.parameters(), lr=0.02, weight_decay=wd)
    step = mimic.compile_train(model, "mse", opt, example_inputs=x)
    params = {"weight": np.array(model.weight, np.float64), "bias": np.array(model.bias, np.float64)}
    state = {}
    for t in range(1, 8):
        gw, gb = linear_grads(params["weight"], params["bias"], x, y)
        step(x, y)
        params = lamb_reference(params, {"weight": gw, "bias": gb}, state, t, 0.02, 0.9, 0.999, 1e-6, wd)
    got = step.parameters()
    for name in params:
        np.testing.assert_allclose(got[name], params[name], rtol=2e-4, atol=1e-6, err_msg=name)
    assert set(step.state_dict()) >= {"weight.exp_avg", "weight.exp_avg_sq", "optimizer.step"}


def test_bad_schedules_are_one_line_errors():
    opt = mimic.optim.SGD([], lr=0.1)
    with pytest.raises(mimic.InvalidArgument, match="t_max = 0"):
        sched.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(mimic.InvalidArgument, match="milestones"):
        sched.SequentialLR(opt, [sched.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(mimic.InvalidArgument, match="schedule"):
        x, _ = linear_problem()
        mimic.compile_train(mimic.nn.Linear(5, 3), "mse", opt, example_inputs=x, schedule="cosine")
