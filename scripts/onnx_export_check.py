#!/usr/bin/python3
"""Exports PyTorch models to ONNX and checks mimic's output on every device against PyTorch's.

    scripts/onnx_export_check.py                 # every model, opsets 13 and 17, every device
    scripts/onnx_export_check.py --quick         # the CTest subset (label `models`)
    scripts/onnx_export_check.py --models resnet18,efficientnet_b0 --devices cpu,tpu-emu:v4
    scripts/onnx_export_check.py --list          # the models, their input sizes and notes

Models: every classification model torchvision ships (torchvision.models.list_models, or the
module's builder functions on versions without it), smallest first (parameter counts from the
weights' metadata); a 2-layer torch.nn.TransformerEncoder with a causal attention mask; LSTM and GRU
models (2 layers, uni- and bidirectional). Weights are random (seeded). So that the comparison is
not vacuous, the reference output must depend on the input: BatchNorm statistics are calibrated on
random inputs (random weights otherwise shrink activations to nothing), and when the output still
does not change with the input (zero-initialized heads, e.g. ViT's), the all-zero parameters, then
all of them, are perturbed before export. Inputs are random normals, batch 1, at a reduced size where
the model allows it (the machine that runs this is small): the size and why are listed per model.

Each model is exported at each opset (torch.onnx.export), then run with `mimic run --onnx M
--device D --precision P --input input=x.npy --output-dir OUT --json --no-compare`, and OUT/output.npy
is compared with PyTorch's output. Device configurations: cpu; tpu-emu:v4 at its default (one bf16
pass) and highest (f32) precision; ipu-emu:gc200 in float32 and float16; cuda:0 (highest) when
`mimic devices` lists it available, at highest (f32) and default (TF32) precision. A model whose
weights do not fit one IPU (ipu-emu's out-of-memory error says so) is run again sharded over 2, 4,
... up to 16 IPUs (`--option num_ipus=N`, pipelined by layers), as an IPU user would; the row's
device then names the IPU count.

Tolerance: |mimic - torch| <= atol * max|torch| + rtol * |torch| elementwise, by the precision
class the run reports (the classes of frontend/onnx/conformance.h; whole models accumulate the
rounding of every layer, so atol is relative to the output's scale and the 16-bit classes are
looser than for single ops):
    f32 (cpu, TPU highest, IPU float32):  rtol 1e-3, atol 1e-4
    bf16x3 (TPU high):                    rtol 1e-3, atol 1e-3
    tf32 (cuda default):                  rtol 1e-2, atol 1e-2, raised to twice PyTorch's error with
        the operands of its convolutions and linear layers rounded to TF32 (functional matmuls,
        e.g. attention's, are not rounded)
    f16 (IPU float16), bf16 (TPU default): rtol 5e-2, atol 5e-2, with atol raised to what the
        precision costs this model in PyTorch itself: the model is also run in bfloat16 (weights
        and activations rounded to bf16; the chip's default rounds only the matrix-unit operands,
        so it should do no worse), and atol is at least twice that run's error for bf16, and a
        quarter of it for f16 (2^3 times smaller unit roundoff, times two); for f16 also at least
        twice PyTorch's error with every parameter and leaf layer output rounded to float16 (deep
        models saturate, where a quarter of the bf16 error says nothing).
Every class's atol is also at least four times PyTorch's own float32 error (its float32 output
against the model run in float64): two float32 computations of an ill-conditioned model (ResNet-152
with random weights: 5.7e-4) differ from each other by about twice that.
The reported error is max|mimic - torch| / max|torch|.

Prints a table (model, opset, device, status, max error, fallback ops, wall time) and writes it, with
the models' notes and the reason of every failure, to benchmarks/results/models.md after every run
(a partial table survives an interrupted check). Exit status: 0 when every check passed, 1 when
one did not, 77 when torch or torchvision cannot be imported (CTest counts that as skipped; CI does
not install python3-torch).
"""
import argparse
import copy
import datetime
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

SKIP = 77
OPSETS = (13, 17)
CONFIGS = [("cpu", "default"), ("tpu-emu:v4", "default"), ("tpu-emu:v4", "highest"),
           ("ipu-emu:gc200", "float32"), ("ipu-emu:gc200", "float16"), ("cuda:0", "highest"),
           ("cuda:0", "default")]
MAX_IPUS = 16  # the largest sharding tried for a model whose weights do not fit one IPU
QUICK_MODELS = ("resnet18", "efficientnet_b0", "transformer_encoder")
QUICK_OPSETS = (17,)
KEPT_SECTION = "## Notes"  # a hand-written section that --update keeps as it is
TOLERANCES = {"f32": (1e-3, 1e-4), "bf16x3": (1e-3, 1e-3), "tf32": (1e-2, 1e-2),
              "f16": (5e-2, 5e-2), "bf16": (5e-2, 5e-2)}

# Input size (H = W) per torchvision model family, with the reason; the default is 64.
REDUCED = 64
SIZES = {
    "vit_": (224, "positional embeddings are fixed to 224 x 224"),
    "swin_": (224, "relative-position windows are laid out for 224 x 224"),
    "maxvit_": (224, "block and grid partitions need 224 x 224"),
    "vgg": (224, "features end at 7 x 7 for the fixed 7 x 7 adaptive pool (ONNX exports adaptive "
                 "pooling only for divisible sizes)"),
    "alexnet": (224, "features end at 6 x 6 for the fixed 6 x 6 adaptive pool"),
    "inception_v3": (96, "needs at least 75 x 75"),
}


def precision_class(precision):
    p = (precision or "").lower()
    if p in ("f32", "fp32", "float32", "highest", "float"):
        return "f32"
    if p in ("high", "bf16x3", "bf16_3x", "bf16x3_f32"):
        return "bf16x3"
    if p in ("f16", "fp16", "float16", "half"):
        return "f16"
    if p in ("bf16", "bfloat16"):
        return "bf16"
    if p == "tf32":
        return "tf32"
    return ""


def size_of(name):
    for prefix, (size, why) in SIZES.items():
        if name.startswith(prefix):
            return size, why
    return REDUCED, "reduced from 224: the classifier ends in a global (adaptive) pool"


class Recurrent:
    """Builds an LSTM/GRU model returning the output sequence (the hidden states are dropped)."""

    def __init__(self, torch, cell, bidirectional):
        self.torch, self.cell, self.bidirectional = torch, cell, bidirectional

    def __call__(self):
        torch = self.torch
        cell, bidirectional = self.cell, self.bidirectional

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(torch.nn, cell)(32, 48, num_layers=2, batch_first=True,
                                                   bidirectional=bidirectional)

            def forward(self, x):
                return self.rnn(x)[0]

        return Model()


def transformer_encoder(torch):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                     dropout=0.0, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(16))

        def forward(self, x):
            return self.encoder(x, mask=self.mask)

    return Model()


def torchvision_names(torchvision):
    models = torchvision.models
    if hasattr(models, "list_models"):
        return list(models.list_models(module=models))
    return sorted(n for n, f in vars(models).items()
                  if callable(f) and n[0].islower() and not n.startswith("get_")
                  and "weights" in getattr(f, "__code__", type("", (), {"co_varnames": ()})).co_varnames)


def parameter_count(torchvision, name):
    """Parameters from the weights' metadata (no model built), for ordering smallest first."""
    try:
        weights = torchvision.models.get_model_weights(name)
        return min(w.meta.get("num_params", 0) for w in weights) or float("inf")
    except Exception:  # noqa: BLE001 - versions without weight metadata: order by name
        return float("inf")


def model_table(torch, torchvision):
    """name -> (builder, input shape without batch, note): the small non-vision models first, then
    torchvision's classifiers, smallest first."""
    table = {"transformer_encoder": (lambda: transformer_encoder(torch), (16, 64),
                                     "2 layers, d_model 64, 4 heads, causal attention mask, seq 16")}
    for cell in ("LSTM", "GRU"):
        for bidirectional in (False, True):
            name = f"{cell.lower()}_{'bidirectional' if bidirectional else 'unidirectional'}"
            table[name] = (Recurrent(torch, cell, bidirectional), (20, 32),
                           f"torch.nn.{cell}(32, 48, num_layers=2), seq 20")
    names = torchvision_names(torchvision)
    for name in sorted(names, key=lambda n: (parameter_count(torchvision, n), n)):
        size, why = size_of(name)
        builder = getattr(torchvision.models, name)
        table[name] = (lambda b=builder: b(weights=None), (3, size, size), f"{size} x {size}: {why}")
    return table


def reference(torch, model, x):
    with torch.no_grad():
        return model(x).numpy()


def calibrate_batch_norm(torch, model, shape, seed):
    """Sets BatchNorm running statistics to those of random inputs (cumulative average over 4
    batches of 4): with random weights and the initial statistics (mean 0, variance 1) activations
    shrink layer after layer (EfficientNet-B0's features end near 1e-13), and the output no longer
    depends on the input. Returns whether the model has BatchNorm layers."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return False
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    g = torch.Generator().manual_seed(seed + 2)
    # Auxiliary classifiers (GoogLeNet, Inception v3) run only in training and need full-size
    # inputs: detached while calibrating.
    aux = {n: getattr(model, n) for n in ("AuxLogits", "aux1", "aux2") if getattr(model, n, None)}
    for n in aux:
        setattr(model, n, None)
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(4, *shape, generator=g))
    model.eval()
    for n, m in aux.items():
        setattr(model, n, m)
    return True


def depends_on_input(y1, y2):
    return float(np.abs(y1 - y2).max()) > 1e-3 * float(np.abs(y1).max())


def non_vacuous(torch, model, x, seed):
    """PyTorch's output for x once the output depends on the input: BatchNorm statistics
    calibrated, then all-zero parameters (zero-initialized heads) perturbed, then all of them."""
    notes = []
    if calibrate_batch_norm(torch, model, tuple(x.shape[1:]), seed):
        notes.append("BatchNorm statistics calibrated on random inputs")
    x2 = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + 3))
    expected = reference(torch, model, x)
    for scope in ("all-zero", "all"):
        if depends_on_input(expected, reference(torch, model, x2)):
            break
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in model.parameters():
                if scope == "all" or not bool(p.any()):
                    p.add_(0.02 * torch.randn(p.shape, generator=g))
        expected = reference(torch, model, x)
        notes.append(f"output did not depend on the input: {scope} parameters perturbed by N(0, 0.02)")
    return expected, "; ".join(notes)


def bf16_error(torch, model, x, expected):
    """max|y_bf16 - y| / max|y| of the model run in bfloat16 in PyTorch (None where it cannot)."""
    try:
        with torch.no_grad():
            y = copy.deepcopy(model).to(torch.bfloat16)(x.to(torch.bfloat16)).float().numpy()
        return float(np.abs(y - expected).max()) / (float(np.abs(expected).max()) or 1.0)
    except Exception:  # noqa: BLE001 - ops without a CPU bf16 kernel: the fixed tolerance applies
        return None


def to_tf32(torch, t):
    """t rounded to TF32 (10 explicit mantissa bits, to nearest even), kept in float32."""
    i = t.detach().contiguous().view(torch.int32)
    i = (i + 0xFFF + ((i >> 13) & 1)) & ~0x1FFF
    return i.view(torch.float32)


def tf32_error(torch, model, x, expected):
    """max|y_tf32 - y| / max|y| with the operands of every convolution and linear layer rounded to
    TF32, as tensor cores round them (accumulation stays float32); None where it cannot run."""
    try:
        m = copy.deepcopy(model)
        layers = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose2d, torch.nn.Linear)
        with torch.no_grad():
            for layer in m.modules():
                if isinstance(layer, layers):
                    layer.weight.copy_(to_tf32(torch, layer.weight))
                    layer.register_forward_pre_hook(lambda _, args: tuple(
                        to_tf32(torch, a) if torch.is_tensor(a) and a.dtype == torch.float32 else a for a in args))
            y = m(x).numpy()
        return float(np.abs(y - expected).max()) / (float(np.abs(expected).max()) or 1.0)
    except Exception:  # noqa: BLE001 - the fixed tolerance applies
        return None


def f16_error(torch, model, x, expected):
    """max|y_f16 - y| / max|y| with every parameter and every leaf layer's output rounded to float16
    (float16 storage, as on an IPU in float16; PyTorch's CPU has no float16 convolution)."""
    try:
        m = copy.deepcopy(model)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(p.half().float())
            for layer in m.modules():
                if not list(layer.children()):
                    layer.register_forward_hook(lambda _, __, out: out.half().float()
                                                if torch.is_tensor(out) and out.is_floating_point() else out)
            y = m(x.half().float()).numpy()
        return float(np.abs(y - expected).max()) / (float(np.abs(expected).max()) or 1.0)
    except Exception:  # noqa: BLE001 - the fixed tolerance applies
        return None


def f64_error(torch, model, x, expected):
    """max|y_f32 - y_f64| / max|y_f64|: how far PyTorch's own f32 output is from the model's exact
    value (deep networks amplify f32 rounding: ResNet-152 at 64 x 64 is 5.7e-4 off)."""
    try:
        with torch.no_grad():
            y = copy.deepcopy(model).double()(x.double()).numpy()
        return float(np.abs(expected - y).max()) / (float(np.abs(y).max()) or 1.0)
    except Exception:  # noqa: BLE001 - ops without a double kernel: the fixed tolerance applies
        return None


def prepare(torch, spec):
    """(model, input, PyTorch's output, notes) of a model_table entry: built with seed 0 in eval
    mode, a random batch-1 input, made non-vacuous (non_vacuous)."""
    make, shape, _ = spec
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(1, *shape)
    expected, note = non_vacuous(torch, model, x, 0)
    return model, x, expected, note


def export_onnx(torch, model, x, path, opset):
    """Exports model(x) to path with one input `input` and one output `output`."""
    # Exported with gradients enabled: PyTorch's fused inference path for transformer layers
    # (aten::_transformer_encoder_layer_fwd) has no ONNX export and is only taken without them.
    # PyTorch 2.9 and later export through torch.export by default; the TorchScript exporter
    # (dynamo=False) is the one whose opset choice and ops this check was written against.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], **legacy)


def export(torch, name, spec, opset, folder):
    model, x, expected, note = prepare(torch, spec)
    bf16 = bf16_error(torch, model, x, expected)
    f64 = f64_error(torch, model, x, expected)
    tf32 = tf32_error(torch, model, x, expected)
    f16 = f16_error(torch, model, x, expected)
    path = os.path.join(folder, f"{name}_op{opset}.onnx")
    export_onnx(torch, model, x, path, opset)
    np.save(os.path.join(folder, f"{name}_input.npy"), x.numpy())
    if bf16 is not None:
        note = "; ".join(filter(None, [note, f"PyTorch in bfloat16 is off by {bf16:.2e}"]))
    if f64 is not None and f64 > 1e-5:
        note = "; ".join(filter(None, [note, f"PyTorch in float32 is off its float64 run by {f64:.2e}"]))
    if tf32 is not None:
        note = "; ".join(filter(None, [note, f"with TF32 operands {tf32:.2e}"]))
    if f16 is not None:
        note = "; ".join(filter(None, [note, f"with float16 storage {f16:.2e}"]))
    return path, (expected, bf16, f64, tf32, f16), note


def device_status(mimic):
    """name -> "" when available, else the reason `mimic devices` gives."""
    out = subprocess.run([mimic, "devices", "--json"], check=True, capture_output=True, text=True).stdout
    return {d["name"]: "" if d["available"] else d.get("reason", "unavailable") for d in json.loads(out)}


def error_line(stderr):
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    for l in lines:
        if "error" in l:
            return l.strip()
    return lines[-1].strip() if lines else "(no message)"


def tolerance(basis, bf16, f64, tf32, f16):
    rtol, atol = TOLERANCES[basis]
    if f64 is not None:
        atol = max(atol, 4 * f64)
    if tf32 is not None and basis == "tf32":
        atol = max(atol, 2 * tf32)
    if bf16 is not None and basis == "bf16":
        atol = max(atol, 2 * bf16)
    if bf16 is not None and basis == "f16":
        atol = max(atol, bf16 / 4)
    if f16 is not None and basis == "f16":
        atol = max(atol, 2 * f16)
    return rtol, atol


def run_mimic(a, cmd):
    """(completed process or None on timeout, seconds). When ipu-emu says a model's weights need
    more IPUs, runs it again sharded over 2, 4, ... IPUs (pipelined), as an IPU user would; the
    process's `ipus` attribute says how many it took."""
    start = time.monotonic()
    ipus = 1
    while True:
        try:
            r = subprocess.run(cmd + (["--option", f"num_ipus={ipus}"] if ipus > 1 else []),
                               capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - start
        r.ipus = ipus
        if r.returncode == 0 or "shard the model over more IPUs" not in r.stderr or ipus >= MAX_IPUS:
            return r, time.monotonic() - start
        ipus *= 2


def check(a, name, model_path, reference, folder, device, precision):
    """One row: dict with status, error, fallback, seconds, detail (and ipus when more than one)."""
    expected, bf16, f64, tf32, f16 = reference
    out_dir = os.path.join(folder, f"{os.path.basename(model_path)[:-5]}_{device.replace(':', '_')}_{precision}")
    cmd = [a.mimic, "run", "--onnx", model_path, "--device", device, "--precision", precision,
           "--input", "input=" + os.path.join(folder, name + "_input.npy"), "--output-dir", out_dir,
           "--no-compare", "--json"]
    r, seconds = run_mimic(a, cmd)
    if r is None:
        return {"status": "timeout", "seconds": seconds,
                "detail": f"mimic run did not finish in {a.timeout} s"}
    row = {"seconds": seconds}
    if r.ipus > 1:
        row["ipus"] = r.ipus
    if r.returncode != 0:
        msg = error_line(r.stderr)
        row.update(status="import" if "no IR equivalent" in msg else "error", detail=msg)
        return row
    report = json.loads(r.stdout)["report"]
    row["fallback"] = sorted({op["op_type"] for op in report["ops"] if op["fallback"]})
    got = np.load(os.path.join(out_dir, "output.npy"))
    if got.shape != expected.shape:
        row.update(status="FAIL", detail=f"output shape {got.shape}, PyTorch {expected.shape}")
        return row
    basis = precision_class(report.get("precision")) or precision_class(precision) or "f32"
    rtol, atol = tolerance(basis, bf16, f64, tf32, f16)
    scale = float(np.abs(expected).max()) or 1.0
    diff = np.abs(got.astype(np.float64) - expected)
    row["error"] = float(diff.max()) / scale
    ok = bool(np.all(diff <= atol * scale + rtol * np.abs(expected)))
    row["status"] = "pass" if ok else "FAIL"
    if not ok:
        worst = int(diff.argmax())
        row["detail"] = (f"{basis} tolerance (rtol {rtol:g}, atol {atol:g} x {scale:.3g}): element "
                         f"{worst} is {got.flat[worst]:.6g}, PyTorch {expected.flat[worst]:.6g}")
    return row


def label(device, precision):
    return device if device == "cpu" else f"{device} {precision}"


ROW = re.compile(r"^\| (\S+) \| (\d+) \| (.+?) \| (\S+) \| (\S+) \| (.+?) \| ([\d.]+) s \|$")
DETAIL = re.compile(r"^- (\S+) opset (\d+) on (.+?): (\S+): (.*)$")
NOTE = re.compile(r"^- (\S+): (.*)$")


def base_device(device):
    """A row's device without the IPU count of a sharded run: the key rows are merged on."""
    return device.split(", num_ipus=")[0]


def read_markdown(path):
    """The rows, model notes and hand-written notes section of a table this script wrote."""
    rows, details, notes, kept, section = {}, {}, {}, [], None
    if not os.path.exists(path):
        return rows, notes, kept
    for line in open(path).read().splitlines():
        if line.startswith("## "):
            section = line
        if section == KEPT_SECTION:
            kept.append(line)
            continue
        m = ROW.match(line)
        if m:
            model, opset, device, status, err, fb, sec = m.groups()
            row = {"model": model, "opset": int(opset), "device": device, "status": status,
                   "seconds": float(sec)}
            if err != "-":
                row["error"] = float(err)
            if fb != "-":
                row["fallback"] = fb.split(", ")
            rows[(model, int(opset), base_device(device))] = row
        elif (m := DETAIL.match(line)) and section == "## Not passing":
            details[(m.group(1), int(m.group(2)), base_device(m.group(3)))] = m.group(5)
        elif (m := NOTE.match(line)) and section == "## Models and input sizes":
            notes[m.group(1)] = m.group(2)
    for key, detail in details.items():
        if key in rows:
            rows[key]["detail"] = detail
    return rows, notes, kept


def write_markdown(path, a, specs, notes, rows, finished, unavailable):
    """Writes the table; with --update, `rows` replace their model/opset/device in the file's table
    and every other row of it is kept (the notes section too), so that runs of a few models keep
    one complete table."""
    merged, sizes, kept = read_markdown(path) if a.update else ({}, {}, [])
    for name in specs:
        extra = f"; {notes[name]}" if notes.get(name) else ""
        sizes[name] = f"{specs[name][2]}{extra}"
    for r in rows:
        merged[(r["model"], r["opset"], base_device(r["device"]))] = r
    order = {n: i for i, n in enumerate(a.all_models)}
    devices = [label(d, p) for d, p in CONFIGS]
    table = sorted(merged.values(), key=lambda r: (
        order.get(r["model"], len(order)), r["opset"],
        devices.index(base_device(r["device"])) if base_device(r["device"]) in devices else -1))
    what = ("rows merged from runs of this script (--update); the last: "
            if a.update else "")
    lines = ["# PyTorch models exported to ONNX, checked on every device", "",
             f"{what}`{' '.join(['scripts/onnx_export_check.py'] + a.argv)}` on {platform.node()} "
             f"({os.cpu_count()} cores), {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
             f"{'complete' if finished else f'partial: {len(rows)} checks so far'}; "
             f"PyTorch {a.torch_version}.",
             "", "Error: max|mimic - PyTorch| / max|PyTorch|; tolerances by precision class in the "
             "script's docstring. Status `import`: mimic's ONNX importer has no IR op for a node; "
             "`export`: torch.onnx.export failed. A device ending in `num_ipus=N`: the model's "
             "weights do not fit one IPU, and it ran sharded over N.", ""]
    lines += [f"Not checked: {d} is unavailable here ({why})." for d, why in unavailable.items()]
    passed = sum(r["status"] == "pass" for r in table)
    lines += ["", f"{passed} of {len(table)} checks pass, {len({r['model'] for r in table})} "
              "models.", "",
              "| model | opset | device | status | max error | fallback ops | wall time |",
              "|---|---|---|---|---|---|---|"]
    for r in table:
        err = f"{r['error']:.2e}" if "error" in r else "-"
        fb = ", ".join(r.get("fallback", [])) or "-"
        lines.append(f"| {r['model']} | {r['opset']} | {r['device']} | {r['status']} | {err} | {fb} | "
                     f"{r['seconds']:.1f} s |")
    failures = [r for r in table if r["status"] != "pass"]
    lines += ["", "## Not passing", ""]
    lines += [f"- {r['model']} opset {r['opset']} on {r['device']}: {r['status']}: {r.get('detail', '')}"
              for r in failures] or ["(none)"]
    lines += ["", "## Models and input sizes", ""]
    lines += [f"- {name}: {sizes[name]}" for name in sorted(sizes, key=lambda n: order.get(n, 0))]
    lines += [""] + kept if kept else []
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def parse_args(root):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mimic", default=os.path.join(root, "build", "bin", "mimic"))
    p.add_argument("--models", help="comma-separated model names (default: all; see --list)")
    p.add_argument("--devices", help="comma-separated devices to keep (e.g. cpu,tpu-emu:v4)")
    p.add_argument("--opsets", default=",".join(map(str, OPSETS)))
    p.add_argument("--quick", action="store_true",
                   help=f"models {', '.join(QUICK_MODELS)} at opset {QUICK_OPSETS[0]} (CTest)")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per mimic run")
    p.add_argument("--markdown", help="table to write (default: benchmarks/results/models.md, "
                                      "none with --quick; '' for none)")
    p.add_argument("--keep", help="folder to keep the exported models and outputs in")
    p.add_argument("--update", action="store_true",
                   help="merge into the --markdown file: this run's rows replace theirs, the "
                        "others stay")
    p.add_argument("--list", action="store_true", help="list the models and exit")
    a = p.parse_args()
    a.argv = sys.argv[1:]
    if a.markdown is None:
        a.markdown = "" if a.quick else os.path.join(root, "benchmarks", "results", "models.md")
    return a


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    a = parse_args(root)
    try:
        import torch
        import torchvision
    except Exception as e:  # noqa: BLE001 - any import failure means: cannot check here
        print(f"SKIP: torch/torchvision not importable ({type(e).__name__}: {e}); install "
              "python3-torch and python3-torchvision")
        return SKIP
    a.torch_version = f"{torch.__version__}, torchvision {torchvision.__version__}"
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // 2))
    warnings.simplefilter("ignore")  # torch.onnx.export's shape-inference and LSTM batch warnings
    specs = model_table(torch, torchvision)
    if a.list:
        for name, spec in specs.items():
            print(f"{name:<24} {spec[2]}")
        return 0
    a.all_models = list(specs)
    names = list(QUICK_MODELS) if a.quick and not a.models else (a.models.split(",") if a.models else list(specs))
    unknown = [n for n in names if n not in specs]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)} (see --list)")
        return 2
    opsets = QUICK_OPSETS if a.quick else tuple(int(o) for o in a.opsets.split(","))
    status = device_status(a.mimic)
    configs = [(d, p) for d, p in CONFIGS if status.get(d) == ""]
    unavailable = {d: status.get(d, "not in this build") for d, _ in CONFIGS if status.get(d) != ""}
    if a.devices:
        keep = a.devices.split(",")
        configs = [(d, p) for d, p in configs if d in keep or label(d, p) in keep]
        unavailable = {d: why for d, why in unavailable.items() if d in keep}
    folder = a.keep or tempfile.mkdtemp(prefix="mimic_onnx_export_")
    os.makedirs(folder, exist_ok=True)
    rows, notes = [], {}
    for name in names:
        for opset in opsets:
            try:
                model_path, expected, notes[name] = export(torch, name, specs[name], opset, folder)
            except Exception as e:  # noqa: BLE001 - an export failure is a row, not a crash
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                rows.append({"model": name, "opset": opset, "device": "-", "status": "export",
                             "seconds": 0.0, "detail": msg[:300]})
                print(f"export  {name:<24} opset {opset}: {msg[:200]}", flush=True)
                continue
            import_error = None
            for device, precision in configs:
                row = ({"status": "import", "seconds": 0.0, "detail": import_error} if import_error
                       else check(a, name, model_path, expected, folder, device, precision))
                if row["status"] == "import":
                    import_error = row["detail"]
                sharded = f", num_ipus={row['ipus']}" if "ipus" in row else ""
                row.update(model=name, opset=opset, device=label(device, precision) + sharded)
                rows.append(row)
                err = f"{row['error']:.2e}" if "error" in row else "-"
                print(f"{row['status']:<7} {name:<24} opset {opset} {row['device']:<24} error {err:<9} "
                      f"fallback {','.join(row.get('fallback', [])) or '-':<12} {row['seconds']:.1f} s"
                      + (f"  {row['detail']}" if row["status"] != "pass" else ""), flush=True)
                if a.markdown:
                    write_markdown(a.markdown, a, {n: specs[n] for n in names}, notes, rows, False, unavailable)
    if a.markdown:
        write_markdown(a.markdown, a, {n: specs[n] for n in names}, notes, rows, True, unavailable)
    failed = [r for r in rows if r["status"] != "pass"]
    print(f"{len(rows) - len(failed)} of {len(rows)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
