#!/usr/bin/env python3
"""mimic's cpu backend against PyTorch CPU: every zoo model at batch 1 and 8, NCHW and NHWC (CNNs),
on 2 threads and on 1, in one invocation. Writes benchmarks/results/cpu.{json,md}.

  python3 benchmarks/cpu/run_cpu.py                       # everything (about 20 minutes on 2 cores)
  python3 benchmarks/cpu/run_cpu.py --models resnet50 --batches 8 --threads 2 --reference

Each row is host wall time of one forward pass. The sides run interleaved: `--rounds` times, mimic
(`mimic run --json` in a subprocess, OMP_NUM_THREADS set) then PyTorch (in this process,
torch.set_num_threads), each timing `--runs` passes after a warm-up pass; a side's figure is the
median over its rounds' medians, so load from other work on a shared machine hits both sides alike.
NHWC rows run PyTorch in channels_last memory format. --reference adds mimic's reference kernels
(--option kernels=reference) as a third side.

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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import machine  # noqa: E402
import torch_models  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
CNNS = ("resnet18", "resnet50", "mobilenet_v2")


def mimic_median(build, model, layout, batch, threads, runs, kernels):
    cmd = [os.path.join(build, "bin", "mimic"), "run", "--model", model, "--batch", str(batch), "--device", "cpu",
           "--repeat", str(runs), "--warmup", "1", "--json", "--no-compare", "--option", f"kernels={kernels}"]
    if model in CNNS:
        cmd += ["--layout", layout]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout)["wall_seconds"]["median"]


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
        torch.set_num_threads(threads)
        if self.openblas:  # Debian's torch calls BLAS through libblas.so.3, which keeps its own threads
            self.openblas.openblas_set_num_threads(threads)
        x = torch_models.example_input(shape, dtype, batch)
        if layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
        times = []
        with torch.no_grad():
            module(x)
            for _ in range(runs):
                t = time.perf_counter()
                module(x)
                times.append(time.perf_counter() - t)
        return statistics.median(times)


def configs(args):
    for model in args.models:
        for batch in args.batches:
            for layout in (args.layouts if model in CNNS else ["nchw"]):
                for threads in args.threads:
                    yield model, batch, layout, threads


def measure(args, torch_side, model, batch, layout, threads):
    sides = {"mimic": [], "pytorch": [], "reference": []}
    for _ in range(args.rounds):
        sides["mimic"].append(mimic_median(args.build, model, layout, batch, threads, args.runs, "onednn"))
        sides["pytorch"].append(torch_side.median(model, layout, batch, threads, args.runs))
        if args.reference:
            sides["reference"].append(mimic_median(args.build, model, layout, batch, threads, args.runs, "reference"))
    row = {"model": model, "batch": batch, "layout": layout if model in CNNS else "-", "threads": threads}
    for side, values in sides.items():
        if values:
            row[side + "_ms"] = statistics.median(values) * 1e3
            row[side + "_rounds_ms"] = [v * 1e3 for v in values]
    row["ratio"] = row["mimic_ms"] / row["pytorch_ms"]
    return row


def fmt_ms(v):
    return f"{v:,.1f} ms" if v >= 1 else f"{v * 1e3:,.0f} us"


def markdown(rows, meta, reference):
    head = "| model | batch | layout | threads | mimic cpu | PyTorch | mimic / PyTorch |"
    rule = "|---|---:|---|---:|---:|---:|---:|"
    if reference:
        head += " mimic reference kernels | reference / oneDNN path |"
        rule += "---:|---:|"
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
    lines += [f"At or below 1.0x PyTorch: {sum(r['ratio'] <= 1.0 for r in rows)} of {len(rows)} rows.", "", head, rule]
    for r in rows:
        line = (f"| {r['model']} | {r['batch']} | {r['layout']} | {r['threads']} | {fmt_ms(r['mimic_ms'])} | "
                f"{fmt_ms(r['pytorch_ms'])} | {r['ratio']:.2f}x |")
        if reference:
            line += f" {fmt_ms(r['reference_ms'])} | {r['reference_ms'] / r['mimic_ms']:.2f}x |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", nargs="+", default=["mlp", "resnet18", "resnet50", "mobilenet_v2", "bert"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    ap.add_argument("--layouts", nargs="+", default=["nchw", "nhwc"])
    ap.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also time mimic's reference kernels")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "cpu"))
    ap.add_argument("--wait-policy", default="passive", choices=["passive", "active", "default"])
    ap.add_argument("--render", action="store_true", help="only rewrite OUT.md from OUT.json")
    args = ap.parse_args()
    if args.render:
        with open(args.out + ".json") as f:
            saved = json.load(f)
        with open(args.out + ".md", "w") as f:
            f.write(markdown(saved["rows"], saved["meta"], "reference_ms" in saved["rows"][0]))
        return
    if args.wait_policy != "default" and os.environ.get("OMP_WAIT_POLICY") != args.wait_policy:
        env = dict(os.environ, OMP_WAIT_POLICY=args.wait_policy)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    torch_side = TorchSide()
    meta = {"machine": machine.describe(args.build), "torch": torch_side.torch.__version__, "runs": args.runs,
            "rounds": args.rounds, "shared_machine": True, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "blas": os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")}
    rows = []
    for model, batch, layout, threads in configs(args):
        rows.append(measure(args, torch_side, model, batch, layout, threads))
        r = rows[-1]
        print(f"{model:13s} b{batch} {layout} t{threads}: mimic {fmt_ms(r['mimic_ms'])}  "
              f"pytorch {fmt_ms(r['pytorch_ms'])}  {r['ratio']:.2f}x", flush=True)
    meta["load_average_end"] = machine.describe(args.build)["load_average"]
    with open(args.out + ".json", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(markdown(rows, meta, args.reference))


if __name__ == "__main__":
    main()
