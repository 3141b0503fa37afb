"""Resize (F.interpolate, nn.Upsample) exported by torch.onnx against PyTorch itself: every mode
and coordinate convention PyTorch writes, on every device (tpu-emu and ipu-emu run it as matrix
products, no cpu fallback), and training through it (the gradient is the transposed maps)."""
import warnings

import numpy as np
import pytest

import mimic

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
F = torch.nn.functional
torch.set_num_threads(1)

DEVICES = [("cpu", "default"), ("tpu-emu:v4", "highest"), ("ipu-emu:gc200", "float32")]
INTERPOLATIONS = {
    "nearest_x2": dict(scale_factor=2, mode="nearest"),
    "nearest_size": dict(size=(7, 5), mode="nearest"),
    "bilinear_x2": dict(scale_factor=2, mode="bilinear", align_corners=False),
    "bilinear_align_corners": dict(size=(9, 11), mode="bilinear", align_corners=True),
    "bilinear_down": dict(scale_factor=0.5, mode="bilinear", align_corners=False),
    "bicubic_x3": dict(scale_factor=3, mode="bicubic", align_corners=False),
}


class Interpolate(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


def export(model, x, path, opset=13):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, str(path), opset_version=opset, input_names=["x"])
    return mimic.onnx.load(str(path))


@pytest.mark.parametrize("name", sorted(INTERPOLATIONS))
@pytest.mark.parametrize("device,precision", DEVICES)
def test_interpolate_matches_pytorch(tmp_path, name, device, precision):
    x = torch.randn(2, 3, 6, 8)
    model = Interpolate(**INTERPOLATIONS[name])
    g = export(model, x, tmp_path / "m.onnx")
    exe = mimic.compile(g, device=device, example_inputs=[x.numpy()], precision=precision, strict=True)
    np.testing.assert_allclose(np.asarray(exe(x.numpy())), model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_opset9_upsample_matches_pytorch(tmp_path):
    x = torch.randn(1, 2, 4, 5)
    model = torch.nn.Upsample(scale_factor=2, mode="nearest")
    g = export(model, x, tmp_path / "m.onnx", opset=9)
    np.testing.assert_allclose(np.asarray(mimic.compile(g, device="cpu", example_inputs=[x.numpy()])(x.numpy())),
                               model(x).numpy())


@pytest.mark.parametrize("device,precision", DEVICES[:2])
def test_training_through_upsampling_matches_pytorch(tmp_path, device, precision):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                torch.nn.Conv2d(4, 2, 3, padding=1))
    x, y = torch.randn(2, 3, 5, 6), torch.randn(2, 2, 10, 12)
    g = export(model, x, tmp_path / "m.onnx")
    step = mimic.compile_train(g, "mse", mimic.optim.SGD([], lr=0.1), device, example_inputs=x.numpy(),
                               precision=precision, strict=device != "cpu")
    got = [float(step(x.numpy(), y.numpy())) for _ in range(3)]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    want = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        want.append(loss.item())
    np.testing.assert_allclose(got, want, rtol=1e-5)
