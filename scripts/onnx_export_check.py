#!/usr/bin/python3
"""Exports ResNet-50, MobileNetV2 and a 2-layer transformer encoder from PyTorch to ONNX and checks
mimic's output on each device against PyTorch's (not part of CI: it needs python3-torch and
python3-torchvision, `scripts/setup.sh --bench` installs them).

    scripts/onnx_export_check.py [--mimic build/bin/mimic] [--devices cpu,tpu-emu:v4] [--batch 2]

Models have random weights (seeded) and a symbolic batch; inputs are random normals. For each
model and device it runs `mimic run --onnx M --device D --input input=x.npy --output-dir OUT`,
reads OUT/output.npy and prints the largest absolute and relative errors against PyTorch. The
tolerance follows the device's precision class (f32 devices: rtol 1e-3, atol 1e-4 relative to the
output's scale; bf16/f16 devices: 3e-2). Exit status 1 when a comparison fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision

OPSET = 14


def transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                             batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


MODELS = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), (3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (3, 224, 224)),
    "transformer_encoder": (transformer_encoder, (16, 64)),
}


def export(name, folder, batch):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(batch, *shape)
    path = os.path.join(folder, name + ".onnx")
    with torch.no_grad():
        expected = model(x).numpy()
    # Exported with gradients enabled: PyTorch's fused inference path for transformer layers
    # (aten::_transformer_encoder_layer_fwd) has no ONNX export and is only taken without them.
    torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    np.save(os.path.join(folder, name + "_input.npy"), x.numpy())
    return path, expected


def available_devices(mimic):
    out = subprocess.run([mimic, "devices", "--json"], check=True, capture_output=True, text=True).stdout
    return [d["name"] for d in json.loads(out) if d["available"]]


def tolerance(device, precision):
    if precision in ("default", "high") and device.startswith("tpu-emu"):
        return 3e-2, 3e-2
    if precision == "float16":
        return 3e-2, 3e-2
    return 1e-3, 1e-4


def check(mimic, name, model_path, expected, folder, device, precision):
    out_dir = os.path.join(folder, f"{name}_{device.replace(':', '_')}")
    cmd = [mimic, "run", "--onnx", model_path, "--device", device, "--precision", precision, "--input",
           "input=" + os.path.join(folder, name + "_input.npy"), "--output-dir", out_dir, "--no-compare"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL  {name:<20} {device:<16} mimic exited {r.returncode}: {r.stderr.strip()}")
        return False
    got = np.load(os.path.join(out_dir, "output.npy"))
    if got.shape != expected.shape:
        print(f"FAIL  {name:<20} {device:<16} shape {got.shape}, PyTorch {expected.shape}")
        return False
    scale = float(np.abs(expected).max()) or 1.0
    abs_err = float(np.abs(got - expected).max())
    rel_err = abs_err / scale
    rtol, atol = tolerance(device, precision)
    ok = bool(np.allclose(got, expected, rtol=rtol, atol=atol * scale))
    print(f"{'pass' if ok else 'FAIL'}  {name:<20} {device:<16} max abs error {abs_err:.3g}, "
          f"relative to max|output| {rel_err:.3g} (rtol {rtol:g}, atol {atol:g} x {scale:.3g})")
    return ok


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mimic", default=os.path.join(root, "build", "bin", "mimic"))
    p.add_argument("--devices", help="comma-separated devices (default: every available one)")
    p.add_argument("--precision", default="default")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--keep", help="folder to keep the exported models and outputs in")
    a = p.parse_args()
    devices = a.devices.split(",") if a.devices else available_devices(a.mimic)
    folder = a.keep or tempfile.mkdtemp(prefix="mimic_onnx_export_")
    os.makedirs(folder, exist_ok=True)
    ok = True
    for name in a.models.split(","):
        model_path, expected = export(name, folder, a.batch)
        for device in devices:
            ok = check(a.mimic, name, model_path, expected, folder, device, a.precision) and ok
    print("all outputs match PyTorch" if ok else "some outputs differ from PyTorch")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
