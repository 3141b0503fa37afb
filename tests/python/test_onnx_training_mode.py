"""ONNX models exported in training mode (torch.onnx.export(..., training=TrainingMode.TRAINING)):
BatchNormalization-15 with training_mode=1 normalizes with the batch's statistics, Dropout-13 with
training_mode=true draws masks; and BatchNorm momentum other than PyTorch's default, in either
export mode, updates the running statistics by that momentum."""
import warnings

import numpy as np
import pytest

import mimic

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
torch.set_num_threads(1)

LR = 0.1
STEPS = 3


def convnet(dropout=0.0):
    torch.manual_seed(0)
    # BatchNorm after the ReLU: an eval-mode export folds a BatchNorm that follows a Conv into it.
    layers = [torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.BatchNorm2d(4, momentum=0.3)]
    if dropout:
        layers.append(torch.nn.Dropout(dropout))
    layers += [torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)]
    return torch.nn.Sequential(*layers)


def export(model, x, path, training):
    """A training-mode export traces `model` in train mode: its running statistics take one update,
    which the exported initializers hold, so the model itself is exported (not a copy)."""
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    model.train(training)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, training=mode, do_constant_folding=False,
                          opset_version=15, input_names=["x"])
    return mimic.onnx.load(str(path))


def torch_steps(model, x, y):
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.fixture
def batch():
    torch.manual_seed(1)
    return torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))


@pytest.mark.parametrize("device,precision", [("cpu", "default"), ("tpu-emu:v4", "highest"),
                                              ("ipu-emu:gc200", "float32")])
def test_training_mode_forward_uses_batch_statistics(tmp_path, batch, device, precision):
    x, _ = batch
    model = convnet()
    g = export(model, x, tmp_path / "m.onnx", training=True)
    with torch.no_grad():
        want = model.train()(x).numpy()
    got = mimic.compile(g, device=device, example_inputs=[x.numpy()], precision=precision)(x.numpy())
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("training_export", [True, False])
@pytest.mark.parametrize("device", ["cpu", "tpu-emu:v4"])
def test_train_step_matches_pytorch_with_momentum(tmp_path, batch, training_export, device):
    x, y = batch
    model = convnet()
    g = export(model, x, tmp_path / "m.onnx", training=training_export)
    want = torch_steps(model, x, y)
    options = {} if device == "cpu" else {"precision": "highest", "batch_norm_variance": "two_pass"}
    step = mimic.compile_train(g, "cross_entropy", mimic.optim.SGD([], lr=LR), device, example_inputs=x.numpy(),
                               **options)
    got = [float(step(x.numpy(), y.numpy())) for _ in range(STEPS)]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    state = step.state_dict()
    for name, value in model.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        np.testing.assert_allclose(state[name], value.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_training_mode_dropout_trains_and_refuses_inference(tmp_path, batch):
    x, y = batch
    g = export(convnet(dropout=0.25), x, tmp_path / "m.onnx", training=True)
    with pytest.raises(mimic.UnsupportedOpError, match=r"Dropout.*training mode \(ratio 0.25\).*random mask"):
        mimic.compile(g, device="cpu", example_inputs=[x.numpy()])
    step = mimic.compile_train(g, "cross_entropy", mimic.optim.SGD([], lr=LR), "cpu", example_inputs=x.numpy())
    losses = [float(step(x.numpy(), y.numpy())) for _ in range(STEPS)]
    assert all(np.isfinite(losses)), losses
    no_dropout = export(convnet(), x, tmp_path / "plain.onnx", training=True)
    plain = mimic.compile_train(no_dropout, "cross_entropy", mimic.optim.SGD([], lr=LR), "cpu",
                                example_inputs=x.numpy())
    assert abs(float(plain(x.numpy(), y.numpy())) - losses[0]) > 1e-6, "the mask changed nothing"
