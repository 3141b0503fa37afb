#!/usr/bin/env python3
"""Training curves of one model on several devices: an MLP and a small CNN (conv, BatchNorm,
max-pool), the same initial weights and data (4 random batches, cycled), 100 steps of SGD with
momentum and of AdamW, on
  - PyTorch (the reference, fp32),
  - mimic's cpu backend (fp32),
  - tpu-emu:v4 at its default precision (bf16 matrix operands, fp32 accumulation),
  - ipu-emu:gc200 at float16 (every tensor stored in fp16) with dynamic loss scaling,
  - the same with fp32 master weights (option master_weights=float32: parameters, optimizer state
    and the update in f32, the forward and backward passes reading fp16 copies).
Writes the loss curves side by side as an SVG and prints each run's final loss and its relative
difference to PyTorch's.

How far a reduced-precision run can be expected to end from PyTorch's fp32 run depends on how
sensitive the training is, so the example measures that on PyTorch itself: the same training under
torch.autocast(bfloat16) (PyTorch's own bf16 run) and in fp32 from initial weights perturbed by
0.1% (w * (1 + 1e-3 N(0, 1)), about a bf16 rounding of each weight). Where these end more than 2%
from the fp32 run, no run whose arithmetic differs by a rounding can be expected to end closer.

    PYTHONPATH=build/python python3 examples/train_curves.py [--out docs/figures] [--steps 100]
"""
import argparse
import os

import numpy as np

import mimic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FP16_SCALE = {"init_scale": 1024.0}
RUNS = [("cpu", "cpu", "default", None, {}, "#1f77b4"),
        ("tpu-emu:v4 (bf16)", "tpu-emu:v4", "default", None, {}, "#2ca02c"),
        ("ipu-emu:gc200 (fp16, loss scaling)", "ipu-emu:gc200", "float16", FP16_SCALE, {}, "#d62728"),
        ("ipu-emu:gc200 (fp16, fp32 master weights)", "ipu-emu:gc200", "float16", FP16_SCALE,
         {"master_weights": "float32"}, "#ff7f0e")]
TORCH_COLOR = "#000000"
TORCH_BF16_COLOR = "#9467bd"
PERTURBATION = 1e-3  # relative, of every initial weight: about a bf16 rounding (2^-8 = 3.9e-3 at most)
PERTURBATION_SEEDS = (5, 6, 7)  # draws of the perturbation


def mlp():
    return mimic.nn.Sequential(mimic.nn.Linear(20, 32, seed=1), mimic.nn.ReLU(), mimic.nn.Linear(32, 16, seed=2),
                               mimic.nn.Tanh(), mimic.nn.Linear(16, 10, seed=3))


def cnn():
    return mimic.nn.Sequential(mimic.nn.Conv2d(3, 8, 3, padding=1, seed=1), mimic.nn.BatchNorm2d(8), mimic.nn.ReLU(),
                               mimic.nn.MaxPool2d(2, 2), mimic.nn.Conv2d(8, 8, 3, stride=2, padding=1, seed=2),
                               mimic.nn.ReLU(), mimic.nn.Flatten(), mimic.nn.Linear(8 * 2 * 2, 10, seed=3))


NUM_BATCHES = 4  # cycled: one epoch is 4 steps
MODELS = {"mlp": (mlp, (16, 20)), "cnn": (cnn, (8, 3, 8, 8))}
OPTIMIZERS = {"sgd-momentum": lambda m, p: m.SGD(p, lr=0.01, momentum=0.9),
              "adamw": lambda m, p: m.AdamW(p, lr=1e-3, eps=1e-4, weight_decay=1e-2)}


def batches(shape, seed=3):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=shape).astype(np.float32), rng.integers(0, 10, shape[0]).astype(np.int64))
            for _ in range(NUM_BATCHES)]


def torch_twin(model, torch):
    """The torch.nn.Sequential with `model`'s layers and weights (mimic's Linear weight is [in, out])."""
    layers = []
    for m in model._modules:
        if isinstance(m, mimic.nn.Linear):
            w = np.array(m.weight)
            t = torch.nn.Linear(w.shape[0], w.shape[1])
            t.weight.data, t.bias.data = torch.tensor(w.T.copy()), torch.tensor(np.array(m.bias))
        elif isinstance(m, mimic.nn.Conv2d):
            w = np.array(m.weight)
            t = torch.nn.Conv2d(w.shape[1] * m.groups, w.shape[0], w.shape[2], stride=m.stride, padding=m.padding,
                                groups=m.groups)
            t.weight.data, t.bias.data = torch.tensor(w), torch.tensor(np.array(m.bias))
        elif isinstance(m, mimic.nn.BatchNorm2d):
            t = torch.nn.BatchNorm2d(np.array(m.weight).shape[0], eps=m.eps)
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(t, name).data = torch.tensor(np.array(getattr(m, name)))
        elif isinstance(m, mimic.nn.MaxPool2d):
            t = torch.nn.MaxPool2d(m.args[0], m.args[1], m.args[2])
        else:
            t = {mimic.nn.ReLU: torch.nn.ReLU, mimic.nn.Tanh: torch.nn.Tanh, mimic.nn.Flatten: torch.nn.Flatten}[type(m)]()
        layers.append(t)
    return torch.nn.Sequential(*layers).train()


def torch_curve(model_name, opt_name, steps, bf16=False, perturbation=0.0, seed=5):
    """PyTorch's loss curve: fp32, or under torch.autocast(bfloat16) with `bf16`, from the initial weights
    each multiplied by (1 + perturbation * N(0, 1)) when `perturbation` is not 0 (noise drawn from `seed`)."""
    import torch
    torch.set_num_threads(1)
    make, shape = MODELS[model_name]
    twin = torch_twin(make(), torch)
    noise = torch.Generator().manual_seed(seed)
    for p in twin.parameters():
        p.data *= 1 + perturbation * torch.randn(p.shape, generator=noise)
    opt = OPTIMIZERS[opt_name](torch.optim, twin.parameters())
    data, out = batches(shape), []
    for i in range(steps):
        x, y = data[i % len(data)]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = twin(torch.tensor(x))
        loss = torch.nn.functional.cross_entropy(logits.float(), torch.tensor(y))
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def mimic_curve(model_name, opt_name, device, precision, loss_scale, options, steps):
    make, shape = MODELS[model_name]
    model = make()
    data = batches(shape)
    step = mimic.compile_train(model, "cross_entropy", OPTIMIZERS[opt_name](mimic.optim, model.parameters()), device,
                               example_inputs=data[0][0], precision=precision, loss_scale=loss_scale, **options)
    curve = [step(*data[i % len(data)]) for i in range(steps)]
    return curve, step.skipped_steps


def svg_panels(panels, steps):
    """One loss-vs-step chart per (model, optimizer), side by side; `panels` maps a title to
    [(label, color, losses)]."""
    pw, ph, left, top, bottom, gap = 300, 240, 45, 40, 35, 20
    w, h = len(panels) * (pw + gap) + 20, ph + 100
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="10" y="18" font-size="13" font-weight="bold">Training loss, {steps} steps: PyTorch vs mimic '
             f'devices (same weights and data)</text>']
    for k, (title, lines) in enumerate(panels.items()):
        x0 = 10 + k * (pw + gap) + left
        iw, ih = pw - left, ph - top - bottom
        ymax = max(max(c) for _, _, c in lines) * 1.05
        fx = lambda i: x0 + i / (steps - 1) * iw
        fy = lambda v: top + 20 + (1 - v / ymax) * ih
        parts.append(f'<text x="{x0}" y="{top + 12}" font-weight="bold">{title}</text>'
                     f'<rect x="{x0}" y="{top + 20}" width="{iw}" height="{ih}" fill="none" stroke="#999"/>')
        for t in range(5):
            v = ymax * t / 4
            parts.append(f'<line x1="{x0}" y1="{fy(v):.1f}" x2="{x0 + iw}" y2="{fy(v):.1f}" stroke="#eee"/>'
                         f'<text x="{x0 - 4}" y="{fy(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        for s in (0, steps // 2, steps - 1):
            parts.append(f'<text x="{fx(s):.1f}" y="{top + 20 + ih + 14}" text-anchor="middle">{s + 1}</text>')
        for label, color, curve in lines:
            pts = " ".join(f"{fx(i):.1f},{fy(v):.1f}" for i, v in enumerate(curve))
            dash = ' stroke-dasharray="4,3"' if label.startswith("PyTorch") else ""
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.3"{dash}/>')
    legend = [(label, color) for label, color, _ in next(iter(panels.values()))]
    for i, (label, color) in enumerate(legend):
        x, y = 10 + left + (i % 3) * 330, h - 30 + (i // 3) * 16
        parts.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 20}" y2="{y - 4}" stroke="{color}" stroke-width="2"/>'
                     f'<text x="{x + 25}" y="{y}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def last_epoch(curve):
    """The loss at the end of training: the mean over the last pass over the batches (as Keras reports
    an epoch's loss). Each step's loss is of a different batch, and near the end the curve moves by
    up to 10% from one step to the next when bf16 or fp16 rounding shifts which batch it fits best."""
    return float(np.mean(curve[-NUM_BATCHES:]))


def relative(a, b):
    return abs(a - b) / abs(b)


def sensitivity(model_name, opt_name, steps, ref):
    """How far PyTorch's own final loss moves from `ref`'s under bf16 autocast and under the initial weights'
    perturbation: (bf16 autocast curve, relative difference, largest relative difference over
    PERTURBATION_SEEDS perturbations: where the loss is chaotic one draw understates the spread)."""
    bf16 = torch_curve(model_name, opt_name, steps, bf16=True)
    rel_bf16 = relative(bf16[-1], ref[-1])
    rel_perturbed = max(relative(torch_curve(model_name, opt_name, steps, perturbation=PERTURBATION, seed=s)[-1],
                                 ref[-1]) for s in PERTURBATION_SEEDS)
    print(f"{model_name:4s} {opt_name:12s} PyTorch's own spread: bf16 autocast ends {rel_bf16:.2e} from fp32, "
          f"initial weights x (1 + {PERTURBATION:g} N(0,1)) end up to {rel_perturbed:.2e} from it "
          f"({len(PERTURBATION_SEEDS)} draws)")
    return bf16, rel_bf16, rel_perturbed


def main(out_dir=os.path.join(ROOT, "docs", "figures"), steps=100):
    """Runs every curve, writes train_curves.svg into `out_dir`; returns ({(model, optimizer, run): (final loss,
    relative difference to PyTorch's final loss, relative difference of the last epoch's loss, skipped
    steps)}, {(model, optimizer): (PyTorch bf16 autocast's relative difference, the perturbed run's)})."""
    panels, results, spreads = {}, {}, {}
    for model_name in MODELS:
        for opt_name in OPTIMIZERS:
            ref = torch_curve(model_name, opt_name, steps)
            bf16, *spreads[(model_name, opt_name)] = sensitivity(model_name, opt_name, steps, ref)
            lines = [("PyTorch", TORCH_COLOR, ref), ("PyTorch (bf16 autocast)", TORCH_BF16_COLOR, bf16)]
            for label, device, precision, loss_scale, options, color in RUNS:
                curve, skipped = mimic_curve(model_name, opt_name, device, precision, loss_scale, options, steps)
                rel = relative(curve[-1], ref[-1])
                epoch, ref_epoch = last_epoch(curve), last_epoch(ref)
                rel_epoch = relative(epoch, ref_epoch)
                results[(model_name, opt_name, label)] = (curve[-1], rel, rel_epoch, skipped)
                print(f"{model_name:4s} {opt_name:12s} {label:36s} final loss {curve[-1]:.5f}  PyTorch {ref[-1]:.5f}  "
                      f"relative difference {rel:.2e}; last epoch's loss {epoch:.5f}  PyTorch {ref_epoch:.5f}  "
                      f"relative difference {rel_epoch:.2e}" + (f"  ({skipped} steps skipped)" if skipped else ""))
                lines.append((label, color, curve))
            panels[f"{model_name}, {opt_name}"] = lines
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "train_curves.svg")
    with open(path, "w") as f:
        f.write(svg_panels(panels, steps))
    print("wrote", path)
    return results, spreads


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()
    main(args.out, args.steps)
