"""Training through recurrent layers: a torch.nn.LSTM/GRU/RNN classifier exported by torch.onnx,
trained by mimic.compile_train on the imported graph (its initializers are the parameters; the
recurrent layer is unrolled into primitive ops before differentiation). One SGD step on cpu gives
PyTorch's loss and parameter gradients within 1e-5 relative in fp32. The gradients are read back
from an SGD step with lr = 64 (grad = (p - p') / 64, a power of two: one f32 rounding of p' per
element, far below the gradient's size)."""
import os
import warnings

import numpy as np
import pytest

import mimic

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
pytest.importorskip("onnx", reason="onnx (python3-onnx) is not installed; torch.onnx.export needs it")
torch.set_num_threads(1)

SEQ, BATCH, INPUT, HIDDEN, CLASSES = 6, 4, 5, 8, 3
LR = 64.0
# ONNX gate order from torch's: LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h.
GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}


class Classifier(torch.nn.Module):
    def __init__(self, kind, bidirectional):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(INPUT, HIDDEN, bidirectional=bidirectional)
        self.fc = torch.nn.Linear(HIDDEN * (2 if bidirectional else 1), CLASSES)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[-1])


def onnx_layout(kind, t):
    """torch's per-direction tensor `t` (weight_ih / weight_hh / bias) in ONNX gate order."""
    blocks = np.split(t, len(GATES[kind]))
    return np.concatenate([blocks[i] for i in GATES[kind]])


def expected(kind, module, attr):
    """The ONNX tensors (W, R, B, fc weight, fc bias) of module's parameters' `attr` (data or grad)."""
    out = []
    dirs = [""] + (["_reverse"] if module.rnn.bidirectional else [])
    for which in ("weight_ih", "weight_hh"):
        ps = [getattr(module.rnn, f"{which}_l0{d}") for d in dirs]
        out.append(np.stack([onnx_layout(kind, getattr(p, attr).detach().numpy()) for p in ps]))
    bias = [np.concatenate([onnx_layout(kind, getattr(getattr(module.rnn, f"{b}_l0{d}"), attr).detach().numpy())
                            for b in ("bias_ih", "bias_hh")]) for d in dirs]
    out.append(np.stack(bias))
    for p in (module.fc.weight, module.fc.bias):
        out.append(getattr(p, attr).detach().numpy())
    return out


def rel(a, b):
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


@pytest.mark.parametrize("kind,bidirectional", [("LSTM", False), ("LSTM", True), ("GRU", False), ("RNN", False)])
def test_recurrent_classifier_step_matches_torch(tmp_path, kind, bidirectional):
    torch.manual_seed(11)
    module = Classifier(kind, bidirectional).train()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(SEQ, BATCH, INPUT)).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH).astype(np.int64)
    path = os.path.join(tmp_path, f"{kind}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.tensor(x),), path, opset_version=17, input_names=["x"],
                          output_names=["logits"])
    step = mimic.compile_train(mimic.onnx.load(path), "cross_entropy", mimic.optim.SGD([], lr=LR), "cpu",
                               example_inputs=x)
    before = step.state_dict()
    loss = step(x, y)
    after = step.state_dict()
    ref = torch.nn.functional.cross_entropy(module(torch.tensor(x)), torch.tensor(y))
    ref.backward()
    assert abs(loss - ref.item()) <= 1e-5 * abs(ref.item())
    values, grads = expected(kind, module, "data"), expected(kind, module, "grad")
    params = [n for n in before if n != "optimizer.step"]
    assert len(params) == len(values), params
    for name in params:
        match = [i for i, v in enumerate(values) if v.shape == before[name].shape and np.array_equal(v, before[name])]
        assert len(match) == 1, f"{name}: no single torch parameter with its value"
        grad = (before[name].astype(np.float64) - after[name]) / LR
        assert rel(grad, grads[match[0]]) <= 1e-5, name


def test_recurrent_layer_that_cannot_unroll_is_a_one_line_error(tmp_path):
    torch.manual_seed(2)
    module = torch.nn.LSTM(INPUT, HIDDEN)
    x = torch.randn(SEQ, BATCH, INPUT)
    h0 = (torch.ones(1, BATCH, HIDDEN), torch.zeros(1, BATCH, HIDDEN))

    class Fixed(torch.nn.Module):  # a constant non-zero initial state: not unrolled
        def __init__(self):
            super().__init__()
            self.lstm = module

        def forward(self, x):
            return self.lstm(x, h0)[0][-1]

    path = os.path.join(tmp_path, "fixed.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Fixed(), (x,), path, opset_version=17)
    with pytest.raises(mimic.UnsupportedOpError) as e:
        mimic.compile_train(mimic.onnx.load(path), "mse", mimic.optim.SGD([], lr=0.1), "cpu",
                            example_inputs=x.numpy())
    assert "LSTM" in str(e.value) and "cannot be unrolled" in str(e.value) and "\n" not in str(e.value)
