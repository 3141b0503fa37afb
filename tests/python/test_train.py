"""Training steps against PyTorch's autograd and optimizers (torch from Debian's python3-torch;
skipped with the reason when absent). Same weights on both sides; mimic's Linear stores its weight
[in, out], torch's [out, in]. One step's gradients are read back from an SGD step with lr=1
(grad = p - p'), which costs at most one f32 rounding of p per element."""
import os

import numpy as np
import pytest

import mimic

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
torch.set_num_threads(1)

RTOL = 1e-4


def mlp():
    return mimic.nn.Sequential(mimic.nn.Linear(20, 32, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(32, 16, seed=2),
                               mimic.nn.Tanh(), mimic.nn.Linear(16, 10, seed=3))


def cnn():
    return mimic.nn.Sequential(mimic.nn.Conv2d(3, 8, 3, padding=1, seed=1), mimic.nn.BatchNorm2d(8), mimic.nn.ReLU(),
                               mimic.nn.MaxPool2d(2, 2), mimic.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, seed=2),
                               mimic.nn.ReLU(), mimic.nn.Flatten(), mimic.nn.Linear(8 * 2 * 2, 10, seed=3))


def norm_mlp():
    return mimic.nn.Sequential(mimic.nn.Linear(20, 32, seed=1), mimic.nn.LayerNorm(32), mimic.nn.GELU(),
                               mimic.nn.Linear(32, 16, seed=2), mimic.nn.Sigmoid(), mimic.nn.Linear(16, 10, seed=3))


def torch_twin(model):
    """The torch.nn.Sequential with `model`'s layers and weights."""
    layers = []
    for m in model._modules:
        if isinstance(m, mimic.nn.Linear):
            w = np.array(m.weight)
            t = torch.nn.Linear(w.shape[0], w.shape[1])
            t.weight.data = torch.tensor(w.T.copy())
            t.bias.data = torch.tensor(np.array(m.bias))
        elif isinstance(m, mimic.nn.Conv2d):
            w = np.array(m.weight)
            t = torch.nn.Conv2d(w.shape[1] * m.groups, w.shape[0], w.shape[2], stride=m.stride, padding=m.padding,
                                groups=m.groups)
            t.weight.data = torch.tensor(w)
            t.bias.data = torch.tensor(np.array(m.bias))
        elif isinstance(m, mimic.nn.BatchNorm2d):
            t = torch.nn.BatchNorm2d(np.array(m.weight).shape[0], eps=m.eps)
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(t, name).data = torch.tensor(np.array(getattr(m, name)))
        elif isinstance(m, mimic.nn.LayerNorm):
            t = torch.nn.LayerNorm(np.array(m.weight).shape[0], eps=m.eps)
            t.weight.data = torch.tensor(np.array(m.weight))
            t.bias.data = torch.tensor(np.array(m.bias))
        elif isinstance(m, mimic.nn.GELU):
            t = torch.nn.GELU(approximate="tanh" if m.approximate else "none")
        elif isinstance(m, mimic.nn.Sigmoid):
            t = torch.nn.Sigmoid()
        elif isinstance(m, mimic.nn.ReLU):
            t = torch.nn.ReLU()
        elif isinstance(m, mimic.nn.Tanh):
            t = torch.nn.Tanh()
        elif isinstance(m, mimic.nn.MaxPool2d):
            t = torch.nn.MaxPool2d(m.args[0], m.args[1], m.args[2])
        elif isinstance(m, mimic.nn.Flatten):
            t = torch.nn.Flatten()
        else:
            raise TypeError(type(m))
        layers.append(t)
    return torch.nn.Sequential(*layers).train()


def torch_value(twin, name):
    """The torch tensor for mimic parameter `name` ("0.weight"), in mimic's layout."""
    index, attr = name.split(".", 1)
    module = twin[int(index)]
    v = getattr(module, attr).detach().numpy()
    return v.T if isinstance(module, torch.nn.Linear) and attr == "weight" else v


def data(shape, classes, batches, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=shape).astype(np.float32), rng.integers(0, classes, shape[0]).astype(np.int64))
            for _ in range(batches)]


def rel(a, b, floor=1e-12):
    """Norm-relative difference; `floor` bounds the denominator for tensors whose true value is ~0."""
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), floor))


@pytest.mark.parametrize("make,shape", [(mlp, (16, 20)), (norm_mlp, (16, 20)), (cnn, (8, 3, 8, 8))],
                         ids=["mlp", "layernorm_gelu", "cnn"])
def test_one_step_gradients_match_torch(make, shape):
    model = make()
    twin = torch_twin(model)
    (x, y), = data(shape, 10, 1)
    step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=1.0), "cpu",
                               example_inputs=x)
    before = model.state_dict()
    loss = step(x, y)
    after = step.state_dict()
    out = twin(torch.tensor(x))
    ref = torch.nn.functional.cross_entropy(out, torch.tensor(y))
    ref.backward()
    assert abs(loss - ref.item()) <= RTOL * abs(ref.item())
    for name, p in before.items():
        if "running" in name:
            continue
        grad = p - after[name]
        index, attr = name.split(".", 1)
        g = getattr(twin[int(index)], attr).grad.numpy()
        g = g.T if attr == "weight" and isinstance(twin[int(index)], torch.nn.Linear) else g
        # A conv bias followed by BatchNorm has a zero gradient (rounding noise ~1e-8 on both
        # sides): gradient norms below 1e-2 are compared absolutely (1e-6).
        assert rel(grad, g, floor=1e-2) <= RTOL, name
    for name in before:  # BatchNorm running statistics: momentum 0.1, unbiased variance
        if "running" in name:
            assert rel(after[name], torch_value(twin, name)) <= 1e-5, name


def torch_optimizer(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3)
    if kind == "nesterov":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)


def mimic_optimizer(kind, params):
    if kind == "sgd":
        return mimic.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3)
    if kind == "nesterov":
        return mimic.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True)
    return mimic.optim.AdamW(params, lr=1e-3, weight_decay=1e-2)


@pytest.mark.parametrize("kind", ["sgd", "nesterov", "adamw"])
@pytest.mark.parametrize("make,shape,steps", [(mlp, (16, 20), 100), (cnn, (8, 3, 8, 8), 100)], ids=["mlp", "cnn"])
def test_loss_curve_matches_torch(kind, make, shape, steps):
    model = make()
    twin = torch_twin(model)
    batches = data(shape, 10, 4, seed=3)
    step = mimic.compile_train(model, "cross_entropy", mimic_optimizer(kind, model.parameters()), "cpu",
                               example_inputs=batches[0][0])
    opt = torch_optimizer(kind, twin.parameters())
    ours, theirs = [], []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        ours.append(step(x, y))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(twin(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    ours, theirs = np.array(ours), np.array(theirs)
    worst = np.max(np.abs(ours - theirs) / np.abs(theirs))
    assert worst <= RTOL, f"worst relative loss difference {worst:.2e} at step {int(np.argmax(np.abs(ours - theirs)))}"
    assert theirs[-1] < theirs[0]  # it trains


@pytest.mark.parametrize("loss_name,torch_loss", [
    ("mse", lambda o, t: torch.nn.functional.mse_loss(o, t)),
    ("bce_with_logits", lambda o, t: torch.nn.functional.binary_cross_entropy_with_logits(o, t)),
])
def test_regression_losses_match_torch(loss_name, torch_loss):
    model = mimic.nn.Sequential(mimic.nn.Linear(6, 4, seed=5))
    twin = torch_twin(model)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 6)).astype(np.float32)
    t = rng.uniform(size=(5, 4)).astype(np.float32)
    step = mimic.compile_train(model, loss_name, mimic.optim.Adam(model.parameters(), lr=1e-2), example_inputs=x)
    opt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    for _ in range(10):
        ours = step(x, t)
        opt.zero_grad()
        ref = torch_loss(twin(torch.tensor(x)), torch.tensor(t))
        ref.backward()
        opt.step()
        assert abs(ours - ref.item()) <= RTOL * abs(ref.item())


def test_cross_entropy_label_smoothing_and_ignore_index_match_torch():
    model = mimic.nn.Sequential(mimic.nn.Linear(6, 5, seed=5))
    twin = torch_twin(model)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 6)).astype(np.float32)
    y = np.array([0, 4, -100, 2, 2, -100], np.int64)
    step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                               example_inputs=x, label_smoothing=0.2)
    ref = torch.nn.functional.cross_entropy(twin(torch.tensor(x)), torch.tensor(y), label_smoothing=0.2)
    assert abs(step(x, y) - ref.item()) <= RTOL * abs(ref.item())


def test_state_dict_checkpoint_round_trip(tmp_path):
    model = mlp()
    batches = data((16, 20), 10, 2)
    step = mimic.compile_train(model, "cross_entropy", mimic.optim.AdamW(model.parameters(), lr=1e-3),
                               example_inputs=batches[0][0])
    step(*batches[0])
    path = os.path.join(tmp_path, "ckpt.npz")
    step.save(path)
    saved = dict(np.load(path))
    assert saved["optimizer.step"] == 1 and "0.weight.exp_avg" in saved
    again = step(*batches[1])
    fresh = mimic.compile_train(mlp(), "cross_entropy", mimic.optim.AdamW(model.parameters(), lr=1e-3),
                                example_inputs=batches[0][0])
    fresh.load(path)
    assert fresh.steps == 1
    assert fresh(*batches[1]) == again
    model.load_state_dict(step.state_dict())
    np.testing.assert_array_equal(np.array(model.state_dict()["0.weight"]), step.state_dict()["0.weight"])


def test_a_step_repeated_from_the_same_state_repeats_bit_for_bit():
    """Loading a state and stepping on the same batch gives the same state every time: nothing in
    the cpu backend depends on where its buffers lie in memory (the fused Exp of the loss once did)."""
    model = cnn()
    x, y = data((8, 3, 8, 8), 10, 1)[0]
    step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=1.0),
                               example_inputs=x)
    start = {k: np.array(v) for k, v in step.state_dict().items()}
    after = []
    for _ in range(8):
        step.load_state_dict(start)
        step(x, y)
        after.append({k: np.array(v) for k, v in step.state_dict().items()})
    for i, state in enumerate(after[1:], 1):
        for name, value in state.items():
            np.testing.assert_array_equal(value, after[0][name], err_msg=f"repeat {i}: {name}")


def test_batch_norm_variance_one_pass_follows_two_pass():
    """batch_norm_variance="one_pass" (what XLA computes on TPUs) trains as "two_pass" (PyTorch's)
    to float rounding; a bad name is a one-line error."""
    batches = data((16, 3, 8, 8), 10, 3)
    losses = {}
    for variance in ["two_pass", "one_pass"]:
        model = cnn()
        step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.05),
                                   example_inputs=batches[0][0], batch_norm_variance=variance)
        losses[variance] = [step(x, y) for x, y in batches]
    np.testing.assert_allclose(losses["one_pass"], losses["two_pass"], rtol=1e-5)
    with pytest.raises(mimic.InvalidArgument, match="batch norm variance 'sometimes' is not one of"):
        model = cnn()
        mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                            example_inputs=batches[0][0], batch_norm_variance="sometimes")


def test_bad_inputs_are_one_line_errors():
    model = mlp()
    x, y = data((16, 20), 10, 1)[0]
    step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x)
    with pytest.raises(mimic.InvalidArgument, match=r"label 10 at index 3 is outside \[0, 10\)"):
        bad = y.copy()
        bad[3] = 10
        step(x, bad)
    with pytest.raises(mimic.InvalidArgument, match=r"target is i64\[15\], expected i64\[16\]"):
        step(x, y[:15])
    with pytest.raises(mimic.InvalidArgument, match="lr"):
        mimic.optim.SGD(model.parameters(), lr=-0.1)
    with pytest.raises(mimic.InvalidArgument, match="unknown loss 'hinge'"):
        mimic.compile_train(model, "hinge", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x)
    with pytest.raises(mimic.InvalidArgument, match=r"mse loss: target is f32\[16,3\], expected f32\[16,10\]"):
        s = mimic.compile_train(model, "mse", mimic.optim.SGD(model.parameters(), lr=0.1), example_inputs=x)
        s(x, np.zeros((16, 3), np.float32))
    with pytest.raises(mimic.InvalidArgument, match="lr = -1"):
        step.lr = -1.0


@pytest.mark.parametrize("recompute", ["checkpoints", "full"])
def test_recomputation_gives_the_same_losses(recompute):
    """Recomputed activations (recompute=...) give the same steps as keeping them."""
    batches = data((16, 3, 8, 8), 10, 3)
    losses = {}
    for mode in ["none", recompute]:
        model = cnn()
        step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   example_inputs=batches[0][0], recompute=mode)
        losses[mode] = [step(x, y) for x, y in batches]
    assert losses[recompute] == losses["none"]
    with pytest.raises(mimic.InvalidArgument, match="recompute 'often' is not one of none, checkpoints, full"):
        model = cnn()
        mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                            example_inputs=batches[0][0], recompute="often")


def test_named_recomputation_checkpoints_give_the_same_losses():
    """recompute="full" with recompute_checkpoints keeps the named nodes' outputs (a Sequential's
    layer is named by its index) and recomputes the rest: the same steps; a name that is no forward
    node, or checkpoints without "full", is a one-line error."""
    batches = data((16, 3, 8, 8), 10, 3)
    losses = {}
    for mode, names in [("none", ()), ("full", ("2", "5"))]:
        model = cnn()
        step = mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   example_inputs=batches[0][0], recompute=mode, recompute_checkpoints=names)
        losses[mode] = [step(x, y) for x, y in batches]
    assert losses["full"] == losses["none"]
    model = cnn()
    with pytest.raises(mimic.InvalidArgument, match="recompute checkpoint 'relu9' is not a node of the forward pass"):
        mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                            example_inputs=batches[0][0], recompute="full", recompute_checkpoints=["relu9"])
    with pytest.raises(mimic.InvalidArgument, match=r"recompute checkpoints \(1 named\) need recompute 'full', not 'none'"):
        mimic.compile_train(model, "cross_entropy", mimic.optim.SGD(model.parameters(), lr=0.1),
                            example_inputs=batches[0][0], recompute_checkpoints=["2"])
