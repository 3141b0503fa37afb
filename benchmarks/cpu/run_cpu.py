#!/usr/bin/env python3
"""mimic's cpu backend against PyTorch CPU: every zoo model at batch 1 and 8, NCHW and NHWC (CNNs),
on 2 threads and on 1, in one invocation. Writes benchmarks/results/cpu.{json,md}.

  python3 benchmarks/cpu/run_cpu.py                       # everything (about 20 minutes on 2 cores)
  python3 benchmarks/cpu/run_cpu.py --models resnet50 --batches 8 --threads 2 --reference
  python3 benchmarks/cpu/run_cpu.py --torchvision all     # and torchvision's 80 (1 to 1.5 hours more)
  python3 benchmarks/cpu/run_cpu.py --no-zoo --torchvision squeezenet1_0,resnet18 --out /tmp/cpu

Each row is host wall time of one forward pass. The sides run interleaved: `--rounds` times, mimic
(`mimic run --json` in a subprocess, OMP_NUM_THREADS set) then PyTorch (in this process,
torch.set_num_threads), each timing `--runs` passes after a warm-up pass; a side's figure is the
median over its rounds' medians, so load from other work on a shared machine hits both sides alike.
NHWC rows run PyTorch in channels_last memory format. --reference adds mimic's reference kernels
(--option kernels=reference) as a third side.

--torchvision all (or NAME,NAME) adds torchvision's classification models in a second table, the
models scripts/onnx_export_check.py checks, built as it builds them (random seeded weights in eval
mode, BatchNorm statistics calibrated on random inputs) at batch 1 and its reduced input size per
model (`scripts/onnx_export_check.py --list`). Each is exported once to ONNX (opset 17, in a
temporary folder) and timed as `mimic run --onnx M --input input=x.npy` against the same PyTorch
module on the same input, at each --threads, with the same rounds and medians as the zoo rows (no
reference-kernel side). A model that fails to export or to run on mimic is a row with the error's
line. All 80 take 1 to 1.5 hours on 2 cores, most of it in exporting them and in each `mimic run`
loading its file again (22 GB of ONNX in all, 2.5 GB for vit_h_14 and regnet_y_128gf each); the
zoo rows' 20 minutes come first unless --no-zoo.

Both sides use GNU OpenMP. By default the script sets OMP_WAIT_POLICY=passive for both (it re-runs
itself so that PyTorch's OpenMP reads it): on a shared host an idle worker that spins waiting for
the next parallel region takes the core from the thread doing the serial work, and 2-thread runs of
either side then measure the machine's load more than the code. --wait-policy default keeps the
environment as it is.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.append(os.path.join(ROOT, "scripts"))
import machine  # noqa: E402
import onnx_export_check as export_check  # noqa: E402
import torch_models  # noqa: E402

CNNS = ("resnet18", "resnet50", "mobilenet_v2")
OPSET = 17  # of the torchvision models' ONNX export


class MimicFailed(RuntimeError):
    """`mimic run` exited non-zero; `line` is its error's line."""

    def __init__(self, cmd, line):
        super().__init__(f"{' '.join(cmd)}: {line}")
        self.line = line


def mimic_median(build, source, threads, runs, kernels="onednn"):
    """Median wall time of `mimic run` on the cpu backend; source: the flags that name the model."""
    cmd = [os.path.join(build, "bin", "mimic"), "run", *source, "--device", "cpu", "--repeat", str(runs),
           "--warmup", "1", "--json", "--no-compare", "--option", f"kernels={kernels}"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise MimicFailed(cmd, export_check.error_line(p.stderr))
    return json.loads(p.stdout)["wall_seconds"]["median"]


def zoo_source(model, layout, batch):
    return ["--model", model, "--batch", str(batch)] + (["--layout", layout] if model in CNNS else [])


class TorchSide:
    """One PyTorch model per (model, layout), built once; times passes at a batch and thread count."""

    def __init__(self):
        import torch
        self.torch = torch
        self.cache = {}
        try:
            self.openblas = ctypes.CDLL("libblas.so.3")
            self.openblas.openblas_set_num_threads  # noqa: B018 (present only in OpenBLAS)
        except (OSError, AttributeError):
            self.openblas = None

    def median(self, model, layout, batch, threads, runs):
        torch = self.torch
        key = (model, layout)
        if key not in self.cache:
            module, shape, dtype = torch_models.build(model)
            module.eval()
            if layout == "nhwc":
                module = module.to(memory_format=torch.channels_last)
            self.cache[key] = (module, shape, dtype)
        module, shape, dtype = self.cache[key]
        x = torch_models.example_input(shape, dtype, batch)
        if layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
        return self.time(module, x, threads, runs)

    def time(self, module, x, threads, runs):
        """Median of `runs` passes of module(x) after a warm-up pass, on `threads` threads."""
        torch = self.torch
        torch.set_num_threads(threads)
        if self.openblas:  # Debian's torch calls BLAS through libblas.so.3, which keeps its own threads
            self.openblas.openblas_set_num_threads(threads)
        times = []
        with torch.no_grad():
            module(x)
            for _ in range(runs):
                t = time.perf_counter()
                module(x)
                times.append(time.perf_counter() - t)
        return statistics.median(times)


def configs(args):
    for model in ([] if args.no_zoo else args.models):
        for batch in args.batches:
            for layout in (args.layouts if model in CNNS else ["nchw"]):
                yield model, batch, layout


def summarize(row, sides):
    """row with each side's median over its rounds (ms), the rounds, and mimic / PyTorch."""
    for side, values in sides.items():
        if values:
            row[side + "_ms"] = statistics.median(values) * 1e3
            row[side + "_rounds_ms"] = [v * 1e3 for v in values]
    row["ratio"] = row["mimic_ms"] / row["pytorch_ms"]
    return row


def measure(args, torch_side, model, batch, layout):
    """One row per thread count. Each round times every thread count back to back, so that the
    rows of one configuration see the same load and their ratio (thread_scaling) is fair."""
    sides = {t: {"mimic": [], "pytorch": [], "reference": []} for t in args.threads}
    source = zoo_source(model, layout, batch)
    for _ in range(args.rounds):
        for threads, s in sides.items():
            s["mimic"].append(mimic_median(args.build, source, threads, args.runs))
            s["pytorch"].append(torch_side.median(model, layout, batch, threads, args.runs))
            if args.reference:
                s["reference"].append(mimic_median(args.build, source, threads, args.runs, "reference"))
    row = {"model": model, "batch": batch, "layout": layout if model in CNNS else "-"}
    return [summarize(dict(row, threads=t), s) for t, s in sides.items()]


def torchvision_specs(torch, selection):
    """name -> (builder, input shape, note) of torchvision's classifiers as onnx_export_check lists
    them (smallest first); selection: "all" or comma-separated names."""
    import torchvision
    names = set(export_check.torchvision_names(torchvision))
    table = {n: s for n, s in export_check.model_table(torch, torchvision).items() if n in names}
    if selection == "all":
        return table
    unknown = [n for n in selection.split(",") if n not in table]
    if unknown:
        sys.exit(f"unknown torchvision model(s): {', '.join(unknown)} (see scripts/onnx_export_check.py --list)")
    return {n: table[n] for n in selection.split(",")}


def export_onnx(torch, spec, folder):
    """(module, input, mimic's flags for them): the model built as onnx_export_check builds it,
    exported to folder/model.onnx, its input saved to folder/input.npy."""
    module, x, _, _ = export_check.prepare(torch, spec)
    path, data = os.path.join(folder, "model.onnx"), os.path.join(folder, "input.npy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's shape-inference warnings
        export_check.export_onnx(torch, module, x, path, OPSET)
    numpy.save(data, x.numpy())
    return module, x, ["--onnx", path, "--input", "input=" + data]


def measure_torchvision(args, torch_side, name, spec):
    """One row per thread count of a torchvision model, exported once; a model that fails to
    export or to run on mimic gives rows with the error's line instead of times."""
    rows = [{"model": name, "size": spec[1][-1], "threads": t} for t in args.threads]
    with tempfile.TemporaryDirectory(prefix=f"mimic_cpu_{name}_") as folder:
        try:
            module, x, source = export_onnx(torch_side.torch, spec, folder)
        except Exception as e:  # noqa: BLE001 - an export failure is a row, not a crash
            line = (str(e).strip().splitlines() or [type(e).__name__])[0]
            return [dict(r, error=f"export: {line}") for r in rows]
        return measure_onnx(args, torch_side, module, x, source, rows)


def measure_onnx(args, torch_side, module, x, source, rows):
    """rows (one per thread count) timed as the zoo rows are: each round every thread count."""
    sides = [{"mimic": [], "pytorch": []} for _ in rows]
    for _ in range(args.rounds):
        for row, s in zip(rows, sides):
            try:
                s["mimic"].append(mimic_median(args.build, source, row["threads"], args.runs))
            except MimicFailed as e:
                return [dict(r, error=e.line) for r in rows]
            s["pytorch"].append(torch_side.time(module, x, row["threads"], args.runs))
    return [summarize(row, s) for row, s in zip(rows, sides)]


def fmt_ms(v):
    return f"{v:,.1f} ms" if v >= 1 else f"{v * 1e3:,.0f} us"


def zoo_table(rows, reference):
    head = "| model | batch | layout | threads | mimic cpu | PyTorch | mimic / PyTorch |"
    rule = "|---|---:|---|---:|---:|---:|---:|"
    if reference:
        head += " mimic reference kernels | reference / oneDNN path |"
        rule += "---:|---:|"
    lines = [f"At or below 1.0x PyTorch: {sum(r['ratio'] <= 1.0 for r in rows)} of {len(rows)} rows.", "", head, rule]
    for r in rows:
        line = (f"| {r['model']} | {r['batch']} | {r['layout']} | {r['threads']} | {fmt_ms(r['mimic_ms'])} | "
                f"{fmt_ms(r['pytorch_ms'])} | {r['ratio']:.2f}x |")
        if reference:
            line += f" {fmt_ms(r['reference_ms'])} | {r['reference_ms'] / r['mimic_ms']:.2f}x |"
        lines.append(line)
    return lines


def paired_ratio(many, one, side):
    """Median over rounds of many's time / one's time on one side: rows timed in the same round
    share that round's load, so the paired ratio cancels most of it."""
    return statistics.median(a / b for a, b in zip(many[side + "_rounds_ms"], one[side + "_rounds_ms"]))


def scaling_table(rows, keys):
    """Each configuration's most threads against 1 thread, mimic and PyTorch, from the same rounds;
    keys: the columns that name a configuration."""
    groups = {}
    for r in rows:
        if "error" not in r:
            groups.setdefault(tuple(r[k] for k in keys), {})[r["threads"]] = r
    pairs = [(key, by[max(by)], by[1]) for key, by in groups.items() if 1 in by and max(by) > 1]
    if not pairs:
        return []
    ratios = [paired_ratio(many, one, "mimic") for _, many, one in pairs]
    n = pairs[0][1]["threads"]
    lines = [f"Thread scaling: mimic on {n} threads at or below its time on 1 thread in "
             f"{sum(x <= 1.0 for x in ratios)} of {len(pairs)} configurations (the median over rounds of the "
             "two times measured in the same round).", "",
             "| " + " | ".join(keys) + f" | mimic 1 thread | mimic {n} threads | mimic {n} / 1 | PyTorch {n} / 1 |",
             "|---" * len(keys) + "|---:|---:|---:|---:|"]
    for (key, many, one), ratio in zip(pairs, ratios):
        lines.append("| " + " | ".join(str(k) for k in key) + f" | {fmt_ms(one['mimic_ms'])} | "
                     f"{fmt_ms(many['mimic_ms'])} | {ratio:.2f}x | {paired_ratio(many, one, 'pytorch'):.2f}x |")
    return lines


def torchvision_table(rows, meta):
    timed = [r for r in rows if "error" not in r]
    failed = f"; {len(rows) - len(timed)} rows did not run (the error in the row)" if len(timed) < len(rows) else ""
    lines = ["## torchvision models (ONNX export, batch 1)", "",
             f"torchvision {meta['torchvision']}'s classification models as `scripts/onnx_export_check.py` builds "
             "them (random seeded weights, BatchNorm statistics calibrated on random inputs; input size per model, "
             f"reduced where the model allows), exported once to ONNX (opset {OPSET}); mimic runs the file "
             "(`mimic run --onnx M --input input=x.npy`), PyTorch the same module on the same input, in rounds as "
             "above.", "",
             f"At or below 1.0x PyTorch: {sum(r['ratio'] <= 1.0 for r in timed)} of {len(timed)} rows{failed}.", "",
             "| model | input | threads | mimic cpu | PyTorch | mimic / PyTorch |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        times = (r["error"].replace("|", "\\|") + " | - | -" if "error" in r else
                 f"{fmt_ms(r['mimic_ms'])} | {fmt_ms(r['pytorch_ms'])} | {r['ratio']:.2f}x")
        lines.append(f"| {r['model']} | {r['size']} x {r['size']} | {r['threads']} | {times} |")
    return lines


def markdown(rows, meta, reference, torchvision_rows):
    lines = ["# cpu backend vs PyTorch CPU", "", "Written by `python3 benchmarks/cpu/run_cpu.py`.", "",
             machine.markdown(meta["machine"]) + (f" Load average at the end {meta['load_average_end']}."
                                                  if "load_average_end" in meta else ""), "",
             f"PyTorch {meta['torch']} (Debian python3-torch; convolutions through its bundled oneDNN, matrix "
             f"products through {meta['blas']}, its thread count set to the row's); OMP_WAIT_POLICY={meta['omp_wait_policy']} for both sides. Host wall time of one forward pass; each side's "
             f"figure is the median of {meta['rounds']} interleaved rounds of {meta['runs']} passes "
             "(mimic: `mimic run --json`, OMP_NUM_THREADS; PyTorch: torch.set_num_threads, channels_last for NHWC). "
             "Absolute times carry the load of whatever else ran on the machine (the load averages above); the "
             "ratios less so, because both sides ran back to back.", ""]
    if reference:
        lines += ["The reference-kernel rows time `--option kernels=reference`, the path before oneDNN: its "
                  "kernels open many short OpenMP regions, and with passive waiting under load each one wakes its "
                  "workers through the kernel, which dominates its 2-thread rows.", ""]
    if rows:
        lines += zoo_table(rows, reference) + [""] + scaling_table(rows, ["model", "batch", "layout"]) + [""]
    if torchvision_rows:
        lines += torchvision_table(torchvision_rows, meta) + [""]
        lines += scaling_table(torchvision_rows, ["model", "size"]) + [""]
    return "\n".join(lines)


def write(out, saved):
    """OUT.md from the saved results: {"meta", "rows", "torchvision"}."""
    reference = any("reference_ms" in r for r in saved["rows"])
    with open(out + ".md", "w") as f:
        f.write(markdown(saved["rows"], saved["meta"], reference, saved.get("torchvision", [])))


def progress(label, r):
    print(f"{label}: " + (r["error"] if "error" in r else f"mimic {fmt_ms(r['mimic_ms'])}  "
                          f"pytorch {fmt_ms(r['pytorch_ms'])}  {r['ratio']:.2f}x"), flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="+", default=["mlp", "resnet18", "resnet50", "mobilenet_v2", "bert"])
    ap.add_argument("--no-zoo", action="store_true", help="leave out the zoo models (e.g. with --torchvision)")
    ap.add_argument("--torchvision", metavar="all|NAME,NAME", help="also torchvision's classifiers through ONNX")
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--layouts", nargs="+", default=["nchw", "nhwc"])
    ap.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also time mimic's reference kernels (zoo rows)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "cpu"),
                    help="OUT.json and OUT.md are written")
    ap.add_argument("--wait-policy", default="passive", choices=["passive", "active", "default"])
    ap.add_argument("--render", action="store_true", help="only rewrite OUT.md from OUT.json")
    return ap.parse_args()


def main():
    args = parse_args()
    if args.render:
        with open(args.out + ".json") as f:
            write(args.out, json.load(f))
        return
    if args.wait_policy != "default" and os.environ.get("OMP_WAIT_POLICY") != args.wait_policy:
        env = dict(os.environ, OMP_WAIT_POLICY=args.wait_policy)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    torch_side = TorchSide()
    specs = torchvision_specs(torch_side.torch, args.torchvision) if args.torchvision else {}
    meta = {"machine": machine.describe(args.build), "torch": torch_side.torch.__version__, "runs": args.runs,
            "rounds": args.rounds, "shared_machine": True, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")}
    if specs:
        import torchvision
        meta["torchvision"] = torchvision.__version__
    saved = {"meta": meta, "rows": [], "torchvision": []}
    for model, batch, layout in configs(args):
        for r in measure(args, torch_side, model, batch, layout):
            saved["rows"].append(r)
            progress(f"{model:13s} b{batch} {layout} t{r['threads']}", r)
    for name, spec in specs.items():
        for r in measure_torchvision(args, torch_side, name, spec):
            saved["torchvision"].append(r)
            progress(f"{name:20s} {r['size']}x{r['size']} t{r['threads']}", r)
    meta["load_average_end"] = machine.describe(args.build)["load_average"]
    with open(args.out + ".json", "w") as f:
        json.dump(saved, f, indent=1)
    write(args.out, saved)


if __name__ == "__main__":
    main()
