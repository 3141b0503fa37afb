#!/usr/bin/env python3
"""mimic's end-to-end benchmark: every zoo model on every available device at several batch sizes,
beside PyTorch CPU on the same models in the same invocation. Writes benchmarks/results/e2e.{json,md}.

  python3 benchmarks/run.py                 # the full table (several minutes)
  python3 benchmarks/run.py --models resnet50 --batches 8 --devices cpu   # cpu vs PyTorch only

Timings are host wall time of one forward pass: the minimum and the median of --runs runs after
--warmup runs. mimic runs as a subprocess (`mimic run --json`); PyTorch runs in this process with
torch.set_num_threads(cores), so both use every core. Runs alternate between the two so that noise
from other work on the machine hits both alike; compare ratios, not absolute times.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mimic_run(build, model, device, batch, runs, warmup, extra=()):
    cmd = [os.path.join(build, "bin", "mimic"), "run", "--model", model, "--device", device, "--batch", str(batch),
           "--repeat", str(runs), "--warmup", str(warmup), "--json", "--no-compare", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()}
    j = json.loads(p.stdout)
    r = j["report"]
    return {"wall_min": j["wall_seconds"]["min"], "wall_median": j["wall_seconds"]["median"],
            "cycles": r["cycles"], "device_seconds": r["device_seconds"], "compile_seconds": j["compile_seconds"]}


def torch_run(model, batch, runs, warmup):
    try:
        import torch
        import torch_models
    except ImportError as e:
        return {"error": f"PyTorch not installed ({e})"}
    torch.set_num_threads(os.cpu_count())
    module, shape, dtype = torch_models.build(model)
    module.eval()
    x = torch_models.example_input(shape, dtype, batch)
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            module(x)
        for _ in range(runs):
            t = time.perf_counter()
            module(x)
            times.append(time.perf_counter() - t)
    return {"wall_min": min(times), "wall_median": statistics.median(times)}


def available_devices(build):
    p = subprocess.run([os.path.join(build, "bin", "mimic"), "devices", "--json"], capture_output=True, text=True)
    return [d["name"] for d in json.loads(p.stdout) if d["available"]]


def fmt_s(s):
    return "" if s is None else (f"{s * 1e3:.1f} ms" if s < 10 else f"{s:.2f} s")


def markdown(results, machine_info):
    lines = ["| model | batch | device | wall min | wall median | vs cpu | vs PyTorch | sim cycles | device time | sim cycles/s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in results:
        if "error" in row:
            lines.append(f"| {row['model']} | {row['batch']} | {row['device']} | error: {row['error']} | | | | | | |")
            continue
        cyc = row.get("cycles") or 0
        lines.append("| {model} | {batch} | {device} | {mn} | {md} | {vc} | {vt} | {cy} | {dt} | {cps} |".format(
            model=row["model"], batch=row["batch"], device=row["device"], mn=fmt_s(row["wall_min"]),
            md=fmt_s(row["wall_median"]),
            vc=f"{row['vs_cpu']:.2f}x" if row.get("vs_cpu") else "",
            vt=f"{row['vs_pytorch']:.2f}x" if row.get("vs_pytorch") else "",
            cy=f"{cyc:,}" if cyc else "", dt=fmt_s(row.get("device_seconds")) if cyc else "",
            cps=f"{cyc / row['wall_min']:.3g}" if cyc else ""))
    return "\n".join([machine.markdown(machine_info), "", *lines, ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="mlp,resnet50,mobilenet_v2,bert")
    ap.add_argument("--devices", default="", help="comma list; default: every available device")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "e2e"))
    a = ap.parse_args()
    devices = a.devices.split(",") if a.devices else available_devices(a.build)
    results = []
    for model in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            ref = None if a.no_torch else torch_run(model, batch, a.runs, a.warmup)
            if ref is not None:
                results.append({"model": model, "batch": batch, "device": "pytorch-cpu", **ref})
            cpu_min = None
            for device in devices:
                row = {"model": model, "batch": batch, "device": device,
                       **mimic_run(a.build, model, device, batch, a.runs, a.warmup)}
                if device == "cpu" and "error" not in row:
                    cpu_min = row["wall_min"]
                if "error" not in row:
                    row["vs_cpu"] = row["wall_min"] / cpu_min if cpu_min else None
                    row["vs_pytorch"] = row["wall_min"] / ref["wall_min"] if ref and "error" not in ref else None
                results.append(row)
                print(json.dumps(row), flush=True)
    info = machine.describe(a.build)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": info, "results": results}, f, indent=2)
    with open(a.out + ".md", "w") as f:
        f.write(markdown(results, info))
    print(markdown(results, info))


if __name__ == "__main__":
    main()
