"""Layers tpu-emu runs as primitive ops (frontend/ir/primitive_expansions.h), exported by
torch.onnx and checked against PyTorch with no cpu fallback: GroupNorm and InstanceNorm (ONNX
InstanceNormalization: reductions and vector ops), PixelShuffle and PixelUnshuffle (DepthToSpace,
SpaceToDepth: a reshape, a transpose and a reshape); and a train step through them."""
import warnings

import numpy as np
import pytest

import mimic

torch = pytest.importorskip("torch", reason="PyTorch (python3-torch) is not installed")
torch.set_num_threads(1)


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.GroupNorm(2, 8), torch.nn.SiLU(),
                               torch.nn.InstanceNorm2d(8, affine=True), torch.nn.PixelUnshuffle(2),
                               torch.nn.Conv2d(32, 16, 1), torch.nn.PixelShuffle(2), torch.nn.Conv2d(4, 2, 3))


def export(m, x, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, x, str(path), opset_version=13, input_names=["x"])
    return mimic.onnx.load(str(path))


def test_forward_on_tpu_without_fallback(tmp_path):
    m, x = model().eval(), torch.randn(2, 3, 8, 8)
    g = export(m, x, tmp_path / "m.onnx")
    exe = mimic.compile(g, device="tpu-emu:v4", example_inputs=[x.numpy()], precision="highest", strict=True)
    assert exe.compile_report["fallback_reasons"] == []
    with torch.no_grad():
        np.testing.assert_allclose(np.asarray(exe(x.numpy())), m(x).numpy(), rtol=1e-4, atol=1e-5)


def test_train_step_on_tpu_matches_pytorch(tmp_path):
    m, x = model().train(), torch.randn(2, 3, 8, 8)
    y = torch.randn(2, 2, 6, 6)
    g = export(m, x, tmp_path / "m.onnx")
    step = mimic.compile_train(g, "mse", mimic.optim.SGD([], lr=0.05), "tpu-emu:v4", example_inputs=x.numpy(),
                               precision="highest", strict=True)
    got = [float(step(x.numpy(), y.numpy())) for _ in range(3)]
    opt, want = torch.optim.SGD(m.parameters(), lr=0.05), []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        want.append(loss.item())
    np.testing.assert_allclose(got, want, rtol=1e-4)
