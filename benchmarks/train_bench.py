#!/usr/bin/env python3
"""One training step (forward, loss, backward, SGD-momentum update) of ResNet-50 and BERT (the
zoo's bert: 12 layers, hidden 768, seq 128) at batch 8 on the cpu backend, beside PyTorch's on the
same architecture in the same invocation (goal <= 1.2x), and the same step on the emulators with
their numerics computed (tpu-emu:v4 at default precision, ipu-emu:gc200 at float32) against the cpu
backend's (goal <= 1.5x). Writes benchmarks/results/train.{json,md}.

  PYTHONPATH=build/python python3 benchmarks/train_bench.py            # both models, 5 steps each
  PYTHONPATH=build/python python3 benchmarks/train_bench.py --models resnet50 --steps 3 --emulators

Timings are host wall time of one step: the median of --steps steps after --warmup steps
(compilation is timed apart). Both frameworks run in this process with every core (PyTorch:
torch.set_num_threads(cores); mimic: OpenMP, both with OMP_WAIT_POLICY=passive so that neither
spins while the other runs), their steps alternating, so load from other work on the machine hits
both alike; the emulators' steps join the same rotation. The ipu-emu step compiles with
allow_out_of_memory=true: this measures the host cost of emulating the step, and a batch-8 fp32 step
of either model does not fit one GC200's tiles (the training-memory examples find the ones that
do). Losses:
ResNet-50 cross-entropy on random labels of 1000 classes; BERT (an encoder without a head) MSE of
its hidden states against a random target. Weights differ between the two sides (both seeded
random); the work per step does not.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

# The two frameworks' steps alternate in one process: idle OpenMP threads of one must not spin
# while the other runs (libgomp spins by default), so both wait passively. Set before either
# framework loads its OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LR, MOMENTUM = 0.01, 0.9


def batch_data(name, batch, out_shape, seed=0):
    """(inputs, targets) as numpy arrays for model `name`."""
    rng = np.random.default_rng(seed)
    if name == "bert":
        x = rng.integers(0, 30522, (batch, 128)).astype(np.int64)
        return x, rng.normal(size=out_shape).astype(np.float32)
    x = rng.normal(size=(batch, 3, 224, 224)).astype(np.float32)
    return x, rng.integers(0, 1000, batch).astype(np.int64)


def loss_name(name):
    return "mse" if name == "bert" else "cross_entropy"


# Emulators timed beside the cpu backend, with the options their steps compile with.
EMULATORS = {"tpu-emu:v4": {}, "ipu-emu:gc200": {"allow_out_of_memory": "true"}}


def mimic_step(name, batch, device="cpu"):
    """A function running one mimic train step, the losses it appends to, and the compile time."""
    import mimic
    model = getattr(mimic.zoo, name)(batch=batch)
    out_shape = (batch, 128, 768) if name == "bert" else (batch, 1000)
    data, target = batch_data(name, batch, out_shape)
    params = [p for _, p in model.module.named_parameters()]
    opt = mimic.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    t0 = time.perf_counter()
    step = mimic.compile_train(model.module, loss_name(name), opt, device, example_inputs=data,
                               **EMULATORS.get(device, {}))
    compile_s = time.perf_counter() - t0
    losses = []
    return (lambda: losses.append(float(step(data, target)))), losses, {"compile_s": compile_s}


def torch_step(name, batch):
    import torch
    import torch_models
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count())
    module, _, _ = torch_models.build(name)
    module.train()
    out_shape = (batch, 128, 768) if name == "bert" else (batch, 1000)
    data, target = (torch.tensor(v) for v in batch_data(name, batch, out_shape))
    opt = torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.MSELoss() if name == "bert" else torch.nn.CrossEntropyLoss()
    losses = []

    def one_step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(module(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())

    return one_step, losses, {"torch": torch.__version__}


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(name, batch, steps, warmup, emulators):
    """Steps of the frameworks alternate (PyTorch, mimic cpu, each emulator, PyTorch, ...), so that
    load from other work on the machine falls on all alike."""
    sides = {"pytorch": torch_step(name, batch), "cpu": mimic_step(name, batch)}
    for device in emulators:
        sides[device] = mimic_step(name, batch, device)
    for _ in range(warmup):
        for fn, _, _ in sides.values():
            fn()
    for _, _, info in sides.values():
        info["step_s"] = []
    for _ in range(steps):
        for fn, _, info in sides.values():
            info["step_s"].append(timed(fn))
        print(f"  {name}: " + ", ".join(f"{k} {v[2]['step_s'][-1]:.2f} s" for k, v in sides.items()), flush=True)
    for _, losses, info in sides.values():
        info["loss"] = losses
    return {k: v[2] for k, v in sides.items()}


def row(name, batch, sides):
    median = {k: statistics.median(v["step_s"]) for k, v in sides.items()}
    m, t = sides["cpu"], sides["pytorch"]
    r = {"model": name, "batch": batch, "mimic_median_s": median["cpu"], "pytorch_median_s": median["pytorch"],
         "ratio": median["cpu"] / median["pytorch"], "mimic_compile_s": m["compile_s"], "steps": len(m["step_s"]),
         "mimic": m, "pytorch": t, "emulators": {}}
    for device, info in sides.items():
        if device in ("cpu", "pytorch"):
            continue
        r["emulators"][device] = {"median_s": median[device], "vs_cpu": median[device] / median["cpu"],
                                  "compile_s": info["compile_s"], "step_s": info["step_s"],
                                  "loss": info["loss"]}
    return r


def emulator_lines(rows):
    if not any(r["emulators"] for r in rows):
        return []
    lines = ["", "The same step on the emulators, numerics computed, against the cpu backend's (goal <= 1.5x):", "",
             "| model | batch | device | emulated step | cpu step | vs cpu | compile |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for device, e in r["emulators"].items():
            lines.append(f"| {r['model']} | {r['batch']} | {device} | {e['median_s']:.3f} s | "
                         f"{r['mimic_median_s']:.3f} s | {e['vs_cpu']:.2f}x | {e['compile_s']:.1f} s |")
    return lines


def markdown(rows, desc, steps, warmup):
    lines = ["# Training step: mimic cpu vs PyTorch cpu, and the emulators vs mimic cpu", "",
             "Generated by `benchmarks/train_bench.py` (one train step: forward, loss, backward, "
             f"SGD lr {LR} momentum {MOMENTUM}). Median of {steps} steps after {warmup} warmup step(s), "
             "host wall time, the frameworks' steps (the emulators' too) alternating in one process per model "
             "with OMP_WAIT_POLICY=passive; ratio = mimic / PyTorch (goal <= 1.2x).", "",
             "| model | batch | mimic cpu step | PyTorch cpu step | ratio | mimic compile |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['batch']} | {r['mimic_median_s']:.3f} s | {r['pytorch_median_s']:.3f} s | "
                     f"{r['ratio']:.2f}x | {r['mimic_compile_s']:.1f} s |")
    lines += emulator_lines(rows)
    lines += ["", machine.markdown(desc) + " The machine was shared with other jobs while this ran "
              f"(load average at the end {desc['load_average_end']}), so absolute times are noisy; "
              "the ratio compares steps run alternately.", ""]
    return "\n".join(lines)


def model_row(name, a):
    """One model's row, measured in a process of its own: a model's steps on four devices hold
    several GB, which the next model's would add to (BERT after ResNet-50 ran out of 24 GB)."""
    path = f"{a.out}.{name}.part.json"
    cmd = [sys.executable, os.path.abspath(__file__), "--models", name, "--batch", str(a.batch), "--steps",
           str(a.steps), "--warmup", str(a.warmup), "--build", a.build, "--row-json", path, "--emulators", *a.emulators]
    subprocess.run(cmd, check=True)
    with open(path) as f:
        out = json.load(f)
    os.remove(path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50", "bert"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--emulators", nargs="*", default=list(EMULATORS), choices=list(EMULATORS),
                    help="emulated devices timed beside the cpu backend (none: --emulators with no value)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "train"))
    ap.add_argument("--row-json", help=argparse.SUPPRESS)  # internal: one model's row, to this file
    a = ap.parse_args()
    if a.row_json:
        with open(a.row_json, "w") as f:
            json.dump(row(a.models[0], a.batch, bench(a.models[0], a.batch, a.steps, a.warmup, a.emulators)), f)
        return
    desc = machine.describe(a.build)
    rows = []
    for name in a.models:
        rows.append(model_row(name, a))
        print(f"{name} b{a.batch}: mimic {rows[-1]['mimic_median_s']:.3f} s, PyTorch {rows[-1]['pytorch_median_s']:.3f} s,"
              f" ratio {rows[-1]['ratio']:.2f}x" +
              "".join(f"; {d} {e['median_s']:.3f} s ({e['vs_cpu']:.2f}x cpu)" for d, e in rows[-1]["emulators"].items()),
              flush=True)
    desc["load_average_end"] = machine.describe(a.build)["load_average"]
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": desc, "results": rows}, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(markdown(rows, desc, a.steps, a.warmup))
    print(f"wrote {a.out}.md and {a.out}.json")


if __name__ == "__main__":
    main()
